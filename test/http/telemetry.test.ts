// Telemetry history (issue 25): heartbeats fill 1-minute and 15-minute buckets in memory, the
// heartbeat flush writes the closed ones to the state file, and the machine and pool views read
// them back over an hour, a day and 30 days. Time moves on the harness's fake clock only.
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

const MIN = 60_000
const gpu = (free: number, util: number) => ({ index: 0, name: 'NVIDIA L4', memory_total_mb: 24000, memory_free_mb: free, utilization_pct: util, temperature_c: 40 + util / 10 })

async function setup(env: Record<string, string> = {}) {
  const h = makeHarness(env)
  all.push(h)
  const alice = await seedUser(h, 'alice@example.com')
  const bob = await seedUser(h, 'bob@example.com')
  const a = sessionClient(h, alice.id)
  const b = sessionClient(h, bob.id)
  const pool = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
  const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
  const reg = async (hostname: string) => {
    const r = await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname })
    expect(r.status).toBe(201)
    return { id: r.body.fellow_id as string, node: h.client({ bearer: r.body.node_token }) }
  }
  const beat = async (node: ReturnType<Harness['client']>, hardware: Record<string, unknown>) => {
    const r = await node.post('/api/v1/workers/heartbeat', { status: 'idle', hardware })
    expect(r.status).toBe(200)
  }
  return { h, a, b, pool, reg, beat }
}

describe('telemetry history', () => {
  test('a CPU-only machine gets a point per 30 s for the last hour and per minute for the day, written by the flush', async () => {
    const { h, a, b, reg, beat } = await setup()
    const cpu = await reg('cpu-box')
    // Start on a minute boundary so the bucket arithmetic below is plain.
    h.clock.advance(MIN - (h.clock.now() % MIN))
    for (let i = 0; i < 12; i++) {
      await beat(cpu.node, { gpus: [], cpu_pct: 10 + i, mem_free_mb: 1000 + i * 10, mem_total_mb: 8000 })
      h.services.fellows.registry.flush()
      h.clock.advance(10_000)
    }
    // Two minutes passed: the first minute's bucket closed and the flush wrote it.
    const rows = h.ctx.sqlite.query<{ res: number; ts: number; samples: number; cpu_pct: number }, []>('SELECT res, ts, samples, cpu_pct FROM telemetry_buckets ORDER BY res, ts').all()
    expect(rows.filter((r) => r.res === 60)).toHaveLength(1)
    expect(rows[0]!.samples).toBe(6)
    expect(rows[0]!.cpu_pct).toBe(12.5) // mean of 10..15

    const hour = await a.get(`/api/v1/workers/${cpu.id}/telemetry?range=1h`)
    expect(hour.status).toBe(200)
    expect(hour.body.resolution_s).toBe(30)
    expect(hour.body.points.length).toBe(4) // one sample per 30 s over 2 minutes
    expect(hour.body.points[0]).toMatchObject({ cpu_pct: 10, mem_free_mb: 1000, mem_total_mb: 8000, gpu_util_pct: null })

    const day = await a.get(`/api/v1/workers/${cpu.id}/telemetry?range=1d`)
    expect(day.status).toBe(200)
    expect(day.body.resolution_s).toBe(60)
    // The written minute and the one still open in memory.
    expect(day.body.points.map((p: any) => p.cpu_pct)).toEqual([12.5, 18.5])
    expect(day.body.points[0].mem_total_mb).toBe(8000)

    // Caught up, the flush has nothing to do: an idle leader commits nothing for the history.
    h.services.fellows.registry.flush()
    expect(h.services.fellows.registry.telemetry.pending(h.clock.now())).toBe(false)
    expect(h.services.fellows.registry.flush()).toBe(0)

    // Not a member: not found; a bad range: 422.
    expect((await b.get(`/api/v1/workers/${cpu.id}/telemetry?range=1h`)).status).toBe(404)
    expect((await a.get(`/api/v1/workers/${cpu.id}/telemetry?range=1y`)).status).toBe(422)
  })

  test('minute buckets expire after a day, quarter-hour buckets serve 30 days, and a pool sums its machines', async () => {
    const { h, a, b, pool, reg, beat } = await setup()
    const one = await reg('gpu-1')
    const two = await reg('gpu-2')
    h.clock.advance(15 * MIN - (h.clock.now() % (15 * MIN)))
    const start = h.clock.now()
    for (let m = 0; m < 3; m++) {
      await beat(one.node, { gpus: [gpu(20000, 50)], cpu_pct: 20, mem_free_mb: 5000 })
      if (m < 2) await beat(two.node, { gpus: [gpu(10000, 90)], cpu_pct: 40, mem_free_mb: 5000 })
      h.services.fellows.registry.flush()
      h.clock.advance(MIN)
    }
    await beat(one.node, { gpus: [gpu(20000, 50)] })
    h.services.fellows.registry.flush()

    const fleet = await a.get(`/api/v1/pools/${pool.id}/telemetry?range=1h`)
    expect(fleet.status).toBe(200)
    expect(fleet.body.resolution_s).toBe(60)
    expect(fleet.body.points.slice(0, 3).map((p: any) => [p.online, p.vram_total_mb, p.vram_free_mb])).toEqual([
      [2, 48000, 30000],
      [2, 48000, 30000],
      [1, 24000, 20000],
    ])
    expect(Date.parse(fleet.body.points[0].ts)).toBe(start)
    expect((await b.get(`/api/v1/pools/${pool.id}/telemetry?range=1d`)).status).toBe(404)

    const machine = await a.get(`/api/v1/workers/${one.id}/telemetry?range=1d`)
    expect(machine.body.points[0]).toMatchObject({ gpu_util_pct: 50, gpu_free_mb: 20000, gpu_total_mb: 24000, gpu_temp_c: 45 })

    // Two days on, with a heartbeat now and then: the minute rows go, the quarter-hour ones stay.
    for (let i = 0; i < 4; i++) {
      h.clock.advance(12 * 3600_000)
      await beat(one.node, { gpus: [gpu(20000, 50)] })
      h.services.fellows.registry.flush()
    }
    h.clock.advance(2000)
    h.services.fellows.registry.flush()
    const minutes = h.ctx.sqlite.query<{ n: number }, [number]>('SELECT count(*) AS n FROM telemetry_buckets WHERE res = 60 AND ts < ?').get(h.clock.now() - 24 * 3600_000 - MIN)!
    expect(minutes.n).toBe(0)
    const month = await a.get(`/api/v1/workers/${one.id}/telemetry?range=30d`)
    expect(month.body.resolution_s).toBe(900)
    expect(Date.parse(month.body.points[0].ts)).toBe(start)
    expect(month.body.points[0].samples).toBeUndefined()

    // A removed machine takes its history with it.
    expect((await a.delete(`/api/v1/workers/${two.id}`)).status).toBe(204)
    h.services.fellows.registry.flush()
    expect(h.ctx.sqlite.query<{ n: number }, [string]>('SELECT count(*) AS n FROM telemetry_buckets WHERE fellow_id = ?').get(two.id)!.n).toBe(0)
  })

  test('SVC_TELEMETRY_RETENTION_DAYS=0 writes no history: the hour from memory still answers', async () => {
    const { h, a, reg, beat } = await setup({ SVC_TELEMETRY_RETENTION_DAYS: '0' })
    const cpu = await reg('cpu-box')
    for (let i = 0; i < 4; i++) {
      await beat(cpu.node, { gpus: [], cpu_pct: 5, mem_free_mb: 100 })
      h.services.fellows.registry.flush()
      h.clock.advance(MIN)
    }
    expect(h.ctx.sqlite.query<{ n: number }, []>('SELECT count(*) AS n FROM telemetry_buckets').get()!.n).toBe(0)
    expect((await a.get(`/api/v1/workers/${cpu.id}/telemetry?range=1h`)).body.points).toHaveLength(4)
    expect((await a.get(`/api/v1/workers/${cpu.id}/telemetry?range=1d`)).body.points).toEqual([])
  })

  test('a leader restart inside a bucket adds to it: the samples from before and after both count', async () => {
    const { h, a, pool } = await setup()
    const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const r = await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'cpu-box' })
    const { fellow_id: id, node_token: token } = r.body as { fellow_id: string; node_token: string }
    const beat = async (hh: Harness, cpu: number) => expect((await hh.client({ bearer: token }).post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [], cpu_pct: cpu, mem_total_mb: 8000 } })).status).toBe(200)
    h.clock.advance(MIN - (h.clock.now() % MIN))
    const minute = h.clock.now()
    for (let i = 0; i < 3; i++) {
      await beat(h, 10)
      h.clock.advance(10_000)
    }
    // A clean stop half-way through the minute writes the open bucket; a new leader opens the file.
    await h.services.close()
    h.close()
    all.splice(all.indexOf(h), 1)
    const h2 = makeHarness({ SVC_STATE_DIR: h.dir })
    all.push(h2)
    h2.clock.advance(h.clock.now() - h2.clock.now())
    for (let i = 0; i < 3; i++) {
      await beat(h2, 20)
      h2.clock.advance(10_000)
    }
    const day = async () => (await sessionClient(h2, (await h2.ctx.sqlite.query<{ id: string }, []>("SELECT id FROM users WHERE email = 'alice@example.com'").get())!.id).get(`/api/v1/workers/${id}/telemetry?range=1d`)).body.points
    // Read while the new samples are still in memory, and after the next minute's heartbeat wrote them.
    expect((await day())[0]).toMatchObject({ ts: new Date(minute).toISOString(), cpu_pct: 15 })
    await beat(h2, 30)
    h2.services.fellows.registry.flush()
    const row = h2.ctx.sqlite.query<{ samples: number; cpu_pct: number; mem_total_mb: number }, [number]>('SELECT samples, cpu_pct, mem_total_mb FROM telemetry_buckets WHERE res = 60 AND ts = ?').get(minute)
    expect(row).toEqual({ samples: 6, cpu_pct: 15, mem_total_mb: 8000 })
    expect((await day())[0]).toMatchObject({ cpu_pct: 15 })
  })
})
