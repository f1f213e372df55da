import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { makeHarness, seedUser, sessionClient, tokenClient, type Harness } from '../helpers/harness'
import { auditLog, fellows as fellowsTable, joinSessions, poolMembers, poolNodes } from '../../src/db/schema'
import { ensureDefaultPool } from '../../src/pools/service'
import { FellowRegistry } from '../../src/fellows/live'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

async function setup(env: Record<string, string> = {}) {
  const h = makeHarness(env)
  all.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const alice = await seedUser(h, 'alice@example.com')
  const bob = await seedUser(h, 'bob@example.com')
  const A = sessionClient(h, admin.id)
  const a = sessionClient(h, alice.id)
  const b = sessionClient(h, bob.id)
  const pool = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
  const bobPool = (await b.post('/api/v1/pools', { name: 'Bob GPUs' })).body
  return { h, admin, alice, bob, A, a, b, pool, bobPool }
}

const GPU = { index: 0, name: 'NVIDIA A100-SXM4-80GB', memory_total_mb: 81920, memory_free_mb: 80000, utilization_pct: 3 }

async function joinToken(c: ReturnType<Harness['client']>, poolId: string): Promise<string> {
  const r = await c.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })
  expect(r.status).toBe(201)
  return r.body.join_token
}

async function register(h: Harness, token: string | null, body: Record<string, unknown> = {}) {
  return h.client(token ? { bearer: token } : {}).post('/api/v1/workers/register', { hostname: 'gpu-1', gpus: [GPU], ...body })
}

describe('join sessions', () => {
  test('an expired join session is deleted a month after it expired (every one ever made stayed); a live one stays', async () => {
    const { h, a, alice, pool } = await setup()
    const purge = () => h.services.fellows.loops().find((l) => l.name === 'join-session-purge')!.run()
    const rows = () => h.ctx.db.select().from(joinSessions).all().length
    await joinToken(a, pool.id)
    h.clock.advance(31 * 24 * 3600_000 - 1000)
    await purge()
    expect(rows()).toBe(1)
    const fresh = await joinToken(sessionClient(h, alice.id), pool.id) // a session of the day
    h.clock.advance(2000)
    await purge()
    expect(rows()).toBe(1)
    expect((await register(h, fresh)).status).toBe(201)
  })

  test('a pool member mints a join token with a pasteable command; non-members get 404', async () => {
    const { h, a, b, pool } = await setup()
    const r = await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })
    expect(r.status).toBe(201)
    expect(r.body.join_token).toStartWith('svc_join_')
    expect(r.body.pool_id).toBe(pool.id)
    expect(r.body.command).toContain(`${h.cfg.baseUrl}/api/v1/bootstrap/fellow.sh`)
    expect(r.body.command).toContain(r.body.join_token)
    expect(Date.parse(r.body.expires_at) - h.clock.now()).toBe(24 * 3_600_000)
    expect((await b.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).status).toBe(404)
  })
})

describe('registration', () => {
  test('a join token lands the fellow in its pool, bound to the member who minted it (never the body)', async () => {
    const { h, a, alice, pool } = await setup()
    const token = await joinToken(a, pool.id)
    const r = await register(h, token, { owner_user_id: 'someone-else' })
    expect(r.status).toBe(422) // unknown fields are refused outright
    const ok = await register(h, token)
    expect(ok.status).toBe(201)
    expect(ok.body).toMatchObject({ pool_id: pool.id, heartbeat_interval_s: 10 })
    expect(ok.body.node_token).toStartWith('svc_node_')
    expect(ok.body.signals_url).toBe(`${h.cfg.baseUrl.replace('http', 'ws')}/ws/signals/${ok.body.fellow_id}`)
    const binding = h.ctx.db.select().from(poolNodes).where(eq(poolNodes.fellowId, ok.body.fellow_id)).get()!
    expect(binding.ownerUserId).toBe(alice.id)
    const row = h.ctx.db.select().from(fellowsTable).where(eq(fellowsTable.id, ok.body.fellow_id)).get()!
    expect(row.tokenHash).not.toContain(ok.body.node_token)
    expect(h.ctx.db.select().from(auditLog).where(eq(auditLog.kind, 'worker.register')).all()).toHaveLength(1)
  })

  test('without a token a fellow lands in the default pool; a wrong token is refused', async () => {
    const { h } = await setup()
    const r = await register(h, null)
    expect(r.status).toBe(201)
    expect(r.body.pool_id).toBe(ensureDefaultPool(h.ctx.db, h.ctx.clock).id)
    expect((await register(h, 'svc_join_nope')).status).toBe(401)
    expect((await register(h, 'svc_node_nope')).status).toBe(401)
    expect((await register(h, 'garbage')).status).toBe(401)
  })

  test('the pool node limit answers 409 once reached (plan: 2 nodes per user pool)', async () => {
    const { h, a, pool } = await setup()
    const token = await joinToken(a, pool.id)
    expect((await register(h, token, { hostname: 'one' })).status).toBe(201)
    expect((await register(h, token, { hostname: 'two' })).status).toBe(201)
    const third = await register(h, token, { hostname: 'three' })
    expect(third.status).toBe(409)
    expect(third.body.code).toBe('pool_node_limit')
  })

  test('an expired or revoked join token is refused', async () => {
    const { h, a, b, pool } = await setup()
    const session = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body
    // Someone outside the (private) pool learns what a made-up id tells them.
    const real = await b.delete(`/api/v1/bootstrap/join-sessions/${session.id}`)
    const madeUp = await b.delete(`/api/v1/bootstrap/join-sessions/${crypto.randomUUID()}`)
    expect([real.status, real.body.detail]).toEqual([madeUp.status, madeUp.body.detail])
    expect(real.status).toBe(404)
    expect((await a.delete(`/api/v1/bootstrap/join-sessions/${session.id}`)).status).toBe(204)
    expect((await register(h, session.join_token)).status).toBe(401)
    const later = await joinToken(a, pool.id)
    h.clock.advance(24 * 3_600_000)
    expect((await register(h, later)).status).toBe(401)
  })

  test('re-registration with the node token keeps the id and pool, mints a new token and revokes the old', async () => {
    const { h, a, pool } = await setup()
    const first = (await register(h, await joinToken(a, pool.id))).body
    const again = await register(h, first.node_token, { fellow_id: first.fellow_id })
    expect(again.status).toBe(201)
    expect(again.body.fellow_id).toBe(first.fellow_id)
    expect(again.body.pool_id).toBe(pool.id)
    expect(again.body.node_token).not.toBe(first.node_token)
    const hb = (token: string) => h.client({ bearer: token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect((await hb(first.node_token)).status).toBe(401)
    expect((await hb(again.body.node_token)).status).toBe(200)
    // Re-registering at the node limit does not count the fellow twice.
    expect((await register(h, again.body.node_token, { fellow_id: first.fellow_id })).status).toBe(201)
  })

  test('the agent version a fellow registers with is listed, kept by a leader that starts again, and replaced by its next registration', async () => {
    const { h, a, pool } = await setup()
    const first = (await register(h, await joinToken(a, pool.id), { agent_version: '0.1.0+6e0c678e5a' })).body
    const listed = async () => (await a.get(`/api/v1/cluster/nodes?pool_id=${pool.id}`)).body.items.map((n: { agent_version: string | null }) => n.agent_version)
    expect(await listed()).toEqual(['0.1.0+6e0c678e5a'])
    expect(new FellowRegistry(h.ctx).get(first.fellow_id)?.agentVersion).toBe('0.1.0+6e0c678e5a')
    await register(h, first.node_token, { fellow_id: first.fellow_id, agent_version: '0.2.0' })
    expect(await listed()).toEqual(['0.2.0'])
    // An agent that does not say.
    await register(h, await joinToken(a, pool.id), { hostname: 'old-agent' })
    expect((await listed()).sort()).toEqual(['0.2.0', null].sort())
  })

  test("a p2p address pointing at the neighbours' own machine is passed on only from a fellow on the leader's machine", async () => {
    const { h, a, pool } = await setup()
    const from = async (ip: string, address: string) => {
      const r = await h.client({ bearer: await joinToken(a, pool.id), ip }).post('/api/v1/workers/register', { hostname: `gpu-${ip}`, address })
      expect(r.status).toBe(201)
      const passed = h.services.fellows.registry.get(r.body.fellow_id)?.address ?? null
      expect((await a.delete(`/api/v1/workers/${r.body.fellow_id}`)).status).toBe(204) // the pool's node limit
      return passed
    }
    expect(await from('203.0.113.5', '127.0.0.1:5557')).toBeNull()
    expect(await from('203.0.113.6', '[::1]:5557')).toBeNull()
    expect(await from('203.0.113.7', '169.254.169.254:80')).toBeNull()
    expect(await from('203.0.113.8', 'localhost:5557')).toBeNull()
    expect(await from('203.0.113.9', '10.0.0.7:5557')).toBe('10.0.0.7:5557')
    expect(await from('127.0.0.1', '127.0.0.1:5557')).toBe('127.0.0.1:5557')
  })

  test("another fellow's node token, or a join token of another pool, cannot take over a fellow id", async () => {
    const { h, a, b, pool, bobPool } = await setup()
    const mine = (await register(h, await joinToken(a, pool.id))).body
    const other = (await register(h, await joinToken(a, pool.id), { hostname: 'other' })).body
    expect((await register(h, other.node_token, { fellow_id: mine.fellow_id })).status).toBe(403)
    expect((await register(h, await joinToken(b, bobPool.id), { fellow_id: mine.fellow_id })).status).toBe(403)
    expect((await register(h, null, { fellow_id: mine.fellow_id })).status).toBe(401)
  })

  // Issue 26, item 3: a member's own join token re-registered another member's fellow id, revoking
  // its node token and taking the fellow (its jobs, chats and credit) over.
  test("a pool member cannot re-register another member's fellow with their own join token; its adder and the pool owner can, and it stays the adder's", async () => {
    const { h, a, alice, bob, b, pool } = await setup()
    const carol = await seedUser(h, 'carol@example.com')
    const c = sessionClient(h, carol.id)
    for (const u of [bob, carol]) h.ctx.db.insert(poolMembers).values({ poolId: pool.id, userId: u.id, role: 'member', createdAt: h.clock.now() }).run()
    const f = (await register(h, await joinToken(b, pool.id))).body
    const hb = (token: string) => h.client({ bearer: token }).post('/api/v1/workers/heartbeat', { status: 'idle' }).then((r) => r.status)
    const ownerOf = () => h.ctx.db.select().from(poolNodes).where(eq(poolNodes.fellowId, f.fellow_id)).get()!.ownerUserId

    const taken = await register(h, await joinToken(c, pool.id), { fellow_id: f.fellow_id, hostname: 'carols-now' })
    expect(taken.status).toBe(403)
    expect(taken.headers.get('content-type')).toStartWith('application/problem+json')
    expect(taken.body.code).toBe('forbidden')
    expect(taken.body.node_token).toBeUndefined()
    // Nothing moved: Bob's token still works and the fellow is still his.
    expect(await hb(f.node_token)).toBe(200)
    expect(ownerOf()).toBe(bob.id)
    expect(h.services.fellows.registry.get(f.fellow_id)!.hostname).toBe('gpu-1')

    // The member who added it re-registers it with a fresh join token of theirs.
    const again = await register(h, await joinToken(b, pool.id), { fellow_id: f.fellow_id })
    expect(again.status).toBe(201)
    expect(again.body.fellow_id).toBe(f.fellow_id)
    expect(await hb(f.node_token)).toBe(401)
    // The pool owner may too, but ownership never moves to them.
    const byOwner = await register(h, await joinToken(a, pool.id), { fellow_id: f.fellow_id })
    expect(byOwner.status).toBe(201)
    expect(ownerOf()).toBe(bob.id)
    expect(h.services.fellows.registry.get(f.fellow_id)!.ownerUserId).toBe(bob.id)
    expect((await a.get('/api/v1/workers')).body.items.map((n: { owner_user_id: string }) => n.owner_user_id)).toEqual([bob.id])
    const audit = h.ctx.db.select().from(auditLog).where(eq(auditLog.kind, 'worker.reregister')).all()
    expect(audit.map((e) => e.actorUserId)).toEqual([bob.id, alice.id])
  })
})

// Issue 26, item 2: registration without a token is anonymous and lands in the default pool.
describe('token-less registration', () => {
  test('with SVC_ALLOW_TOKENLESS_JOIN=0 a fellow without a join token is refused with 401 join_token_required; join tokens still work', async () => {
    const { h, a, pool } = await setup({ SVC_ALLOW_TOKENLESS_JOIN: '0' })
    const r = await register(h, null)
    expect(r.status).toBe(401)
    expect(r.headers.get('content-type')).toStartWith('application/problem+json')
    expect(r.body).toMatchObject({ status: 401, code: 'join_token_required' })
    expect(r.body.detail).toContain('SVC_ALLOW_TOKENLESS_JOIN')
    expect([...h.services.fellows.registry.all()]).toHaveLength(0)
    expect((await register(h, await joinToken(a, pool.id))).status).toBe(201)
  })

  test('token-less registrations are limited per address and in total per window: 429 with Retry-After; join tokens are not held to it (fake clock)', async () => {
    const { h, a, pool } = await setup() // defaults: 10 per address, 30 in total, per 60 s
    const from = (ip: string) => h.client({ ip }).post('/api/v1/workers/register', { hostname: 'anon' })
    for (let i = 0; i < 10; i++) expect((await from('198.51.100.1')).status).toBe(201)
    const over = await from('198.51.100.1')
    expect(over.status).toBe(429)
    expect(over.headers.get('content-type')).toStartWith('application/problem+json')
    expect(over.body.code).toBe('rate_limited')
    expect(over.headers.get('retry-after')).toBe('60')
    // 50 anonymous registrations in 3 s from 50 addresses: the total bound admits 20 more, no more.
    let admitted = 0
    for (let i = 0; i < 50; i++) {
      h.clock.advance(60)
      const r = await from(`203.0.113.${i + 1}`)
      if (r.status === 201) admitted++
      else {
        expect(r.status).toBe(429)
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
      }
    }
    expect(admitted).toBe(20)
    expect(h.services.fellows.registry.inPools(new Set([ensureDefaultPool(h.ctx.db, h.ctx.clock).id]))).toHaveLength(30)
    expect((await register(h, await joinToken(a, pool.id))).status).toBe(201)
    h.clock.advance(60_000)
    expect((await from('198.51.100.1')).status).toBe(201)
  })

  test('shipped log lines are bounded across all fellows: past SVC_LOG_MAX_TOTAL_BYTES each fellow keeps its share, its newest lines', async () => {
    const budget = 1024 * 1024
    const { h } = await setup({ SVC_LOG_MAX_TOTAL_BYTES: String(budget) })
    const fs = [] as { fellow_id: string; node_token: string }[]
    for (let i = 0; i < 3; i++) fs.push((await register(h, null, { hostname: `anon-${i}` })).body)
    // 100 lines of 4000 characters each: about 0.8 MB a fellow, 2.4 MB for the three.
    const ship = (f: (typeof fs)[number], n: number) =>
      h.client({ bearer: f.node_token }).post(`/api/v1/workers/${f.fellow_id}/logs`, { lines: Array.from({ length: n }, (_, i) => `${i} ${'x'.repeat(3996)}`) })
    for (const f of fs) expect((await ship(f, 100)).status).toBe(204)
    const held = fs.map((f) => h.services.logs.since(f.fellow_id, 0))
    expect(held.flat().reduce((n, l) => n + 2 * l.line.length, 0)).toBeLessThanOrEqual(budget)
    // Line ids count from the leader's clock (ms x 1000): relative to each ring's first here.
    const base = h.clock.now() * 1000
    const ids = held.map((lines) => lines.map((l) => l.id - base))
    for (const kept of ids) {
      // About a third of the budget each (8 kB a line): its newest lines, in order.
      expect(kept.length).toBeGreaterThanOrEqual(40)
      expect(kept.length).toBeLessThanOrEqual(44)
      expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 101 - kept.length + i))
    }
    // Ids keep counting for a trimmed ring, so a viewer resuming from Last-Event-ID misses nothing new.
    expect((await ship(fs[0]!, 1)).status).toBe(204)
    expect(h.services.logs.since(fs[0]!.fellow_id, base + 100).map((l) => l.id - base)).toEqual([101])
  })

  test("fellows registered without a token and writing without pause cannot empty another pool's machine's log", async () => {
    const budget = 1024 * 1024
    const { h, a, pool } = await setup({ SVC_LOG_MAX_TOTAL_BYTES: String(budget) })
    const mine = (await register(h, await joinToken(a, pool.id), { hostname: 'gpu-1' })).body
    const lines = ['loaded model', 'serving on :8080', 'warm-up done']
    expect((await h.client({ bearer: mine.node_token }).post(`/api/v1/workers/${mine.fellow_id}/logs`, { lines })).status).toBe(204)
    const flooders = [] as { fellow_id: string; node_token: string }[]
    for (let i = 0; i < 3; i++) flooders.push((await register(h, null, { hostname: `flood-${i}` })).body)
    for (let round = 0; round < 5; round++) {
      for (const f of flooders) {
        const r = await h.client({ bearer: f.node_token }).post(`/api/v1/workers/${f.fellow_id}/logs`, { lines: Array.from({ length: 100 }, () => 'x'.repeat(4000)) })
        expect(r.status).toBe(204)
      }
    }
    expect(h.services.logs.since(mine.fellow_id, 0).map((l) => l.line)).toEqual(lines)
    expect(h.services.logs.totalBytes).toBeLessThanOrEqual(budget)
  })
})

describe('node authentication rules', () => {
  test('heartbeats need a node token when SVC_REQUIRE_NODE_AUTH is on; user credentials are refused', async () => {
    const { h, alice } = await setup()
    expect((await h.client().post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(401)
    expect((await tokenClient(h, alice.id).post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(403)
  })

  test('with SVC_REQUIRE_NODE_AUTH=0 a missing token passes, but a wrong, revoked or foreign one is still refused', async () => {
    const { h, a, pool } = await setup({ SVC_REQUIRE_NODE_AUTH: '0' })
    const f1 = (await register(h, await joinToken(a, pool.id))).body
    const f2 = (await register(h, await joinToken(a, pool.id), { hostname: 'two' })).body
    expect((await h.client().post('/api/v1/workers/heartbeat', { status: 'idle', fellow_id: f1.fellow_id })).status).toBe(200)
    expect((await h.client({ bearer: 'svc_node_wrong' }).post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(401)
    const foreign = await h.client({ bearer: f2.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', fellow_id: f1.fellow_id })
    expect(foreign.status).toBe(403)
    await register(h, f1.node_token, { fellow_id: f1.fellow_id }) // revokes f1's first token
    expect((await h.client({ bearer: f1.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(401)
  })

  test('a fellow ships log lines only for itself', async () => {
    const { h, a, pool } = await setup()
    const f1 = (await register(h, await joinToken(a, pool.id))).body
    const f2 = (await register(h, await joinToken(a, pool.id), { hostname: 'two' })).body
    const c = h.client({ bearer: f1.node_token })
    expect((await c.post(`/api/v1/workers/${f1.fellow_id}/logs`, { lines: ['hello'] })).status).toBe(204)
    expect((await c.post(`/api/v1/workers/${f2.fellow_id}/logs`, { lines: ['spoof'] })).status).toBe(403)
  })
})

describe('heartbeats and telemetry', () => {
  test("text a fellow reports that pages show (GPU names, engine models, servables, its version) holds no control or bidi characters (422): a U+202E drew the leader's own words reversed", async () => {
    const { h, a, pool } = await setup()
    const token = await joinToken(a, pool.id)
    expect((await register(h, token, { gpus: [{ ...GPU, name: 'NVIDIA H100\u202e ysub %99' }] })).status).toBe(422)
    expect((await register(h, token, { agent_version: '1.0\u001b[2J' })).status).toBe(422)
    const f = (await register(h, token, { gpus: [{ ...GPU, name: 'NVIDIA GeForce RTX\u2122 4090 (ünïcode is fine)' }], agent_version: '0.1.0+abc' })).body
    const node = h.client({ bearer: f.node_token })
    const beat = (body: Record<string, unknown>) => node.post('/api/v1/workers/heartbeat', { status: 'idle', ...body })
    for (const body of [
      { hardware: { gpus: [{ ...GPU, name: 'A100\u2066evil' }] } },
      { servables: ['gpt\u202e4o-mini'] },
      { servables: ['"><img src=x>'] },
      { servables: ['x'.repeat(201)] },
      { engines: [{ name: 'vllm', model: 'qwen\u0007', healthy: true }] },
    ]) {
      const r = await beat(body)
      expect([JSON.stringify(body).slice(0, 60), r.status]).toEqual([JSON.stringify(body).slice(0, 60), 422])
    }
    expect((await beat({ servables: ['Qwen/Qwen2.5-0.5B-Instruct', 'tiny-llm', 'llama3:8b@q4'], engines: [{ name: 'vllm', model: 'Qwen/Qwen2.5-0.5B-Instruct', healthy: true }] })).status).toBe(200)
  })

  test('live GPU telemetry refreshes free VRAM in /cluster/nodes and /cluster/devices, filtered to the caller pools', async () => {
    const { h, a, b, A, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    const node = h.client({ bearer: f.node_token })
    const hb = await node.post('/api/v1/workers/heartbeat', {
      status: 'running',
      step: 42,
      loss: 0.5,
      bytes_sent: 1000,
      bytes_received: 2000,
      hardware: { gpus: [{ ...GPU, memory_free_mb: 1234, utilization_pct: 97 }], cpu_pct: 12.5, mem_free_mb: 64000 },
    })
    expect(hb.status).toBe(200)
    expect(hb.body).toEqual({ ok: true, next_heartbeat_s: 10 })
    const devices = (await a.get('/api/v1/cluster/devices')).body.items
    expect(devices).toEqual([{ ...GPU, memory_free_mb: 1234, utilization_pct: 97, fellow_id: f.fellow_id, hostname: 'gpu-1', pool_id: pool.id, state: 'online' }])
    const nodes = (await a.get('/api/v1/cluster/nodes')).body.items
    expect(nodes[0]).toMatchObject({ fellow_id: f.fellow_id, state: 'online', status: 'running', step: 42, loss: 0.5, bytes_sent: 1000, cpu_pct: 12.5 })
    expect((await b.get('/api/v1/cluster/nodes')).body.items).toEqual([])
    expect((await b.get(`/api/v1/cluster/devices?pool_id=${pool.id}`)).body.items).toEqual([])
    expect((await A.get('/api/v1/cluster/nodes')).body.items).toHaveLength(1)
    // Per-pool telemetry for members.
    expect((await a.get(`/api/v1/pools/${pool.id}/metrics`)).body.items[0].gpus[0].memory_free_mb).toBe(1234)
    expect((await a.get(`/api/v1/pools/${pool.id}/metrics/history`)).body.items[0].points).toHaveLength(1)
    const events = (await a.get(`/api/v1/pools/${pool.id}/events`)).body.items.map((e: { kind: string }) => e.kind)
    expect(events).toContain('registered')
    // Batched: memory first, the state file on flush.
    h.services.fellows.registry.flush()
    expect(h.ctx.db.select().from(fellowsTable).where(eq(fellowsTable.id, f.fellow_id)).get()!.step).toBe(42)
  })

  test('telemetry reaches the state file on the first heartbeat, on a status change, every 30 s, and all of it on a clean stop', async () => {
    const { h, a, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    const node = h.client({ bearer: f.node_token })
    const registry = h.services.fellows.registry
    const row = () => h.ctx.db.select().from(fellowsTable).where(eq(fellowsTable.id, f.fellow_id)).get()!
    const beat = async (status: string, step: number) => expect((await node.post('/api/v1/workers/heartbeat', { status, step })).status).toBe(200)
    await beat('running', 1)
    expect(registry.flush()).toBe(1)
    expect(row().step).toBe(1)
    // Same status within 30 s: served from memory at once, written later.
    h.clock.advance(10_000)
    await beat('running', 2)
    expect(registry.flush()).toBe(0)
    expect(row().step).toBe(1)
    expect((await a.get('/api/v1/cluster/nodes')).body.items[0].step).toBe(2)
    // A status change is written on the next flush.
    h.clock.advance(1_000)
    await beat('idle', 3)
    expect(registry.flush()).toBe(1)
    expect(row()).toMatchObject({ step: 3, status: 'idle' })
    // 30 s after the last write, the next heartbeat is due.
    h.clock.advance(29_999)
    await beat('idle', 4)
    expect(registry.flush()).toBe(0)
    h.clock.advance(1)
    await beat('idle', 5)
    expect(registry.flush()).toBe(1)
    expect(row()).toMatchObject({ step: 5, lastSeenAt: h.clock.now() })
    // A clean stop writes what is newer than the row.
    h.clock.advance(10_000)
    await beat('idle', 6)
    expect(registry.flush()).toBe(0)
    await h.services.close()
    expect(row()).toMatchObject({ step: 6, lastSeenAt: h.clock.now() })
  })

  test('after a restart, rows are not all rewritten on the first heartbeats: the writes spread over one 30 s period', async () => {
    const { h, a, pool } = await setup()
    const ids: { fellow_id: string; node_token: string }[] = []
    for (let i = 0; i < 2; i++) ids.push((await register(h, await joinToken(a, pool.id), { hostname: `gpu-${i}` })).body)
    const beatAll = async (status: string) => {
      for (const f of ids) expect((await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status })).status).toBe(200)
    }
    await beatAll('idle')
    expect(h.services.fellows.registry.flush()).toBe(2)
    // A registry built from the state file, as on a restart.
    const restarted = new FellowRegistry(h.ctx)
    const live = (id: string) => restarted.get(id)!
    const now = h.clock.now()
    for (const f of ids) restarted.heartbeat(live(f.fellow_id), { status: 'idle' }, now)
    const early = restarted.flush()
    expect(early).toBe(0)
    // Within one period every row has been written once more.
    h.clock.advance(30_000)
    for (const f of ids) restarted.heartbeat(live(f.fellow_id), { status: 'idle' }, h.clock.now())
    expect(restarted.flush()).toBe(2)
    // A status change is still written at once.
    restarted.heartbeat(live(ids[0]!.fellow_id), { status: 'running' }, h.clock.now())
    expect(restarted.flush()).toBe(1)
  })

  test('liveness: online, then stale after 2 missed intervals, offline after 6 (fake clock, no writes per tick)', async () => {
    const { h, a, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    const state = async () => (await a.get('/api/v1/cluster/nodes')).body.items[0].state
    expect(await state()).toBe('online')
    h.clock.advance(20_000)
    expect(await state()).toBe('online')
    h.clock.advance(1)
    expect(await state()).toBe('stale')
    h.clock.advance(40_000)
    expect(await state()).toBe('offline')
    const offline = h.services.fellows.registry.tick(h.clock.now())
    expect(offline.map((x) => x.id)).toEqual([f.fellow_id])
    const kinds = (await a.get(`/api/v1/pools/${pool.id}/events`)).body.items.map((e: { kind: string }) => e.kind)
    expect(kinds[0]).toBe('offline')
    await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect(await state()).toBe('online')
  })

  test('one person makes at most 200 join commands in 24 hours (one API token minted 860 a second, each a row kept a month), deleting their pools included, then 429 with Retry-After', async () => {
    const { h, a, alice, pool } = await setup()
    // 198 made an hour ago (as the audit log has them), and one in a pool deleted since.
    const now = h.clock.now()
    h.ctx.sqlite.transaction(() => {
      for (let i = 0; i < 198; i++) h.ctx.sqlite.query("INSERT INTO audit_log (id, ts, kind, actor_user_id, target_type, target_id) VALUES (?, ?, 'pool.join_session', ?, 'pool', ?)").run(crypto.randomUUID(), now - 3600_000, alice.id, pool.id)
    })()
    expect((await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).status).toBe(201)
    expect((await a.delete(`/api/v1/pools/${pool.id}`)).status).toBe(200)
    const next = (await a.post('/api/v1/pools', { name: 'Next' })).body
    expect((await a.post('/api/v1/bootstrap/join-sessions', { pool_id: next.id })).status).toBe(201)
    const refused = await a.post('/api/v1/bootstrap/join-sessions', { pool_id: next.id })
    expect([refused.status, refused.body.code, refused.headers.get('retry-after')]).toEqual([429, 'rate_limited', String(23 * 3600)])
    h.clock.advance(23 * 3600_000 + 1)
    expect((await a.post('/api/v1/bootstrap/join-sessions', { pool_id: next.id })).status).toBe(201)
  })

  test("a deleted pool's events leave memory with it, by its owner or with its owner's account (up to 500 stayed until a restart)", async () => {
    const { h, A, a, b, alice, pool, bobPool } = await setup()
    const events = (id: string) => h.services.fellows.registry.poolEvents(id, 500).length
    for (const [c, p] of [[a, pool], [b, bobPool]] as const) {
      const f = (await register(h, await joinToken(c, p.id))).body
      await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    }
    h.clock.advance(120_000)
    h.services.fellows.registry.tick(h.clock.now())
    expect([events(pool.id), events(bobPool.id)].every((n) => n > 0)).toBe(true)
    expect((await b.delete(`/api/v1/pools/${bobPool.id}?force=true`)).status).toBe(200)
    expect(events(bobPool.id)).toBe(0)
    expect(events(pool.id)).toBeGreaterThan(0)
    expect((await A.delete(`/api/v1/admin/users/${alice.id}`)).status).toBe(200)
    expect(events(pool.id)).toBe(0)
  })

  test('liveness is reckoned on a clock no one sets: a step of the wall clock forward keeps heartbeating fellows online (it marked them all offline and failed their jobs), a step back keeps no dead one online', async () => {
    const { h, a, pool } = await setup()
    const live = (await register(h, await joinToken(a, pool.id))).body
    const dead = (await register(h, await joinToken(a, pool.id))).body
    const beat = (f: { node_token: string }) => h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    const state = async (id: string) => (await a.get('/api/v1/cluster/nodes')).body.items.find((n: { fellow_id: string }) => n.fellow_id === id).state
    await beat(live)
    await beat(dead)
    h.clock.set(h.clock.now() + 2 * 3600_000) // NTP steps the wall clock two hours forward
    expect(h.services.fellows.registry.tick(h.clock.now())).toEqual([])
    expect([await state(live.fellow_id), await state(dead.fellow_id)]).toEqual(['online', 'online'])
    h.clock.set(h.clock.now() - 3 * 3600_000) // and back, an hour before the heartbeats
    for (let i = 0; i < 7; i++) {
      h.clock.advance(10_000)
      await beat(live)
    }
    expect(h.services.fellows.registry.tick(h.clock.now()).map((f) => f.id)).toEqual([dead.fellow_id])
    expect([await state(live.fellow_id), await state(dead.fellow_id)]).toEqual(['online', 'offline'])
  })

  test('a fellow that says goodbye is offline at once, its job stage moves to a spare, and its next heartbeat brings it back', async () => {
    const { h, a, pool } = await setup()
    const fs = [(await register(h, await joinToken(a, pool.id))).body, (await register(h, await joinToken(a, pool.id))).body]
    for (const f of fs) await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [GPU] } })
    const job = (await a.post('/api/v1/jobs', { name: 'j', pool_id: pool.id, stages: 1 })).body
    const on = fs.find((f) => f.fellow_id === job.assignments[0].fellow_id)!
    const spare = fs.find((f) => f !== on)!
    const node = h.client({ bearer: on.node_token })
    expect((await node.post('/api/v1/workers/goodbye', {})).status).toBe(204)
    const state = async (id: string) => (await a.get('/api/v1/cluster/nodes')).body.items.find((n: { fellow_id: string }) => n.fellow_id === id).state
    expect(await state(on.fellow_id)).toBe('offline')
    expect((await a.get(`/api/v1/jobs/${job.id}`)).body.assignments[0].fellow_id).toBe(spare.fellow_id)
    expect((await a.get(`/api/v1/pools/${pool.id}/events`)).body.items[0]).toMatchObject({ kind: 'offline' })
    // The liveness tick does not report it a second time; a second goodbye changes nothing.
    h.clock.advance(60_000)
    expect(h.services.fellows.registry.tick(h.clock.now()).map((x) => x.id)).not.toContain(on.fellow_id)
    expect((await node.post('/api/v1/workers/goodbye', {})).status).toBe(204)
    await node.post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect(await state(on.fellow_id)).toBe('online')
    // A token speaks only for its own fellow (like heartbeats); a released fellow cannot at all.
    await h.client({ bearer: spare.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect((await node.post('/api/v1/workers/goodbye', { fellow_id: spare.fellow_id })).status).toBe(403)
    expect(await state(spare.fellow_id)).toBe('online')
    await a.post('/api/v1/workers/release', { fellow_id: on.fellow_id })
    expect((await node.post('/api/v1/workers/goodbye', {})).status).toBe(401)
  })

  test("a heartbeat's engines and runners show in the machine's view; older agents that send neither still work", async () => {
    const { h, a, b, A, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    const node = h.client({ bearer: f.node_token })
    const view = async () => (await a.get(`/api/v1/workers/${f.fellow_id}`)).body
    // An agent older than the field: no engines known, the built-in runner only.
    expect((await node.post('/api/v1/workers/heartbeat', { status: 'idle', servables: ['tiny-llm'] })).status).toBe(200)
    expect(await view()).toMatchObject({ servables: ['tiny-llm'], runners: ['mlp'], engines: [] })

    const engines = [
      { name: 'builtin', model: 'tiny-llm', healthy: true },
      { name: 'vllm', model: 'qwen2.5-7b', healthy: false },
    ]
    const hb = await node.post('/api/v1/workers/heartbeat', { status: 'idle', servables: ['tiny-llm'], runners: ['mlp', 'torch'], engines })
    expect(hb.status).toBe(200)
    expect(await view()).toMatchObject({ servables: ['tiny-llm'], runners: ['mlp', 'torch'], engines })
    // The pool's list carries them too, and a heartbeat without the fields keeps the last ones.
    expect((await node.post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(200)
    expect((await a.get(`/api/v1/workers?pool_id=${pool.id}`)).body.items[0]).toMatchObject({ runners: ['mlp', 'torch'], engines })

    // Healthy means serving now: not while the fellow is stale, nor after it said goodbye.
    h.clock.advance(21_000)
    expect((await view()).state).toBe('stale')
    expect((await view()).engines.map((e: { healthy: boolean }) => e.healthy)).toEqual([false, false])
    await node.post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect((await view()).engines).toEqual(engines)
    expect((await node.post('/api/v1/workers/goodbye', {})).status).toBe(204)
    expect(await view()).toMatchObject({ state: 'offline', engines: engines.map((e) => ({ ...e, healthy: false })) })

    // Re-registering (an agent restart) keeps what the last heartbeat said until the next one.
    const again = await register(h, await joinToken(a, pool.id), { fellow_id: f.fellow_id })
    expect(again.status).toBe(201)
    expect((await view()).engines.map((e: { name: string }) => e.name)).toEqual(['builtin', 'vllm'])

    // Someone outside a public pool sees its machines but not what they serve.
    const open = (await A.post('/api/v1/pools', { name: 'Everyone', visibility: 'public' })).body
    const pf = (await register(h, await joinToken(A, open.id), { hostname: 'open-1' })).body
    await h.client({ bearer: pf.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', servables: ['tiny-llm'], engines })
    expect((await A.get(`/api/v1/workers/${pf.fellow_id}`)).body.engines).toEqual(engines)
    expect((await b.get(`/api/v1/workers?pool_id=${open.id}`)).body.items.map((n: { hostname: string; servables: string[]; engines: unknown[] }) => [n.hostname, n.servables, n.engines])).toEqual([['open-1', [], []]])
  })

  test('a heartbeat with a bad engines entry is refused with 422 problem+json, and nothing of it is kept', async () => {
    const { h, a, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    const node = h.client({ bearer: f.node_token })
    const good = { name: 'vllm', model: 'qwen2.5-7b', healthy: true }
    const bad = [
      [{ ...good, name: 'no spaces allowed' }],
      [{ ...good, name: '' }],
      [{ ...good, name: 'x'.repeat(65) }],
      [{ ...good, model: '' }],
      [{ ...good, model: 'm'.repeat(201) }],
      [{ ...good, healthy: 'yes' }],
      [{ name: 'vllm', model: 'qwen2.5-7b' }],
      [{ ...good, command: 'rm -rf /' }],
      ['vllm'],
      Array.from({ length: 101 }, (_, i) => ({ ...good, name: `e${i}`, model: `m${i}` })),
      { vllm: good },
    ]
    for (const engines of bad) {
      const r = await node.post('/api/v1/workers/heartbeat', { status: 'running', step: 7, engines })
      expect([JSON.stringify(engines).slice(0, 80), r.status]).toEqual([JSON.stringify(engines).slice(0, 80), 422])
      expect(r.headers.get('content-type')).toStartWith('application/problem+json')
    }
    expect(await (await a.get(`/api/v1/workers/${f.fellow_id}`)).body).toMatchObject({ status: 'idle', step: null, engines: [] })
    // At the bound exactly, it is taken.
    const hundred = Array.from({ length: 100 }, (_, i) => ({ ...good, name: `e${i}`, model: `m${i}` }))
    expect((await node.post('/api/v1/workers/heartbeat', { status: 'idle', engines: hundred })).status).toBe(200)
    expect((await a.get(`/api/v1/workers/${f.fellow_id}`)).body.engines).toHaveLength(100)
  })

  test('malformed telemetry is refused with 422', async () => {
    const { h, a, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    const node = h.client({ bearer: f.node_token })
    for (const body of [{ status: 'dancing' }, { status: 'idle', step: -1 }, { status: 'idle', hardware: { gpus: [{ index: 0 }] } }, { status: 'idle', loss: 'NaN' }]) {
      expect((await node.post('/api/v1/workers/heartbeat', body)).status).toBe(422)
    }
  })
})

describe('worker management', () => {
  test('release is audited, sends STOP, revokes the token; others get 404 for foreign fellows', async () => {
    const { h, a, b, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    expect((await b.post('/api/v1/workers/release', { fellow_id: f.fellow_id })).status).toBe(404)
    const r = await a.post('/api/v1/workers/release', { fellow_id: f.fellow_id })
    expect(r.status).toBe(200)
    expect(h.ctx.db.select().from(auditLog).where(eq(auditLog.kind, 'worker.release')).all()).toHaveLength(1)
    // Not connected: the STOP is not kept for later, since a released token can never collect it
    // (a connected fellow gets it before its socket is closed: test/http/signals.test.ts).
    expect(h.services.fellows.signals.takePending(f.fellow_id)).toEqual([])
    expect((await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(401)
    expect((await a.get('/api/v1/workers')).body.items[0].state).toBe('released')
  })

  test('update sends UPDATE to a fellow or a whole pool; delete removes the fellow', async () => {
    const { h, a, b, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    expect((await a.post('/api/v1/workers/update', { pool_id: pool.id, version: '0.2.0' })).body).toEqual({ signalled: 1 })
    const pending = h.services.fellows.signals.takePending(f.fellow_id)
    expect(pending.map((s) => [s.signal, s.payload])).toEqual([['UPDATE', { version: '0.2.0' }]])
    // One or the other (both signalled the fellow alone); neither is a 422 naming the field.
    const both = await a.post('/api/v1/workers/update', { fellow_id: f.fellow_id, pool_id: pool.id })
    expect([both.status, both.body.detail, both.body.errors]).toEqual([422, 'body: name a fellow_id or a pool_id, not both.', [{ path: '/pool_id', message: 'not with fellow_id' }]])
    const neither = await a.post('/api/v1/workers/update', { version: '0.3.0' })
    expect([neither.status, neither.body.detail]).toEqual([422, 'body: name a fellow_id or a pool_id.'])
    expect(h.services.fellows.signals.takePending(f.fellow_id)).toEqual([])
    expect((await b.delete(`/api/v1/workers/${f.fellow_id}`)).status).toBe(404)
    expect((await a.delete(`/api/v1/workers/${f.fellow_id}`)).status).toBe(204)
    expect((await a.get('/api/v1/workers')).body.items).toEqual([])
    expect((await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(401)
  })

  test('a pool-wide update reaches exactly the fellows in that pool, and no longer those that left it', async () => {
    const { h, a, b, pool, bobPool } = await setup()
    const mine = [(await register(h, await joinToken(a, pool.id))).body, (await register(h, await joinToken(a, pool.id), { hostname: 'gpu-2' })).body]
    const bobs = (await register(h, await joinToken(b, bobPool.id))).body
    const signalled = (c: typeof a, poolId: string) => c.post('/api/v1/workers/update', { pool_id: poolId }).then((r) => r.body.signalled)
    expect(await signalled(a, pool.id)).toBe(2)
    expect(await signalled(b, bobPool.id)).toBe(1)
    expect(h.services.fellows.signals.takePending(bobs.fellow_id)).toHaveLength(1)
    expect((await a.delete(`/api/v1/workers/${mine[0]!.fellow_id}`)).status).toBe(204)
    expect(await signalled(a, pool.id)).toBe(1)
    expect((await a.delete(`/api/v1/pools/${pool.id}?force=true`)).status).toBe(200)
    expect(h.services.fellows.registry.inPools(new Set([pool.id]))).toEqual([])
    expect(h.services.fellows.registry.inPools(new Set([bobPool.id])).map((f) => f.id)).toEqual([bobs.fellow_id])
  })

  test('signals for a fellow without a socket arrive in its next heartbeat response', async () => {
    const { h, a, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    await a.post('/api/v1/workers/update', { fellow_id: f.fellow_id })
    const hb = await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect(hb.body.pending_signals.map((s: { signal: string }) => s.signal)).toEqual(['UPDATE'])
    const again = await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect(again.body.pending_signals).toBeUndefined()
  })

  test('a check (`check: true`, svc fellow --once) records nothing and leaves waiting signals for the agent; a released fellow is 404 to it too', async () => {
    const { h, a, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    const node = h.client({ bearer: f.node_token })
    await node.post('/api/v1/workers/heartbeat', { status: 'error' })
    await a.post('/api/v1/workers/update', { fellow_id: f.fellow_id })
    const check = await node.post('/api/v1/workers/heartbeat', { status: 'idle', check: true })
    expect(check.status).toBe(200)
    expect(check.body.pending_signals).toBeUndefined()
    expect(h.services.fellows.registry.get(f.fellow_id)!.status).toBe('error')
    const hb = await node.post('/api/v1/workers/heartbeat', { status: 'error' })
    expect(hb.body.pending_signals.map((s: { signal: string }) => s.signal)).toEqual(['UPDATE'])
    expect((await a.post('/api/v1/workers/release', { fellow_id: f.fellow_id })).status).toBeLessThan(300)
    expect([401, 404]).toContain((await node.post('/api/v1/workers/heartbeat', { status: 'idle', check: true })).status)
  })

  test('a forced pool delete detaches its fellows and stops them', async () => {
    const { h, a, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    expect((await a.delete(`/api/v1/pools/${pool.id}?force=true`)).body.detached_nodes).toBe(1)
    expect(h.services.fellows.signals.takePending(f.fellow_id).map((s) => s.signal)).toEqual(['STOP'])
    expect((await a.get('/api/v1/cluster/nodes')).body.items).toEqual([])
  })
})

describe('a member who leaves the pool', () => {
  const memberOf = (h: Harness, poolId: string, userId: string) => h.ctx.db.insert(poolMembers).values({ poolId, userId, role: 'member', createdAt: h.clock.now() }).run()

  test('takes their machines along (detached, told to stop) and their join commands stop working; the others stay', async () => {
    // With the installer behind a join token too, so the dead token's refusal there shows.
    const { h, a, b, bob, pool } = await setup({ SVC_BOOTSTRAP_REQUIRE_TOKEN: '1' })
    memberOf(h, pool.id, bob.id)
    const bobsToken = await joinToken(b, pool.id)
    const bobs = (await register(h, bobsToken, { hostname: 'bob-box' })).body
    const alices = (await register(h, await joinToken(a, pool.id), { hostname: 'alice-box' })).body
    h.services.fellows.signals.takePending(bobs.fellow_id)

    expect((await b.delete(`/api/v1/pools/${pool.id}/members/${bob.id}`)).status).toBe(204)
    // Bob's token made before he left no longer admits a machine, nor fetches the installer.
    const again = await register(h, bobsToken, { hostname: 'bob-box-2' })
    expect([again.status, again.body.detail]).toEqual([401, 'The join or node token is wrong, expired or revoked.'])
    expect((await h.client().get('/api/v1/bootstrap/fellow.sh', { 'x-bootstrap-token': bobsToken })).status).toBe(401)
    expect((await h.client().get('/api/v1/bootstrap/fellow.sh', { 'x-bootstrap-token': await joinToken(a, pool.id) })).status).toBe(200)
    // His machine left with him: out of the pool, told to stop, and refused when it comes back.
    expect(h.services.fellows.signals.takePending(bobs.fellow_id).map((s) => [s.signal, s.payload])).toEqual([['STOP', { reason: 'the member who added this fellow left the pool' }]])
    expect((await a.get(`/api/v1/cluster/nodes?pool_id=${pool.id}`)).body.items.map((n: { fellow_id: string }) => n.fellow_id)).toEqual([alices.fellow_id])
    const back = await register(h, bobs.node_token, { fellow_id: bobs.fellow_id, hostname: 'bob-box' })
    expect([back.status, back.body.detail]).toEqual([403, 'This fellow was detached from its pool (the pool was deleted, or the member who added it left); start it with a join token of a pool to join one.'])
    expect(h.ctx.db.select().from(poolNodes).where(eq(poolNodes.fellowId, bobs.fellow_id)).all()).toEqual([])
    // Alice's machine did not move.
    expect((await h.client({ bearer: alices.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })).status).toBe(200)
    const entry = h.ctx.db.select().from(auditLog).where(eq(auditLog.kind, 'pool.leave')).get()!
    expect(JSON.parse(entry.detail!)).toEqual({ user_id: bob.id, detached_nodes: 1, join_sessions_revoked: 1 })
  })

  test('removed by the owner: the same; and a join token of someone whose account was disabled admits nothing', async () => {
    const { h, a, b, A, bob, alice, pool } = await setup()
    memberOf(h, pool.id, bob.id)
    const bobsToken = await joinToken(b, pool.id)
    const bobs = (await register(h, bobsToken)).body
    expect((await a.delete(`/api/v1/pools/${pool.id}/members/${bob.id}`)).status).toBe(204)
    expect((await register(h, bobsToken)).status).toBe(401)
    expect(h.services.fellows.signals.takePending(bobs.fellow_id).map((s) => s.signal)).toEqual(['STOP'])
    // The maker's account disabled: the token dies with it (and lives again only if re-enabled).
    const alicesToken = await joinToken(a, pool.id)
    expect((await A.post(`/api/v1/admin/users/${alice.id}/status`, { status: 'disabled' })).status).toBe(200)
    expect((await register(h, alicesToken)).status).toBe(401)
  })

  test('a fellow of a deleted pool, started again, stays out of every pool (it used to land in the default pool)', async () => {
    const { h, a, A, pool } = await setup()
    const f = (await register(h, await joinToken(a, pool.id))).body
    expect((await a.delete(`/api/v1/pools/${pool.id}?force=true`)).status).toBe(200)
    const back = await register(h, f.node_token, { fellow_id: f.fellow_id })
    expect(back.status).toBe(403)
    expect(h.ctx.db.select().from(poolNodes).where(eq(poolNodes.fellowId, f.fellow_id)).all()).toEqual([])
    // A join token of another pool takes it in, as a new fellow (as the agent's last attempt does).
    const other = (await A.post('/api/v1/pools', { name: 'Second' })).body
    const token = await joinToken(A, other.id)
    const same = await register(h, token, { fellow_id: f.fellow_id })
    expect([same.status, same.body.detail]).toEqual([403, 'This fellow was detached from its pool; it joins this one as a new fellow.'])
    const fresh = await register(h, token)
    expect([fresh.status, fresh.body.pool_id]).toEqual([201, other.id])
  })
})

describe('bootstrap downloads', () => {
  test('manifest and fellow.sh are public unless SVC_BOOTSTRAP_REQUIRE_TOKEN=1, then a join token is needed', async () => {
    const open = await setup()
    const m = await open.h.client().get('/api/v1/bootstrap/manifest.json')
    expect(m.status).toBe(200)
    expect(m.body.leader_url).toBe(open.h.cfg.baseUrl)
    const sh = await open.h.client().get('/api/v1/bootstrap/fellow.sh')
    expect(sh.body).toStartWith('#!/bin/sh')
    expect(sh.body).toContain('set -eu')
    const locked = await setup({ SVC_BOOTSTRAP_REQUIRE_TOKEN: '1' })
    expect((await locked.h.client().get('/api/v1/bootstrap/fellow.sh')).status).toBe(401)
    const token = await joinToken(locked.a, locked.pool.id)
    expect((await locked.h.client().get('/api/v1/bootstrap/fellow.sh', { 'x-bootstrap-token': token })).status).toBe(200)
    expect((await locked.h.client().get('/api/v1/bootstrap/manifest.json', { 'x-bootstrap-token': 'svc_join_bad' })).status).toBe(401)
  })
})
