// What the agent's children inherit, end to end with the built dist/svc: the agent starts itself
// again with MIMALLOC_PURGE_DELAY=1000 (src/entry.ts), a tuning of its own allocator that its
// runners and engines must not inherit; a value the operator set is theirs and is passed on.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freeBase } from '../helpers/listen'
import { track } from '../helpers/children'
import { SVC_BIN } from '../helpers/leader'
import { killAll, poll, startCluster, startFellow, stopCluster, waitOnline, type Cluster, type Fellow } from '../helpers/cluster'
import { until } from '../helpers/until'

afterAll(killAll)

const PRINT = "sh -c 'echo MPD=${MIMALLOC_PURGE_DELAY-unset}'"

/** startFellow with the operator's own environment added. */
function fellowWithEnv(c: Cluster, name: string, env: Record<string, string>, extra: string[]): Fellow {
  const dir = mkdtempSync(join(tmpdir(), `svc-fellow-${name}-`))
  const args = ['fellow', '--leader', c.leader.url, '--join-token', c.joinToken, '--state-dir', join(dir, 'state'), '--p2p-port-base', String(freeBase()), '--advertise-host', '127.0.0.1', '--hostname', name, ...extra]
  const proc = track(Bun.spawn([SVC_BIN, ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }))
  const logs: string[] = []
  void (async () => {
    let buf = ''
    for await (const chunk of proc.stdout) {
      const lines = (buf += new TextDecoder().decode(chunk)).split('\n')
      buf = lines.pop()!
      logs.push(...lines)
    }
  })()
  const f = { proc, dir, logs, id: () => '' }
  c.fellows.push(f as unknown as Fellow)
  return f as unknown as Fellow
}

describe("the agent's children", () => {
  let c: Cluster
  let tuned: Fellow
  let own: Fellow

  test('two agents join: one with the allocator setting it gives itself, one whose operator set MIMALLOC_PURGE_DELAY', async () => {
    c = await startCluster('tunnel')
    tuned = startFellow(c, 'tuned', ['--runner', `print-a=${PRINT}`])
    own = fellowWithEnv(c, 'own', { MIMALLOC_PURGE_DELAY: '25' }, ['--runner', `print-b=${PRINT}`])
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
