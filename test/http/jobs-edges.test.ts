// Placement and a job's life at its edges: the job list, a fellow still stopping its last job,
// and a job none of whose fellows runs it.
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
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

