// Pipeline workers of one job, in one process, wired through an in-memory relay that routes
// like the leader's (activations to the next stage, gradients to the previous one). The workers'
// timers (the resend of a step whose gradient is lost) run on a fake clock the test moves.
import { afterEach, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeFrames, type Frame } from '../../src/wire/frames'
import { PipelineWorker } from '../../src/agent/pipeline'
import { readCheckpoint } from '../../src/agent/state'
import { silentLogger } from '../../src/log'
import type { LeaderClient } from '../../src/agent/client'
import type { StatusReport } from '../../src/wire/jobs'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'

type Report = StatusReport & { stage: number }
const workers: PipelineWorker[] = []
afterEach(() => {
  for (const w of workers.splice(0)) w.stop('test over')
})

function relay(opts: { dropGradients?: number } = {}) {
  const queues = new Map<string, Frame[]>()
  const waiters = new Set<() => void>()
  const reports: Report[] = []
  let toDrop = opts.dropGradients ?? 0
  const clock = new FakeClock()
  const q = (stage: number, channel: string) => {
    const key = `${stage}/${channel}`
    if (!queues.has(key)) queues.set(key, [])
    return queues.get(key)!
  }
  const clientFor = (stage: number): LeaderClient =>
    ({
      // The HTTP relay only (no WebSocket data channel).
      relaySocketUrl: () => null,
      async relayPush(_url: string, channel: string, bytes: Uint8Array) {
        if (channel === 'gradients' && stage === 1 && toDrop > 0) return void toDrop-- // lost on the way to stage 0
        q(channel === 'activations' ? stage + 1 : stage - 1, channel).push(...decodeFrames(bytes, { maxFrameBytes: 1 << 30 }))
        for (const w of [...waiters]) w()
      },
      // A long poll that answers when frames arrive or the worker gives up.
      async relayPop(_url: string, channel: string, _waitMs: number, signal?: AbortSignal) {
        while (q(stage, channel).length === 0 && !signal?.aborted) {
          await new Promise<void>((r) => {
            const done = () => {
              waiters.delete(done)
              signal?.removeEventListener('abort', done)
              r()
            }
            waiters.add(done)
            signal?.addEventListener('abort', done)
          })
        }
        return q(stage, channel).splice(0)
      },
      async jobStatus(_job: string, r: StatusReport) {
        reports.push({ ...r, stage })
      },
    }) as unknown as LeaderClient
  const lost = () => (opts.dropGradients ?? 0) - toDrop
  return { clientFor, reports, clock, lost, time: { tick: () => clock.advance(50), timeoutMs: 15_000 } }
}

function worker(r: ReturnType<typeof relay>, stage: number, config: Record<string, unknown>, dir = mkdtempSync(join(tmpdir(), 'pipe-'))) {
  const peer = (s: number) => (s >= 0 && s < 3 ? { fellow_id: `f${s}`, address: null } : null)
  const w = new PipelineWorker(
    { jobId: 'job-1', client: r.clientFor(stage), log: silentLogger, stateDir: dir, counters: { sent: 0, received: 0 }, clock: r.clock },
    { stage, stages: 3, prev: peer(stage - 1), next: peer(stage + 1), transport: 'tunnel', relayUrl: 'http://l/api/v1/relay/job-1', config, resume: false },
  )
  workers.push(w)
  w.start()
  return w
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const completed = (r: ReturnType<typeof relay>) => () => r.reports.some((x) => x.status === 'completed')

describe('pipeline workers', () => {
  test('three stages train: the last reports a falling loss every report_every steps, then completed', async () => {
    const r = relay()
    const [first] = [0, 1, 2].map((s) => worker(r, s, { steps: 120, report_every: 10, seed: 1 }))
    await until(completed(r), 'completion', { timeoutMs: 15_000 })
    // Stage 0 says it is done once every gradient came back (what `svc runner mlp` exits on).
    await first!.done
    expect(first!.status).toBe('running')
    expect(r.reports.some((x) => x.status === 'failed')).toBe(false)
    const losses = r.reports.filter((x) => x.stage === 2 && x.status === 'running' && x.loss != null)
    expect(losses.map((x) => x.step)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120])
    expect(mean(losses.slice(-3).map((x) => x.loss!))).toBeLessThan(0.5 * mean(losses.slice(0, 3).map((x) => x.loss!)))
    expect(r.reports.find((x) => x.status === 'completed')).toMatchObject({ stage: 2, step: 120 })
  }, 20_000)

  test('a lost gradient costs a resend of the same step, not the job', async () => {
    const r = relay({ dropGradients: 1 })
    const first = worker(r, 0, { steps: 20, report_every: 10, resend_ms: 200 })
    worker(r, 1, { steps: 20, report_every: 10, resend_ms: 200 })
    worker(r, 2, { steps: 20, report_every: 10, resend_ms: 200 })
    await until(() => r.lost() === 1, 'the lost gradient')
    // Stage 0 waits for it until its resend deadline, which only passing time brings.
    expect(first.step).toBe(0)
    expect(r.clock.pending).toBe(1)
    await until(completed(r), 'completion', r.time)
    expect(first.step).toBe(20)
  }, 20_000)

  test('PAUSE stops stage 0 stepping until resumed; CHECKPOINT writes the weights and reports checkpointed', async () => {
    const r = relay()
    const dir = mkdtempSync(join(tmpdir(), 'pipe-'))
    const first = worker(r, 0, { steps: 100_000, report_every: 10 }, dir)
    worker(r, 1, { steps: 100_000, report_every: 10 })
    worker(r, 2, { steps: 100_000, report_every: 10 })
    await until(() => first.step >= 10, 'some steps')
    first.pause()
    const paused = first.step
    // Real time, not the clock: stepping is compute and I/O, and this checks that none goes on.
    await Bun.sleep(150)
    expect(first.step - paused).toBeLessThanOrEqual(1) // at most the step already in flight
    first.checkpoint()
    const cp = readCheckpoint(dir, 'job-1', 0)!
    expect(cp.meta.step).toBe(first.step)
    expect(cp.weights.byteLength).toBe(first.stage.serialize().byteLength)
    await until(() => ['paused', 'checkpointed'].every((st) => r.reports.some((x) => x.stage === 0 && x.status === st)), 'the paused and checkpointed reports')
    first.resume()
    await until(() => first.step >= paused + 10, 'steps after resuming')
  }, 20_000)

  test('RECONFIGURE: a replacement for a lost stage takes over and the job still completes', async () => {
    const r = relay()
    const cfg = { steps: 200, report_every: 10, seed: 4, resend_ms: 300 }
    const first = worker(r, 0, cfg)
    const lost = worker(r, 1, cfg)
    const last = worker(r, 2, cfg)
    await until(() => first.step >= 30, 'some steps')
    lost.stop('killed') // its in-flight work is gone
    r.clock.advance(300) // time passes before the replacement comes: stage 0 resends into the void
    worker(r, 1, cfg)
    for (const w of [first, last]) w.reconfigure({ ...w.assignment, prev: w.assignment.prev && { fellow_id: 'f1-new', address: null }, next: w.assignment.next && { fellow_id: 'f1-new', address: null } })
    await until(completed(r), 'completion', r.time)
    expect(first.step).toBe(200)
  }, 20_000)

  test('a bad job config fails at START with the reason', () => {
    expect(() => worker(relay(), 0, { steps: -1 })).toThrow('config.steps')
    expect(() => worker(relay(), 0, { hidden: 1.5 })).toThrow('config.hidden')
  })
})
