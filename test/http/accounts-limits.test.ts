// Lockouts and per-address limits held against what attackers do: guesses sent at once (the
// hashing line holds several, and they used to overrun the threshold) and the many addresses of
// one IPv6 /64. The plain lockout cases are in accounts.test.ts.
import { describe, expect, test } from 'bun:test'
import { seedUser, sessionClient, PASSWORD } from '../helpers/harness'
import { auditsOf as audits, freshAddresses, harnessesOfFile } from '../helpers/accounts'

const harness = harnessesOfFile()
const freshIp = freshAddresses()

describe('lockout against bursts', () => {
  test('guesses sent at once get no more than the threshold: those hashed while the pair locked answer 429, the right password too', async () => {
    const h = harness({ SVC_LOGIN_LOCKOUT_THRESHOLD: '2', SVC_LOGIN_LOCKOUT_SECONDS: '300' })
    await seedUser(h, 'burst@example.com')
    const c = h.client({ ip: freshIp() })
    const bad = { email: 'burst@example.com', password: 'wrong password!' }
    // Two hash at a time, in the order sent: the right password is hashed after the first two
    // failures have locked the pair, the third wrong one alongside it.
    const answers = await Promise.all([bad, bad, bad, { email: 'burst@example.com', password: PASSWORD }].map((b) => c.post('/api/v1/auth/login', b)))
    expect(answers.map((r) => r.status).sort()).toEqual([401, 401, 429, 429])
    expect([answers[3]!.status, answers[3]!.body.code]).toEqual([429, 'locked_out'])
    expect(audits(h, 'auth.login_failed')).toHaveLength(2)
    expect(audits(h, 'auth.login')).toHaveLength(0)
    // The lock still holds: the right password did not clear it.
    expect((await c.post('/api/v1/auth/login', { email: 'burst@example.com', password: PASSWORD })).status).toBe(429)
  })

  test('guesses of the current password sent at once: the right one hashed after the lock answers 429 and changes nothing', async () => {
    const h = harness({ SVC_LOGIN_LOCKOUT_THRESHOLD: '2', SVC_LOGIN_LOCKOUT_SECONDS: '300' })
    const u = await seedUser(h, 'burst-pw@example.com')
    const here = sessionClient(h, u.id, { ip: freshIp() })
    const guess = (current: string) => here.post('/api/v1/auth/password', { current_password: current, new_password: 'a brand new password' })
    const answers = await Promise.all(['guess one', 'guess two', 'guess three', PASSWORD].map(guess))
    expect(answers.map((r) => r.status).sort()).toEqual([403, 403, 429, 429])
    expect([answers[3]!.status, answers[3]!.body.code]).toEqual([429, 'locked_out'])
    expect(audits(h, 'auth.password_change')).toHaveLength(0)
    expect((await here.get('/api/v1/auth/me')).status).toBe(200)
  })
})

describe('per-address limits and IPv6', () => {
  test("an IPv6 client's addresses count as one (its /64): rotating them neither escapes the rate limit nor the pair's lockout", async () => {
    const h = harness({ SVC_LOGIN_LOCKOUT_THRESHOLD: '3', SVC_LOGIN_LOCKOUT_SECONDS: '300', SVC_AUTH_RATE_MAX: '5' })
    await seedUser(h, 'v6@example.com')
    const from = (n: number) => h.client({ ip: `2001:db8:77:1::${n.toString(16)}` })
    const bad = { email: 'v6@example.com', password: 'wrong password!' }
    const answers = []
    for (let n = 1; n <= 3; n++) answers.push((await from(n).post('/api/v1/auth/login', bad)).status)
    expect(answers).toEqual([401, 401, 401])
    const locked = await from(4).post('/api/v1/auth/login', { email: 'v6@example.com', password: PASSWORD })
    expect([locked.status, locked.body.code]).toEqual([429, 'locked_out'])
    // The per-address limit (5 a window) counted all of them: the sixth attempt is refused.
    expect((await from(5).post('/api/v1/auth/login', bad)).status).toBe(429)
    expect((await from(6).post('/api/v1/auth/register', { email: 'new6@example.com', password: 'a long enough password' })).body.code).toBe('rate_limited')
    // Another /64 is another client.
    expect((await h.client({ ip: '2001:db8:77:2::1' }).post('/api/v1/auth/login', { email: 'v6@example.com', password: PASSWORD })).status).toBe(200)
  })
})
