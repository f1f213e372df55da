// `svc audit list --follow` with the built dist/svc against a running leader: what it prints is the
// audit log as it grows, whole and in order, however much arrives between two of its polls.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SVC_BIN, startLeader, type Leader } from '../helpers/leader'
import { track } from '../helpers/children'
import { mintToken, registerUser } from '../helpers/e2e'
import { until } from '../helpers/until'

let leader: Leader
let token: string

beforeAll(async () => {
  leader = await startLeader({ SVC_PORT: '46750' })
  token = await mintToken(await registerUser(leader.url, 'admin@example.com', 'audit admin password'), 'audit follow')
})
afterAll(async () => {
  await leader?.stop()
})

/** Entries written as the leader writes them (one transaction: a burst no poll can split). */
function writeEntries(kind: string, n: number): string[] {
  const db = new Database(join(leader.dir, 'state', 'join_state.sqlite3'))
  db.exec('PRAGMA busy_timeout = 5000')
  const ids = Array.from({ length: n }, () => Bun.randomUUIDv7())
  const at = Date.now()
  const insert = db.prepare('INSERT INTO audit_log (id, ts, kind, actor_user_id, client_ip, target_type, target_id, detail) VALUES (?, ?, ?, NULL, NULL, NULL, NULL, NULL)')
  // Ten to a millisecond: ties in time are ordered by id, as the leader orders them.
  db.transaction(() => ids.forEach((id, i) => insert.run(id, at + Math.floor(i / 10), kind)))()
  db.close()
  return ids
}

describe('svc audit list --follow', () => {
  test('a burst of more entries than one page between two polls is printed whole, oldest first, each once', async () => {
    const proc = track(
      Bun.spawn([SVC_BIN, 'audit', 'list', '--follow', '--quiet', '--kind', 'test.'], {
        cwd: mkdtempSync(join(tmpdir(), 'svc-cli-')),
        env: { PATH: process.env.PATH ?? '', HOME: mkdtempSync(join(tmpdir(), 'svc-audit-home-')), SVC_LEADER_URL: leader.url, SVC_TOKEN: token },
        stdout: 'pipe',
        stderr: 'pipe',
      }),
    )
    let printed = ''
    void (async () => {
      const decoder = new TextDecoder()
      for await (const chunk of proc.stdout) printed += decoder.decode(chunk, { stream: true })
    })()
    const lines = () => printed.split('\n').filter(Boolean)
    // One entry first: once it is printed, the follow is polling (and the burst is news to it).
    const [marker] = writeEntries('test.marker', 1)
    await until(() => lines().includes(marker!), 'the follow printed the first entry', { timeoutMs: 10_000 })
    const burst = writeEntries('test.burst', 450)
    await until(() => lines().includes(burst.at(-1)!), 'the follow printed the burst', { timeoutMs: 15_000 })
    // One more poll: nothing is printed twice.
    const [after] = writeEntries('test.after', 1)
    await until(() => lines().includes(after!), 'the follow printed the entry after the burst', { timeoutMs: 10_000 })
    proc.kill('SIGINT')
    await proc.exited
    expect(lines()).toEqual([marker!, ...burst, after!])
  }, 60_000)
})
