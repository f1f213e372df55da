// The admin list's pool and node counts are columns kept by triggers (migration 0011): after every
// kind of change that moves them, through the real routes, they equal a fresh COUNT. And the
// doctor's checks find drift a write around the triggers leaves, and repair it.
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'
import { countDrift, searchDrift, userCountsCheck, userSearchCheck } from '../../src/admin/consistency'

const h = makeHarness()
/** The state file as the doctor opens it. */
const state = { sqlite: h.ctx.sqlite, db: h.ctx.db, close() {} }
afterAll(() => h.close())

/** Every user's kept counts against a fresh count: the drift query finds none, and the list says the same. */
async function expectCounts(step: string, want: Record<string, [pools: number, nodes: number]>) {
  expect([step, countDrift(h.ctx.sqlite)]).toEqual([step, []])
  const list = (await A.get('/api/v1/admin/users?page_size=100')).body.items as { email: string; pool_count: number; node_count: number }[]
  const got = Object.fromEntries(list.filter((u) => u.email in want).map((u) => [u.email, [u.pool_count, u.node_count]]))
  expect([step, got]).toEqual([step, want])
}

const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
const A = sessionClient(h, admin.id)
const alice = await seedUser(h, 'alice@example.com')
const bob = await seedUser(h, 'bob@example.com')
const carol = await seedUser(h, 'carol@example.com', { emailVerified: true })
const a = sessionClient(h, alice.id)
const b = sessionClient(h, bob.id)
const c = sessionClient(h, carol.id)

async function fellowIn(owner: typeof a, poolId: string, hostname: string): Promise<string> {
  const join = (await owner.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
  const reg = await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname })
  expect(reg.status).toBe(201)
  return reg.body.fellow_id
}

describe('pool and node counts', () => {
  test('stay equal to a fresh count through pools, memberships, fellows and account deletion', async () => {
    await expectCounts('start', { 'alice@example.com': [0, 0], 'bob@example.com': [0, 0], 'carol@example.com': [0, 0] })

    // An open public pool needs an admin's plan; a user's plan allows one private pool.
    const open = (await A.post('/api/v1/pools', { name: 'Everyone', visibility: 'public', open_join: true })).body
    const p1 = (await a.post('/api/v1/pools', { name: 'Alice private' })).body
    const p2 = (await b.post('/api/v1/pools', { name: 'Bob private' })).body
    await expectCounts('pools created', { 'alice@example.com': [1, 0], 'bob@example.com': [1, 0], 'carol@example.com': [0, 0] })

    expect((await b.post(`/api/v1/pools/${open.id}/join`)).status).toBeLessThan(300)
    await expectCounts('bob joined an open pool', { 'alice@example.com': [1, 0], 'bob@example.com': [2, 0], 'carol@example.com': [0, 0] })

    const invite = (await b.post(`/api/v1/pools/${p2.id}/invites`, { email: 'carol@example.com' })).body
    expect((await c.post(`/api/v1/pools/invites/${invite.id}/accept`)).status).toBeLessThan(300)
    await expectCounts('carol accepted an invite', { 'alice@example.com': [1, 0], 'bob@example.com': [2, 0], 'carol@example.com': [1, 0] })

    expect((await A.delete(`/api/v1/pools/${open.id}/members/${bob.id}`)).status).toBe(204)
    await expectCounts('bob removed', { 'alice@example.com': [1, 0], 'bob@example.com': [1, 0], 'carol@example.com': [1, 0] })

    const f1 = await fellowIn(a, p1.id, 'gpu-a1')
    await fellowIn(a, p1.id, 'gpu-a2')
    await fellowIn(b, p2.id, 'gpu-b1')
    await expectCounts('fellows registered', { 'alice@example.com': [1, 2], 'bob@example.com': [1, 1], 'carol@example.com': [1, 0] })

    expect((await a.delete(`/api/v1/workers/${f1}`)).status).toBeLessThan(300)
    await expectCounts('a fellow removed', { 'alice@example.com': [1, 1], 'bob@example.com': [1, 1], 'carol@example.com': [1, 0] })

    const del = await b.delete(`/api/v1/pools/${p2.id}?force=true`)
    expect(del.status).toBeLessThan(300)
    await expectCounts('a pool deleted with its members and nodes', { 'alice@example.com': [1, 1], 'bob@example.com': [0, 0], 'carol@example.com': [0, 0] })

    expect((await b.post(`/api/v1/pools/${open.id}/join`)).status).toBeLessThan(300)
    expect((await c.post(`/api/v1/pools/${open.id}/join`)).status).toBeLessThan(300)
    await expectCounts('bob and carol joined again', { 'alice@example.com': [1, 1], 'bob@example.com': [1, 0], 'carol@example.com': [1, 0] })
    expect((await A.delete(`/api/v1/admin/users/${alice.id}`)).status).toBeLessThan(300)
    await expectCounts('an account deleted with its pool', { 'bob@example.com': [1, 0], 'carol@example.com': [1, 0] })
    expect((await A.delete(`/api/v1/admin/users/${carol.id}`)).status).toBeLessThan(300)
    await expectCounts('a member account deleted', { 'bob@example.com': [1, 0] })
  })
})

describe('doctor: user-counts and user-search', () => {
  test('find counts and search entries a write around the triggers left wrong, and repair them', async () => {
    const dave = await seedUser(h, 'dave@example.com', { displayName: 'Dave Original' })
    expect(userCountsCheck.run(state)).toEqual([])
    expect(userSearchCheck.run(state)).toEqual([])
    // Around the triggers: counts set by hand, the index told nothing of a rename.
    h.ctx.sqlite.run('UPDATE users SET pool_count = 7 WHERE id = ?', [dave.id])
    h.ctx.sqlite.run('DROP TRIGGER users_fts_upd')
    h.ctx.sqlite.run("UPDATE users SET display_name = 'Dave Renamed' WHERE id = ?", [dave.id])
    expect(userCountsCheck.run(state)).toEqual(['dave@example.com: pools 7 kept, 0 counted; nodes 0 kept, 0 counted'])
    expect(userSearchCheck.run(state)).toEqual(['1 user(s) indexed under an old email or name'])
    expect((await A.get('/api/v1/admin/users?q=Renamed')).body.total).toBe(0)

    expect(userCountsCheck.fix!(state)).toEqual(['recounted the pools and nodes of 1 user(s)'])
    expect(userSearchCheck.fix!(state)[0]).toStartWith('rebuilt the search index of ')
    expect([userCountsCheck.run(state), userSearchCheck.run(state), searchDrift(h.ctx.sqlite)]).toEqual([[], [], { missing: 0, stale: 0, stray: 0 }])
    expect((await A.get('/api/v1/admin/users?q=Renamed')).body.items.map((u: { email: string }) => u.email)).toEqual(['dave@example.com'])
  })
})
