// The state file beside another process that writes it (an `svc admin` command, a backup tool):
// the leader's writes wait for its lock instead of failing. A transaction begun DEFERRED that read
// before the other process committed could not write after it (SQLITE_BUSY_SNAPSHOT, whatever the
// busy timeout), and answered 500.
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, tokenClient, type Harness } from '../helpers/harness'
import { internalProblem } from '../../src/http/problem'
import { silentLogger } from '../../src/log'
import { listUsers } from '../../src/admin/list'
import { listAudit } from '../../src/audit/service'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

/** Another process that takes the file's write lock, writes, says so, and commits `ms` later. */
async function holdWriteLock(dbPath: string, ms: number) {
  const script = `
    import { Database } from 'bun:sqlite'
    const db = new Database(${JSON.stringify(dbPath)})
    db.exec('PRAGMA busy_timeout = 5000')
    db.exec('BEGIN IMMEDIATE')
    db.exec('UPDATE users SET created_at = created_at')
    await Bun.write(Bun.stdout, 'locked\\n')
    Bun.sleepSync(${ms})
    db.exec('COMMIT')
  `
  const proc = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let said = ''
  while (!said.includes('locked')) {
    const { value, done } = await reader.read()
    if (done) throw new Error('the lock holder exited before it took the lock')
    said += new TextDecoder().decode(value)
  }
  return proc
}

describe('another process writing the state file', () => {
  test('a transaction that reads, then writes, waits for its lock and succeeds (it was a 500 "database is locked")', async () => {
    const h = makeHarness()
    all.push(h)
    const alice = await seedUser(h, 'alice@example.com', { role: 'admin' })
    // The service itself: a request's credential check writes first (last use), and that write
    // alone would wait out the other process before the transaction began.
    const holder = await holdWriteLock(h.cfg.dbPath, 400)
    const pool = h.services.pools.create({ userId: alice.id, role: 'admin' }, { name: 'Lab', visibility: 'private' })
    expect(pool.name).toBe('Lab')
    expect(await holder.exited).toBe(0)
    // Through HTTP too.
    const r = await tokenClient(h, alice.id).post('/api/v1/pools', { name: 'Lab 2', visibility: 'private' })
    expect(r.status).toBe(201)
  })

  test('a list that only reads (admin users, audit) reads at once while another process holds the write lock (it waited 5 s, the whole leader with it, then failed)', async () => {
    const h = makeHarness()
    all.push(h)
    await seedUser(h, 'alice@example.com')
    const holder = await holdWriteLock(h.cfg.dbPath, 6000)
    try {
      expect(listUsers(h.ctx.db, {}).total).toBe(1)
      expect(listAudit(h.ctx.db, {}).items).toBeArray()
    } finally {
      holder.kill()
      await holder.exited
    }
  })

  test('a lock held past the busy timeout answers 503 with Retry-After, not 500', async () => {
    const busy = Object.assign(new Error('database is locked'), { name: 'SQLiteError', code: 'SQLITE_BUSY' })
    const res = internalProblem(silentLogger, new Request('http://localhost/api/v1/pools', { method: 'POST' }), busy)
    expect([res.status, res.headers.get('retry-after'), ((await res.json()) as { code: string }).code]).toEqual([503, '1', 'service_unavailable'])
  })
})
