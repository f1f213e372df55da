// What the control signals do to a fellow's work (src/agent/work.ts) with declared runners as real
// child processes: one job's runner at a time on a fellow, also while a stopped one is still in
// its stop grace.
import { afterEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Work } from '../../src/agent/work'
import { filesChangedSince } from '../../src/agent/stage-dir'
import { LeaderError, type LeaderClient } from '../../src/agent/client'
import type { RunnerSpec } from '../../src/agent/fellow-config'
import type { Signal } from '../../src/wire/fellow'
import type { StatusReport } from '../../src/wire/jobs'
import { createLogger } from '../../src/log'
import { systemClock } from '../../src/time'
import { until } from '../helpers/until'

const cleanups: (() => void | Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

/** The state letter of a process, or null once it is gone (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z'
  } catch {
    return false
  }
}

const COUNTER = 'i=0; while :; do i=$((i+1)); echo "{\\"step\\": $i}"; sleep 0.05; done'

function fellow(runners: RunnerSpec[], opts: { uploads?: 'stored' | 'refused' } = {}) {
  const stateDir = mkdtempSync(join(tmpdir(), 'agent-work-'))
  const reports: { job: string; r: StatusReport }[] = []
  const lines: { msg: string; job_id?: string; pid?: number }[] = []
  const stored: { step?: number }[] = []
  // The leader's artifact store: takes every checkpoint at once, or refuses them (larger than it keeps).
  const uploads = {
    beginUpload: async (b: { step?: number; size_bytes: number }) => {
      if (opts.uploads === 'refused') throw new LeaderError(413, 'payload_too_large', 'larger than SVC_ARTIFACT_MAX_BYTES', null)
      return { upload_id: `u${stored.length}`, offset: 0, size_bytes: b.size_bytes, step: b.step }
    },
    putUpload: async (id: string) => {
      stored.push({ step: Number(id.slice(1)) })
      return { id: `a-${id}`, size_bytes: 1 }
    },
  }
  const idle = (_u: string, _c: string, _w: number, signal?: AbortSignal) => new Promise((r) => signal?.addEventListener('abort', () => r([])))
  const client = {
    leaderUrl: 'http://127.0.0.1:9',
    relaySocketUrl: () => null,
    relayPush: async () => undefined,
    relayPop: idle,
    jobStatus: async (job: string, r: StatusReport) => void reports.push({ job, r }),
    latestCheckpoint: async () => null,
    ...uploads,
  } as unknown as LeaderClient
  const log = createLogger('info', (l) => lines.push(JSON.parse(l) as (typeof lines)[number]))
  const work = new Work({ client, log, stateDir, counters: { sent: 0, received: 0 }, clock: systemClock, onReleased: () => undefined, runners, leaderUrl: 'http://127.0.0.1:9', nodeToken: () => null })
  cleanups.push(async () => {
    await work.stopAll('test over')
    rmSync(stateDir, { recursive: true, force: true })
  })
  let n = 0
  const signal = (name: Signal['signal'], jobId: string, payload?: Record<string, unknown>) => work.handle({ id: `s${++n}`, signal: name, job_id: jobId, ...(payload ? { payload } : {}), ts: new Date().toISOString() }, 'socket')
  // Stage 0 of 2 over the (idle) relay, as in agent-runner.test.ts.
  const start = (jobId: string, runner: string) => signal('START', jobId, { stage: 0, stages: 2, prev: null, next: { fellow_id: 'f2', address: null }, transport: 'tunnel', relay_url: `http://127.0.0.1:9/api/v1/relay/${jobId}`, config: {}, runner })
  const started = (jobId: string) => until(() => lines.find((l) => l.msg === 'runner started' && l.job_id === jobId) ?? null, `the runner of ${jobId} started`, { timeoutMs: 10_000 })
  const stageDir = (jobId: string) => join(stateDir, 'jobs', jobId, 'stage-0')
  return { work, reports, lines, signal, start, started, stateDir, stageDir, stored }
}

describe('one job at a time on a fellow', () => {
  test("the next job's runner starts only once the stopped job's runner is gone (it ignored SIGTERM: its stop grace), and the fellow says it is busy until then", async () => {
    const f = fellow([
      { name: 'deaf', command: ['sh', '-c', `trap '' TERM; ${COUNTER}`], env: {}, stopGraceS: 2 },
      { name: 'toy', command: ['sh', '-c', `trap 'exit 143' TERM; ${COUNTER}`], env: {}, stopGraceS: 2 },
    ])
    f.start('job-a', 'deaf')
    const { pid: a } = await f.started('job-a')
    await until(() => (f.work.snapshot().step ?? 0) > 1, 'job A stepping')
    f.signal('STOP', 'job-a', { reason: 'cancelled' })
    // Its runner is still there, in its grace: the fellow is not free (its GPU memory is not).
    expect(alive(a!)).toBe(true)
    expect(f.work.snapshot()).toMatchObject({ status: 'running', job_id: 'job-a' })
    f.start('job-b', 'toy') // the leader placed the next job at once
    const { pid: b } = await f.started('job-b')
    expect(alive(a!)).toBe(false) // killed after its grace, before B's runner started
    expect(f.lines.some((l) => l.msg === "waiting for the previous stage's runner to exit before starting this one" && l.job_id === 'job-b')).toBe(true)
    expect(alive(b!)).toBe(true)
    expect(f.work.snapshot()).toMatchObject({ status: 'running', job_id: 'job-b' })
    f.signal('STOP', 'job-b', { reason: 'cancelled' })
    await until(() => !alive(b!), 'B stopped')
    await until(() => f.work.snapshot().status === 'idle', 'the fellow idle once nothing runs')
  }, 20_000)
})

/** Writes a checkpoint (ck/w) and says so, then steps on; `after` runs in the shell once it said so. */
const CHECKPOINTER = (after = '') => ['sh', '-c', `trap 'exit 143' TERM; mkdir -p "$SVC_CHECKPOINT_DIR/ck"; head -c 100000 /dev/zero > "$SVC_CHECKPOINT_DIR/ck/w"; echo '{"checkpoint": "ck", "step": 3}'; ${after} ${COUNTER}`]

describe("a job's work directory on the fellow", () => {
  test('a file written in the millisecond its checkpoint was taken is in it, one a millisecond later is newer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-newer-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const since = 1_800_000_000_000 // whole milliseconds, as Date.now() gives
    mkdirSync(join(dir, 'ck'))
    writeFileSync(join(dir, 'ck', 'same'), 'a')
    writeFileSync(join(dir, 'ck', 'later'), 'b')
    utimesSync(join(dir, 'ck', 'same'), (since + 0.7) / 1000, (since + 0.7) / 1000)
    utimesSync(join(dir, 'ck', 'later'), (since + 1.2) / 1000, (since + 1.2) / 1000)
    expect(await filesChangedSince(dir, since)).toEqual(['ck/later'])
  })

  test('goes once the job is over here (STOP) and its newest checkpoint is stored on the leader', async () => {
    const f = fellow([{ name: 'ck', command: CHECKPOINTER(), env: {}, stopGraceS: 2 }])
    f.start('job-a', 'ck')
    await f.started('job-a')
    await until(() => f.lines.find((l) => l.msg === 'checkpoint stored on the leader') ?? null, 'the checkpoint stored')
    expect(readdirSync(join(f.stageDir('job-a'), 'checkpoints'))).toEqual(['ck'])
    f.signal('STOP', 'job-a', { reason: 'cancelled' })
    await until(() => f.lines.find((l) => l.msg === "removed the stage's work directory: the job is over on this fellow and its checkpoints are on the leader") ?? null, 'the directory removed')
    expect(existsSync(join(f.stateDir, 'jobs', 'job-a'))).toBe(false)
  })

  test('stays when its newest checkpoint could not be stored, when files in it are newer than the one stored, and when the agent only stops (a restart resumes from it)', async () => {
    const refused = fellow([{ name: 'ck', command: CHECKPOINTER(), env: {}, stopGraceS: 2 }], { uploads: 'refused' })
    refused.start('job-a', 'ck')
    await refused.started('job-a')
    await until(() => refused.lines.find((l) => l.msg === 'checkpoint not uploaded; it stays on this fellow only') ?? null, 'the upload refused')
    refused.signal('STOP', 'job-a', { reason: 'cancelled' })
    await until(() => refused.lines.find((l) => l.msg.startsWith("kept the stage's checkpoints")) ?? null, 'kept')
    expect(readdirSync(join(refused.stageDir('job-a'), 'checkpoints'))).toEqual(['ck'])

    // A runner that writes on after its checkpoint line (the next checkpoint, never said).
    const newer = fellow([{ name: 'ck', command: CHECKPOINTER('sleep 1; echo more > "$SVC_CHECKPOINT_DIR/ck/later";'), env: {}, stopGraceS: 2 }])
    newer.start('job-a', 'ck')
    await newer.started('job-a')
    await until(() => existsSync(join(newer.stageDir('job-a'), 'checkpoints', 'ck', 'later')), 'the later file')
    await until(() => newer.lines.find((l) => l.msg === 'checkpoint stored on the leader') ?? null, 'the checkpoint stored')
    newer.signal('STOP', 'job-a', { reason: 'cancelled' })
    await until(() => newer.lines.find((l) => l.msg.startsWith("kept the stage's checkpoints")) ?? null, 'kept')
    expect(existsSync(join(newer.stageDir('job-a'), 'checkpoints', 'ck', 'later'))).toBe(true)

    const stopping = fellow([{ name: 'ck', command: CHECKPOINTER(), env: {}, stopGraceS: 2 }])
    stopping.start('job-a', 'ck')
    await stopping.started('job-a')
    await until(() => stopping.lines.find((l) => l.msg === 'checkpoint stored on the leader') ?? null, 'the checkpoint stored')
    await stopping.work.stopAll('agent stopping')
    await Bun.sleep(200)
    expect(readdirSync(join(stopping.stageDir('job-a'), 'checkpoints'))).toEqual(['ck'])
  }, 20_000)
})
