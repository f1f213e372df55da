import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { makeHarness, seedUser, sessionClient, tokenClient, type Harness } from '../helpers/harness'
import { fellows, mailOutbox, poolMembers, poolNodes, pools, roleLimits, users } from '../../src/db/schema'
import { issueActionToken } from '../../src/accounts/service'
import { ensureDefaultPool } from '../../src/pools/service'
import { newId } from '../../src/crypto'
import { DAY_MS } from '../../src/time'

const all: Harness[] = []
function harness(opts: { mailEnabled?: boolean; env?: Record<string, string> } = {}) {
  const h = makeHarness(opts.env ?? {}, opts)
  all.push(h)
  return h
}
afterAll(() => all.forEach((h) => h.close()))

async function setup(opts: { mailEnabled?: boolean; env?: Record<string, string> } = {}) {
  const h = harness(opts)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const alice = await seedUser(h, 'alice@example.com')
  const bob = await seedUser(h, 'bob@example.com')
  return { h, admin, alice, bob, A: sessionClient(h, admin.id), a: sessionClient(h, alice.id), b: sessionClient(h, bob.id) }
}

function attachNode(h: Harness, poolId: string): string {
  const id = newId()
  h.ctx.db.insert(fellows).values({ id, hostname: 'gpu-box', tokenHash: `h-${id}`, state: 'active', registeredAt: h.clock.now() }).run()
  h.ctx.db.insert(poolNodes).values({ fellowId: id, poolId, attachedAt: h.clock.now() }).run()
  return id
}

const PENDING_CAP = 'SVC_MAX_PENDING_INVITES_PER_USER'
const ADDRESS_CAP = 'SVC_MAX_INVITE_MAILS_PER_ADDRESS'

function markVerified(h: Harness, userId: string) {
  h.ctx.db.update(users).set({ emailVerifiedAt: h.clock.now() }).where(eq(users.id, userId)).run()
}

/** The token of an invite link (`/dashboard?invite=ID&token=T`), as the dashboard reads it. */
function linkToken(link: string): string {
  return new URL(link).searchParams.get('token')!
}

const inviteMails = (h: Harness) => h.ctx.db.select().from(mailOutbox).where(eq(mailOutbox.template, 'pool-invite')).all()
/** What a working SMTP server does at once (no sender runs here): the waiting mail went out. */
const mailsGoOut = (h: Harness) => h.ctx.db.update(mailOutbox).set({ status: 'sent', payload: null }).where(eq(mailOutbox.status, 'pending')).run()

const PLAN = 'Your plan allows 1 pool with up to 2 nodes each.'

describe('plans and quota', () => {
  test('the seeded plans: a user gets 1 private pool with 2 nodes, an admin is unlimited', async () => {
    const { A, a } = await setup()
    expect((await a.get('/api/v1/pools/limits')).body).toEqual({
      role: 'user',
      max_pools: 1,
      max_nodes_per_pool: 2,
      allowed_visibilities: ['private'],
      pools_owned: 0,
      plan: PLAN,
    })
    const admin = (await A.get('/api/v1/pools/limits')).body
    expect(admin).toMatchObject({ max_pools: null, max_nodes_per_pool: null, allowed_visibilities: ['public', 'private'] })
    expect(admin.plan).toBe('Your plan allows any number of pools with any number of nodes each.')
  })

  test('a user creates one private pool (owner, node limit snapshotted); the second is refused with the plan sentence', async () => {
    const { a, alice } = await setup()
    const r = await a.post('/api/v1/pools', { name: 'Alice Lab', description: 'GPUs in the basement' })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({ name: 'Alice Lab', slug: 'alice-lab', visibility: 'private', node_limit: 2, open_join: false, owner_user_id: alice.id, my_role: 'owner', member_count: 1, node_count: 0 })
    const second = await a.post('/api/v1/pools', { name: 'Another' })
    expect(second.status).toBe(403)
    expect(second.body.code).toBe('quota_exceeded')
    expect(second.body.detail).toBe(PLAN)
  })

  test('a user cannot create a public pool or choose a node limit', async () => {
    const { a } = await setup()
    const pub = await a.post('/api/v1/pools', { name: 'Open', visibility: 'public' })
    expect(pub.status).toBe(403)
    expect(pub.body.detail).toStartWith(PLAN)
    const limited = await a.post('/api/v1/pools', { name: 'Big', node_limit: 100 })
    // Like every 422: the field named, in `errors` too (a form places it beside the field).
    expect([limited.status, limited.body.detail, limited.body.errors]).toEqual([422, 'body /node_limit: set by your plan; only an admin can change it.', [{ path: '/node_limit', message: 'set by your plan; only an admin can change it' }]])
  })

  test('role_limits are data: an edit applies at once, and existing pools keep their snapshot', async () => {
    const { h, a } = await setup()
    const first = await a.post('/api/v1/pools', { name: 'One' })
    h.ctx.db.update(roleLimits).set({ maxPools: 2, maxNodesPerPool: 5 }).where(eq(roleLimits.role, 'user')).run()
    const second = await a.post('/api/v1/pools', { name: 'Two' })
    expect(second.status).toBe(201)
    expect(second.body.node_limit).toBe(5)
    expect((await a.get(`/api/v1/pools/${first.body.id}`)).body.node_limit).toBe(2)
    expect((await a.get('/api/v1/pools/limits')).body.plan).toBe('Your plan allows 2 pools with up to 5 nodes each.')
  })

  test('admins edit plans through the API', async () => {
    const { A, a } = await setup()
    const r = await A.patch('/api/v1/admin/role-limits/user', { max_pools: 3 })
    expect(r.status).toBe(200)
    expect(r.body.max_pools).toBe(3)
    expect((await a.patch('/api/v1/admin/role-limits/user', { max_pools: 99 })).status).toBe(403)
    expect((await A.patch('/api/v1/admin/role-limits/nobody', { max_pools: 1 })).status).toBe(404)
    // Bounded like a pool's node_limit: 1e300 made every new pool's node_limit 1e+300.
    for (const body of [{ max_pools: 1e300 }, { max_nodes_per_pool: 1e300 }, { max_nodes_per_pool: 9007199254740993 }, { max_pools: 1_000_001 }]) {
      const refused = await A.patch('/api/v1/admin/role-limits/user', body)
      expect(refused.status).toBe(422)
    }
    expect((await A.patch('/api/v1/admin/role-limits/user', { max_pools: 1_000_000, max_nodes_per_pool: 1_000_000 })).status).toBe(200)
  })

  test('two concurrent creations by a plain user do not both pass the 1-pool limit', async () => {
    const { h, alice } = await setup()
    const c = tokenClient(h, alice.id)
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => c.post('/api/v1/pools', { name: `Race ${i}` })))
    expect(results.map((r) => r.status).sort()).toEqual([201, 403, 403, 403, 403, 403, 403, 403])
    expect(h.ctx.db.select().from(pools).where(eq(pools.ownerUserId, alice.id)).all()).toHaveLength(1)
  })
})

describe('pools: slugs, visibility and edits', () => {
  test('slugs are generated, unique, URL-safe, and fixed after creation', async () => {
    const { A } = await setup()
    const p1 = await A.post('/api/v1/admin/pools', { name: 'Ünïcode  Pool!!', visibility: 'public' })
    const p2 = await A.post('/api/v1/admin/pools', { name: 'Unicode Pool', visibility: 'public' })
    expect(p1.body.slug).toBe('unicode-pool')
    expect(p2.body.slug).toBe('unicode-pool-2')
    const taken = await A.post('/api/v1/admin/pools', { name: 'x', slug: 'unicode-pool' })
    expect(taken.status).toBe(409)
    expect(taken.body.code).toBe('slug_taken')
    expect((await A.post('/api/v1/admin/pools', { name: 'x', slug: 'Not OK' })).status).toBe(422)
    const patch = await A.patch(`/api/v1/admin/pools/${p1.body.id}`, { slug: 'new-slug' })
    expect(patch.status).toBe(422)
  })

  test('public pools are listed to everyone; private ones only to members and admins (others get 404)', async () => {
    const { A, a, b } = await setup()
    const pub = await A.post('/api/v1/admin/pools', { name: 'Public', visibility: 'public' })
    const priv = await a.post('/api/v1/pools', { name: 'Private' })
    const bobSees = (await b.get('/api/v1/pools')).body.items.map((p: { name: string }) => p.name)
    expect(bobSees).toEqual(['Public'])
    expect((await b.get(`/api/v1/pools/${priv.body.id}`)).status).toBe(404)
    expect((await b.get(`/api/v1/pools/${pub.body.id}`)).body.my_role).toBeNull()
    const adminSees = (await A.get('/api/v1/admin/pools')).body.items.map((p: { name: string }) => p.name)
    expect(adminSees).toEqual(['Public', 'Private'])
    expect((await a.get('/api/v1/pools')).body.items.find((p: { id: string }) => p.id === priv.body.id).my_role).toBe('owner')
    expect((await a.get('/api/v1/pools?mine=true')).body.items).toHaveLength(1)
  })

  test('the owner edits name, description and open-join; only an admin changes the node limit', async () => {
    const { A, a, b } = await setup()
    const p = await a.post('/api/v1/pools', { name: 'Mine' })
    const r = await a.patch(`/api/v1/pools/${p.body.id}`, { name: 'Renamed', description: 'new' })
    expect(r.body).toMatchObject({ name: 'Renamed', description: 'new', slug: 'mine' })
    expect((await a.patch(`/api/v1/pools/${p.body.id}`, { node_limit: 50 })).status).toBe(403)
    expect((await a.patch(`/api/v1/pools/${p.body.id}`, { visibility: 'public' })).body.code).toBe('quota_exceeded')
    expect((await b.patch(`/api/v1/pools/${p.body.id}`, { name: 'hijack' })).status).toBe(404)
    expect((await A.patch(`/api/v1/admin/pools/${p.body.id}`, { node_limit: null })).body.node_limit).toBeNull()
    expect((await a.patch(`/api/v1/pools/${p.body.id}`, {})).status).toBe(422)
  })
})

describe('pool deletion', () => {
  test('refused with 409 while nodes are attached; force=true detaches them in one go', async () => {
    const { h, A, a } = await setup()
    const p = await a.post('/api/v1/pools', { name: 'Busy' })
    const fellowId = attachNode(h, p.body.id)
    const refused = await a.delete(`/api/v1/pools/${p.body.id}`)
    expect(refused.status).toBe(409)
    expect(refused.body.code).toBe('pool_has_nodes')
    expect((await a.get(`/api/v1/pools/${p.body.id}`)).status).toBe(200)
    const admin = await A.delete(`/api/v1/admin/pools/${p.body.id}`)
    expect(admin.status).toBe(409)
    const forced = await A.delete(`/api/v1/admin/pools/${p.body.id}?force=true`)
    expect(forced.body).toEqual({ deleted: true, detached_nodes: 1 })
    expect(h.ctx.db.select().from(poolNodes).all()).toHaveLength(0)
    expect(h.ctx.db.select().from(fellows).where(eq(fellows.id, fellowId)).get()).toBeDefined()
    expect(h.ctx.db.select().from(poolMembers).where(eq(poolMembers.poolId, p.body.id)).all()).toHaveLength(0)
  })

  test('a member who is not the owner cannot delete; an empty pool deletes without force', async () => {
    const { A, a, b, bob } = await setup()
    const p = await A.post('/api/v1/admin/pools', { name: 'Team', visibility: 'public', open_join: true })
    await b.post(`/api/v1/pools/${p.body.id}/join`)
    expect((await b.delete(`/api/v1/pools/${p.body.id}`)).status).toBe(403)
    expect((await a.delete(`/api/v1/pools/${p.body.id}`)).status).toBe(403)
    expect((await A.delete(`/api/v1/pools/${p.body.id}`)).status).toBe(200)
    expect(bob.id).toBeTruthy()
  })
})

describe('invites', () => {
  test('owner invites by email; the invitee with a verified address sees it and accepts by id (email matched case-insensitively)', async () => {
    const { h, a, bob } = await setup({ mailEnabled: true })
    markVerified(h, bob.id)
    const p = await a.post('/api/v1/pools', { name: 'Invite Only' })
    const inv = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'BOB@example.com' })
    expect(inv.status).toBe(201)
    expect(inv.body).toMatchObject({ pool_id: p.body.id, email: 'bob@example.com', status: 'pending', pool_name: 'Invite Only' })
    expect(h.ctx.db.select().from(mailOutbox).all().map((m) => m.template)).toEqual(['pool-invite'])
    const b = sessionClient(h, bob.id)
    const mine = await b.get('/api/v1/pools/invites/mine')
    expect(mine.body.items.map((i: { id: string }) => i.id)).toEqual([inv.body.id])
    const acc = await b.post(`/api/v1/pools/invites/${inv.body.id}/accept`)
    expect(acc.status).toBe(200)
    expect((await b.get(`/api/v1/pools/${p.body.id}`)).body.my_role).toBe('member')
    expect((await b.get('/api/v1/pools/invites/mine')).body.items).toEqual([])
    expect((await b.post(`/api/v1/pools/invites/${inv.body.id}/accept`)).status).toBe(404)
  })

  test('accepting with a different email is refused (403 invite_email_mismatch)', async () => {
    const { h, a } = await setup()
    const carol = await seedUser(h, 'carol@example.com')
    const p = await a.post('/api/v1/pools', { name: 'P' })
    const inv = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    const r = await sessionClient(h, carol.id).post(`/api/v1/pools/invites/${inv.body.id}/accept`)
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('invite_email_mismatch')
  })

  test('re-inviting refreshes the pending invite; it expires after 7 days', async () => {
    const { h, a, b } = await setup()
    const p = await a.post('/api/v1/pools', { name: 'P' })
    const first = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    h.clock.advance(6 * DAY_MS)
    const again = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    expect(again.status).toBe(200)
    expect(again.body.id).toBe(first.body.id)
    expect(Date.parse(again.body.expires_at)).toBe(h.clock.now() + 7 * DAY_MS)
    h.clock.advance(7 * DAY_MS)
    expect((await b.get('/api/v1/pools/invites/mine')).body.items).toEqual([])
    const late = await b.post(`/api/v1/pools/invites/${first.body.id}/accept`)
    expect(late.status).toBe(410)
  })

  test('only the owner or an admin may invite; inviting an existing member is a conflict', async () => {
    const { A, a, b } = await setup()
    const p = await A.post('/api/v1/admin/pools', { name: 'Pub', visibility: 'public', open_join: true })
    await b.post(`/api/v1/pools/${p.body.id}/join`)
    expect((await b.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'x@example.com' })).status).toBe(403)
    const priv = await a.post('/api/v1/pools', { name: 'Priv' })
    expect((await b.post(`/api/v1/pools/${priv.body.id}/invites`, { email: 'x@example.com' })).status).toBe(404)
    expect((await A.post(`/api/v1/pools/${priv.body.id}/invites`, { email: 'x@example.com' })).status).toBe(201)
    expect((await A.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })).status).toBe(409)
  })
})

describe('invite mail is bounded (issue 26, item 6)', () => {
  test('inviting an address again while its invite is pending queues no second mail: 200 with the same invite and link', async () => {
    const { h, a } = await setup({ mailEnabled: true })
    const p = await a.post('/api/v1/pools', { name: 'Phish "Urgent: verify your bank"' })
    const first = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    expect(first.status).toBe(201)
    expect(first.body.invite_link).toStartWith(`${h.cfg.baseUrl}/dashboard?invite=${first.body.id}&token=`)
    for (let i = 0; i < 20; i++) {
      const again = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'BOB@example.com' })
      expect([again.status, again.body.id, again.body.invite_link]).toEqual([200, first.body.id, first.body.invite_link])
    }
    expect(inviteMails(h).map((m) => m.toEmail)).toEqual(['bob@example.com'])
    // Once it has expired, inviting again is a new invitation with a new mail.
    h.clock.advance(8 * DAY_MS)
    const renewed = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    expect([renewed.status, renewed.body.id]).toEqual([201, first.body.id])
    expect(Date.parse(renewed.body.expires_at)).toBe(h.clock.now() + 7 * DAY_MS)
    expect(inviteMails(h)).toHaveLength(2)
  })

  test(`a person with ${PENDING_CAP} pending invites is refused the next with 409 invite_limit; an accepted or expired one frees a place; admins are not capped`, async () => {
    const { h, A, a, bob } = await setup({ mailEnabled: true, env: { [PENDING_CAP]: '2' } })
    markVerified(h, bob.id)
    const p = await a.post('/api/v1/pools', { name: 'P' })
    const inv = (email: string) => a.post(`/api/v1/pools/${p.body.id}/invites`, { email })
    expect((await inv('bob@example.com')).status).toBe(201)
    expect((await inv('x1@example.com')).status).toBe(201)
    const refused = await inv('x2@example.com')
    expect(refused.status).toBe(409)
    expect(refused.headers.get('content-type')).toContain('application/problem+json')
    expect(refused.body).toMatchObject({ code: 'invite_limit', limit: 2 })
    expect(inviteMails(h)).toHaveLength(2)
    // Asking again for a pending one is still answered: it adds nothing.
    expect((await inv('x1@example.com')).status).toBe(200)
    const bobs = (await sessionClient(h, bob.id).get('/api/v1/pools/invites/mine')).body.items
    expect((await sessionClient(h, bob.id).post(`/api/v1/pools/invites/${bobs[0].id}/accept`)).status).toBe(200)
    expect((await inv('x2@example.com')).status).toBe(201)
    expect((await inv('x3@example.com')).status).toBe(409)
    h.clock.advance(7 * DAY_MS + 1)
    expect((await inv('x3@example.com')).status).toBe(201)
    for (let i = 0; i < 4; i++) expect((await A.post(`/api/v1/pools/${p.body.id}/invites`, { email: `y${i}@example.com` })).status).toBe(201)
  })

  test('withdrawing invites frees pending places, not mails: invite and withdraw mails at most twice the cap a day (it mailed without end)', async () => {
    const { h, a } = await setup({ mailEnabled: true, env: { [PENDING_CAP]: '2' } })
    const p = await a.post('/api/v1/pools', { name: 'Claim your prize at http://evil.example/win' })
    const answers: number[] = []
    for (let i = 0; i < 8; i++) {
      const r = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: `target${i}@example.com` })
      answers.push(r.status)
      mailsGoOut(h)
      if (r.status === 201) expect((await a.delete(`/api/v1/pools/${p.body.id}/invites/${r.body.id}`)).status).toBe(204)
      else expect(r.body).toMatchObject({ code: 'invite_limit', limit: 4 })
    }
    expect(answers).toEqual([201, 201, 201, 201, 409, 409, 409, 409])
    expect(inviteMails(h)).toHaveLength(4)
    h.clock.advance(DAY_MS + 1)
    expect((await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'next-day@example.com' })).status).toBe(201)
  })

  test(`an address gets at most ${ADDRESS_CAP} invite mails per 24 hours from all pools, also across deleting and re-creating a pool (429 with Retry-After)`, async () => {
    const { h, A, a } = await setup({ mailEnabled: true, env: { [ADDRESS_CAP]: '2' } })
    const cycle = async () => {
      const p = await a.post('/api/v1/pools', { name: 'Again' })
      const r = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'victim@example.com' })
      mailsGoOut(h)
      expect((await a.delete(`/api/v1/pools/${p.body.id}`)).status).toBe(200)
      return r
    }
    expect((await cycle()).status).toBe(201)
    h.clock.advance(3600_000)
    expect((await cycle()).status).toBe(201)
    const third = await cycle()
    expect(third.status).toBe(429)
    expect(third.body.code).toBe('rate_limited')
    expect(third.headers.get('retry-after')).toBe(String(23 * 3600))
    // Everyone is held to it, admins included: the cap protects the person receiving the mail.
    const adminPool = await A.post('/api/v1/admin/pools', { name: 'Admin' })
    expect((await A.post(`/api/v1/pools/${adminPool.body.id}/invites`, { email: 'victim@example.com' })).status).toBe(429)
    expect((await A.post(`/api/v1/pools/${adminPool.body.id}/invites`, { email: 'someone-else@example.com' })).status).toBe(201)
    expect(inviteMails(h).filter((m) => m.toEmail === 'victim@example.com')).toHaveLength(2)
    h.clock.advance(23 * 3600_000 + 1)
    expect((await cycle()).status).toBe(201)
  })
})

describe('invites go to a verified address or through their link (issue 26, item 9)', () => {
  test('an account whose address is not verified neither sees nor accepts an invite by id; the link in the invite accepts it', async () => {
    const { h, a, bob } = await setup({ mailEnabled: true })
    const p = await a.post('/api/v1/pools', { name: 'Private Lab' })
    const inv = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    // Whoever registered bob@example.com first, without proving the mailbox, is this caller.
    const squatter = sessionClient(h, bob.id)
    expect((await squatter.get('/api/v1/pools/invites/mine')).body.items).toEqual([])
    const byId = await squatter.post(`/api/v1/pools/invites/${inv.body.id}/accept`)
    expect(byId.status).toBe(403)
    expect(byId.body.code).toBe('email_not_verified')
    const forged = await squatter.post(`/api/v1/pools/invites/${inv.body.id}/accept`, { token: 'A'.repeat(43) })
    expect([forged.status, forged.body.code]).toEqual([400, 'invalid_token'])
    expect((await squatter.get(`/api/v1/pools/${p.body.id}`)).status).toBe(404)
    // The mailbox's owner holds the link (from the mail, or from the inviter): it works.
    const ok = await squatter.post(`/api/v1/pools/invites/${inv.body.id}/accept`, { token: linkToken(inv.body.invite_link) })
    expect(ok.status).toBe(200)
    expect((await squatter.get(`/api/v1/pools/${p.body.id}`)).body.my_role).toBe('member')
  })

  test("an invite link works only for its own invite and the invited address", async () => {
    const { h, a, bob } = await setup()
    const carol = await seedUser(h, 'carol@example.com', { emailVerified: true })
    const p = await a.post('/api/v1/pools', { name: 'P' })
    const toBob = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    const toCarol = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'carol@example.com' })
    const bobToken = linkToken(toBob.body.invite_link)
    const c = sessionClient(h, carol.id)
    const stolen = await c.post(`/api/v1/pools/invites/${toBob.body.id}/accept`, { token: bobToken })
    expect([stolen.status, stolen.body.code]).toEqual([403, 'invite_email_mismatch'])
    const swapped = await sessionClient(h, bob.id).post(`/api/v1/pools/invites/${toCarol.body.id}/accept`, { token: bobToken })
    expect([swapped.status, swapped.body.code]).toEqual([403, 'invite_email_mismatch'])
    const other = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob2@example.com' })
    const bob2 = await seedUser(h, 'bob2@example.com')
    const wrongInvite = await sessionClient(h, bob2.id).post(`/api/v1/pools/invites/${other.body.id}/accept`, { token: bobToken })
    expect([wrongInvite.status, wrongInvite.body.code]).toEqual([400, 'invalid_token'])
    expect((await c.post(`/api/v1/pools/invites/${toCarol.body.id}/accept`, { token: 'x', extra: 1 })).status).toBe(422)
  })

  test('confirming the address through the verify link lets an account accept by id; an admin changing the address takes that back', async () => {
    const { h, A, a } = await setup({ mailEnabled: true, env: { SVC_REQUIRE_EMAIL_VERIFICATION: '1' } })
    const c = h.client({ ip: '198.51.100.77' })
    const reg = await c.post('/api/v1/auth/register', { email: 'dana@example.com', password: 'a long password' })
    expect(reg.body.user.status).toBe('unverified')
    const p = await a.post('/api/v1/pools', { name: 'P' })
    const inv = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'dana@example.com' })
    const token = issueActionToken(h.ctx.db, h.clock.now(), reg.body.user.id, 'verify')
    expect((await c.post('/api/v1/auth/verify-email', { token })).body).toEqual({ status: 'active' })
    expect((await c.post('/api/v1/auth/login', { email: 'dana@example.com', password: 'a long password' })).status).toBe(200)
    expect((await c.get('/api/v1/pools/invites/mine')).body.items.map((i: { id: string }) => i.id)).toEqual([inv.body.id])

    const p2 = await A.post('/api/v1/admin/pools', { name: 'Second' })
    await A.post(`/api/v1/pools/${p2.body.id}/invites`, { email: 'dana2@example.com' })
    expect((await A.patch(`/api/v1/admin/users/${reg.body.user.id}`, { email: 'dana2@example.com' })).status).toBe(200)
    expect((await c.get('/api/v1/pools/invites/mine')).body.items).toEqual([])
    expect((await c.post(`/api/v1/pools/invites/${inv.body.id}/accept`)).body.code).toBe('invite_email_mismatch')
  })
})

describe('join requests and membership', () => {
  test('public + open join joins at once; public without it files a request the owner approves; private is 404', async () => {
    const { A, a, b, bob } = await setup()
    const open = await A.post('/api/v1/admin/pools', { name: 'Open', visibility: 'public', open_join: true })
    const closed = await A.post('/api/v1/admin/pools', { name: 'Closed', visibility: 'public' })
    const priv = await a.post('/api/v1/pools', { name: 'Priv' })
    expect((await b.post(`/api/v1/pools/${open.body.id}/join`)).body).toEqual({ status: 'joined' })
    expect((await b.post(`/api/v1/pools/${open.body.id}/join`)).body).toEqual({ status: 'member' })
    const req = await b.post(`/api/v1/pools/${closed.body.id}/join`)
    expect(req.status).toBe(202)
    expect(req.body).toEqual({ status: 'pending' })
    expect((await b.post(`/api/v1/pools/${closed.body.id}/join`)).status).toBe(202)
    expect((await b.get(`/api/v1/pools/${closed.body.id}/join-requests`)).status).toBe(403)
    const list = await A.get(`/api/v1/pools/${closed.body.id}/join-requests`)
    expect(list.body.items.map((r: { user_id: string }) => r.user_id)).toEqual([bob.id])
    expect((await A.post(`/api/v1/pools/${closed.body.id}/join-requests/${bob.id}/approve`)).body).toEqual({ status: 'joined' })
    expect((await b.get(`/api/v1/pools/${closed.body.id}`)).body.my_role).toBe('member')
    expect((await A.post(`/api/v1/pools/${closed.body.id}/join-requests/${bob.id}/approve`)).status).toBe(404)
    expect((await b.post(`/api/v1/pools/${priv.body.id}/join`)).status).toBe(404)
  })

  test('a former member who asks again files a new request the owner sees and can approve (it was swallowed)', async () => {
    const { A, b, bob } = await setup()
    const closed = await A.post('/api/v1/admin/pools', { name: 'Closed', visibility: 'public' })
    const requests = async () => (await A.get(`/api/v1/pools/${closed.body.id}/join-requests`)).body.items.map((r: { user_id: string }) => r.user_id)
    await b.post(`/api/v1/pools/${closed.body.id}/join`)
    expect((await A.post(`/api/v1/pools/${closed.body.id}/join-requests/${bob.id}/approve`)).status).toBe(200)
    expect((await b.delete(`/api/v1/pools/${closed.body.id}/members/${bob.id}`)).status).toBe(204)
    expect(await requests()).toEqual([])
    expect((await b.post(`/api/v1/pools/${closed.body.id}/join`)).body).toEqual({ status: 'pending' })
    expect(await requests()).toEqual([bob.id])
    expect((await A.post(`/api/v1/pools/${closed.body.id}/join-requests/${bob.id}/approve`)).body).toEqual({ status: 'joined' })
    expect((await b.get(`/api/v1/pools/${closed.body.id}`)).body.my_role).toBe('member')
  })

  test('members leave; the owner removes others; the owner cannot be removed (409)', async () => {
    const { h, A, a, alice, bob } = await setup()
    const carol = await seedUser(h, 'carol@example.com')
    const p = await A.post('/api/v1/admin/pools', { name: 'Team', visibility: 'public', open_join: true })
    const b = sessionClient(h, bob.id)
    const c = sessionClient(h, carol.id)
    await b.post(`/api/v1/pools/${p.body.id}/join`)
    await c.post(`/api/v1/pools/${p.body.id}/join`)
    await a.post(`/api/v1/pools/${p.body.id}/join`)
    expect((await c.delete(`/api/v1/pools/${p.body.id}/members/${bob.id}`)).status).toBe(403)
    expect((await b.delete(`/api/v1/pools/${p.body.id}/members/${bob.id}`)).status).toBe(204)
    expect((await A.delete(`/api/v1/pools/${p.body.id}/members/${carol.id}`)).status).toBe(204)
    const members = (await a.get(`/api/v1/pools/${p.body.id}/members`)).body.items.map((m: { user_id: string }) => m.user_id)
    expect(members).toContain(alice.id)
    expect(members).not.toContain(bob.id)
    const owner = (await A.get(`/api/v1/pools/${p.body.id}`)).body.owner_user_id
    const r = await A.delete(`/api/v1/pools/${p.body.id}/members/${owner}`)
    expect(r.status).toBe(409)
    expect(r.body.code).toBe('owner_cannot_leave')
    expect((await b.delete(`/api/v1/pools/${p.body.id}/members/${bob.id}`)).status).toBe(404)
  })
})

describe('pool scoping', () => {
  test("a member of pool A asking for pool B's resources gets 404, not 403", async () => {
    const { h, A, a, b, bob } = await setup()
    const poolA = await b.post('/api/v1/pools', { name: 'Bob A' })
    const poolB = await a.post('/api/v1/pools', { name: 'Alice B' })
    expect(poolA.status).toBe(201)
    for (const path of ['', '/members', '/metrics', '/events', '/metrics/history', '/join-requests']) {
      const r = await b.get(`/api/v1/pools/${poolB.body.id}${path}`)
      expect([path, r.status]).toEqual([path, 404])
    }
    expect((await b.patch(`/api/v1/pools/${poolB.body.id}`, { name: 'x' })).status).toBe(404)
    expect((await b.delete(`/api/v1/pools/${poolB.body.id}`)).status).toBe(404)
    expect((await b.post(`/api/v1/pools/${poolB.body.id}/invites`, { email: 'bob@example.com' })).status).toBe(404)
    expect((await b.delete(`/api/v1/pools/${poolB.body.id}/members/${bob.id}`)).status).toBe(404)
    // Telemetry needs membership, not just visibility: a public pool's metrics are 404 to non-members.
    const pub = await A.post('/api/v1/admin/pools', { name: 'Pub', visibility: 'public' })
    expect((await b.get(`/api/v1/pools/${pub.body.id}`)).status).toBe(200)
    expect((await b.get(`/api/v1/pools/${pub.body.id}/metrics`)).status).toBe(404)
    expect((await a.get(`/api/v1/pools/${poolB.body.id}/metrics`)).body).toEqual({ items: [] })
    expect((await A.get(`/api/v1/pools/${poolB.body.id}/metrics`)).status).toBe(200)
    expect(h.ctx.db.select().from(pools).all()).toHaveLength(3)
  })
})

describe('default pool', () => {
  test('is created once, lazily, owned by nobody and private', async () => {
    const { h, A, a } = await setup()
    expect(h.ctx.db.select().from(pools).all()).toHaveLength(0)
    const d1 = ensureDefaultPool(h.ctx.db, h.ctx.clock)
    const d2 = ensureDefaultPool(h.ctx.db, h.ctx.clock)
    expect(d1.id).toBe(d2.id)
    expect(d1).toMatchObject({ slug: 'default', visibility: 'private', ownerUserId: null, isDefault: true, nodeLimit: null })
    expect((await a.get('/api/v1/pools')).body.items).toEqual([])
    expect((await A.get('/api/v1/admin/pools')).body.items[0].is_default).toBe(true)
  })
})

// Issue 29: what the pool and dashboard pages need to handle invites and requests without mail.
describe('invites and join requests for the pages (issue 29)', () => {
  test('an invite says whether it was mailed: not without SMTP, yes with it, not when it was already open', async () => {
    const off = await setup()
    const p = await off.A.post('/api/v1/admin/pools', { name: 'No mail' })
    const first = await off.A.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'x@example.com' })
    expect([first.status, first.body.mailed]).toEqual([201, false])
    const on = await setup({ mailEnabled: true })
    const q = await on.A.post('/api/v1/admin/pools', { name: 'Mail' })
    const mailed = await on.A.post(`/api/v1/pools/${q.body.id}/invites`, { email: 'x@example.com' })
    expect([mailed.status, mailed.body.mailed]).toEqual([201, true])
    const again = await on.A.post(`/api/v1/pools/${q.body.id}/invites`, { email: 'x@example.com' })
    expect([again.status, again.body.mailed]).toEqual([200, false])
  })

  test("the owner lists the pool's pending invites with their links and withdraws one, whose link then fails", async () => {
    const { h, a, b, bob } = await setup()
    const p = await a.post('/api/v1/pools', { name: 'Mine' })
    const inv = await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'bob@example.com' })
    await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'carol@example.com' })
    const list = await a.get(`/api/v1/pools/${p.body.id}/invites`)
    expect(list.body.items.map((i: { email: string }) => i.email)).toEqual(['bob@example.com', 'carol@example.com'])
    expect(list.body.items[0].invite_link).toBe(inv.body.invite_link)
    expect((await b.get(`/api/v1/pools/${p.body.id}/invites`)).status).toBe(404)
    expect((await b.delete(`/api/v1/pools/${p.body.id}/invites/${inv.body.id}`)).status).toBe(404)
    expect((await a.delete(`/api/v1/pools/${p.body.id}/invites/${inv.body.id}`)).status).toBe(204)
    expect((await a.get(`/api/v1/pools/${p.body.id}/invites`)).body.items.map((i: { email: string }) => i.email)).toEqual(['carol@example.com'])
    const accept = await sessionClient(h, bob.id).post(`/api/v1/pools/invites/${inv.body.id}/accept`, { token: linkToken(inv.body.invite_link) })
    expect(accept.status).toBe(404)
    expect((await a.delete(`/api/v1/pools/${p.body.id}/invites/${inv.body.id}`)).status).toBe(404)
  })

  test('the owner rejects a join request (gone, the person may ask again); the dashboard lists requests to pools one owns, with names', async () => {
    const { h, A, b, bob } = await setup()
    await h.ctx.db.update(users).set({ displayName: 'Bob B.' }).where(eq(users.id, bob.id)).run()
    const closed = await A.post('/api/v1/admin/pools', { name: 'Closed', visibility: 'public' })
    await b.post(`/api/v1/pools/${closed.body.id}/join`)
    const owned = await A.get('/api/v1/pools/join-requests')
    expect(owned.body.items).toEqual([expect.objectContaining({ pool_id: closed.body.id, pool_name: 'Closed', user_id: bob.id, email: 'bob@example.com', display_name: 'Bob B.', status: 'pending' })])
    expect((await b.get('/api/v1/pools/join-requests')).body.items).toEqual([])
    expect((await b.post(`/api/v1/pools/${closed.body.id}/join-requests/${bob.id}/reject`)).status).toBe(403)
    expect((await A.post(`/api/v1/pools/${closed.body.id}/join-requests/${bob.id}/reject`)).body).toEqual({ status: 'rejected' })
    expect((await A.get('/api/v1/pools/join-requests')).body.items).toEqual([])
    expect((await b.get(`/api/v1/pools/${closed.body.id}`)).body.my_role).toBeNull()
    expect((await A.post(`/api/v1/pools/${closed.body.id}/join-requests/${bob.id}/reject`)).status).toBe(404)
    expect((await b.post(`/api/v1/pools/${closed.body.id}/join`)).status).toBe(202)
  })

  test("a non-member sees a public pool's machines without owner or job; a private pool's stay hidden", async () => {
    const { h, A, b } = await setup()
    const pub = await A.post('/api/v1/admin/pools', { name: 'Shared', visibility: 'public' })
    const priv = await A.post('/api/v1/admin/pools', { name: 'Hidden' })
    for (const [pool, hostname] of [[pub.body.id, 'shared-box'], [priv.body.id, 'hidden-box']] as const) {
      const js = await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool })
      const reg = await h.client().post('/api/v1/workers/register', { hostname, gpus: [] }, { authorization: `Bearer ${js.body.join_token}` })
      expect(reg.status).toBe(201)
    }
    const seen = await b.get(`/api/v1/cluster/nodes?pool_id=${pub.body.id}`)
    expect(seen.body.items.map((n: { hostname: string }) => n.hostname)).toEqual(['shared-box'])
    expect(seen.body.items[0].owner_user_id).toBeNull()
    expect((await b.get(`/api/v1/cluster/nodes?pool_id=${priv.body.id}`)).body.items).toEqual([])
    expect((await b.get('/api/v1/cluster/nodes')).body.items).toEqual([])
  })
})
