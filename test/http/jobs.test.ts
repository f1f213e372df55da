import { afterAll, describe, expect, test } from 'bun:test'
import { Client, makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { createApp, createServices } from '../../src/app'
import { encodeFrames, decodeFrames } from '../../src/wire/frames'
import { UNNAMED_POOL_REASON } from '../../src/jobs/service'
import { poolMembers } from '../../src/db/schema'
import { cluster as makeCluster, type Fellow } from '../helpers/job-cluster'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))
const cluster = (n: number, opts: { env?: Record<string, string>; freeMb?: number[] } = {}) => makeCluster(n, { ...opts, track: all })

describe('job lifecycle', () => {
  test('a 3-stage job is placed on 3 fellows in pipeline order and each gets START with its neighbours', async () => {
    const { A, pool, fellows, signalsOf } = await cluster(3, { freeMb: [30_000, 50_000, 40_000] })
    const r = await A.post('/api/v1/jobs', { name: 'mlp', pool_id: pool.id, stages: 3, min_free_vram_mb: 20_480, config: { steps: 100 } })
    expect(r.status).toBe(201)
    expect(r.body.status).toBe('scheduled')
    const order = r.body.assignments.map((a: { fellow_id: string }) => a.fellow_id)
    expect(order).toEqual([fellows[1]!.fellow_id, fellows[2]!.fellow_id, fellows[0]!.fellow_id]) // roomiest first
    const mid = signalsOf(fellows[2]!)
    expect(mid).toHaveLength(1)
    expect(mid[0]).toMatchObject({ signal: 'START', job_id: r.body.id })
    expect(mid[0]!.payload).toMatchObject({
      stage: 1,
      stages: 3,
      prev: { fellow_id: fellows[1]!.fellow_id, address: '127.0.0.1:5567' },
      next: { fellow_id: fellows[0]!.fellow_id, address: '127.0.0.1:5557' },
      transport: 'auto',
      config: { steps: 100 },
    })
  })

  test('goes queued -> scheduled -> running -> paused -> running -> completed, with signals for each step', async () => {
    const { A, pool, fellows, signalsOf, logged } = await cluster(2)
    const job = (await A.post('/api/v1/jobs', { name: 'life', pool_id: pool.id, stages: 2 })).body
    fellows.forEach(signalsOf)
    const report = (f: Fellow, body: Record<string, unknown>) => f.c.post(`/api/v1/jobs/${job.id}/status`, body)
    expect((await report(fellows[0]!, { status: 'running', step: 1 })).body.status).toBe('running')
    expect((await A.post(`/api/v1/jobs/${job.id}/pause`)).body.status).toBe('paused')
    // Reports while paused keep it paused, and the leader's log says "paused" once.
    for (const f of fellows) expect((await report(f, { status: 'paused', step: 1 })).body.status).toBe('paused')
    expect(logged('job paused')).toHaveLength(1)
    expect(signalsOf(fellows[0]!).map((s) => s.signal)).toEqual(['PAUSE'])
    expect((await A.post(`/api/v1/jobs/${job.id}/pause`)).status).toBe(409)
    const resumed = await A.post(`/api/v1/jobs/${job.id}/resume`)
    expect(resumed.body.status).toBe('running')
    expect(signalsOf(fellows[1]!).map((s) => [s.signal, s.payload?.resume])).toEqual([['PAUSE', undefined], ['START', true]])
    expect((await A.post(`/api/v1/jobs/${job.id}/checkpoint`)).body.signalled).toBe(2)
    expect(signalsOf(fellows[0]!).map((s) => s.signal)).toEqual(['START', 'CHECKPOINT'])
    const st = await report(fellows[1]!, { status: 'running', step: 10, loss: 0.25, throughput: 120 })
    expect(st.body).toMatchObject({ step: 10, loss: 0.25 })
    const done = await report(fellows[0]!, { status: 'completed', step: 20 })
    expect(done.body.status).toBe('completed')
    expect(signalsOf(fellows[1]!).map((s) => s.signal)).toContain('STOP')
    expect((await A.delete(`/api/v1/jobs/${job.id}`)).status).toBe(409)
    expect(logged('job completed')).toHaveLength(1)
  })

  test('cancel sends STOP; a failed stage fails the job with its reason', async () => {
    const { A, pool, fellows, signalsOf } = await cluster(2)
    const j1 = (await A.post('/api/v1/jobs', { name: 'c', pool_id: pool.id, stages: 1 })).body
    const cancelled = await A.delete(`/api/v1/jobs/${j1.id}`)
    expect(cancelled.body.status).toBe('cancelled')
    const holder = fellows.find((f) => f.fellow_id === j1.assignments[0].fellow_id)!
    expect(signalsOf(holder).map((s) => s.signal)).toEqual(['START', 'STOP'])
    const j2 = (await A.post('/api/v1/jobs', { name: 'f', pool_id: pool.id, stages: 1 })).body
    const f2 = fellows.find((f) => f.fellow_id === j2.assignments[0].fellow_id)!
    const failed = await f2.c.post(`/api/v1/jobs/${j2.id}/status`, { status: 'failed', reason: 'CUDA out of memory' })
    expect(failed.body).toMatchObject({ status: 'failed', reason: 'CUDA out of memory' })
  })

  test('a job that ended leaves no fellow listed as running it, an offline one included (it read "offline running <the failed job>")', async () => {
    const { h, A, pool, fellows } = await cluster(1)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 1 })).body
    const f = fellows[0]!
    await f.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: job.id, step: 3 })
    const node = async () => (await A.get(`/api/v1/cluster/nodes?pool_id=${pool.id}`)).body.items[0]
    expect(await node()).toMatchObject({ status: 'running', job_id: job.id })
    h.clock.advance(61_000) // it goes quiet, then its stage fails
    await f.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'failed', reason: 'segfault' })
    expect(await node()).toMatchObject({ state: 'offline', status: 'idle', job_id: null })
  })

  test('a fellow whose stage moved to a spare when it went offline is no longer listed as running the job', async () => {
    const { h, A, pool, fellows } = await cluster(2)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 1 })).body
    const holder = fellows.find((f) => f.fellow_id === job.assignments[0].fellow_id)!
    const spare = fellows.find((f) => f !== holder)!
    await holder.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: job.id })
    h.clock.advance(61_000)
    await spare.hb()
    for (const f of h.services.fellows.registry.tick(h.clock.now())) h.services.jobs.onFellowOffline(f.id)
    expect((await A.get(`/api/v1/jobs/${job.id}`)).body.assignments[0].fellow_id).toBe(spare.fellow_id)
    const lost = (await A.get(`/api/v1/cluster/nodes?pool_id=${pool.id}`)).body.items.find((n: { fellow_id: string }) => n.fellow_id === holder.fellow_id)
    expect(lost).toMatchObject({ state: 'offline', status: 'idle', job_id: null })
  })

  test("the built-in runner's settings are checked at submit (422 naming the setting); other keys and other runners' configs pass as they are", async () => {
    const { A, pool } = await cluster(0)
    for (const [config, path, words] of [
      [{ steps: 'abc' }, '/config/steps', 'must be an integer from 1 to 100000000'],
      [{ steps: 0 }, '/config/steps', 'must be an integer from 1 to 100000000'],
      [{ lr: -1 }, '/config/lr', 'must be a positive number'],
      [{ report_every: 1.5 }, '/config/report_every', 'must be an integer from 1 to 1000000'],
      [{ resend_ms: 5 }, '/config/resend_ms', 'must be an integer from 100 to 600000'],
    ] as const) {
      const r = await A.post('/api/v1/jobs', { name: 'typo', pool_id: pool.id, config })
      expect([JSON.stringify(config), r.status, r.body.code, r.body.detail, r.body.errors?.[0]?.path]).toEqual([JSON.stringify(config), 422, 'validation_failed', `body ${path}: ${words} (a setting of the built-in runner mlp).`, path])
    }
    expect((await A.post('/api/v1/jobs', { name: 'zero-lr', pool_id: pool.id, runner: 'mlp', config: { lr: 0 } })).status).toBe(422)
    expect((await A.post('/api/v1/jobs', { name: 'extra', pool_id: pool.id, config: { steps: 50, note: 'kept', epochs: 3 } })).status).toBe(201)
    expect((await A.post('/api/v1/jobs', { name: 'torch', pool_id: pool.id, runner: 'torch', config: { steps: 'abc', lr: -1 } })).status).toBe(201)
  })

  test('a config over 64 KiB as JSON is refused at submit (every job list carries the configs: a megabyte each made a pool page\'s list 373 MB)', async () => {
    const { A, pool } = await cluster(1)
    const at = (chars: number) => ({ name: 'sized', pool_id: pool.id, runner: 'torch', config: { data: 'x'.repeat(chars) } })
    const overhead = JSON.stringify({ data: '' }).length
    expect((await A.post('/api/v1/jobs', at(64 * 1024 - overhead))).status).toBe(201)
    const r = await A.post('/api/v1/jobs', at(64 * 1024 - overhead + 1))
    expect([r.status, r.body.code, r.body.errors?.[0]?.path]).toEqual([422, 'validation_failed', '/config'])
    expect(r.body.detail).toBe('body /config: must be at most 64 KiB as JSON (it is 65 KiB); pass data as an artifact, not in the config.')
  })

  test('a job that cannot be placed stays queued with a readable reason, and is placed once fellows appear', async () => {
    const { h, A, pool, fellows } = await cluster(2, { freeMb: [30_000, 10_000] })
    const r = await A.post('/api/v1/jobs', { name: 'big', pool_id: pool.id, stages: 3, min_free_vram_mb: 20_480 })
    expect(r.body.status).toBe('queued')
    expect(r.body.reason).toBe('needs 3 fellows with >= 20 GiB free; pool has 1')
    await fellows[1]!.hb(30_000)
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const f3 = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'late' })).body
    await h.client({ bearer: f3.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [{ index: 0, name: 'H100', memory_total_mb: 81920, memory_free_mb: 70_000, utilization_pct: 0 }] } })
    expect(h.services.jobs.schedulePass()).toBe(1)
    expect((await A.get(`/api/v1/jobs/${r.body.id}`)).body.status).toBe('scheduled')
  })

  test('a fellow that goes offline mid-job is replaced (START to the newcomer, RECONFIGURE to the rest); with no spare the job fails', async () => {
    const { h, A, pool, fellows, signalsOf } = await cluster(3)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    const [s0, s1] = job.assignments.map((a: { fellow_id: string }) => fellows.find((f) => f.fellow_id === a.fellow_id)!)
    const spare = fellows.find((f) => f !== s0 && f !== s1)!
    fellows.forEach(signalsOf)
    h.clock.advance(61_000) // six missed intervals
    await s0.hb()
    await spare.hb()
    for (const f of h.services.fellows.registry.tick(h.clock.now())) h.services.jobs.onFellowOffline(f.id)
    const moved = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect(moved.assignments.map((a: { fellow_id: string }) => a.fellow_id)).toEqual([s0.fellow_id, spare.fellow_id])
    expect(moved.reason).toContain('moved')
    expect(signalsOf(spare).map((s) => [s.signal, s.payload?.stage])).toEqual([['START', 1]])
    expect(signalsOf(s0).map((s) => [s.signal, (s.payload?.next as { fellow_id: string }).fellow_id])).toEqual([['RECONFIGURE', spare.fellow_id]])
    h.clock.advance(61_000)
    await s0.hb()
    for (const f of h.services.fellows.registry.tick(h.clock.now())) h.services.jobs.onFellowOffline(f.id)
    const failed = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect(failed.status).toBe('failed')
    expect(failed.reason).toContain('went offline')
  })

  test('a fellow back from offline still running a stage that moved meanwhile is told to STOP it with its first heartbeat', async () => {
    const { h, A, pool, fellows, signalsOf, logged } = await cluster(2)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 1 })).body
    const away = fellows.find((f) => f.fellow_id === job.assignments[0].fellow_id)!
    const spare = fellows.find((f) => f !== away)!
    fellows.forEach(signalsOf)
    const busy = (f: Fellow) => f.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: job.id, step: 5 })
    expect((await busy(away)).body.pending_signals).toBeUndefined()
    h.clock.advance(61_000) // six missed intervals
    await spare.hb()
    for (const f of h.services.fellows.registry.tick(h.clock.now())) h.services.jobs.onFellowOffline(f.id)
    expect((await A.get(`/api/v1/jobs/${job.id}`)).body.assignments[0].fellow_id).toBe(spare.fellow_id)
    // Back, and still saying it runs the job: the answer to that very heartbeat carries the STOP.
    const back = await busy(away)
    expect(back.body.pending_signals.map((s: { signal: string; job_id: string }) => [s.signal, s.job_id])).toEqual([['STOP', job.id]])
    expect(logged('told a fellow to stop a job it no longer runs')).toHaveLength(1)
    // A fellow back that still holds its stage is left alone.
    await busy(spare)
    h.clock.advance(61_000)
    await away.hb()
    for (const f of h.services.fellows.registry.tick(h.clock.now())) expect(f.id).toBe(spare.fellow_id)
    expect((await busy(spare)).body.pending_signals).toBeUndefined()
  })

  test("a paused job's stage moved to a spare stays paused (the spare ran it while the job said paused)", async () => {
    const { h, A, pool, fellows, signalsOf } = await cluster(3)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    const [s0, s1] = job.assignments.map((a: { fellow_id: string }) => fellows.find((f) => f.fellow_id === a.fellow_id)!)
    const spare = fellows.find((f) => f !== s0 && f !== s1)!
    expect((await A.post(`/api/v1/jobs/${job.id}/pause`, {})).status).toBe(200)
    fellows.forEach(signalsOf)
    h.clock.advance(61_000)
    await s0.hb()
    await spare.hb()
    for (const f of h.services.fellows.registry.tick(h.clock.now())) h.services.jobs.onFellowOffline(f.id)
    expect(signalsOf(spare).map((s) => [s.signal, s.job_id])).toEqual([['START', job.id], ['PAUSE', job.id]])
    expect((await A.get(`/api/v1/jobs/${job.id}`)).body.status).toBe('paused')
  })

  test('a fellow whose agent restarts before its heartbeats are missed gets its stage again (it used to sit idle while the job hung "running")', async () => {
    const { h, A, pool, fellows, signalsOf } = await cluster(2)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    const [s0, s1] = job.assignments.map((a: { fellow_id: string }) => fellows.find((f) => f.fellow_id === a.fellow_id)!)
    fellows.forEach(signalsOf)
    // The machine of stage 1 rebooted: its old signal socket never said goodbye and is still held.
    const dead = { sent: [] as string[], closed: null as number | null, send(d: string) { this.sent.push(d) }, close(code?: number) { this.closed = code ?? null } }
    h.services.fellows.signals.attach(s1.fellow_id, dead)
    // The agent starts again: it registers with its node token.
    const again = await h.client({ bearer: s1.node_token }).post('/api/v1/workers/register', { hostname: 'gpu-x', fellow_id: s1.fellow_id, address: '127.0.0.1:6000' })
    expect(again.status).toBe(201)
    // The dead socket is closed and forgotten; the START waits for the new connection (it went
    // into the dead one), and tells the stage to resume from what it has.
    expect([dead.closed, dead.sent]).toEqual([1012, []])
    expect(signalsOf(s1).map((s) => [s.signal, s.job_id, s.payload?.stage, s.payload?.resume])).toEqual([['START', job.id, 1, true]])
    // Its neighbour hears where it listens now.
    expect(signalsOf(s0).map((s) => [s.signal, (s.payload?.next as { address: string }).address])).toEqual([['RECONFIGURE', '127.0.0.1:6000']])
    expect((await A.get(`/api/v1/jobs/${job.id}`)).body.assignments).toEqual(job.assignments)
    // A paused job stays paused on the restarted fellow.
    expect((await A.post(`/api/v1/jobs/${job.id}/pause`, {})).status).toBe(200)
    fellows.forEach(signalsOf)
    const token = again.body.node_token
    expect((await h.client({ bearer: token }).post('/api/v1/workers/register', { hostname: 'gpu-x', fellow_id: s1.fellow_id })).status).toBe(201)
    expect(signalsOf(s1).map((s) => s.signal)).toEqual(['START', 'PAUSE'])
    // A fellow with no stage registering again is told nothing.
    const idle = await cluster(1)
    idle.fellows.forEach(idle.signalsOf)
    expect((await idle.h.client({ bearer: idle.fellows[0]!.node_token }).post('/api/v1/workers/register', { hostname: 'gpu-0', fellow_id: idle.fellows[0]!.fellow_id })).status).toBe(201)
    expect(idle.signalsOf(idle.fellows[0]!)).toEqual([])
  })

  test('a fellow that died while the leader was down loses its stage one offline window after the start (it was never counted offline: the job hung)', async () => {
    const { h, A, pool, fellows, signalsOf } = await cluster(3)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    const held = job.assignments.map((a: { fellow_id: string }) => a.fellow_id) as string[]
    const [s0, s1] = held.map((id) => fellows.find((f) => f.fellow_id === id)!) as [Fellow, Fellow]
    const spare = fellows.find((f) => !held.includes(f.fellow_id))!
    fellows.forEach(signalsOf)
    // The leader stops (its last word on every fellow written), and is down for ten minutes, during
    // which stage 1's machine dies.
    h.services.fellows.registry.flush({ all: true })
    h.clock.advance(10 * 60_000)
    const services = createServices(h.ctx)
    const app = createApp(h.ctx, services)
    const as = (f: { node_token: string }) => new Client(app, { bearer: f.node_token })
    const beat = (f: { node_token: string }) => as(f).post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 40_960, utilization_pct: 0 }] } })
    const liveness = services.loops.find((l) => l.name === 'liveness')!
    const interval = h.cfg.heartbeatIntervalS * 1000
    const admin = Object.assign(new Client(app, A.opts), { cookies: A.cookies })
    const stage1 = async () => (await admin.get(`/api/v1/jobs/${job.id}`)).body.assignments[1].fellow_id
    // The living come back; stage 1's fellow stays silent.
    for (let t = 0; t <= 6 * interval; t += interval) {
      await beat(s0)
      await beat(spare)
      await liveness.run()
      expect(await stage1()).toBe(s1.fellow_id)
      h.clock.advance(interval)
    }
    await liveness.run()
    expect(await stage1()).toBe(spare.fellow_id)
    expect(services.fellows.signals.takePending(spare.fellow_id).map((s) => [s.signal, s.job_id, s.payload?.stage])).toEqual([['START', job.id, 1]])
    // A fellow that comes back within the window keeps its stage (the usual way back).
    const again = await cluster(2)
    const kept = (await again.A.post('/api/v1/jobs', { name: 'k', pool_id: again.pool.id, stages: 2 })).body
    again.h.services.fellows.registry.flush({ all: true })
    again.h.clock.advance(10 * 60_000)
    const restarted = createServices(again.h.ctx)
    const app2 = createApp(again.h.ctx, restarted)
    again.h.clock.advance(5 * interval)
    for (const f of again.fellows) expect((await new Client(app2, { bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'running', job_id: kept.id })).status).toBe(200)
    again.h.clock.advance(5 * interval)
    await restarted.loops.find((l) => l.name === 'liveness')!.run()
    expect((await Object.assign(new Client(app2, again.A.opts), { cookies: again.A.cookies }).get(`/api/v1/jobs/${kept.id}`)).body.assignments).toEqual(kept.assignments)
  })

  test("a member who leaves the pool takes their fellow along: its stage moves to a spare at once", async () => {
    const { h, A, b, bob, pool, fellows, signalsOf } = await cluster(2, { freeMb: [30_000, 20_000] })
    h.ctx.db.insert(poolMembers).values({ poolId: pool.id, userId: bob.id, role: 'member', createdAt: h.clock.now() }).run()
    const token = (await b.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const bobs = (await h.client({ bearer: token }).post('/api/v1/workers/register', { hostname: 'bob-box' })).body
    await h.client({ bearer: bobs.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 50_000, utilization_pct: 0 }] } })
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    expect(job.assignments.map((a: { fellow_id: string }) => a.fellow_id)).toEqual([bobs.fellow_id, fellows[0]!.fellow_id])
    fellows.forEach(signalsOf)
    expect((await b.delete(`/api/v1/pools/${pool.id}/members/${bob.id}`)).status).toBe(204)
    const moved = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect(moved.assignments.map((a: { fellow_id: string }) => a.fellow_id)).toEqual([fellows[1]!.fellow_id, fellows[0]!.fellow_id])
    expect(signalsOf(fellows[1]!).map((s) => [s.signal, s.payload?.stage])).toEqual([['START', 0]])
  })

  test('with no spare, the job fails saying the fellow left the pool (it said "went offline")', async () => {
    const { h, A, b, bob, pool, fellows } = await cluster(1)
    h.ctx.db.insert(poolMembers).values({ poolId: pool.id, userId: bob.id, role: 'member', createdAt: h.clock.now() }).run()
    const token = (await b.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const bobs = (await h.client({ bearer: token }).post('/api/v1/workers/register', { hostname: 'bob-box' })).body
    await h.client({ bearer: bobs.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    expect(job.assignments.map((a: { fellow_id: string }) => a.fellow_id).sort()).toEqual([bobs.fellow_id, fellows[0]!.fellow_id].sort())
    expect((await b.delete(`/api/v1/pools/${pool.id}/members/${bob.id}`)).status).toBe(204)
    const failed = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect([failed.status, failed.reason]).toEqual(['failed', expect.stringContaining(`fellow ${bobs.fellow_id} left the pool (the member who added this fellow left the pool) and no other fellow`)])
  })

  test('a fellow released while it runs a stage hands it to a spare at once; one removed with no spare fails its job (both stayed "running" for good)', async () => {
    const { A, pool, fellows, signalsOf, logged } = await cluster(3, { freeMb: [30_000, 20_000, 10_000] })
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    expect(job.assignments.map((a: { fellow_id: string }) => a.fellow_id)).toEqual([fellows[0]!.fellow_id, fellows[1]!.fellow_id])
    fellows.forEach(signalsOf)
    expect((await A.post('/api/v1/workers/release', { fellow_id: fellows[0]!.fellow_id })).status).toBe(200)
    const moved = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect([moved.status, moved.assignments.map((a: { fellow_id: string }) => a.fellow_id)]).toEqual(['scheduled', [fellows[2]!.fellow_id, fellows[1]!.fellow_id]])
    expect(signalsOf(fellows[2]!).map((s) => [s.signal, s.payload?.stage])).toEqual([['START', 0]])
    expect((await A.delete(`/api/v1/workers/${fellows[1]!.fellow_id}`)).status).toBe(204)
    const failed = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect([failed.status, failed.reason]).toEqual(['failed', expect.stringContaining(`fellow ${fellows[1]!.fellow_id} was removed and no other fellow`)])
    expect(signalsOf(fellows[2]!).map((s) => s.signal)).toEqual(['STOP'])
    // The leader's log tells its operator both, without the API.
    expect(logged('stage moved to another fellow')).toEqual([expect.objectContaining({ job_id: job.id, stage: 0, from: fellows[0]!.fellow_id, to: fellows[2]!.fellow_id, why: 'was released' })])
    expect(logged('job failed')).toEqual([expect.objectContaining({ level: 'warn', job_id: job.id, reason: failed.reason })])
  })

  test('purge is admin-only, audited, and sends PURGE to every fellow', async () => {
    const { A, b, pool, fellows, signalsOf } = await cluster(2)
    await A.post('/api/v1/jobs', { name: 'p', pool_id: pool.id, stages: 2 })
    fellows.forEach(signalsOf)
    expect((await b.delete('/api/v1/jobs')).status).toBe(403)
    expect((await A.delete('/api/v1/jobs')).body).toEqual({ purged: 1, signalled: 2 })
    expect(signalsOf(fellows[0]!).map((s) => s.signal)).toEqual(['PURGE'])
    expect((await A.get('/api/v1/jobs')).body.items).toEqual([])
    expect((await A.get('/api/v1/admin/audit?kind=jobs.purge')).status).not.toBe(500)
  })
})

describe('job scoping', () => {
  test('non-members cannot submit to, see or steer a pool\'s jobs (404); unassigned fellows cannot report (403)', async () => {
    const { h, A, b, pool } = await cluster(2)
    expect((await b.post('/api/v1/jobs', { name: 'x', pool_id: pool.id })).status).toBe(404)
    const job = (await A.post('/api/v1/jobs', { name: 's', pool_id: pool.id, stages: 1 })).body
    expect((await b.get(`/api/v1/jobs/${job.id}`)).status).toBe(404)
    expect((await b.delete(`/api/v1/jobs/${job.id}`)).status).toBe(404)
    expect((await b.get('/api/v1/jobs')).body.items).toEqual([])
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const other = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'idle' })).body
    const notMine = await h.client({ bearer: other.node_token }).post(`/api/v1/jobs/${job.id}/status`, { status: 'running' })
    expect(notMine.status).toBe(403)
  })
})

describe('metrics stream', () => {
  test('SSE of step/loss with ids, resumable from Last-Event-ID, ending when the job ends', async () => {
    const { h, A, pool, fellows } = await cluster(1)
    const job = (await A.post('/api/v1/jobs', { name: 'm', pool_id: pool.id, stages: 1 })).body
    const f = fellows[0]!
    for (const [step, loss] of [[1, 0.9], [2, 0.5], [3, 0.2]] as const) await f.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step, loss })
    await f.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'completed', step: 3 })
    const all = await A.get(`/api/v1/jobs/${job.id}/metrics/stream`)
    expect(all.headers.get('content-type')).toBe('text/event-stream')
    // Behind nginx's default buffering a follower saw nothing until the buffer filled.
    expect(all.headers.get('x-accel-buffering')).toBe('no')
    const ids = [...String(all.body).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
    // Numbered from the leader's clock (ms x 1000), so that they outlast a restart.
    const first = h.clock.now() * 1000 + 1
    expect(ids).toEqual([first, first + 1, first + 2, first + 3])
    expect(String(all.body)).toContain('"loss":0.2')
    expect(String(all.body)).toContain('event: end')
    const resumed = await A.get(`/api/v1/jobs/${job.id}/metrics/stream`, { 'last-event-id': String(first + 1) })
    expect([...String(resumed.body).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual([first + 2, first + 3])
    expect((await h.client().get(`/api/v1/jobs/${job.id}/metrics/stream`)).status).toBe(401)
  })

  test('a purged job ends its open metrics stream with `end` (the viewer has not lost access: the job is gone)', async () => {
    const { h, A, pool, fellows } = await cluster(1)
    const job = (await A.post('/api/v1/jobs', { name: 'p', pool_id: pool.id, stages: 1 })).body
    await fellows[0]!.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step: 1, loss: 0.9 })
    const res = await h.app.handle(new Request(`http://leader.test/api/v1/jobs/${job.id}/metrics/stream`, { headers: { cookie: [...A.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } }))
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    const dec = new TextDecoder()
    let seen = ''
    while (!seen.includes('"step":1')) seen += dec.decode((await reader.read()).value)
    expect((await A.delete('/api/v1/jobs')).status).toBe(200)
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      seen += dec.decode(value)
    }
    expect(seen).toContain('event: end')
  })

  test("an ended job's events stay an hour for late viewers, then go (they were kept until a restart: half a megabyte a long job); a viewer then gets the end at once", async () => {
    const { h, A, pool, fellows } = await cluster(1)
    const tick = () => h.services.jobs.loops()[0]!.run()
    const job = (await A.post('/api/v1/jobs', { name: 'm', pool_id: pool.id, stages: 1 })).body
    const f = fellows[0]!
    await f.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step: 1, loss: 0.9 })
    await f.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'completed', step: 2 })
    const cancelled = (await A.post('/api/v1/jobs', { name: 'never ran', pool_id: pool.id, stages: 1 })).body
    expect((await A.delete(`/api/v1/jobs/${cancelled.id}`)).status).toBe(200)
    h.clock.advance(59 * 60_000)
    await tick()
    expect(String((await A.get(`/api/v1/jobs/${job.id}/metrics/stream`)).body)).toContain('"loss":0.9')
    h.clock.advance(2 * 60_000)
    await tick()
    expect(h.services.jobs.metrics.since(job.id, 0)).toEqual([])
    expect(h.services.jobs.metrics.ended(cancelled.id)).toBe(false) // its (empty) ring went too
    const late = await A.get(`/api/v1/jobs/${job.id}/metrics/stream`)
    expect(late.status).toBe(200)
    expect(String(late.body)).toContain('event: end')
    expect(String(late.body)).not.toContain('"loss"')
  })
})

describe('relay', () => {
  async function pipeline(env: Record<string, string> = {}) {
    const c = await cluster(3, { env })
    const job = (await c.A.post('/api/v1/jobs', { name: 'relay', pool_id: c.pool.id, stages: 2 })).body
    const byId = (id: string) => c.fellows.find((f) => f.fellow_id === id)!
    const s0 = byId(job.assignments[0].fellow_id)
    const s1 = byId(job.assignments[1].fellow_id)
    const outsider = c.fellows.find((f) => f !== s0 && f !== s1)!
    return { ...c, job, s0, s1, outsider }
  }
  const bin = { 'content-type': 'application/octet-stream' }
  async function pop(f: Fellow, jobId: string, channel: string, q = 'wait_ms=0') {
    const r = await f.c.call('GET', `/api/v1/relay/${jobId}/${channel}/pop?${q}`)
    return r
  }

  test('activations go from stage 0 to stage 1 and gradients back, byte for byte (0 bytes to 64 MiB)', async () => {
    const { job, s0, s1 } = await pipeline()
    const big = new Uint8Array(64 * 1024 * 1024)
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251
    const frames = [{ meta: { step: 1, shape: [0] }, data: new Uint8Array(0) }, { meta: { step: 1 }, data: new Uint8Array([1, 2, 3]) }, { meta: { step: 2, big: true }, data: big }]
    const push = await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, encodeFrames(frames), bin)
    expect(push.status).toBe(202)
    expect(push.body.queued_frames).toBe(3)
    expect((await pop(s0, job.id, 'activations')).status).toBe(204) // stage 0's own queue is empty
    const res = await s1.c.call('GET', `/api/v1/relay/${job.id}/activations/pop?max=10`)
    expect(res.status).toBe(200)
    const got = decodeFrames(res.body as Uint8Array, { maxFrameBytes: 65 * 1024 * 1024 })
    expect(got).toHaveLength(3)
    expect(got[0]!.data.byteLength).toBe(0)
    expect([...got[1]!.data]).toEqual([1, 2, 3])
    expect(Buffer.from(got[2]!.data).equals(Buffer.from(big))).toBe(true)
    const grad = await s1.c.call('POST', `/api/v1/relay/${job.id}/gradients/push`, encodeFrames([{ meta: { step: 1 }, data: new Uint8Array([9]) }]), bin)
    expect(grad.status).toBe(202)
    const back = await s0.c.call('GET', `/api/v1/relay/${job.id}/gradients/pop`)
    expect(back.status).toBe(200)
  }, 60_000)

  test('a blocking pop is woken by the push', async () => {
    const { job, s0, s1 } = await pipeline()
    const started = Date.now()
    const waiting = s1.c.call('GET', `/api/v1/relay/${job.id}/activations/pop?wait_ms=20000`)
    await Bun.sleep(5)
    await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, encodeFrames([{ meta: { n: 1 }, data: new Uint8Array([7]) }]), bin)
    const r = await waiting
    expect(r.status).toBe(200)
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  test('a full channel answers 429 with Retry-After, and nothing is enqueued by a refused push', async () => {
    const { job, s0, s1 } = await pipeline({ SVC_RELAY_MAX_FRAME_BYTES: '1024', SVC_RELAY_MAX_QUEUE_BYTES: '4096' })
    const frame = encodeFrames([{ meta: {}, data: new Uint8Array(1000) }])
    const statuses: number[] = []
    let last
    for (let i = 0; i < 6; i++) {
      last = await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, frame, bin)
      statuses.push(last.status)
    }
    expect(statuses.slice(0, 4)).toEqual([202, 202, 202, 202])
    expect(statuses[4]).toBe(429)
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0)
    const drained = await s1.c.call('GET', `/api/v1/relay/${job.id}/activations/pop?max=100`)
    expect(Number(drained.headers.get('x-frame-count'))).toBe(4)
    const tooBig = encodeFrames([{ meta: {}, data: new Uint8Array(2000) }])
    expect((await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, tooBig, bin)).status).toBe(413)
  })

  test('fellows outside the job are refused; malformed encodings get 400 and enqueue nothing; JSON is 415', async () => {
    const { job, s0, s1, outsider } = await pipeline()
    const good = encodeFrames([{ meta: {}, data: new Uint8Array([1]) }])
    expect((await outsider.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, good, bin)).status).toBe(403)
    expect((await outsider.c.call('GET', `/api/v1/relay/${job.id}/activations/pop`)).status).toBe(403)
    const truncated = good.slice(0, good.length - 1)
    const lying = new Uint8Array(good)
    new DataView(lying.buffer).setUint32(0, 10_000)
    for (const body of [truncated, lying, new Uint8Array([0, 0])]) {
      const r = await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, body, bin)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('bad_request')
    }
    expect((await s1.c.call('GET', `/api/v1/relay/${job.id}/activations/pop`)).status).toBe(204)
    expect((await s0.c.post(`/api/v1/relay/${job.id}/activations/push`, { frames: [] })).status).toBe(415)
    expect((await s0.c.call('POST', `/api/v1/relay/${job.id}/gradients/push`, good, bin)).status).toBe(409) // stage 0 has no previous stage
    expect((await s0.c.call('POST', `/api/v1/relay/${job.id}/weights/push`, good, bin)).status).toBe(422)
  })

  // Issue 26, item 8: per-channel caps alone let 8 channels x 60 MiB sit unpopped (RSS 270 -> 751 MiB).
  test("past the per-pool cap a push answers 429 with Retry-After like a full channel, and the pool's bytes come back when a job ends", async () => {
    const c = await cluster(4, { env: { SVC_RELAY_MAX_FRAME_BYTES: '1024', SVC_RELAY_MAX_QUEUE_BYTES: '4096', SVC_RELAY_MAX_POOL_BYTES: '2048' } })
    const byId = (id: string) => c.fellows.find((f) => f.fellow_id === id)!
    const j1 = (await c.A.post('/api/v1/jobs', { name: 'one', pool_id: c.pool.id, stages: 2 })).body
    const j2 = (await c.A.post('/api/v1/jobs', { name: 'two', pool_id: c.pool.id, stages: 2 })).body
    const frame = encodeFrames([{ meta: {}, data: new Uint8Array(1000) }])
    const push = (j: { id: string; assignments: { fellow_id: string }[] }) => byId(j.assignments[0]!.fellow_id).c.call('POST', `/api/v1/relay/${j.id}/activations/push`, frame, bin)
    expect((await push(j1)).status).toBe(202)
    expect((await push(j1)).status).toBe(202)
    const full = await push(j2) // j2's own channel is empty: the pool is what is full
    expect(full.status).toBe(429)
    expect(full.body).toMatchObject({ code: 'rate_limited' })
    expect(full.body.detail).toContain('pool')
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThan(0)
    await c.A.delete(`/api/v1/jobs/${j1.id}`)
    expect((await push(j2)).status).toBe(202)
    expect(c.h.services.relay.stats().queuedBytes).toBe(frame.byteLength)
  })

  test('past the relay-wide cap a push to another pool answers 429 too, until a pop frees room', async () => {
    const c = await cluster(2, { env: { SVC_RELAY_MAX_FRAME_BYTES: '1024', SVC_RELAY_MAX_QUEUE_BYTES: '4096', SVC_RELAY_MAX_TOTAL_BYTES: '3000', SVC_RELAY_MAX_POOL_BYTES: '3000' } })
    const other = (await c.A.post('/api/v1/admin/pools', { name: 'Other', visibility: 'private' })).body
    const join = (await c.A.post('/api/v1/bootstrap/join-sessions', { pool_id: other.id })).body.join_token
    const theirs = new Map<string, Client>()
    for (const name of ['o-0', 'o-1']) {
      const r = (await c.h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: name })).body
      theirs.set(r.fellow_id, c.h.client({ bearer: r.node_token }))
      await theirs.get(r.fellow_id)!.post('/api/v1/workers/heartbeat', { status: 'idle' })
    }
    const mine = (await c.A.post('/api/v1/jobs', { name: 'mine', pool_id: c.pool.id, stages: 2 })).body
    const them = (await c.A.post('/api/v1/jobs', { name: 'them', pool_id: other.id, stages: 2 })).body
    expect(them.status).toBe('scheduled')
    const frame = encodeFrames([{ meta: {}, data: new Uint8Array(1000) }])
    const s0 = c.fellows.find((f) => f.fellow_id === mine.assignments[0].fellow_id)!
    const s1 = c.fellows.find((f) => f.fellow_id === mine.assignments[1].fellow_id)!
    expect((await s0.c.call('POST', `/api/v1/relay/${mine.id}/activations/push`, frame, bin)).status).toBe(202)
    expect((await s0.c.call('POST', `/api/v1/relay/${mine.id}/activations/push`, frame, bin)).status).toBe(202)
    const theirS0 = theirs.get(them.assignments[0].fellow_id)!
    const full = await theirS0.call('POST', `/api/v1/relay/${them.id}/activations/push`, frame, bin)
    expect(full.status).toBe(429)
    expect(full.body.detail).toBe('The relay is full; retry shortly.')
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await s1.c.call('GET', `/api/v1/relay/${mine.id}/activations/pop?max=1`)).status).toBe(200)
    expect((await theirS0.call('POST', `/api/v1/relay/${them.id}/activations/push`, frame, bin)).status).toBe(202)
  })

  test('queues are dropped when the job ends', async () => {
    const { A, job, s0, s1 } = await pipeline()
    await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, encodeFrames([{ meta: {}, data: new Uint8Array([1]) }]), bin)
    await A.delete(`/api/v1/jobs/${job.id}`)
    expect((await s1.c.call('GET', `/api/v1/relay/${job.id}/activations/pop`)).status).toBe(403)
  })

  test("a job deleted with its pool lets go of its queued bytes, its metrics stream and its fellows' \"running\" at the next scheduler tick (they stayed until a restart)", async () => {
    const { h, A, pool, job, s0, s1 } = await pipeline()
    expect((await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, encodeFrames([{ meta: {}, data: new Uint8Array(4096) }]), bin)).status).toBe(202)
    await s1.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step: 3, loss: 0.5 })
    await s0.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: job.id, step: 3 })
    expect(h.services.relay.stats().queuedBytes).toBeGreaterThan(0)
    expect((await A.delete(`/api/v1/admin/pools/${pool.id}?force=true`)).status).toBe(200)
    const tick = () => h.services.jobs.loops()[0]!.run()
    await tick()
    expect(h.services.relay.stats()).toMatchObject({ channels: 0, queuedBytes: 0 })
    expect(h.services.jobs.metrics.ended(job.id) || h.services.jobs.metrics.since(job.id, 0).length === 0).toBe(true)
    expect(h.services.fellows.registry.get(s0.fellow_id)?.jobId ?? null).toBeNull()
  })
})

/** The SQL statements `fn` prepares on the state file, each with the rows it returned. */
function statementsDuring<T>(h: Harness, fn: () => T): { result: T; statements: { sql: string; rows: number }[] } {
  const sqlite = h.ctx.sqlite
  const prepare = sqlite.prepare.bind(sqlite)
  const statements: { sql: string; rows: number }[] = []
  sqlite.prepare = ((sql: string, ...rest: unknown[]) => {
    const stmt = (prepare as (...a: unknown[]) => ReturnType<typeof prepare>)(sql, ...rest)
    const seen = { sql, rows: 0 }
    statements.push(seen)
    for (const m of ['all', 'values', 'get'] as const) {
      const orig = (stmt[m] as (...a: unknown[]) => unknown).bind(stmt)
      ;(stmt as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
        const r = orig(...a)
        seen.rows += Array.isArray(r) ? r.length : r == null ? 0 : 1
        return r
      }
    }
    return stmt
  }) as typeof sqlite.prepare
  try {
    return { result: fn(), statements }
  } finally {
    delete (sqlite as unknown as Record<string, unknown>).prepare
  }
}

const jobRowsRead = (statements: { sql: string; rows: number }[]) => statements.filter((s) => /from "jobs"/i.test(s.sql)).reduce((n, s) => n + s.rows, 0)

// Issue 26, item 7: 150 queued jobs of one plain user took the idle leader from 1 % to 77 % CPU.
describe('job queue caps and an idle scheduler', () => {
  test('a person past SVC_MAX_QUEUED_JOBS_PER_USER queued jobs is refused with 409 job_queue_full; a placed or cancelled job frees a place', async () => {
    const h = makeHarness({ SVC_MAX_QUEUED_JOBS_PER_USER: '3' })
    all.push(h)
    const bob = sessionClient(h, (await seedUser(h, 'bob@example.com')).id)
    const pool = (await bob.post('/api/v1/pools', { name: 'Bob lab', visibility: 'private' })).body
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const r = await bob.post('/api/v1/jobs', { name: `q${i}`, pool_id: pool.id })
      expect([r.status, r.body.status, r.body.reason]).toEqual([201, 'queued', 'needs 1 fellow online and free; pool has 0'])
      ids.push(r.body.id)
    }
    const refused = await bob.post('/api/v1/jobs', { name: 'q3', pool_id: pool.id })
    expect(refused.status).toBe(409)
    expect(refused.headers.get('content-type')).toContain('application/problem+json')
    expect(refused.body).toMatchObject({ code: 'job_queue_full', limit: 3 })
    expect((await bob.get('/api/v1/jobs')).body.items).toHaveLength(3)
    await bob.delete(`/api/v1/jobs/${ids[0]}`)
    expect((await bob.post('/api/v1/jobs', { name: 'q4', pool_id: pool.id })).status).toBe(201)
    expect((await bob.post('/api/v1/jobs', { name: 'q5', pool_id: pool.id })).status).toBe(409)
    // A fellow arrives and takes the oldest queued job: a placed job no longer counts.
    const join = (await bob.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const f = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu' })).body
    await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect(h.services.jobs.schedulePass()).toBe(1)
    expect((await bob.get(`/api/v1/jobs/${ids[1]}`)).body.status).toBe('scheduled')
    expect((await bob.post('/api/v1/jobs', { name: 'q6', pool_id: pool.id })).status).toBe(201)
  })

  test('a pool past SVC_MAX_QUEUED_JOBS_PER_POOL queued jobs refuses the next submit; other pools still take jobs', async () => {
    const { A, pool } = await cluster(0, { env: { SVC_MAX_QUEUED_JOBS_PER_POOL: '2' } })
    for (let i = 0; i < 2; i++) expect((await A.post('/api/v1/jobs', { name: `q${i}`, pool_id: pool.id })).status).toBe(201)
    const refused = await A.post('/api/v1/jobs', { name: 'q2', pool_id: pool.id })
    expect(refused.status).toBe(409)
    expect(refused.body).toMatchObject({ code: 'job_queue_full', limit: 2 })
    expect(refused.body.detail).toContain('pool')
    const other = (await A.post('/api/v1/admin/pools', { name: 'Other', visibility: 'private' })).body
    expect((await A.post('/api/v1/jobs', { name: 'elsewhere', pool_id: other.id })).status).toBe(201)
  })

  test('a scheduler pass reads no job config, and reads no job rows for a pool without an online fellow', async () => {
    const { h, A, pool } = await cluster(1, { freeMb: [10_000], env: { SVC_MAX_QUEUED_JOBS_PER_USER: '1000', SVC_MAX_QUEUED_JOBS_PER_POOL: '1000' } })
    // Pool with an online fellow too small for the jobs: they are looked at, their config is not.
    for (let i = 0; i < 5; i++) await A.post('/api/v1/jobs', { name: `big${i}`, pool_id: pool.id, min_free_vram_mb: 20_480, config: { secret: i } })
    const looked = statementsDuring(h, () => h.services.jobs.schedulePass())
    expect(looked.result).toBe(0)
    expect(jobRowsRead(looked.statements)).toBeGreaterThanOrEqual(5)
    expect(looked.statements.filter((s) => s.sql.includes('"config"'))).toEqual([])
    // A pool with no fellow online: 50 queued jobs cost the pass no job rows at all.
    const empty = (await A.post('/api/v1/admin/pools', { name: 'Empty', visibility: 'private' })).body
    for (let i = 0; i < 50; i++) await A.post('/api/v1/jobs', { name: `wait${i}`, pool_id: empty.id, config: { i } })
    for (const j of (await A.get(`/api/v1/jobs?pool_id=${pool.id}&status=queued`)).body.items) await A.delete(`/api/v1/jobs/${j.id}`)
    const idle = statementsDuring(h, () => h.services.jobs.schedulePass())
    expect(idle.result).toBe(0)
    expect(jobRowsRead(idle.statements)).toBeLessThanOrEqual(1) // which pools have queued jobs: one row
    // Placement is unchanged: once a fellow is online there, the oldest job is placed with its config.
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: empty.id })).body.join_token
    const f = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'late' })).body
    await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect(h.services.jobs.schedulePass()).toBe(1)
    const start = h.services.fellows.signals.takePending(f.fellow_id)
    expect(start.map((s) => [s.signal, s.payload?.config])).toEqual([['START', { i: 0 }]])
  })
})

// Issue 26, item 2b: an admin's job without pool_id fell to the default pool and was placed on
// anonymous, token-less fellows, which were handed the job and its config.
describe('the default pool', () => {
  test("a job that names no pool is never placed on the default pool's token-less fellows; naming the default pool places it", async () => {
    const h = makeHarness()
    all.push(h)
    const A = sessionClient(h, (await seedUser(h, 'admin@example.com', { role: 'admin' })).id)
    const anon = (await h.client().post('/api/v1/workers/register', { hostname: 'stranger' })).body
    await h.client({ bearer: anon.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    const unnamed = await A.post('/api/v1/jobs', { name: 'private', config: { hf_token: 'hf_secret' } })
    expect(unnamed.status).toBe(201)
    expect(unnamed.body).toMatchObject({ pool_id: anon.pool_id, status: 'queued', reason: UNNAMED_POOL_REASON, assignments: [] })
    h.clock.advance(1000)
    await h.client({ bearer: anon.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    expect(h.services.jobs.schedulePass()).toBe(0)
    expect(h.services.fellows.signals.takePending(anon.fellow_id)).toEqual([])
    const named = await A.post('/api/v1/jobs', { name: 'public', pool_id: anon.pool_id, config: { open: true } })
    expect(named.body.status).toBe('scheduled')
    expect(named.body.assignments).toEqual([{ stage: 0, fellow_id: anon.fellow_id }])
    const got = h.services.fellows.signals.takePending(anon.fellow_id)
    expect(got.map((s) => [s.signal, s.job_id])).toEqual([['START', named.body.id]])
    expect(JSON.stringify(got)).not.toContain('hf_secret')
    expect((await A.get(`/api/v1/jobs/${unnamed.body.id}`)).body.status).toBe('queued')
  })
})
