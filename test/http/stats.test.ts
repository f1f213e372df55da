import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { ContributionMeter, ContributionRollup, type WindowTotals } from '../../src/stats/contribution'
import { roundCount } from '../../src/stats/public'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

const gpu = (i: number) => ({ index: i, name: 'A100', memory_total_mb: 81920, memory_free_mb: 80000, utilization_pct: 50 })

async function setup(env: Record<string, string> = {}) {
  const h = makeHarness(env)
  all.push(h)
  const alice = await seedUser(h, 'alice@example.com', { role: 'admin' })
  const a = sessionClient(h, alice.id)
  const pool = (await a.post('/api/v1/admin/pools', { name: 'P' })).body
  const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
  const fellow = async (token: string | null, gpus: number) => {
    const r = (await h.client(token ? { bearer: token } : {}).post('/api/v1/workers/register', { hostname: 'g' })).body
    const c = h.client({ bearer: r.node_token })
    return { id: r.fellow_id as string, hb: () => c.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: Array.from({ length: gpus }, (_, i) => gpu(i)) } }) }
  }
  return { h, alice, a, pool, join, fellow }
}

describe('contribution roll-up', () => {
  test('windows abut exactly over many ticks; GPU-seconds integrate observed uptime times GPU count', async () => {
    const { h, a, join, fellow } = await setup()
    const rollup = h.services.rollup
    const f = await fellow(join, 2)
    await f.hb()
    const windows: WindowTotals[] = []
    for (let i = 0; i < 60; i++) {
      h.clock.advance(10_000)
      await f.hb()
      if (i % 6 === 5) windows.push(rollup.tick())
    }
    h.clock.advance(1) // the last heartbeat sits exactly at the last window end: it opens the next window
    windows.push(rollup.tick())
    for (let i = 1; i < windows.length; i++) expect(windows[i]!.start).toBe(windows[i - 1]!.end)
    const total = windows.reduce((s, w) => s + w.gpuSeconds, 0)
    expect(total).toBeCloseTo(600 * 2, 6) // 600 s online, 2 GPUs
    expect((await a.get('/api/v1/me/contribution')).body).toMatchObject({ gpu_seconds: 1200, tokens_served: 0, requests_served: 0, credits_status: 'not_implemented' })
  })

  test('a heartbeat exactly at a window end belongs to the next window, never to both', async () => {
    const { h } = await setup()
    const meter = new ContributionMeter()
    const r = new ContributionRollup(h.ctx, meter)
    const start = r.windowEnd()
    meter.served('x', start + 1000, 5)
    meter.served('x', start + 2000, 7) // exactly at the first window's end
    expect(r.tick(start + 2000).tokens).toBe(5)
    expect(r.tick(start + 3000).tokens).toBe(7)
    expect(r.tick(start + 4000).tokens).toBe(0)
  })

  test('the window end survives a restart: the next window starts where the last one ended', async () => {
    const { h } = await setup()
    const first = new ContributionRollup(h.ctx, new ContributionMeter())
    const w1 = first.tick(first.windowEnd() + 60_000)
    const restarted = new ContributionRollup(h.ctx, new ContributionMeter())
    expect(restarted.windowEnd()).toBe(w1.end)
    expect(restarted.tick(w1.end + 60_000).start).toBe(w1.end)
  })

  test('a fellow that goes offline stops accruing: a long gap counts only its first two intervals', async () => {
    const { h, join, fellow } = await setup()
    const f = await fellow(join, 1)
    await f.hb()
    h.services.rollup.tick()
    h.clock.advance(10 * 60_000)
    expect(h.services.rollup.tick().gpuSeconds).toBe(0)
    await f.hb()
    h.clock.advance(1)
    expect(h.services.rollup.tick().gpuSeconds).toBe(20) // 2 x 10 s interval, 1 GPU
  })

  test('nodes that joined without a member token count in the totals but for no member', async () => {
    const { h, a, fellow } = await setup()
    const f = await fellow(null, 4)
    await f.hb()
    h.clock.advance(10_000)
    await f.hb()
    h.clock.advance(1)
    const w = h.services.rollup.tick()
    expect(w.gpuSeconds).toBe(40)
    expect(w.members).toBe(0)
    expect((await a.get('/api/v1/me/contribution')).body.gpu_seconds).toBe(0)
    expect(h.services.rollup.totals().gpuSeconds).toBe(40)
  })

  test('served tokens and requests are attributed to the member whose token admitted the fellow', async () => {
    const { h, alice, a } = await setup()
    h.services.rollup.meter.served(alice.id, h.clock.now(), 120)
    h.services.rollup.meter.served(alice.id, h.clock.now(), 30)
    h.clock.advance(1)
    h.services.rollup.tick()
    expect((await a.get('/api/v1/me/contribution')).body).toMatchObject({ tokens_served: 150, requests_served: 2 })
  })

  test('no parameter selects another user: a query naming one is refused', async () => {
    const { h, a } = await setup()
    const bob = await seedUser(h, 'bob@example.com')
    expect((await a.get(`/api/v1/me/contribution?user_id=${bob.id}`)).status).toBe(422)
    expect((await h.client().get('/api/v1/me/contribution')).status).toBe(401)
  })
})

describe('public stats', () => {
  test('null below the node floor (N-1), figures at N; aggregates only', async () => {
    const { h, join, fellow } = await setup({ SVC_PUBLIC_STATS_MIN_NODES: '3', SVC_PUBLIC_STATS_TTL_S: '0' })
    const c = h.client({ ip: '203.0.113.50' })
    const f1 = await fellow(join, 2)
    const f2 = await fellow(join, 2)
    await f1.hb()
    await f2.hb()
    const below = (await c.get('/api/v1/public/stats')).body
    expect(Object.entries(below).filter(([k]) => k !== 'generated_at').every(([, v]) => v === null)).toBe(true)
    const f3 = await fellow(join, 1)
    await f3.hb()
    const at = (await c.get('/api/v1/public/stats')).body
    expect(at).toMatchObject({ nodes_online: 3, gpus_online: 5, pools: 1, users: 1, gpu_hours_contributed: 0, tokens_served: 0, requests_served: 0 })
    expect(Object.keys(at).sort()).toEqual(['generated_at', 'gpu_hours_contributed', 'gpus_online', 'nodes_online', 'pools', 'requests_served', 'tokens_served', 'users'])
  })

  // Issue 26, item 2: anyone may register token-less fellows, in numbers.
  test('token-less fellows do not count: they neither inflate the node and GPU figures nor lift a deployment over the floor', async () => {
    const { h, join, fellow } = await setup({ SVC_PUBLIC_STATS_MIN_NODES: '2', SVC_PUBLIC_STATS_TTL_S: '0' })
    const c = h.client({ ip: '203.0.113.54' })
    for (let i = 0; i < 3; i++) await (await fellow(null, 8)).hb()
    expect((await c.get('/api/v1/public/stats')).body.nodes_online).toBeNull()
    await (await fellow(join, 1)).hb()
    await (await fellow(join, 2)).hb()
    expect((await c.get('/api/v1/public/stats')).body).toMatchObject({ nodes_online: 2, gpus_online: 3 })
  })

  test('cached for SVC_PUBLIC_STATS_TTL_S', async () => {
    const { h, join, fellow } = await setup({ SVC_PUBLIC_STATS_MIN_NODES: '1', SVC_PUBLIC_STATS_TTL_S: '60' })
    const c = h.client({ ip: '203.0.113.51' })
    const f1 = await fellow(join, 1)
    await f1.hb()
    expect((await c.get('/api/v1/public/stats')).body.nodes_online).toBe(1)
    const f2 = await fellow(join, 1)
    await f2.hb()
    expect((await c.get('/api/v1/public/stats')).body.nodes_online).toBe(1) // still the cached figure
    h.clock.advance(60_000)
    await f1.hb()
    await f2.hb()
    expect((await c.get('/api/v1/public/stats')).body.nodes_online).toBe(2)
  })

  test('values are rounded: GPU-hours to a whole number, counts to two significant figures', () => {
    expect([7, 47, 99, 123, 1234, 98765].map(roundCount)).toEqual([7, 47, 99, 120, 1200, 98000])
  })

  test('rate-limited per client IP', async () => {
    const { h } = await setup()
    const c = h.client({ ip: '203.0.113.52' })
    for (let i = 0; i < 60; i++) expect((await c.get('/api/v1/public/stats')).status).toBe(200)
    const r = await c.get('/api/v1/public/stats')
    expect(r.status).toBe(429)
    expect(r.headers.get('retry-after')).not.toBeNull()
    expect((await h.client({ ip: '203.0.113.53' }).get('/api/v1/public/stats')).status).toBe(200)
  })
})
