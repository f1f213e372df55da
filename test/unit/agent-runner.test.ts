// A declared runner's stage (src/agent/runner.ts) against a stand-in leader: signals that come
// while the stage is still starting (its checkpoint being looked up, no process yet) are not lost.
import { afterEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RunnerWorker } from '../../src/agent/runner'
import { parseAssignment } from '../../src/agent/job'
import type { LeaderClient, StoredArtifact } from '../../src/agent/client'
import type { StatusReport } from '../../src/wire/jobs'
import { createLogger } from '../../src/log'
import { systemClock } from '../../src/time'
import { until } from '../helpers/until'

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

/** The state letter of a process (R, S, T ...), or null once it is gone. */
export function procState(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0]!
  } catch {
    return null
  }
}

/** A runner that prints a step every 20 ms, forever. */
const COUNTER = ['sh', '-c', 'i=0; while :; do i=$((i+1)); echo "{\\"step\\": $i}"; sleep 0.02; done']

function stage(opts: { command?: string[] } = {}) {
  const stateDir = mkdtempSync(join(tmpdir(), 'agent-runner-'))
  const reports: StatusReport[] = []
  const lines: { msg: string; pid?: number; paused?: boolean }[] = []
  const lookup = Promise.withResolvers<StoredArtifact | null>()
  const idle = (_u: string, _c: string, _w: number, signal?: AbortSignal) => new Promise((r) => signal?.addEventListener('abort', () => r([])))
  const client = {
    leaderUrl: 'http://127.0.0.1:9',
    relaySocketUrl: () => null,
    relayPush: async () => undefined,
    relayPop: idle,
    jobStatus: async (_j: string, r: StatusReport) => void reports.push(r),
    // The stage's checkpoint lookup takes as long as the test says (a slow leader, a download).
    latestCheckpoint: () => lookup.promise,
  } as unknown as LeaderClient
  const log = createLogger('info', (l) => lines.push(JSON.parse(l) as (typeof lines)[number]))
  // Stage 0 of 2: it polls the (idle) relay for gradients. (A 1-stage job over the relay with no
  // relay socket has nothing to poll, and Link's relay loop then spins: not what this tests.)
  const a = parseAssignment({ stage: 0, stages: 2, transport: 'tunnel', relay_url: 'http://127.0.0.1:9/api/v1/relay/job-1', config: {}, resume: true })
  const w = new RunnerWorker(
    { jobId: 'job-1', client, log, stateDir, counters: { sent: 0, received: 0 }, clock: systemClock, leaderUrl: 'http://127.0.0.1:9', nodeToken: () => null },
    a,
    { name: 'toy', command: opts.command ?? COUNTER, env: {}, stopGraceS: 1 },
  )
  cleanups.push(() => {
    w.stop('test over')
    rmSync(stateDir, { recursive: true, force: true })
  })
  const started = () => until(() => lines.find((l) => l.msg === 'runner started') ?? null, 'the runner started', { timeoutMs: 10_000 })
  return { w, reports, lines, lookup, started, stateDir }
}

describe('a runner stage that is still starting', () => {
  test('a PAUSE before the runner exists holds: no runner starts and reports say paused until the resume, which starts it', async () => {
    const s = stage()
    s.w.start()
    s.w.pause() // START then PAUSE, while the stage's checkpoint is still being looked up
    expect(s.w.status).toBe('paused')
    s.lookup.resolve(null)
    await until(() => s.lines.find((l) => l.msg === 'stage starts paused: the runner starts when the job is resumed') ?? null, 'the stage waiting for its resume')
    await Bun.sleep(300)
    expect(s.lines.some((l) => l.msg === 'runner started')).toBe(false)
    expect(s.w.status).toBe('paused')
    expect(s.w.step).toBe(0)
    expect(s.reports.map((r) => r.status)).toEqual(['paused', 'paused'])
    s.w.resume()
    const { pid } = await s.started()
    await until(() => (s.w.step > 2 ? true : null), 'steps after the resume', { timeoutMs: 5000 })
    expect(procState(pid!)).not.toBe('T')
    expect(s.w.status).toBe('running')
    expect(s.reports.at(-1)?.status).toBe('running')
  })

  test('a resume before the start cancels the pause: the runner starts at once and runs', async () => {
    const s = stage()
    s.w.start()
    s.w.pause()
    s.w.resume()
    s.lookup.resolve(null)
    const { pid } = await s.started()
    expect(s.lines.some((l) => l.msg.startsWith('stage starts paused'))).toBe(false)
    await until(() => (s.w.step > 2 ? true : null), 'steps', { timeoutMs: 5000 })
    expect(procState(pid!)).not.toBe('T')
  })

  test('a STOP of a stage paused before its start starts no runner, whether it comes before or after the checkpoint lookup', async () => {
    for (const stopFirst of [true, false]) {
      const s = stage()
      s.w.start()
      s.w.pause()
      if (stopFirst) s.w.stop('cancelled')
      s.lookup.resolve(null)
      await Bun.sleep(100)
      if (!stopFirst) s.w.stop('cancelled')
      s.w.resume() // too late: a stopped stage stays stopped
      await Bun.sleep(200)
      expect(s.lines.some((l) => l.msg === 'runner started')).toBe(false)
      expect(s.w.status).toBe('stopped')
    }
  })
})
