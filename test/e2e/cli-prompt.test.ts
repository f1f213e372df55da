// The operator CLI's prompts on a real terminal (a pseudo-terminal from Python's pty module, which
// the suite already needs): keys as a person types them, and what the command then does.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SVC_BIN } from '../helpers/leader'

/** Runs `args` on a terminal; each time it has written the next step's text (counted), types its keys. Its exit status and all it wrote. */
function onTerminal(args: string[], steps: [string, string][]): { code: number; output: string } {
  const py = `
import json, os, pty, select, sys, time
steps, argv = json.loads(sys.argv[1]), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out, at, end = b'', 0, time.time() + 15
while time.time() < end:
    if at < len(steps) and out.count(steps[at][0].encode()) > sum(1 for s in steps[:at] if s[0] == steps[at][0]):
        os.write(fd, steps[at][1].encode()); at += 1
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try: d = os.read(fd, 4096)
        except OSError: break
        if not d: break
        out += d
    elif os.waitpid(pid, os.WNOHANG)[0] == pid:
        print(json.dumps({'code': -1, 'output': out.decode(errors='replace')})); sys.exit()
if time.time() >= end:
    os.kill(pid, 9)
_, st = os.waitpid(pid, 0)
print(json.dumps({'code': os.waitstatus_to_exitcode(st), 'output': out.decode(errors='replace')}))
`
  const r = Bun.spawnSync(['python3', '-c', py, JSON.stringify(steps), ...args], { env: { PATH: process.env.PATH ?? '', TERM: 'dumb' } })
  return JSON.parse(r.stdout.toString()) as { code: number; output: string }
}

describe('a hidden password prompt', () => {
  test('Ctrl-D with nothing typed ends the input: one line and exit 1, not a prompt that waits for good', () => {
    const db = join(mkdtempSync(join(tmpdir(), 'svc-prompt-')), 'state.sqlite3')
    const r = onTerminal([SVC_BIN, 'admin', 'create-user', 'root@example.org', '--db', db], [['Password: ', '\x04']])
    expect(r.code).toBe(1)
    expect(r.output.replace(/\r/g, '')).toBe('Password: \nsvc: no input (Ctrl-D at the prompt)\n')
  }, 30_000)

  test('Ctrl-D after the password ends its line as Enter does', () => {
    const db = join(mkdtempSync(join(tmpdir(), 'svc-prompt-')), 'state.sqlite3')
    const r = onTerminal([SVC_BIN, 'admin', 'create-user', 'root@example.org', '--db', db], [['Password: ', 'a long password\x04'], ['Repeat password: ', 'a long password\x04']])
    // Both answers were taken, and they match: the account is made.
    expect([r.code, r.output.replace(/\r/g, '').split('\n').slice(0, 2)]).toEqual([0, ['Password: ', 'Repeat password: ']])
  }, 30_000)
})
