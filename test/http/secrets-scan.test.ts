// No plaintext credential anywhere it should not be. A scenario touches every kind of secret (a
// password at register, login, a wrong login, change and reset; sessions; an API token; a join
// token; node tokens before and after rotation; verify and reset tokens delivered by mail), then
// the state file (+ -wal, -shm), every log line (debug level) and every response seen are scanned
// for each one. The only exceptions: the one response that hands a token out (mint, register), and
// the Set-Cookie of the response that opens a session.
import { afterAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { makeLoggedHarness } from '../helpers/logged'
import { Client } from '../helpers/harness'
import { GPU } from '../helpers/world'
import { mailOutbox } from '../../src/db/schema'
import { openPayload } from '../../src/mail/outbox'

const h = makeLoggedHarness({ SVC_REQUIRE_EMAIL_VERIFICATION: '1' }, { mailEnabled: true })
afterAll(() => h.close())

interface Seen {
  what: string
  text: string
  /** Secrets this one response may carry: the one that hands them out. */
  allowed: Set<string>
}
const seen: Seen[] = []
/** app.handle, keeping a copy of every answer's headers and body. */
const recorder = {
  async handle(req: Request): Promise<Response> {
    const res = await h.app.handle(req)
    const url = new URL(req.url)
    const headers = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')
    seen.push({ what: `${req.method} ${url.pathname} -> ${res.status}`, text: `${headers}\n\n${await res.clone().text()}`, allowed: new Set() })
    return res
  },
}
const client = (bearer?: string) => new Client(recorder, { bearer })
/** The last answer legitimately carries these secrets (the minting or session-opening one). */
const allowLast = (...secrets: string[]) => secrets.forEach((s) => seen[seen.length - 1]!.allowed.add(s))

/** The newest queued mail's template variables (the payload is encrypted at rest). */
function lastMail(to: string): Record<string, string> {
  const rows = h.ctx.db.select().from(mailOutbox).where(eq(mailOutbox.toEmail, to)).all()
  return openPayload(h.cfg.secretKey, rows[rows.length - 1]!.payload!)
}
const tokenOf = (link: string) => new URL(link).searchParams.get('token')!

describe('secrets scan', () => {
  test('after a scenario with every kind of credential, none appears in the state file, the logs or any response', async () => {
    const secrets = new Map<string, string>() // secret -> what it is
    const add = (what: string, s: string) => {
      expect(s.length).toBeGreaterThanOrEqual(10)
      secrets.set(s, what)
    }
    const passwords = { admin: 'AdminPassw0rdAlpha', user: 'UserPassw0rdBravo', changed: 'UserPassw0rdCharlie', reset: 'UserPassw0rdDelta', wrong: 'WrongPassw0rdEcho' }
    for (const [k, v] of Object.entries(passwords)) add(`password ${k}`, v)

    // Accounts: the first person is the admin; the second must confirm the email address.
    const admin = client()
    expect((await admin.post('/api/v1/auth/register', { email: 'root@example.com', password: passwords.admin })).status).toBe(201)
    add('admin session', admin.cookies.get('svc_session')!)
    allowLast(admin.cookies.get('svc_session')!)
    const user = client()
    const reg = await user.post('/api/v1/auth/register', { email: 'user@example.com', password: passwords.user, display_name: 'User' })
    expect(reg.body.user.status).toBe('unverified')
    const verify = tokenOf(lastMail('user@example.com').link!)
    add('verify token', verify)
    expect((await client().get(`/verify-email?token=${verify}`)).status).toBe(200)
    expect((await client().post('/api/v1/auth/verify-email', { token: verify })).status).toBe(200)
    expect((await user.post('/api/v1/auth/login', { email: 'user@example.com', password: passwords.wrong })).status).toBe(401)
    expect((await user.post('/api/v1/auth/login', { email: 'user@example.com', password: passwords.user })).status).toBe(200)
    const userSession = user.cookies.get('svc_session')!
    add('user session', userSession)
    allowLast(userSession)
    expect((await user.post('/api/v1/auth/password', { current_password: passwords.user, new_password: passwords.changed })).status).toBe(204)

    // An admin-issued reset, delivered by mail, used once.
    const me = (await user.get('/api/v1/auth/me')).body
    expect((await admin.post(`/api/v1/admin/users/${me.id}/reset-password`)).status).toBe(200)
    const reset = tokenOf(lastMail('user@example.com').link!)
    add('reset token', reset)
    expect((await client().get(`/reset-password?token=${reset}`)).status).toBe(200)
    expect((await client().post('/api/v1/auth/reset-password', { token: reset, new_password: passwords.reset })).status).toBe(200)

    // An API token, a pool, a join token, a fellow and its node tokens (rotated once).
    const minted = await admin.post('/api/v1/api-tokens', { name: 'scan' })
    add('API token', minted.body.token)
    allowLast(minted.body.token)
    const api = client(minted.body.token)
    const pool = (await api.post('/api/v1/pools', { name: 'Scan pool' })).body
    const js = await api.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })
    add('join token', js.body.join_token)
    allowLast(js.body.join_token)
    const first = await client(js.body.join_token).post('/api/v1/workers/register', { hostname: 'scan-gpu', gpus: [GPU] })
    add('node token', first.body.node_token)
    allowLast(first.body.node_token)
    const rotated = await client(first.body.node_token).post('/api/v1/workers/register', { fellow_id: first.body.fellow_id, hostname: 'scan-gpu', gpus: [GPU] })
    add('rotated node token', rotated.body.node_token)
    allowLast(rotated.body.node_token)
    const node = client(rotated.body.node_token)
    expect((await node.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [GPU] } })).status).toBe(200)
    // Tokens where they do not belong: a query string, a revoked token, a bearer on a page.
    await client().get(`/ws/signals/${first.body.fellow_id}?token=${rotated.body.node_token}`)
    await client(first.body.node_token).post('/api/v1/workers/heartbeat', { status: 'idle' })
    await client(minted.body.token).get('/dashboard')
    await client().get(`/api/v1/pools?token=${minted.body.token}`)

    // Everything that lists or shows what those secrets belong to.
    for (const path of [
      '/api/v1/auth/me',
      '/api/v1/api-tokens',
      '/api/v1/pools',
      `/api/v1/pools/${pool.id}`,
      `/api/v1/pools/${pool.id}/members`,
      `/api/v1/pools/${pool.id}/events`,
      '/api/v1/workers',
      '/api/v1/cluster/nodes',
      '/api/v1/admin/users',
      '/api/v1/admin/audit',
      '/api/v1/admin/mail',
      '/api/v1/bootstrap/manifest.json',
      '/api/v1/bootstrap/fellow.sh',
      '/dashboard',
      '/profile',
      `/pools/${pool.id}`,
      '/admin/users',
    ]) {
      await admin.get(path)
    }
    expect((await admin.delete(`/api/v1/api-tokens/${minted.body.id}`)).status).toBe(200)
    expect((await admin.post('/api/v1/auth/logout')).status).toBe(204)
    add('deployment key', h.cfg.secretKey.toString('utf8'))
    await Bun.sleep(50) // request log lines are written after the answer has gone

    // The scan. Each secret also in its URL-encoded form, as it would sit in a link.
    const forms = (s: string) => [...new Set([s, encodeURIComponent(s)])]
    const files = () => {
      const names = readdirSync(h.dir).filter((f) => f.startsWith('join_state.sqlite3'))
      expect(names).toContain('join_state.sqlite3-wal')
      return Buffer.concat(names.map((f) => readFileSync(join(h.dir, f))))
    }
    const found: string[] = []
    const scanFile = (bytes: Buffer, where: string) => {
      for (const [s, what] of secrets) for (const f of forms(s)) if (bytes.includes(Buffer.from(f))) found.push(`${what} in ${where}`)
    }
    scanFile(files(), 'the state file and its -wal (before a checkpoint)')
    h.ctx.sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    scanFile(files(), 'the state file (after a checkpoint)')
    for (const line of h.lines) for (const [s, what] of secrets) for (const f of forms(s)) if (line.includes(f)) found.push(`${what} in log line ${line.slice(0, 200)}`)
    for (const r of seen) {
      for (const [s, what] of secrets) {
        if (r.allowed.has(s)) continue
        for (const f of forms(s)) if (r.text.includes(f)) found.push(`${what} in the answer to ${r.what}`)
      }
    }
    console.log(`secrets: ${secrets.size} secrets searched in the state file, ${h.lines.length} log lines and ${seen.length} answers`)
    expect(found).toEqual([])
    // The scan looked at something: many answers, a debug log, and the handed-out tokens where allowed.
    expect(seen.length).toBeGreaterThan(35)
    expect(h.lines.length).toBeGreaterThan(20)
    expect(seen.filter((r) => r.allowed.size > 0 && [...r.allowed].every((s) => r.text.includes(s)))).toHaveLength(6)
  }, 60_000)
})
