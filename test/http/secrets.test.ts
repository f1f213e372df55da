import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'
import { issueActionToken } from '../../src/accounts/service'

describe('secrets at rest', () => {
  test('the state file holds no plaintext password, session, API, verify or reset token', async () => {
    const h = makeHarness({ SVC_REQUIRE_EMAIL_VERIFICATION: '1' }, { mailEnabled: true })
    const secrets: string[] = []
    const first = h.client({ ip: '192.0.2.1' })
    const pw = 'first users password'
    secrets.push(pw)
    await first.post('/api/v1/auth/register', { email: 'first@example.com', password: pw })
    secrets.push(first.cookies.get('svc_session')!)
    const minted = await first.post('/api/v1/api-tokens', { name: 'scan' })
    secrets.push(minted.body.token)
    const second = h.client({ ip: '192.0.2.2' })
    const pw2 = 'second users password'
    secrets.push(pw2)
    const reg = await second.post('/api/v1/auth/register', { email: 'second@example.com', password: pw2 })
    expect(reg.body.user.status).toBe('unverified')
    const u = await seedUser(h, 'third@example.com')
    secrets.push(issueActionToken(h.ctx.db, h.clock.now(), u.id, 'reset'))
    const login = h.client({ ip: '192.0.2.3' })
    await login.post('/api/v1/auth/login', { email: 'first@example.com', password: pw })
    secrets.push(login.cookies.get('svc_session')!)
    h.ctx.sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    const files = readdirSync(h.dir).filter((f) => f.startsWith('join_state.sqlite3'))
    const bytes = Buffer.concat(files.map((f) => readFileSync(join(h.dir, f))))
    for (const s of secrets) {
      expect(s.length).toBeGreaterThan(8)
      expect(bytes.includes(Buffer.from(s))).toBe(false)
    }
    h.close()
  })
})

describe('secrets in answers', () => {
  test('every answer that carries a token (API token, join token and command, node token, invite links) says Cache-Control: no-store', async () => {
    const h = makeHarness()
    const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
    const a = sessionClient(h, admin.id)
    const pool = (await a.post('/api/v1/pools', { name: 'Cached' })).body
    const answers = {
      'POST /api-tokens': await a.post('/api/v1/api-tokens', { name: 'c' }),
      'POST /pools/{id}/invites': await a.post(`/api/v1/pools/${pool.id}/invites`, { email: 'x@example.com' }),
      'GET /pools/{id}/invites': await a.get(`/api/v1/pools/${pool.id}/invites`),
      'POST /bootstrap/join-sessions': await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id }),
    }
    const join = answers['POST /bootstrap/join-sessions'].body.join_token
    const all = { ...answers, 'POST /workers/register': await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu-0' }) }
    expect(Object.fromEntries(Object.entries(all).map(([k, r]) => [k, [r.status < 300, r.headers.get('cache-control')]]))).toEqual(Object.fromEntries(Object.keys(all).map((k) => [k, [true, 'no-store']])))
    h.close()
  })
})
