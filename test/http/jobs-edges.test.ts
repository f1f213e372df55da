// Placement and a job's life at its edges: the job list, a fellow still stopping its last job,
// a job none of whose fellows runs it, and liveness across a leader that stood still or restarted.
import { afterAll, describe, expect, test } from 'bun:test'
import { Client, makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { createApp, createServices } from '../../src/app'
import { cluster as makeCluster, type Fellow } from '../helpers/job-cluster'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))
const cluster = (n: number, opts: { env?: Record<string, string>; freeMb?: number[] } = {}) => makeCluster(n, { ...opts, track: all })

// A member submitting and cancelling 500 jobs of 60 KiB configs made every poll of a pool page's
// job list 30 MB (every 3 s, per open tab); jobs past the newest 500 could not be listed at all.
describe('the job list', () => {
  test('carries no configs (GET /jobs/{id} does) and pages newest first by cursor, unshifted by jobs submitted meanwhile', async () => {
    const h = makeHarness({ SVC_MAX_QUEUED_JOBS_PER_USER: '1000', SVC_MAX_QUEUED_JOBS_PER_POOL: '1000' })
    all.push(h)
    const bob = sessionClient(h, (await seedUser(h, 'bob@example.com')).id)
    const pool = (await bob.post('/api/v1/pools', { name: 'Bob lab', visibility: 'private' })).body
    const big = { blob: 'x'.repeat(60_000) }
    const ids: string[] = []
    for (let i = 0; i < 7; i++) {
      h.clock.advance(1000)
      ids.unshift((await bob.post('/api/v1/jobs', { name: `j${i}`, pool_id: pool.id, config: big })).body.id)
    }
    const first = await bob.get(`/api/v1/jobs?pool_id=${pool.id}&page_size=3`)
    expect(first.status).toBe(200)
    expect(first.body.items.map((j: { id: string }) => j.id)).toEqual(ids.slice(0, 3))
    expect(first.body).toMatchObject({ total: 7, total_exact: true, page: 1, page_size: 3 })
    expect(first.body.items.every((j: Record<string, unknown>) => !('config' in j))).toBe(true)
    expect(JSON.stringify(first.body).length).toBeLessThan(5000)
    expect((await bob.get(`/api/v1/jobs/${ids[0]}`)).body.config).toEqual(big)
    // A job submitted now is on no later page, and no job is on two.
    h.clock.advance(1000)
    await bob.post('/api/v1/jobs', { name: 'late', pool_id: pool.id })
    const second = await bob.get(`/api/v1/jobs?pool_id=${pool.id}&page_size=3&cursor=${first.body.next_cursor}`)
    expect(second.body.items.map((j: { id: string }) => j.id)).toEqual(ids.slice(3, 6))
    const third = await bob.get(`/api/v1/jobs?pool_id=${pool.id}&page_size=3&cursor=${second.body.next_cursor}`)
    expect([third.body.items.map((j: { id: string }) => j.id), third.body.next_cursor, third.body.page]).toEqual([ids.slice(6), null, null])
    // Or by page number, as CONTRACT's paginated lists (pages from 1), not both.
    expect((await bob.get(`/api/v1/jobs?pool_id=${pool.id}&page_size=3&page=2`)).body.items.map((j: { id: string }) => j.id)).toEqual([ids[2], ...ids.slice(3, 5)])
    expect((await bob.get(`/api/v1/jobs?page=2&cursor=${first.body.next_cursor}`)).status).toBe(422)
    // Without page_size: up to 500, as before.
    expect((await bob.get(`/api/v1/jobs?pool_id=${pool.id}`)).body.items).toHaveLength(8)
    const bad = await bob.get(`/api/v1/jobs?cursor=nonsense`)
    expect([bad.status, bad.body.errors?.[0]?.path]).toEqual([422, '/cursor'])
    expect((await bob.get(`/api/v1/jobs?page_size=501`)).status).toBe(422)
  })
})

// One job's runner at a time: a fellow whose stopped job's runner sat in its stop grace was given
// the next job at once, and the two held the GPU together (the agent waits now, and says "busy").
describe('a fellow still stopping its last job', () => {
  test('is given no new job until its heartbeat says idle', async () => {
    const { h, A, pool, fellows } = await cluster(1)
    const f = fellows[0]!
    const a = (await A.post('/api/v1/jobs', { name: 'a', pool_id: pool.id })).body
    await f.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: a.id, step: 1 })
    expect((await A.delete(`/api/v1/jobs/${a.id}`)).status).toBe(200)
    // STOP came; the runner is in its grace, and the agent says it still runs that job.
    await f.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: a.id, step: 1 })
    const b = (await A.post('/api/v1/jobs', { name: 'b', pool_id: pool.id })).body
    expect(b.status).toBe('queued')
    await f.c.post('/api/v1/workers/heartbeat', { status: 'idle', job_id: null })
    expect(h.services.jobs.schedulePass()).toBe(1)
    expect((await A.get(`/api/v1/jobs/${b.id}`)).body.status).toBe('scheduled')
  })

  test('a fellow saying it runs a job the leader does not give it (a restored state, an older agent running on) is told to STOP it within a minute, and takes jobs once idle', async () => {
    const { h, A, pool, fellows, signalsOf, logged } = await cluster(1)
    const f = fellows[0]!
    const stray = '01a2b3c4-0000-7000-8000-00000000beef'
    const beat = () => f.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: stray, step: 9 })
    expect((await beat()).body.pending_signals.map((x: { signal: string; job_id: string }) => [x.signal, x.job_id])).toEqual([['STOP', stray]])
    // Not at every heartbeat: once a minute while it goes on saying so.
    h.clock.advance(10_000)
    expect((await beat()).body.pending_signals).toBeUndefined()
    h.clock.advance(50_000)
    expect((await beat()).body.pending_signals.map((x: { signal: string }) => x.signal)).toEqual(['STOP'])
    expect(logged('told a fellow to stop a job it no longer runs')).toHaveLength(2)
    const job = (await A.post('/api/v1/jobs', { name: 'j', pool_id: pool.id })).body
    expect(job.status).toBe('queued')
    await f.c.post('/api/v1/workers/heartbeat', { status: 'idle', job_id: null })
    expect(h.services.jobs.schedulePass()).toBe(1)
    signalsOf(f)
  })

  test('a job queued behind it is not placed in the tick after the cancel, before a heartbeat says whether the runner is gone', async () => {
    const { h, A, pool, fellows, signalsOf } = await cluster(1)
    const f = fellows[0]!
    const a = (await A.post('/api/v1/jobs', { name: 'a', pool_id: pool.id })).body
    await f.c.post('/api/v1/workers/heartbeat', { status: 'running', job_id: a.id, step: 1 })
    const b = (await A.post('/api/v1/jobs', { name: 'b', pool_id: pool.id })).body
    expect(b.status).toBe('queued')
    signalsOf(f)
    expect((await A.delete(`/api/v1/jobs/${a.id}`)).status).toBe(200)
    expect(h.services.jobs.schedulePass()).toBe(0)
    expect(signalsOf(f).map((x) => x.signal)).toEqual(['STOP'])
    await f.c.post('/api/v1/workers/heartbeat', { status: 'idle', job_id: null })
    expect(h.services.jobs.schedulePass()).toBe(1)
    expect(signalsOf(f).map((x) => [x.signal, x.job_id])).toEqual([['START', b.id]])
  })
})

// A leader restored from a backup taken while a job ran: its fellows had long finished with it
// and said so in every heartbeat, but the job stayed "running" for good and its fellows busy.
describe('a job none of whose fellows runs it', () => {
  const beat = (f: Fellow, body: Record<string, unknown>) => f.c.post('/api/v1/workers/heartbeat', body)
  const schedulerRun = (h: Harness) => h.services.loops.find((l) => l.name === 'scheduler')!.run()

  test('is started again after a minute of heartbeats saying "no job" from each of them; still none a minute later, it fails with a reason and frees them', async () => {
    const { h, A, pool, fellows, signalsOf } = await cluster(2)
    const job = (await A.post('/api/v1/jobs', { name: 'ghost', pool_id: pool.id, stages: 2 })).body
    for (const f of fellows) await beat(f, { status: 'running', job_id: job.id, step: 3 })
    expect((await fellows[0]!.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step: 3 })).body.status).toBe('running')
    fellows.forEach(signalsOf)
    const idleFor = async (from: number, to: number) => {
      for (let s = from; s <= to; s += 10) {
        for (const f of fellows) await beat(f, { status: 'idle', job_id: null })
        schedulerRun(h)
        h.clock.advance(10_000)
      }
    }
    await idleFor(0, 50)
    expect(fellows.map((f) => signalsOf(f).length)).toEqual([0, 0])
    await idleFor(60, 60)
    // A START lost on its way, or a restored state: each stage is told to start again, resuming.
    expect(fellows.map((f) => signalsOf(f).map((x) => [x.signal, x.payload?.resume]))).toEqual([[['START', true]], [['START', true]]])
    expect((await A.get(`/api/v1/jobs/${job.id}`)).body.status).toBe('running')
    await idleFor(70, 120)
    const ended = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect(ended.status).toBe('failed')
    expect(ended.reason).toContain('none of its fellows runs it')
    // Its fellows take the next job, once their heartbeats say they are idle.
    for (const f of fellows) await beat(f, { status: 'idle', job_id: null })
    expect((await A.post('/api/v1/jobs', { name: 'next', pool_id: pool.id, stages: 2 })).body.status).toBe('scheduled')
  })

  test('goes on while one fellow still runs it (earlier stages end their part first)', async () => {
    const { h, A, pool, fellows } = await cluster(2)
    const job = (await A.post('/api/v1/jobs', { name: 'tail', pool_id: pool.id, stages: 2 })).body
    for (const f of fellows) await beat(f, { status: 'running', job_id: job.id, step: 3 })
    expect((await fellows[1]!.c.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step: 3 })).body.status).toBe('running')
    for (let s = 0; s <= 120; s += 10) {
      await beat(fellows[0]!, { status: 'idle', job_id: null })
      await beat(fellows[1]!, { status: 'running', job_id: job.id, step: 3 + s })
      schedulerRun(h)
      h.clock.advance(10_000)
    }
    expect((await A.get(`/api/v1/jobs/${job.id}`)).body.status).toBe('running')
  })
})


// Liveness is the fellows' silence as the leader sees it: time the leader itself was not there to
// listen (stopped, paused, restarting) is not the fellows' silence.
describe('liveness across a leader that stood still or restarted', () => {
  test('a leader stopped for longer than the offline window (SIGSTOP, docker pause) does not put its fellows offline nor fail their job', async () => {
    const { h, A, pool, fellows, logged } = await cluster(2)
    const job = (await A.post('/api/v1/jobs', { name: 'p', pool_id: pool.id, stages: 2 })).body
    const liveness = h.services.loops.find((l) => l.name === 'liveness')!
    const interval = h.cfg.heartbeatIntervalS * 1000
    await liveness.run()
    // Ten intervals without a tick: the process stood still; the heartbeats of that time wait
    // unread behind the first tick after it.
    h.clock.advance(10 * interval)
    await liveness.run()
    expect(logged('fellow offline: no heartbeat')).toEqual([])
    const after = (await A.get(`/api/v1/jobs/${job.id}`)).body
    expect([after.status, after.assignments]).toEqual([job.status, job.assignments])
    // A fellow silent from then on goes offline one window later, as ever.
    const [talker, silent] = fellows as [Fellow, Fellow]
    for (let t = 0; t <= 6 * interval; t += interval / 2) {
      await talker.hb()
      h.clock.advance(interval / 2)
      await liveness.run()
    }
    expect(logged('fellow offline: no heartbeat').map((e) => e.fellow_id)).toEqual([silent.fellow_id])
  })

  test('a heartbeat read before the late tick is not moved into the future: silent from then on, the fellow goes offline one window later', async () => {
    const { h, fellows, logged } = await cluster(1)
    const liveness = h.services.loops.find((l) => l.name === 'liveness')!
    const interval = h.cfg.heartbeatIntervalS * 1000
    await liveness.run()
    h.clock.advance(10 * interval)
    await fellows[0]!.hb() // read before the tick that finds the stall
    await liveness.run()
    for (let t = 0; t <= 6 * interval; t += interval / 2) {
      h.clock.advance(interval / 2)
      await liveness.run()
    }
    expect(logged('fellow offline: no heartbeat').map((e) => e.fellow_id)).toEqual([fellows[0]!.fellow_id])
  })

  test('after a restart, a fellow holding a stage gets one whole offline window from the start (its saved last-seen is up to three intervals old)', async () => {
    const { h, A, pool, fellows } = await cluster(3)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    const held = job.assignments.map((a: { fellow_id: string }) => a.fellow_id) as string[]
    const stage1 = fellows.find((f) => f.fellow_id === held[1])!
    const others = fellows.filter((f) => f !== stage1)
    const interval = h.cfg.heartbeatIntervalS * 1000
    // The last heartbeats the state file has; the leader is killed and is back four intervals
    // later (shorter than the six-interval window).
    h.services.fellows.registry.flush({ all: true })
    h.clock.advance(4 * interval)
    const services = createServices(h.ctx)
    const app = createApp(h.ctx, services)
    const beat = (f: Fellow) => new Client(app, { bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 40_960, utilization_pct: 0 }] } })
    const liveness = services.loops.find((l) => l.name === 'liveness')!
    const admin = Object.assign(new Client(app, A.opts), { cookies: A.cookies })
    const holder = async () => (await admin.get(`/api/v1/jobs/${job.id}`)).body.assignments[1].fellow_id
    // Stage 1's agent is slow to reconnect: five intervals after the start it still holds the stage.
    for (let t = 0; t < 5 * interval; t += interval / 2) {
      for (const f of others) await beat(f)
      await liveness.run()
      expect(await holder()).toBe(stage1.fellow_id)
      h.clock.advance(interval / 2)
    }
    // Silent for the whole window from the start: lost, and its stage moves to the spare.
    for (const step of [0, interval / 2 + 1]) {
      h.clock.advance(step)
      for (const f of others) await beat(f)
      await liveness.run()
    }
    expect(await holder()).toBe(stage1.fellow_id)
    h.clock.advance(interval / 2)
    await liveness.run()
    expect(await holder()).not.toBe(stage1.fellow_id)
  })
})
