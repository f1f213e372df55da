// Internationalised addresses (issue 28): an SMTPUTF8 local part or an IDN domain registers and
// logs in like any address, every spelling of one mailbox is one account, and garbage stays 422.
import { describe, expect, test } from 'bun:test'
import { seedUser, sessionClient } from '../helpers/harness'
import { freshAddresses, harnessesOfFile } from '../helpers/accounts'
import { users } from '../../src/db/schema'

const harness = harnessesOfFile()
const freshIp = freshAddresses()
const PW = 'a long password'

describe('internationalised email addresses', () => {
  test('an SMTPUTF8 address (Jörg.User@example.org) registers, logs in in any case, and cannot be registered twice', async () => {
    const h = harness()
    await seedUser(h, 'root@example.com', { role: 'admin' })
    const r = await h.client({ ip: freshIp() }).post('/api/v1/auth/register', { email: 'Jörg.User@example.org', password: PW })
    expect(r.status).toBe(201)
    expect(r.body.user).toMatchObject({ email: 'jörg.user@example.org', status: 'active' })
    for (const spelling of ['Jörg.User@example.org', 'JÖRG.USER@EXAMPLE.ORG', 'jo\u0308rg.user@example.org']) {
      const c = h.client({ ip: freshIp() })
      const login = await c.post('/api/v1/auth/login', { email: spelling, password: PW })
      expect([spelling, login.status]).toEqual([spelling, 200])
      expect((await c.get('/api/v1/auth/me')).body.email).toBe('jörg.user@example.org')
    }
    const again = await h.client({ ip: freshIp() }).post('/api/v1/auth/register', { email: 'jörg.user@EXAMPLE.org', password: PW })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('email_taken')
  })

  test('an IDN domain (user@bücher.example) is one account under its Unicode and its A-label spelling', async () => {
    const h = harness()
    await seedUser(h, 'root@example.com', { role: 'admin' })
    const r = await h.client({ ip: freshIp() }).post('/api/v1/auth/register', { email: 'user@bücher.example', password: PW })
    expect(r.status).toBe(201)
    // Stored with the domain's A-label: the form SMTP carries and ASCII addresses always had.
    expect(r.body.user.email).toBe('user@xn--bcher-kva.example')
    for (const spelling of ['user@bücher.example', 'User@BÜCHER.example', 'user@xn--bcher-kva.example']) {
      expect([spelling, (await h.client({ ip: freshIp() }).post('/api/v1/auth/login', { email: spelling, password: PW })).status]).toEqual([spelling, 200])
    }
    const dup = await h.client({ ip: freshIp() }).post('/api/v1/auth/register', { email: 'USER@xn--bcher-kva.EXAMPLE', password: PW })
    expect(dup.status).toBe(409)
    expect(h.ctx.db.select().from(users).all().map((u) => u.email).sort()).toEqual(['root@example.com', 'user@xn--bcher-kva.example'])
    // An admin searching the domain as people write it finds the account stored under its A-label.
    const root = h.ctx.db.select().from(users).all().find((u) => u.email === 'root@example.com')!
    const A = sessionClient(h, root.id)
    for (const q of ['bücher', 'BÜCHER.example', 'user@bücher.example', 'xn--bcher', 'ü']) {
      const found = await A.get(`/api/v1/admin/users?q=${encodeURIComponent(q)}`)
      expect([q, found.status, found.body.items.map((u: { email: string }) => u.email)]).toEqual([q, 200, q === 'ü' ? [] : ['user@xn--bcher-kva.example']])
    }
  })

  test('a pool invite to the Unicode spelling is accepted by the account registered under the A-label', async () => {
    const h = harness()
    const owner = await seedUser(h, 'owner@example.com')
    const a = sessionClient(h, owner.id)
    const pool = (await a.post('/api/v1/pools', { name: 'Books' })).body
    const invite = await a.post(`/api/v1/pools/${pool.id}/invites`, { email: 'Leser@Bücher.example' })
    expect(invite.status).toBe(201)
    expect(invite.body.email).toBe('leser@xn--bcher-kva.example')
    const reader = h.client({ ip: freshIp() })
    expect((await reader.post('/api/v1/auth/register', { email: 'leser@xn--bcher-kva.example', password: PW })).status).toBe(201)
    const token = new URL(invite.body.invite_link).searchParams.get('token')
    const accepted = await reader.post(`/api/v1/pools/invites/${invite.body.id}/accept`, { token })
    expect(accepted.status).toBe(200)
    expect(accepted.body.status).toBe('accepted')
  })

  test('garbage is still refused with 422 and nothing is written', async () => {
    const h = harness()
    const garbage = ['plainaddress', 'jörg@', '@bücher.example', 'a b@example.org', 'a..b@example.org', 'user@xn--zz.example', 'zero\u200bwidth@example.org', 'user@bücher..example', '"q"@example.org', 'user@[127.0.0.1]']
    for (const email of garbage) {
      const r = await h.client({ ip: freshIp() }).post('/api/v1/auth/register', { email, password: PW })
      expect([email, r.status, r.body.code]).toEqual([email, 422, 'validation_failed'])
    }
    expect(h.ctx.db.select().from(users).all()).toHaveLength(0)
  })
})
