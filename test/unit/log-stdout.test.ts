// The logger's standard output: written with write(2), not through process.stdout (a Node stream
// whose creation loads Node's stream modules); whole lines, in order, however slowly they are read.
import { expect, test } from 'bun:test'
import { resolve } from 'node:path'

const LOG = resolve(import.meta.dir, '../../src/log.ts')

const program = (code: string) => [process.execPath, '-e', `import { stdoutLine, stdoutIsTerminal } from ${JSON.stringify(LOG)}\n${code}`]
const child = (code: string) => Bun.spawn(program(code), { stdout: 'pipe', stderr: 'pipe' })

test('lines arrive whole and in order through a pipe read late, a 1 MiB line among them', async () => {
  const big = 'x'.repeat(1 << 20)
  const p = child(`stdoutLine('first'); stdoutLine('x'.repeat(1 << 20)); stdoutLine('last')`)
  await Bun.sleep(200) // the pipe (64 KiB) fills: the writer waits for the reader
  const out = await new Response(p.stdout).text()
  expect(await p.exited).toBe(0)
  expect(out).toBe(`first\n${big}\nlast\n`)
})

test('a pipe and /dev/null are not terminals', async () => {
  const piped = child(`stdoutLine(JSON.stringify({ terminal: stdoutIsTerminal() }))`)
  expect(await new Response(piped.stdout).text()).toBe('{"terminal":false}\n')
  expect(await piped.exited).toBe(0)
  const nul = Bun.spawn(program(`process.exitCode = stdoutIsTerminal() ? 3 : 0`), { stdout: Bun.file('/dev/null'), stderr: 'pipe' })
  expect(await nul.exited).toBe(0)
})
