// Jobs run the runners their fellows' operators declared (issue 21), end to end with the built
// dist/svc as leader and fellows: a 2-stage job whose stages are the example runners of
// examples/runners (Python, standard library only, on one fellow; TypeScript on the other,
// declared under the same name), exchanging frames through SVC_DATA_URL over the relay.
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { killAll, nodes, poll, processAlive as alive, startCluster, startFellow, stopCluster, waitOnline, type Cluster, type Fellow } from '../helpers/cluster'
import { until } from '../helpers/until'

afterAll(killAll)

const PY = resolve(import.meta.dir, '../../examples/runners/pipeline.py')
const TS = resolve(import.meta.dir, '../../examples/runners/pipeline.ts')
const python = Bun.which('python3')

type Job = { id: string; status: string; reason: string | null; step: number; loss: number | null; runner: string; assignments: { stage: number; fellow_id: string }[] }

describe.skipIf(!python)('runners declared by the operator', () => {
  let c: Cluster
  let py: Fellow
  let ts: Fellow
  const cleanup: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const f of cleanup.splice(0)) await f()
  })
  const job = async (id: string) => (await c.api<Job>('GET', `/api/v1/jobs/${id}`)).body
  const submit = async (body: Record<string, unknown>) => {
    const r = await c.api<Job>('POST', '/api/v1/jobs', { pool_id: c.poolId, ...body })
    expect(r.status).toBe(201)
    return r.body
  }

  test('fellows announce their runners; a job naming a runner nobody offers waits with a reason naming it', async () => {
    c = await startCluster('tunnel')
    py = startFellow(c, 'py', ['--runner', `toy=${python} ${PY}`, '--runner', "bad=sh -c 'echo the runner broke >&2; exit 3'", '--runner', "flood=sh -c 'yes flooding the log | head -c 20000000; sleep 60'"])
    ts = startFellow(c, 'ts', ['--runner', `toy=${process.execPath} ${TS}`])
    await waitOnline(c, 2)
    const j = await submit({ name: 'nobody offers', runner: 'torch', stages: 1 })
    const waiting = await until(async () => {
      const r = await job(j.id)
      return r.reason?.includes("offering the runner 'torch'") ? r : null
    }, 'the pending reason', poll(10_000))
    expect(waiting.status).toBe('queued')
    expect(waiting.reason).toBe("needs 1 fellow offering the runner 'torch' online and free; pool has 0 (2 more without that runner)")
    expect((await c.api('DELETE', `/api/v1/jobs/${j.id}`)).status).toBeLessThan(300)
  }, 60_000)

  test('a 2-stage job: a Python stage and a TypeScript stage exchange frames through SVC_DATA_URL, report their loss and complete', async () => {
    const j = await submit({ name: 'toy pipeline', runner: 'toy', stages: 2, config: { steps: 80, lr: 0.5 } })
    expect(j.runner).toBe('toy')
    const done = await until(async () => {
      const r = await job(j.id)
      if (r.status === 'failed') throw new Error(`job failed: ${r.reason}`)
      return r.status === 'completed' ? r : null
    }, 'the job completed', poll(60_000))
    expect(done.step).toBe(80)
    expect(done.loss).not.toBeNull()
    expect(done.loss!).toBeLessThan(1e-6) // learned y = 3x
    const ids = new Set(done.assignments.map((a) => a.fellow_id))
    expect(ids).toEqual(new Set([py.id(), ts.id()]))
    // The runners' other output reached the fellows' logs.
    await until(() => ([...py.logs, ...ts.logs].some((l) => l.includes('"runner started"')) ? true : null), 'runner logs', poll(5000))
  }, 60_000)

  test('cancelling a running 2-stage job of the example runners stops both quietly: exit 143 on SIGTERM, no stack trace, though their data endpoint was in use', async () => {
    const j = await submit({ name: 'toy to cancel', runner: 'toy', stages: 2, config: { steps: 100_000_000, lr: 0.5 } })
    cleanup.push(() => c.api('DELETE', `/api/v1/jobs/${j.id}`))
    await until(async () => ((await job(j.id)).step > 20 ? true : null), 'the job running', poll(20_000))
    expect((await c.api('DELETE', `/api/v1/jobs/${j.id}`)).status).toBeLessThan(300)
    type Line = { msg?: string; job_id?: string; code?: number | null; signal?: string | null; stream?: string; line?: string }
    const lines = () => [...py.logs, ...ts.logs].map((l) => JSON.parse(l) as Line).filter((l) => l.job_id === j.id)
    const stopped = await until(() => {
      const s = lines().filter((l) => l.msg === 'runner stopped')
      return s.length === 2 ? s : null
    }, 'both runners stopped', poll(20_000))
    // Stopped within their grace, by themselves, the way docs/workloads.md says runners stop.
    expect(stopped.map((l) => [l.code, l.signal])).toEqual([[143, null], [143, null]])
    expect(lines().filter((l) => l.msg === 'runner output' && l.stream === 'stderr').map((l) => l.line)).toEqual([])
  }, 60_000)

  test('the built-in mlp runs as `svc runner mlp`: CHECKPOINT writes into SVC_CHECKPOINT_DIR, PAUSE stops the process (SIGSTOP) and resume continues it', async () => {
    const j = await submit({ name: 'long mlp', stages: 1, config: { steps: 100_000_000, report_every: 50 } })
    expect(j.runner).toBe('mlp')
    const running = await until(async () => {
      const r = await job(j.id)
      return r.status === 'running' && r.step > 0 ? r : null
    }, 'the job running', poll(20_000))
    // Whatever happens below, the long job must not keep a fellow from the tests after this one.
    cleanup.push(() => c.api('DELETE', `/api/v1/jobs/${j.id}`))
    const fellow = [py, ts].find((f) => f.id() === running.assignments[0]!.fellow_id)!
    const started = fellow.logs.map((l) => JSON.parse(l) as { msg?: string; job_id?: string; runner?: string; pid?: number }).find((l) => l.msg === 'runner started' && l.job_id === j.id)!
    expect(started.runner).toBe('mlp')
    const procState = () => readFileSync(`/proc/${started.pid}/stat`, 'utf8').split(') ')[1]![0]
    expect((await c.api('POST', `/api/v1/jobs/${j.id}/checkpoint`)).status).toBeLessThan(300)
    const bin = join(fellow.dir, 'state', 'jobs', j.id, 'stage-0', 'checkpoints', 'mlp-stage-0.bin')
    await until(() => (existsSync(bin) ? true : null), 'the checkpoint file', poll(10_000))
    expect((await c.api('POST', `/api/v1/jobs/${j.id}/pause`)).status).toBeLessThan(300)
    await until(() => (procState() === 'T' ? true : null), 'the runner stopped (SIGSTOP)', poll(10_000))
    expect((await job(j.id)).status).toBe('paused')
    const resumed = await c.api('POST', `/api/v1/jobs/${j.id}/resume`)
    expect([resumed.status, resumed.body]).toEqual([200, expect.objectContaining({ status: 'running' })])
    await until(() => (procState() !== 'T' ? true : null), 'the runner continued (SIGCONT)', poll(10_000))
    expect((await c.api('DELETE', `/api/v1/jobs/${j.id}`)).status).toBeLessThan(300)
    await until(() => (existsSync(`/proc/${started.pid}`) ? null : true), 'the runner gone after cancel', poll(15_000))
  }, 60_000)

  test('a runner that exits at once fails its job with its last stderr lines; the fellow stays online', async () => {
    const j = await submit({ name: 'broken', runner: 'bad', stages: 1 })
    const failed = await until(async () => {
      const r = await job(j.id)
      return r.status === 'failed' ? r : null
    }, 'the job failed', poll(20_000))
    expect(failed.reason).toBe('runner bad (stage 0) exited with code 3: the runner broke')
    expect((await nodes(c)).find((n) => n.fellow_id === py.id())?.state).toBe('online')
  }, 60_000)

  test('a runner that floods stdout does not flood the log; cancelling stops it and the fellow stays online', async () => {
    const j = await submit({ name: 'flood', runner: 'flood', stages: 1 })
    await until(() => (py.logs.some((l) => l.includes('"runner output suppressed"')) ? true : null), 'the flood suppressed', poll(20_000))
    // 20 MB of lines, at most 200 a second logged.
    expect(py.logs.filter((l) => l.includes('flooding the log')).length).toBeLessThan(2000)
    expect((await c.api('DELETE', `/api/v1/jobs/${j.id}`)).status).toBeLessThan(300)
    await until(async () => ((await nodes(c)).find((n) => n.fellow_id === py.id())?.status === 'idle' ? true : null), 'the fellow idle again', poll(15_000))
    expect((await nodes(c)).find((n) => n.fellow_id === py.id())?.state).toBe('online')
  }, 60_000)

  test('a fellow away while its stage moved on stops its runner once it is back, instead of training on for no one', async () => {
    const j = await submit({ name: 'away', runner: 'toy', stages: 1, config: { steps: 1_000_000, lr: 0.5, step_ms: 20 } })
    await until(async () => ((await job(j.id)).step >= 5 ? true : null), 'the job past step 5', poll(30_000))
    const holder = (await job(j.id)).assignments[0]!.fellow_id
    const away = [py, ts].find((f) => f.id() === holder)!
    const runnerPid = lastRunnerPid(away.logs, j.id)
    // The agent stops answering (its runner goes on): offline after missed heartbeats, the stage
    // moves to the other fellow.
    away.proc.kill('SIGSTOP')
    try {
      await until(async () => ((await job(j.id)).assignments[0]!.fellow_id !== holder ? true : null), 'the stage moved', poll(30_000))
    } finally {
      away.proc.kill('SIGCONT')
    }
    // The leader answers its first heartbeat with STOP, and its next progress report is refused
    // (not assigned): whichever comes first stops the stage, once.
    await until(() => (alive(runnerPid) ? null : true), 'the returned fellow\'s runner stopped', poll(15_000))
    const stopped = away.logs.filter((l) => l.includes('"stage stopped"') && l.includes(j.id))
    expect(stopped).toHaveLength(1)
    expect(stopped[0]).toContain('no longer')
    await until(async () => ((await nodes(c)).find((n) => n.fellow_id === holder)?.status === 'idle' ? true : null), 'the returned fellow idle', poll(15_000))
    expect((await c.api('DELETE', `/api/v1/jobs/${j.id}`)).status).toBeLessThan(300)
  }, 90_000)

  test('an agent stopped (SIGTERM) while its runner ignores SIGTERM exits only once that runner and what it started are gone: SIGKILL to the group after stop_grace_s (they outlived the agent)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-deaf-runner-'))
    const childFile = join(dir, 'child.pid')
    const toml = join(dir, 'fellow.toml')
    // The shell and its child (which inherits the ignored TERM) hear nothing but SIGKILL.
    writeFileSync(toml, `[runners.deaf]\ncommand = ["sh", "-c", "trap '' TERM HUP PIPE; sleep 100000 & echo $! > ${childFile}; while :; do sleep 0.2; done"]\nstop_grace_s = 2\n`)
    const deaf = startFellow(c, 'deaf', ['--config', toml])
    await waitOnline(c, 3)
    const j = await submit({ name: 'deaf', runner: 'deaf', stages: 1 })
    cleanup.push(() => c.api('DELETE', `/api/v1/jobs/${j.id}`))
    const childPid = await until(() => Number(existsSync(childFile) ? readFileSync(childFile, 'utf8').trim() : '') || null, 'the runner started its child', poll(20_000))
    const runnerPid = lastRunnerPid(deaf.logs, j.id)
    expect([alive(runnerPid), alive(childPid)]).toEqual([true, true])
    deaf.proc.kill('SIGTERM')
    expect(await deaf.proc.exited).toBe(0)
    expect([alive(runnerPid), alive(childPid)]).toEqual([false, false])
  }, 60_000)

  test('CHECKPOINT stores both stages in the artifact store; a stage re-placed after its fellow dies resumes from its checkpoint and the job completes', async () => {
    const j = await submit({ name: 'resumable', runner: 'toy', stages: 2, config: { steps: 300, lr: 0.5, step_ms: 20 } })
    await until(async () => ((await job(j.id)).step >= 30 ? true : null), 'the job past step 30', poll(30_000))
    expect((await c.api('POST', `/api/v1/jobs/${j.id}/checkpoint`)).status).toBeLessThan(300)
    type Art = { id: string; kind: string; stage: number; step: number; size_bytes: number; sha256: string }
    const stored = await until(async () => {
      const items = (await c.api<{ items: Art[] }>('GET', `/api/v1/artifacts?job_id=${j.id}`)).body.items ?? []
      const cps = items.filter((a) => a.kind === 'checkpoint')
      return new Set(cps.map((a) => a.stage)).size === 2 ? cps : null
    }, 'both stages checkpointed into the store', poll(20_000))
    const stage1 = stored.find((a) => a.stage === 1)!
    expect(stage1.step).toBeGreaterThan(0)
    // A spare takes stage 1 when its fellow dies; it offers the same runner.
    const spare = startFellow(c, 'spare', ['--runner', `toy=${process.execPath} ${TS}`])
    await waitOnline(c, 3)
    const holder = (await job(j.id)).assignments.find((a) => a.stage === 1)!.fellow_id
    const victim = [py, ts].find((f) => f.id() === holder)!
    const runnerPid = lastRunnerPid(victim.logs, j.id)
    expect(alive(runnerPid)).toBe(true)
    victim.proc.kill('SIGKILL')
    // Its runner does not outlive it (setpriv's parent-death signal, and its stdin's end).
    await until(() => (alive(runnerPid) ? null : true), 'the dead fellow\'s runner gone', poll(10_000))
    const done = await until(async () => {
      const r = await job(j.id)
      if (r.status === 'failed') throw new Error(`job failed: ${r.reason}`)
      return r.status === 'completed' ? r : null
    }, 'the job completed on the spare', poll(60_000))
    expect(done.assignments.find((a) => a.stage === 1)!.fellow_id).toBe(spare.id())
    expect((done as Job & { resumed_from_step: number | null }).resumed_from_step).toBe(stage1.step)
    expect(spare.logs.some((l) => l.includes('"checkpoint downloaded"'))).toBe(true)
    await stopCluster(c)
  }, 120_000)
})

/** The pid the agent logged for the last runner it started for a job. */
function lastRunnerPid(logs: string[], jobId: string): number {
  const line = logs.filter((l) => l.includes('"runner started"') && l.includes(jobId)).at(-1)
  if (!line) throw new Error(`no runner started for ${jobId}`)
  return (JSON.parse(line) as { pid: number }).pid
}

