import { afterAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { makeHarness, seedUser, sessionClient, tokenClient, PASSWORD, type Harness } from '../helpers/harness'
import { actionTokens, apiTokens, auditLog, fellows, loginFailures, mailOutbox, poolMembers, poolNodes, pools, sessions, users } from '../../src/db/schema'
import { issueActionToken } from '../../src/accounts/service'
import { newId } from '../../src/crypto'
import { auditsOf } from '../helpers/accounts'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

async function setup(opts: { mailEnabled?: boolean } = {}) {
  const h = makeHarness({}, opts)
  all.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin', displayName: 'Ada Admin' })
  const alice = await seedUser(h, 'alice@example.com', { displayName: 'Alice' })
  return { h, admin, alice, A: sessionClient(h, admin.id, { ip: '203.0.113.7' }) }
}

const audits = auditsOf
const mails = (h: Harness) => h.ctx.db.select({ template: mailOutbox.template, to: mailOutbox.toEmail }).from(mailOutbox).all()
const userRow = (h: Harness, id: string) => h.ctx.db.select().from(users).where(eq(users.id, id)).get()

function attachNode(h: Harness, poolId: string, ownerUserId: string): string {
  const id = newId()
  h.ctx.db.insert(fellows).values({ id, hostname: 'gpu-box', tokenHash: `h-${id}`, state: 'active', registeredAt: h.clock.now() }).run()
  h.ctx.db.insert(poolNodes).values({ fellowId: id, poolId, ownerUserId, attachedAt: h.clock.now() }).run()
  return id
}

describe('editing a user', () => {
  test('an admin changes display name, email (normalized) and role; the change is audited with the client IP', async () => {
    const { h, A, alice, admin } = await setup()
    const r = await A.patch(`/api/v1/admin/users/${alice.id}`, { display_name: 'Alice Liddell', email: 'Alice.L@Example.COM', role: 'admin' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: alice.id, email: 'alice.l@example.com', display_name: 'Alice Liddell', role: 'admin', status: 'active', pool_count: 0, node_count: 0 })
    const [entry] = audits(h, 'admin.user.update')
    expect(entry).toMatchObject({ actorUserId: admin.id, clientIp: '203.0.113.7', targetType: 'user', targetId: alice.id })
    expect(JSON.parse(entry!.detail!)).toEqual({ fields: ['display_name', 'email', 'role'], role: { from: 'user', to: 'admin' } })
    expect((await A.patch(`/api/v1/admin/users/${alice.id}`, { display_name: null })).body.display_name).toBeNull()
  })

  test('an email another account uses is refused with 409 email_taken; unknown ids are 404; an empty body is 422', async () => {
    const { A, alice } = await setup()
    const r = await A.patch(`/api/v1/admin/users/${alice.id}`, { email: 'ADMIN@example.com' })
    expect([r.status, r.body.code]).toEqual([409, 'email_taken'])
    expect((await A.patch(`/api/v1/admin/users/${newId()}`, { role: 'user' })).status).toBe(404)
    expect((await A.patch(`/api/v1/admin/users/${alice.id}`, {})).status).toBe(422)
    expect((await A.patch(`/api/v1/admin/users/${alice.id}`, { role: 'root' })).status).toBe(422)
    expect((await A.patch(`/api/v1/admin/users/${alice.id}`, { password_hash: 'x' })).status).toBe(422)
  })

  test('the last active admin cannot be demoted (409 last_admin, nothing touched); with a second admin it works', async () => {
    const { h, A, admin, alice } = await setup()
    // A disabled admin does not count: the active one is still the last.
    await seedUser(h, 'sleeping-admin@example.com', { role: 'admin', status: 'disabled' })
    const r = await A.patch(`/api/v1/admin/users/${admin.id}`, { role: 'user', display_name: 'Renamed' })
    expect([r.status, r.body.code]).toEqual([409, 'last_admin'])
    expect(userRow(h, admin.id)).toMatchObject({ role: 'admin', displayName: 'Ada Admin' })
    expect(audits(h, 'admin.user.update')).toHaveLength(0)
    await A.patch(`/api/v1/admin/users/${alice.id}`, { role: 'admin' })
    expect((await A.patch(`/api/v1/admin/users/${admin.id}`, { role: 'user' })).body.role).toBe('user')
    // The demotion applies to the very next request of the demoted admin.
    expect((await A.get('/api/v1/admin/users')).status).toBe(403)
  })

  test('two admins demoting each other at the same time: exactly one succeeds', async () => {
    for (let round = 0; round < 5; round++) {
      const { h, A, admin, alice } = await setup()
      await A.patch(`/api/v1/admin/users/${alice.id}`, { role: 'admin' })
      const B = sessionClient(h, alice.id)
      const [ra, rb] = await Promise.all([A.patch(`/api/v1/admin/users/${alice.id}`, { role: 'user' }), B.patch(`/api/v1/admin/users/${admin.id}`, { role: 'user' })])
      const statuses = [ra.status, rb.status].sort()
      expect(statuses[0]).toBe(200)
      expect([403, 409]).toContain(statuses[1]!)
      const admins = h.ctx.db.select().from(users).where(and(eq(users.role, 'admin'), eq(users.status, 'active'))).all()
      expect(admins).toHaveLength(1)
    }
  })

  test('two admins stepping down at the same time: the second is refused as the last admin', async () => {
    const { h, A, admin, alice } = await setup()
    await A.patch(`/api/v1/admin/users/${alice.id}`, { role: 'admin' })
    const B = sessionClient(h, alice.id)
    const [ra, rb] = await Promise.all([A.patch(`/api/v1/admin/users/${admin.id}`, { role: 'user' }), B.patch(`/api/v1/admin/users/${alice.id}`, { role: 'user' })])
    expect([ra.status, rb.status].sort()).toEqual([200, 409])
    expect([ra.body.code, rb.body.code]).toContain('last_admin')
    expect(h.ctx.db.select().from(users).where(and(eq(users.role, 'admin'), eq(users.status, 'active'))).all()).toHaveLength(1)
  })

  test('two admins deactivating and deleting each other at the same time leave exactly one active admin', async () => {
    const { h, A, admin, alice } = await setup()
    await A.patch(`/api/v1/admin/users/${alice.id}`, { role: 'admin' })
    const B = sessionClient(h, alice.id)
    const [ra, rb] = await Promise.all([A.post(`/api/v1/admin/users/${alice.id}/status`, { status: 'disabled' }), B.delete(`/api/v1/admin/users/${admin.id}`)])
    expect([ra.status, rb.status].filter((s) => s === 200)).toHaveLength(1)
    expect(h.ctx.db.select().from(users).where(and(eq(users.role, 'admin'), eq(users.status, 'active'))).all()).toHaveLength(1)
  })
})

describe('deactivating and reactivating', () => {
  test("deactivation revokes the user's sessions and API tokens, mails them and is audited; reactivation makes them active", async () => {
    const { h, A, alice } = await setup({ mailEnabled: true })
    const s1 = sessionClient(h, alice.id)
    const t1 = tokenClient(h, alice.id)
    expect((await s1.get('/api/v1/auth/me')).status).toBe(200)
    expect((await t1.get('/api/v1/auth/me')).status).toBe(200)
    const reset = issueActionToken(h.ctx.db, h.clock.now(), alice.id, 'reset')
    const pool = (await s1.post('/api/v1/pools', { name: 'Alice lab' })).body
    const join = (await s1.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token as string

    const r = await A.post(`/api/v1/admin/users/${alice.id}/status`, { status: 'disabled' })
    expect([r.status, r.body.status]).toEqual([200, 'disabled'])
    expect((await s1.get('/api/v1/auth/me')).status).toBe(401)
    expect((await t1.get('/api/v1/auth/me')).status).toBe(401)
    expect(h.ctx.db.select().from(sessions).where(eq(sessions.userId, alice.id)).all().every((s) => s.revokedAt !== null)).toBe(true)
    expect(h.ctx.db.select().from(apiTokens).where(eq(apiTokens.userId, alice.id)).all().every((t) => t.revokedAt !== null)).toBe(true)
    expect(mails(h)).toEqual([{ template: 'account-deactivated', to: 'alice@example.com' }])
    expect(JSON.parse(audits(h, 'admin.user.status')[0]!.detail!)).toEqual({ from: 'active', to: 'disabled', sessions_revoked: 1, api_tokens_revoked: 1, join_sessions_revoked: 1 })
    // A reset link mailed before the deactivation no longer works.
    const late = await h.client().post('/api/v1/auth/reset-password', { token: reset, new_password: 'a brand new password' })
    expect(late.body.code).toBe('invalid_token')

    // Deactivating again changes nothing and mails nothing.
    expect((await A.post(`/api/v1/admin/users/${alice.id}/status`, { status: 'disabled' })).status).toBe(200)
    expect(mails(h)).toHaveLength(1)

    const back = await A.post(`/api/v1/admin/users/${alice.id}/status`, { status: 'active' })
    expect(back.body.status).toBe('active')
    expect(audits(h, 'admin.user.status')).toHaveLength(2)
    // Old credentials stay revoked, join tokens too (they worked again once the account was back);
    // a new login works.
    expect((await s1.get('/api/v1/auth/me')).status).toBe(401)
    expect((await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'late-box' })).status).toBe(401)
    expect((await h.client({ ip: '198.51.100.9' }).post('/api/v1/auth/login', { email: 'alice@example.com', password: PASSWORD })).status).toBe(200)
  })

  test('the last active admin cannot be deactivated: 409, and their session still works', async () => {
    const { h, A, admin } = await setup({ mailEnabled: true })
    const r = await A.post(`/api/v1/admin/users/${admin.id}/status`, { status: 'disabled' })
    expect([r.status, r.body.code]).toEqual([409, 'last_admin'])
    expect(userRow(h, admin.id)!.status).toBe('active')
    expect((await A.get('/api/v1/auth/me')).status).toBe(200)
    expect(mails(h)).toEqual([])
    expect(audits(h, 'admin.user.status')).toEqual([])
  })

  test('reactivating an account that is not disabled is a conflict; approval is the way in', async () => {
    const { h, A } = await setup()
    const pending = await seedUser(h, 'pending@example.com', { status: 'pending_approval' })
    const r = await A.post(`/api/v1/admin/users/${pending.id}/status`, { status: 'active' })
    expect([r.status, r.body.code, r.body.account_status]).toEqual([409, 'conflict', 'pending_approval'])
    expect((await A.post(`/api/v1/admin/users/${pending.id}/status`, { status: 'unverified' })).status).toBe(422)
  })
})

describe('approve and resend-verification', () => {
  test('approve moves pending_approval and unverified accounts to active, mails them and is audited', async () => {
    const { h, A } = await setup({ mailEnabled: true })
    const p = await seedUser(h, 'pending@example.com', { status: 'pending_approval' })
    const u = await seedUser(h, 'unverified@example.com', { status: 'unverified' })
    expect((await A.get('/api/v1/admin/users/pending-count')).body).toEqual({ count: 1 })
    for (const x of [p, u]) {
      const r = await A.post(`/api/v1/admin/users/${x.id}/approve`)
      expect([r.status, r.body.status]).toEqual([200, 'active'])
    }
    expect((await A.get('/api/v1/admin/users/pending-count')).body).toEqual({ count: 0 })
    expect(mails(h)).toEqual([
      { template: 'account-approved', to: 'pending@example.com' },
      { template: 'account-approved', to: 'unverified@example.com' },
    ])
    expect(audits(h, 'admin.user.approve').map((a) => JSON.parse(a.detail!).from)).toEqual(['pending_approval', 'unverified'])
    const again = await A.post(`/api/v1/admin/users/${p.id}/approve`)
    expect([again.status, again.body.code]).toEqual([409, 'conflict'])
  })

  test('resend-verification mails a fresh link to an unverified account; the previous link stops working', async () => {
    const { h, A } = await setup({ mailEnabled: true })
    const u = await seedUser(h, 'unverified@example.com', { status: 'unverified' })
    const old = issueActionToken(h.ctx.db, h.clock.now(), u.id, 'verify')
    const r = await A.post(`/api/v1/admin/users/${u.id}/resend-verification`)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ delivery: 'mail', expires_at: new Date(h.clock.now() + 86_400_000).toISOString() })
    expect(mails(h)).toEqual([{ template: 'verify-email', to: 'unverified@example.com' }])
    expect((await h.client().post('/api/v1/auth/verify-email', { token: old })).body.code).toBe('invalid_token')
    expect(audits(h, 'admin.user.resend_verification')).toHaveLength(1)
    const verified = await A.post(`/api/v1/admin/users/${(await seedUser(h, 'on@example.com', { emailVerified: true })).id}/resend-verification`)
    expect([verified.status, verified.body.detail]).toEqual([409, 'The address is already verified.'])
  })

  test('approved before the link was used: the link still proves the address, and a new one can be sent (the account could never verify)', async () => {
    const { h, A } = await setup({ mailEnabled: true })
    const u = await seedUser(h, 'early@example.com', { status: 'unverified' })
    const link = issueActionToken(h.ctx.db, h.clock.now(), u.id, 'verify')
    expect((await A.post(`/api/v1/admin/users/${u.id}/approve`)).body.status).toBe('active')
    const used = await h.client().post('/api/v1/auth/verify-email', { token: link })
    expect([used.status, used.body]).toEqual([200, { status: 'active' }])
    expect((h.ctx.sqlite.query('SELECT email_verified_at FROM users WHERE id = ?').get(u.id) as { email_verified_at: number | null }).email_verified_at).not.toBeNull()
    const again = await A.post(`/api/v1/admin/users/${u.id}/resend-verification`)
    expect([again.status, again.body.detail]).toEqual([409, 'The address is already verified.'])
    // Approved, link lost: another one can be sent (it was refused for an active account).
    const lost = await seedUser(h, 'lost@example.com', { status: 'unverified' })
    expect((await A.post(`/api/v1/admin/users/${lost.id}/approve`)).status).toBe(200)
    expect((await A.post(`/api/v1/admin/users/${lost.id}/resend-verification`)).status).toBe(200)
    const off = await seedUser(h, 'off@example.com', { status: 'disabled' })
    const disabled = await A.post(`/api/v1/admin/users/${off.id}/resend-verification`)
    expect([disabled.status, disabled.body.detail]).toEqual([409, 'The account is disabled; reactivate it first.'])
  })

  test('without mail, resend-verification answers 409 mail_disabled', async () => {
    const { h, A } = await setup()
    const u = await seedUser(h, 'unverified@example.com', { status: 'unverified' })
    const r = await A.post(`/api/v1/admin/users/${u.id}/resend-verification`)
    expect([r.status, r.body.code]).toEqual([409, 'mail_disabled'])
  })
})

describe('password reset issued by an admin', () => {
  test('without mail the answer carries the one-time link; it resets the password once and logs in', async () => {
    const { h, A, alice } = await setup()
    const r = await A.post(`/api/v1/admin/users/${alice.id}/reset-password`)
    expect(r.status).toBe(200)
    expect(r.headers.get('cache-control')).toBe('no-store')
    expect(r.body.delivery).toBe('link')
    expect(r.body.link).toMatch(/^\/reset-password\?token=[A-Za-z0-9_-]{43}$/)
    expect(r.body.expires_at).toBe(new Date(h.clock.now() + 86_400_000).toISOString())
    expect(JSON.parse(audits(h, 'admin.user.reset_password')[0]!.detail!)).toEqual({ delivery: 'link' })
    const token = new URL(r.body.link, 'http://x').searchParams.get('token')!
    const anon = h.client({ ip: '198.51.100.20' })
    const done = await anon.post('/api/v1/auth/reset-password', { token, new_password: 'a brand new password' })
    expect([done.status, done.body]).toEqual([200, { account_status: 'active' }])
    expect((await anon.post('/api/v1/auth/reset-password', { token, new_password: 'yet another password' })).body.code).toBe('invalid_token')
    expect((await anon.post('/api/v1/auth/login', { email: 'alice@example.com', password: 'a brand new password' })).status).toBe(200)
    // A disabled account's reset says so: the new password opens it only once it is active again
    // (the page promised a login that was then refused).
    expect((await A.post(`/api/v1/admin/users/${alice.id}/status`, { status: 'disabled' })).status).toBe(200)
    const again = new URL((await A.post(`/api/v1/admin/users/${alice.id}/reset-password`)).body.link, 'http://x').searchParams.get('token')!
    expect((await anon.post('/api/v1/auth/reset-password', { token: again, new_password: 'the third password' })).body).toEqual({ account_status: 'disabled' })
  })

  test("changing an account's address voids the reset link sent to the old one (its holder took the account)", async () => {
    const { A, alice, h } = await setup()
    const link = (await A.post(`/api/v1/admin/users/${alice.id}/reset-password`)).body.link
    const token = new URL(link, 'http://x').searchParams.get('token')!
    expect((await A.patch(`/api/v1/admin/users/${alice.id}`, { email: 'alice@new.example' })).status).toBe(200)
    const r = await h.client({ ip: '198.51.100.21' }).post('/api/v1/auth/reset-password', { token, new_password: 'taken over at last' })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('invalid_token')
  })

  test('with mail the link goes out by mail only', async () => {
    const { h, A, alice } = await setup({ mailEnabled: true })
    const r = await A.post(`/api/v1/admin/users/${alice.id}/reset-password`)
    expect(r.body).toEqual({ delivery: 'mail', expires_at: new Date(h.clock.now() + 86_400_000).toISOString() })
    expect(mails(h)).toEqual([{ template: 'password-reset', to: 'alice@example.com' }])
    expect(h.ctx.db.select().from(actionTokens).where(eq(actionTokens.userId, alice.id)).all()).toHaveLength(1)
  })
})

describe('deleting a user (GDPR cascade)', () => {
  test('owned pools go with their nodes detached, other memberships, tokens, sessions and the row; the answer counts it', async () => {
    const { h, A, admin, alice } = await setup({ mailEnabled: true })
    const a = sessionClient(h, alice.id)
    sessionClient(h, alice.id)
    const token = tokenClient(h, alice.id)
    tokenClient(h, alice.id)
    await token.delete(`/api/v1/api-tokens/${token.tokenId}`) // already revoked: not counted again
    const own = (await a.post('/api/v1/pools', { name: 'Alice Lab' })).body.id as string
    const other = (await A.post('/api/v1/admin/pools', { name: 'Shared', visibility: 'public', open_join: true })).body.id as string
    expect((await a.post(`/api/v1/pools/${other}/join`)).status).toBe(200)
    const ownNode = attachNode(h, own, alice.id)
    const sharedNode = attachNode(h, other, alice.id)
    issueActionToken(h.ctx.db, h.clock.now(), alice.id, 'reset')
    h.ctx.db.insert(loginFailures).values({ key: 'account:alice@example.com', count: 2, lastAt: h.clock.now() }).run()
    h.ctx.mail.enqueue(h.ctx.db, 'password-changed', 'alice@example.com', { name: 'Alice' })
    expect((await A.get(`/api/v1/admin/users?q=alice`)).body.items[0]).toMatchObject({ pool_count: 2, node_count: 2 })

    const r = await A.delete(`/api/v1/admin/users/${alice.id}`)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ deleted: true, pools_deleted: 1, memberships_removed: 1, api_tokens_revoked: 1, sessions_removed: 2, nodes_detached: 2 })

    const db = h.ctx.db
    expect(userRow(h, alice.id)).toBeUndefined()
    expect(db.select().from(pools).where(eq(pools.id, own)).get()).toBeUndefined()
    expect(db.select().from(poolMembers).where(eq(poolMembers.userId, alice.id)).all()).toEqual([])
    expect(db.select().from(sessions).where(eq(sessions.userId, alice.id)).all()).toEqual([])
    expect(db.select().from(apiTokens).where(eq(apiTokens.userId, alice.id)).all()).toEqual([])
    expect(db.select().from(actionTokens).where(eq(actionTokens.userId, alice.id)).all()).toEqual([])
    expect(db.select().from(loginFailures).all()).toEqual([])
    expect(mails(h)).toEqual([])
    // Both nodes are detached but still known: the one of the deleted pool, and the one in the
    // shared pool, which left it with the membership (it used to stay there, ownerless, receiving
    // that pool's jobs and chats).
    for (const node of [ownNode, sharedNode]) {
      expect(db.select().from(fellows).where(eq(fellows.id, node)).get()).toBeDefined()
      expect(db.select().from(poolNodes).where(eq(poolNodes.fellowId, node)).get()).toBeUndefined()
    }
    expect(h.services.fellows.signals.takePending(sharedNode).map((x) => [x.signal, x.payload])).toEqual([['STOP', { reason: 'the account that added this fellow was deleted' }]])
    expect((await a.get('/api/v1/auth/me')).status).toBe(401)
    // Pool deletion is logged before the account deletion, which carries the counts.
    const kinds = db.select().from(auditLog).all().map((e) => e.kind)
    expect(kinds.indexOf('pool.delete')).toBeLessThan(kinds.indexOf('admin.user.delete'))
    const entry = audits(h, 'admin.user.delete')[0]!
    expect(entry).toMatchObject({ actorUserId: admin.id, clientIp: '203.0.113.7', targetId: alice.id })
    expect(JSON.parse(entry.detail!)).toEqual({ pools_deleted: 1, memberships_removed: 1, api_tokens_revoked: 1, sessions_removed: 2, nodes_detached: 2 })
    expect((await A.delete(`/api/v1/admin/users/${alice.id}`)).status).toBe(404)
  })

  test('the last active admin cannot be deleted: 409 and nothing is touched', async () => {
    const { h, A, admin } = await setup()
    const pool = (await A.post('/api/v1/admin/pools', { name: 'Admin pool' })).body.id as string
    const node = attachNode(h, pool, admin.id)
    const before = h.ctx.db.select().from(auditLog).all().length
    const r = await A.delete(`/api/v1/admin/users/${admin.id}`)
    expect([r.status, r.body.code]).toEqual([409, 'last_admin'])
    expect(userRow(h, admin.id)).toBeDefined()
    expect(h.ctx.db.select().from(pools).where(eq(pools.id, pool)).get()).toBeDefined()
    expect(h.ctx.db.select().from(poolNodes).where(eq(poolNodes.fellowId, node)).get()).toBeDefined()
    expect(h.ctx.db.select().from(auditLog).all()).toHaveLength(before)
    expect((await A.get('/api/v1/auth/me')).status).toBe(200)
  })

  test('an admin may delete another admin, and a disabled admin is not the last one', async () => {
    const { h, A } = await setup()
    const other = await seedUser(h, 'other-admin@example.com', { role: 'admin', status: 'disabled' })
    expect((await A.delete(`/api/v1/admin/users/${other.id}`)).body.deleted).toBe(true)
  })
})

describe("an admin's own account (issue 26)", () => {
  test("with an admin's API token, resetting, disabling, deleting or changing the role or email of one's own account answers 403 session_required and changes nothing", async () => {
    const { h, admin, alice } = await setup()
    await seedUser(h, 'second-admin@example.com', { role: 'admin' }) // so last-admin protection is not what refuses
    const T = tokenClient(h, admin.id, { ip: '203.0.113.8' })
    const before = userRow(h, admin.id)
    const auditCount = h.ctx.db.select().from(auditLog).all().length
    const refused = [
      await T.post(`/api/v1/admin/users/${admin.id}/reset-password`),
      await T.post(`/api/v1/admin/users/${admin.id}/status`, { status: 'disabled' }),
      await T.delete(`/api/v1/admin/users/${admin.id}`),
      await T.patch(`/api/v1/admin/users/${admin.id}`, { role: 'user' }),
      await T.patch(`/api/v1/admin/users/${admin.id}`, { email: 'attacker@example.net' }),
    ]
    expect(refused.map((r) => [r.status, r.body.code])).toEqual(refused.map(() => [403, 'session_required']))
    // No reset link was minted, and the row and the audit log are as they were.
    expect(h.ctx.db.select().from(actionTokens).where(eq(actionTokens.userId, admin.id)).all()).toEqual([])
    expect(userRow(h, admin.id)).toEqual(before)
    expect(h.ctx.db.select().from(auditLog).all()).toHaveLength(auditCount)
    // The token still administers other people, and may rename its own admin.
    expect((await T.post(`/api/v1/admin/users/${alice.id}/reset-password`)).status).toBe(200)
    expect((await T.patch(`/api/v1/admin/users/${admin.id}`, { display_name: 'Ada' })).status).toBe(200)
  })

  test('with a browser session an admin may still reset and demote their own account', async () => {
    const { h, A, admin } = await setup()
    await seedUser(h, 'second-admin@example.com', { role: 'admin' })
    const r = await A.post(`/api/v1/admin/users/${admin.id}/reset-password`)
    expect([r.status, r.body.delivery]).toEqual([200, 'link'])
    expect((await A.patch(`/api/v1/admin/users/${admin.id}`, { role: 'user' })).body.role).toBe('user')
  })
})
