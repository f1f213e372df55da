import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { startLeader, runSvc } from '../helpers/leader'

function cookieHeader(res: Response, jar: Map<string, string>): void {
  for (const sc of res.headers.getSetCookie()) {
    const pair = sc.split(';')[0]!
    const eq = pair.indexOf('=')
    const v = pair.slice(eq + 1)
    if (v === '') jar.delete(pair.slice(0, eq))
    else jar.set(pair.slice(0, eq), v)
  }
}

describe('accounts through the built binary', () => {
  test('register -> login -> mint token -> call with bearer -> logout', async () => {
    const leader = await startLeader()
    const json = { 'content-type': 'application/json' }
    const reg = await fetch(`${leader.url}/api/v1/auth/register`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'op@example.com', password: 'operator password' }) })
    expect(reg.status).toBe(201)

    const jar = new Map<string, string>()
    const login = await fetch(`${leader.url}/api/v1/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'op@example.com', password: 'operator password' }) })
    expect(login.status).toBe(200)
    cookieHeader(login, jar)
    const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ')
    const csrf = jar.get('svc_csrf')!

    const mint = await fetch(`${leader.url}/api/v1/api-tokens`, { method: 'POST', headers: { ...json, cookie: cookie(), 'x-csrf-token': csrf }, body: JSON.stringify({ name: 'cli' }) })
    expect(mint.status).toBe(201)
    const { token } = (await mint.json()) as { token: string }

    const me = await fetch(`${leader.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${token}` } })
    expect(me.status).toBe(200)
    expect(((await me.json()) as { email: string }).email).toBe('op@example.com')

    const logout = await fetch(`${leader.url}/api/v1/auth/logout`, { method: 'POST', headers: { cookie: cookie(), 'x-csrf-token': csrf } })
    expect(logout.status).toBe(204)
    expect((await fetch(`${leader.url}/api/v1/auth/me`, { headers: { cookie: cookie() } })).status).toBe(401)
    // The token is independent of the session that minted it.
    expect((await fetch(`${leader.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
    expect(await leader.stop()).toBe(0)
  })

  test('admin create-user and set-password work on the state file; set-password revokes sessions', async () => {
    const leader = await startLeader()
    const db = join(leader.dir, 'state', 'join_state.sqlite3')
    const created = await runSvc(['admin', 'create-user', 'root@example.com', '--db', db, '--password-stdin'], { stdin: 'root password here\n' })
    expect(created.stderr).toBe('')
    expect(created.code).toBe(0)
    const json = { 'content-type': 'application/json' }
    const login = await fetch(`${leader.url}/api/v1/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'root@example.com', password: 'root password here' }) })
    expect(login.status).toBe(200)
    expect(((await login.json()) as { user: { role: string } }).user.role).toBe('admin')
    const session = login.headers.getSetCookie().find((c) => c.startsWith('svc_session='))!.split(';')[0]!

    const set = await runSvc(['admin', 'set-password', 'ROOT@example.com', '--db', db, '--password-stdin'], { stdin: 'brand new root pw\n' })
    expect(set.code).toBe(0)
    expect(set.stdout).toContain('1 session(s) revoked')
    expect((await fetch(`${leader.url}/api/v1/auth/me`, { headers: { cookie: session } })).status).toBe(401)

    const dup = await runSvc(['admin', 'create-user', 'root@example.com', '--db', db, '--password-stdin'], { stdin: 'root password here\n' })
    expect(dup.code).toBe(1)
    expect(dup.stderr.trim().split('\n')).toHaveLength(1)
    const weak = await runSvc(['admin', 'create-user', 'x@example.com', '--db', db, '--password-stdin'], { stdin: 'short\n' })
    expect(weak.code).toBe(1)
    expect(weak.stderr).toContain('at least 10')
    const noTty = await runSvc(['admin', 'create-user', 'y@example.com', '--db', db])
    expect(noTty.code).toBe(2)
    expect(noTty.stderr).toContain('--password-stdin')
    const badEmail = await runSvc(['admin', 'set-password', 'not-an-email', '--db', db, '--password-stdin'], { stdin: 'whatever password\n' })
    expect(badEmail.code).toBe(2)
    // A mistyped --db: set-password creates nothing and says so; create-user will not make up a
    // directory, and says when it seeded a new file (a fresh install may be seeded before a start).
    const typo = join(leader.dir, 'typo', 'x.sqlite3')
    const lost = await runSvc(['admin', 'set-password', 'root@example.com', '--db', typo, '--password-stdin'], { stdin: 'whatever password\n' })
    expect([lost.code, lost.stderr]).toEqual([1, `svc: no state database at ${typo} (--db PATH names another)\n`])
    const made = await runSvc(['admin', 'create-user', 'z@example.com', '--db', typo, '--password-stdin'], { stdin: 'root password here\n' })
    expect([made.code, made.stderr]).toEqual([1, `svc: no directory ${join(leader.dir, 'typo')} for the state database (--db PATH names another, or create it first)\n`])
    expect(existsSync(join(leader.dir, 'typo'))).toBe(false)
    const seeded = join(leader.dir, 'state', 'seed.sqlite3')
    const seed = await runSvc(['admin', 'create-user', 'z@example.com', '--db', seeded, '--password-stdin'], { stdin: 'root password here\n' })
    expect(seed.code).toBe(0)
    expect(seed.stderr).toContain(`svc: note: ${seeded} did not exist; it is a new, empty state database`)
    // A fresh default install (./state not made yet) may be seeded before the first start.
    const home = mkdtempSync(join(tmpdir(), 'svc-fresh-'))
    const first = await runSvc(['admin', 'create-user', 'root@example.com', '--password-stdin'], { cwd: home, stdin: 'root password here\n' })
    expect([first.code, existsSync(join(home, 'state', 'join_state.sqlite3'))]).toEqual([0, true])
    expect(await leader.stop()).toBe(0)
  })
})
