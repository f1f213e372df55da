// Hot backup and restore through the built binary: `svc admin backup` while the leader is under
// write load, then a fresh leader (new directory, new secret key) on the copy. People log in with
// their passwords; pools, memberships and node bindings are identical (by API and by SQL); fellows
// carry on with their node tokens; and the copy is a clean cut: writes acknowledged before the
// backup started are in it, writes sent after it finished are not.
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { SVC_BIN, runSvc, startLeader } from '../helpers/leader'
import { track } from '../helpers/children'
import { call, GPU, mintToken, prng, registerUser, Session } from '../helpers/e2e'
import { WriteLoad } from '../helpers/load'
import { until } from '../helpers/until'
import { consistencyProblems, openReadOnly } from '../helpers/state'

const PASSWORDS = { admin: 'admin password one', alice: 'alice password two', bob: 'bob password three' }

async function ok<T = any>(p: Promise<{ status: number; body: T }>, what: string): Promise<T> {
  const r = await p
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

/** The rows that must come back identical, restricted to the pools and fellows set up before the load. */
function baseRows(db: Database, poolIds: string[], fellowIds: string[]) {
  const inList = (ids: string[]) => ids.map((i) => `'${i}'`).join(',')
  const q = (sql: string) => db.query(sql).all()
  return {
    users: q('SELECT id, email, password_hash, display_name, role, status, created_at FROM users ORDER BY id'),
    pools: q(`SELECT * FROM pools WHERE id IN (${inList(poolIds)}) ORDER BY id`),
    members: q(`SELECT * FROM pool_members WHERE pool_id IN (${inList(poolIds)}) ORDER BY pool_id, user_id`),
    joinSessions: q(`SELECT * FROM join_sessions WHERE pool_id IN (${inList(poolIds)}) ORDER BY id`),
    nodes: q(`SELECT * FROM pool_nodes WHERE fellow_id IN (${inList(fellowIds)}) ORDER BY fellow_id`),
    fellows: q(`SELECT id, hostname, token_hash, state, registered_at FROM fellows WHERE id IN (${inList(fellowIds)}) ORDER BY id`),
  }
}

/** What each person sees through the API: their pools (base ones), members, and node bindings. */
async function apiView(sessions: Record<string, Session>, poolIds: string[], fellowIds: string[]) {
  const out: Record<string, unknown> = {}
  for (const [who, s] of Object.entries(sessions)) {
    const pools = (await ok(s.call('GET', '/api/v1/pools'), `${who} pools`)).items.filter((p: { id: string }) => poolIds.includes(p.id))
    const nodes = (await ok(s.call('GET', '/api/v1/cluster/nodes'), `${who} nodes`)).items
      .filter((n: { fellow_id: string }) => fellowIds.includes(n.fellow_id))
      .map((n: { fellow_id: string; pool_id: string; hostname: string }) => ({ fellow_id: n.fellow_id, pool_id: n.pool_id, hostname: n.hostname }))
      .sort((a: { fellow_id: string }, b: { fellow_id: string }) => a.fellow_id.localeCompare(b.fellow_id))
    const members: Record<string, unknown> = {}
    for (const p of pools) {
      const r = await s.call('GET', `/api/v1/pools/${p.id}/members`)
      members[p.id] = r.status === 200 ? r.body.items : r.status
    }
    out[who] = { pools: pools.sort((a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)), nodes, members }
  }
  return out
}

describe('backup and restore', () => {
  test('svc admin backup under load, then a fresh leader on the copy: same people, pools, members, bindings and node tokens', async () => {
    const t0 = performance.now()
    const one = await startLeader()
    const dbPath = join(one.dir, 'state', 'join_state.sqlite3')
    // People, with passwords they will log in with on the restored leader (3 scrypt hashes in all).
    const admin = await registerUser(one.url, 'admin@example.com', PASSWORDS.admin)
    const alice = await registerUser(one.url, 'alice@example.com', PASSWORDS.alice, 'Alice')
    const bob = await registerUser(one.url, 'bob@example.com', PASSWORDS.bob)
    const sessions = { admin, alice, bob }
    const poolA = await ok(alice.call('POST', '/api/v1/pools', { name: 'Alice lab', description: 'two A100s' }), 'alice pool')
    const poolB = await ok(bob.call('POST', '/api/v1/pools', { name: 'Bob box' }), 'bob pool')
    const poolX = await ok(admin.call('POST', '/api/v1/pools', { name: 'Commons', visibility: 'public', open_join: true }), 'admin pool')
    const inv = await ok(alice.call('POST', `/api/v1/pools/${poolA.id}/invites`, { email: 'bob@example.com' }), 'invite bob')
    // Bob's address is not verified (no SMTP): he accepts through the invite's link.
    await ok(bob.call('POST', `/api/v1/pools/invites/${inv.id}/accept`, { token: new URL(inv.invite_link).searchParams.get('token') }), 'bob accepts')
    await ok(alice.call('POST', `/api/v1/pools/${poolX.id}/join`), 'alice joins the commons')
    const fellows: { id: string; token: string }[] = []
    for (const [s, pool, n] of [[alice, poolA, 2], [bob, poolB, 1], [admin, poolX, 2]] as const) {
      const js = await ok(s.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: pool.id }), 'join session')
      for (let i = 0; i < n; i++) {
        const reg = await ok(call(one.url, 'POST', '/api/v1/workers/register', { bearer: js.join_token, body: { hostname: `${pool.slug}-${i}`, gpus: [GPU] } }), 'register')
        fellows.push({ id: reg.fellow_id, token: reg.node_token })
        await ok(call(one.url, 'POST', '/api/v1/workers/heartbeat', { bearer: reg.node_token, body: { status: 'idle', hardware: { gpus: [GPU] } } }), 'heartbeat')
      }
    }
    const poolIds = [poolA.id, poolB.id, poolX.id]
    const fellowIds = fellows.map((f) => f.id)
    const before = (await apiView(sessions, poolIds, fellowIds)) as Record<string, { pools: unknown[]; nodes: unknown[] }>
    // Something to compare: each person sees their pools (and the public one) and the fellows in their pools.
    expect(Object.fromEntries(Object.entries(before).map(([k, v]) => [k, [v.pools.length, v.nodes.length]]))).toEqual({ admin: [3, 5], alice: [2, 4], bob: [3, 3] })

    // Load (new pools, edits, join sessions, registrations, heartbeats, invites), and the backup in the middle of it.
    const load = new WriteLoad(one.url, await mintToken(admin), prng(7), false)
    load.start(6)
    // Polled, not slept: the cut is checked from both sides, so each side needs a write in it.
    await until(() => (load.created.length > 0 ? true : null), 'a write acknowledged before the backup', { timeoutMs: 10_000, everyMs: 20 })
    const out = join(mkdtempSync(join(tmpdir(), 'svc-backup-')), 'copy.sqlite3')
    const backupStart = performance.now()
    const backup = await runSvc(['admin', 'backup', out, '--db', dbPath])
    const backupEnd = performance.now()
    await until(() => (load.created.some((c) => c.sentAt > backupEnd) ? true : null), 'a write sent after the backup', { timeoutMs: 10_000, everyMs: 20 })
    await load.stop()
    expect(backup.stderr).toBe('')
    expect(backup.code).toBe(0)
    expect(load.unexpected).toEqual([])
    const liveView = await apiView(sessions, poolIds, fellowIds)
    expect(liveView).toEqual(before) // the load never touched the base state
    expect(await one.stop()).toBe(0)

    // The copy by SQL: consistent, the base rows identical, and a clean cut through the load.
    const source = openReadOnly(dbPath)
    const copy = openReadOnly(out)
    expect(consistencyProblems(copy)).toEqual([])
    expect(baseRows(copy, poolIds, fellowIds)).toEqual(baseRows(source, poolIds, fellowIds))
    source.close()
    const table = { pool: 'pools', fellow: 'fellows', join_session: 'join_sessions', invite: 'pool_invites' } as const
    const present = (kind: keyof typeof table, id: string) => copy.query(`SELECT 1 AS x FROM ${table[kind]} WHERE id = ?`).get(id) !== null
    const before_ = load.created.filter((c) => c.ackedAt < backupStart)
    const after_ = load.created.filter((c) => c.sentAt > backupEnd)
    expect(before_.length).toBeGreaterThan(0)
    expect(after_.length).toBeGreaterThan(0)
    expect(before_.filter((c) => !present(c.kind, c.id)).map((c) => `${c.kind} ${c.id} acknowledged before the backup, missing`)).toEqual([])
    expect(after_.filter((c) => present(c.kind, c.id)).map((c) => `${c.kind} ${c.id} sent after the backup, present`)).toEqual([])
    copy.close()

    // A fresh leader on the copy: its own directory and secret key, the copy as its state file.
    const two = await startLeader({ SVC_JOIN_STATE_DB: out })
    const again: Record<string, Session> = {}
    for (const [who, email] of [['admin', 'admin@example.com'], ['alice', 'alice@example.com'], ['bob', 'bob@example.com']] as const) {
      const s = new Session(two.url)
      const login = await s.call('POST', '/api/v1/auth/login', { email, password: PASSWORDS[who] })
      expect(login.status).toBe(200)
      again[who] = s
    }
    expect(await apiView(again, poolIds, fellowIds)).toEqual(before)
    // Fellows re-authenticate with the node tokens they already hold, base and load alike.
    const loadFellows = [...load.fellows].filter(([id]) => before_.some((c) => c.kind === 'fellow' && c.id === id)).map(([id, f]) => ({ id, token: f.token }))
    for (const f of [...fellows, ...loadFellows]) {
      const hb = await call(two.url, 'POST', '/api/v1/workers/heartbeat', { bearer: f.token, body: { status: 'idle' } })
      expect(`${f.id} ${hb.status}`).toBe(`${f.id} 200`)
    }
    expect(await two.stop()).toBe(0)
    console.log(
      `backup/restore: copy taken in ${Math.round(backupEnd - backupStart)} ms under load; ${before_.length} writes acknowledged before it present, ${after_.length} sent after it absent; ${fellows.length + loadFellows.length} fellows re-authenticated; ${Math.round((performance.now() - t0) / 1000)} s in all`,
    )
  }, 120_000)
})

describe('svc admin restore, stopped', () => {
  /** What a directory holds besides the leader lock file, which a restore takes (and leaves, as a leader does). */
  const besidesLock = (d: string) => readdirSync(d).filter((n) => !n.endsWith('.leader-lock'))

  /** A leader's state file made large (a filler table), so that its copy takes a while. */
  async function bigBackup(): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-restore-src-'))
    const db = join(dir, 'backup.sqlite3')
    const made = await runSvc(['admin', 'create-user', 'root@example.org', '--password-stdin', '--db', db], { stdin: 'a long password\n' })
    expect(made.code).toBe(0)
    const sqlite = new Database(db)
    sqlite.exec('PRAGMA journal_mode = DELETE; CREATE TABLE filler (x BLOB)')
    sqlite.transaction(() => {
      for (let i = 0; i < 300; i++) sqlite.query('INSERT INTO filler VALUES (randomblob(1000000))').run()
    })()
    sqlite.close()
    return db
  }

  test('Ctrl-C or SIGTERM while the copy is written leaves no .restore-PID copy and the state file as it was; copies of killed restores are swept by the next one', async () => {
    const backup = await bigBackup()
    for (const [signal, status] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      const stateDir = mkdtempSync(join(tmpdir(), 'svc-restore-'))
      const dest = join(stateDir, 'join_state.sqlite3')
      writeFileSync(dest, 'the state file before')
      const proc = track(Bun.spawn([SVC_BIN, 'admin', 'restore', backup, '--db', dest], { env: { PATH: process.env.PATH ?? '' }, stdout: 'pipe', stderr: 'pipe' }))
      await until(() => existsSync(join(stateDir, `.join_state.sqlite3.restore-${proc.pid}`)), 'the copy begun', { everyMs: 1 })
      proc.kill(signal)
      expect([signal, await proc.exited, await new Response(proc.stderr).text()]).toEqual([signal, status, `svc: cancelled: nothing was restored (${dest} is as it was)\n`])
      expect(besidesLock(stateDir)).toEqual(['join_state.sqlite3'])
      expect(await Bun.file(dest).text()).toBe('the state file before')
    }
    // Left by restores that were killed outright (SIGKILL, a power cut): swept when their process is gone.
    const stateDir = mkdtempSync(join(tmpdir(), 'svc-restore-'))
    const dead = Bun.spawn(['true'])
    await dead.exited
    const stale = [`.join_state.sqlite3.restore-${dead.pid}`, `.join_state.sqlite3.restore-${dead.pid}-journal`]
    const live = `.join_state.sqlite3.restore-${process.pid}` // a restore still running (this test's own pid)
    for (const f of [...stale, live]) writeFileSync(join(stateDir, f), 'x')
    const r = await runSvc(['admin', 'restore', backup, '--db', join(stateDir, 'join_state.sqlite3')])
    expect(r.code).toBe(0)
    expect(besidesLock(stateDir).sort()).toEqual([live, 'join_state.sqlite3'].sort())
  }, 120_000)
})
