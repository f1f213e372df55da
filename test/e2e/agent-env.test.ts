// What the agent's children inherit, end to end with the built dist/svc: the agent starts itself
// again with MIMALLOC_PURGE_DELAY=1000 (src/entry.ts), a tuning of its own allocator that its
// runners and engines must not inherit; a value the operator set is theirs and is passed on.
import { afterAll, describe, expect, test } from 'bun:test'
import { killAll, poll, startCluster, startFellow, stopCluster, waitOnline, type Cluster, type Fellow } from '../helpers/cluster'
import { until } from '../helpers/until'

afterAll(killAll)

const PRINT = "sh -c 'echo MPD=${MIMALLOC_PURGE_DELAY-unset}'"

describe("the agent's children", () => {
  let c: Cluster
  let tuned: Fellow
  let own: Fellow

  test('two agents join: one with the allocator setting it gives itself, one whose operator set MIMALLOC_PURGE_DELAY', async () => {
    c = await startCluster('tunnel')
    tuned = startFellow(c, 'tuned', ['--runner', `print-a=${PRINT}`])
    own = startFellow(c, 'own', ['--runner', `print-b=${PRINT}`], { MIMALLOC_PURGE_DELAY: '25' })
    await waitOnline(c, 2)
  }, 60_000)

  const output = async (f: Fellow, runner: string) => {
    const r = await c.api<{ id: string }>('POST', '/api/v1/jobs', { pool_id: c.poolId, name: runner, runner, stages: 1 })
    expect(r.status).toBe(201)
    await until(async () => ((await c.api<{ status: string }>('GET', `/api/v1/jobs/${r.body.id}`)).body.status === 'completed' ? true : null), 'the job completed', poll(20_000))
    return f.logs.map((l) => JSON.parse(l) as { msg: string; line?: string }).find((l) => l.msg === 'runner output' && l.line?.startsWith('MPD='))?.line
  }

  test("a runner of the agent that tuned its allocator itself does not inherit the setting", async () => {
    expect(await output(tuned, 'print-a')).toBe('MPD=unset')
  }, 30_000)

  test("the operator's own MIMALLOC_PURGE_DELAY reaches the runner as it was", async () => {
    expect(await output(own, 'print-b')).toBe('MPD=25')
  }, 30_000)

  test('the cluster stops', async () => {
    for (const f of c.fellows) f.proc.kill('SIGTERM')
    expect(await Promise.all(c.fellows.map((f) => f.proc.exited))).toEqual([0, 0])
    c.fellows.splice(0)
    await stopCluster(c)
  }, 30_000)
})
