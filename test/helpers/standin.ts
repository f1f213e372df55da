// The OpenAI-compatible engine stand-in (test/fixtures/engine-standin.ts) as a process of its own,
// for the e2e suites that run an "external" engine beside the fellows.
import { resolve } from 'node:path'

export const STANDIN = resolve(import.meta.dir, '../fixtures/engine-standin.ts')

/** The stand-in on a free port; resolves with its base URL once it says where it listens. */
export async function startStandin(args: string[]): Promise<{ proc: ReturnType<typeof Bun.spawn>; url: string }> {
  const proc = Bun.spawn([process.execPath, STANDIN, '--port', '0', ...args], { stdout: 'pipe', stderr: 'ignore', stdin: 'ignore' })
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  let text = ''
  while (!/listening on (\S+)/.test(text)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the stand-in exited before listening: ${text}`)
    text += new TextDecoder().decode(value)
  }
  // Keep draining its output so it never blocks on a full pipe.
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  return { proc, url: /listening on (\S+)/.exec(text)![1]! }
}
