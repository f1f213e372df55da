// The per-job p2p key in START (issue 26, item 10): what a fellow proves to its neighbours'
// listeners. Only the job's fellows get it; it is the job's and its fellows', nobody else's.
import { afterAll, describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { StartPayload, type Signal } from '../../src/fellows/model'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

async function cluster(n: number) {
  const h = makeHarness()
  all.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const A = sessionClient(h, admin.id)
  const pool = (await A.post('/api/v1/admin/pools', { name: 'Lab', visibility: 'private' })).body
  const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
  const fellows: { fellow_id: string; hb: () => Promise<unknown> }[] = []
  for (let i = 0; i < n; i++) {
    const r = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: `gpu-${i}`, address: `127.0.0.1:${5557 + 10 * i}` })).body
    const c = h.client({ bearer: r.node_token })
    const hb = () => c.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 40_960, utilization_pct: 0 }] } })
    await hb()
    h.clock.advance(1)
    fellows.push({ fellow_id: r.fellow_id, hb })
  }
  const signalsOf = (id: string): Signal[] => h.services.fellows.signals.takePending(id)
  return { h, A, pool, fellows, signalsOf }
}

const keyOf = (s: Signal | undefined) => s?.payload?.p2p_key as string | undefined

describe('the p2p key in START', () => {
  test("every stage of a job gets the same key, valid against StartPayload; another job's differs; fellows outside the job get none", async () => {
    const { A, pool, fellows, signalsOf } = await cluster(4)
    const j1 = (await A.post('/api/v1/jobs', { name: 'a', pool_id: pool.id, stages: 2 })).body
    const j2 = (await A.post('/api/v1/jobs', { name: 'b', pool_id: pool.id, stages: 2 })).body
    const starts = (job: { assignments: { fellow_id: string }[] }) => job.assignments.map((a) => signalsOf(a.fellow_id).find((s) => s.signal === 'START'))
    const s1 = starts(j1)
    const s2 = starts(j2)
    for (const s of [...s1, ...s2]) {
      expect(Value.Check(StartPayload, s!.payload)).toBe(true)
      expect(keyOf(s)).toMatch(/^[A-Za-z0-9_-]{43}$/)
    }
    expect(keyOf(s1[0])).toBe(keyOf(s1[1])!)
    expect(keyOf(s2[0])).toBe(keyOf(s2[1])!)
    expect(keyOf(s1[0])).not.toBe(keyOf(s2[0])!)
    const everyone = new Set(fellows.map((f) => f.fellow_id))
    expect([...j1.assignments, ...j2.assignments].every((a: { fellow_id: string }) => everyone.delete(a.fellow_id))).toBe(true)
    expect(everyone.size).toBe(0) // all four busy: no fellow saw a key of a job it does not run
  })

  test('resume sends the same key; a re-placement sends a new one to every stage, so the lost fellow is out', async () => {
    const { h, A, pool, fellows, signalsOf } = await cluster(3)
    const job = (await A.post('/api/v1/jobs', { name: 'r', pool_id: pool.id, stages: 2 })).body
    const [s0, s1] = job.assignments.map((a: { fellow_id: string }) => fellows.find((f) => f.fellow_id === a.fellow_id)!)
    const spare = fellows.find((f) => f !== s0 && f !== s1)!
    const first = keyOf(signalsOf(s0.fellow_id)[0])!
    signalsOf(s1.fellow_id)
    expect(signalsOf(spare.fellow_id)).toEqual([])
    await A.post(`/api/v1/jobs/${job.id}/pause`)
    await A.post(`/api/v1/jobs/${job.id}/resume`)
    expect(keyOf(signalsOf(s0.fellow_id).find((s) => s.signal === 'START'))).toBe(first)
    signalsOf(s1.fellow_id)

    h.clock.advance(61_000)
    await s0.hb()
    await spare.hb()
    for (const f of h.services.fellows.registry.tick(h.clock.now())) h.services.jobs.onFellowOffline(f.id)
    const toSpare = signalsOf(spare.fellow_id)
    const toS0 = signalsOf(s0.fellow_id)
    expect(toSpare.map((s) => s.signal)).toEqual(['START'])
    expect(toS0.map((s) => s.signal)).toEqual(['RECONFIGURE'])
    expect(keyOf(toSpare[0])).toBe(keyOf(toS0[0])!)
    expect(keyOf(toSpare[0])).not.toBe(first)
  })
})
