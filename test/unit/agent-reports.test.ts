// A stage's status reports (src/agent/reports.ts) against a leader that is away for a while (a
// restart, a network cut): progress is given up after a few tries, the report that ends the stage
// is not (it was: the job stayed "running" for good and its fellow counted as busy).
import { afterAll, describe, expect, test } from 'bun:test'
import { LeaderClient } from '../../src/agent/client'
import { StatusReporter } from '../../src/agent/reports'
import { createLogger } from '../../src/log'
import type { StatusReport } from '../../src/wire/jobs'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'

let down = true
let attempts = 0
const received: StatusReport[] = []
const leader = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    attempts++
    if (down) return new Response(JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'restarting' }), { status: 503, headers: { 'content-type': 'application/problem+json' } })
    received.push((await req.json()) as StatusReport)
    return new Response(null, { status: 204 })
  },
})
afterAll(() => leader.stop(true))

describe('status reports while the leader is away', () => {
  test('progress is given up after five tries; completed is retried (at most 30 s apart) until the leader takes it', async () => {
    const clock = new FakeClock()
    const lines: { msg: string; status?: string; attempts?: number }[] = []
    const log = createLogger('info', (l) => lines.push(JSON.parse(l) as (typeof lines)[number]))
    const reporter = new StatusReporter({ client: new LeaderClient(`http://127.0.0.1:${leader.port}`, () => 'svc_node_x'), log, clock }, 'job-1')
    reporter.report({ status: 'running', step: 10 })
    reporter.report({ status: 'completed', step: 20 })
    /** The next try, once the reporter waits for it (a retry armed on the clock). */
    const nextTry = async (ms: number) => {
      await until(() => (clock.pending === 1 ? true : null), 'a retry waiting')
      const before = attempts
      clock.advance(ms)
      await until(() => (attempts > before ? true : null), 'the retry sent')
    }
    await until(() => (attempts === 1 ? true : null), 'the first try')
    for (let i = 0; i < 4; i++) await nextTry(30_000) // the running report's five tries
    await until(() => (lines.some((l) => l.msg === 'job status report failed' && l.status === 'running') ? true : null), 'progress given up')
    // The completed report: its own five tries, then on and on, never more than 30 s apart.
    for (let i = 0; i < 12; i++) await nextTry(30_000)
    expect(lines.filter((l) => l.msg === 'job status report not delivered yet: retrying until the leader takes it').map((l) => l.status)).toEqual(['completed'])
    expect(lines.some((l) => l.msg === 'job status report failed' && l.status === 'completed')).toBe(false)
    down = false
    await nextTry(30_000)
    await reporter.settled()
    expect(received).toEqual([{ status: 'completed', step: 20 }])
    expect(lines.find((l) => l.msg === 'job status report delivered')).toMatchObject({ status: 'completed', attempts: 14 })
    expect(clock.pending).toBe(0)
  })
})

describe('status reports faster than the leader takes them', () => {
  test('wait in a bounded queue: a report like the last one waiting replaces it (its fields merged), and past 16 the oldest progress goes; the stage-ending report is never dropped', async () => {
    const got: StatusReport[] = []
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const slow = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        got.push((await req.json()) as StatusReport)
        if (got.length === 1) await held // the first report takes a while: the rest queue up
        return new Response(null, { status: 204 })
      },
    })
    try {
      const reporter = new StatusReporter({ client: new LeaderClient(`http://127.0.0.1:${slow.port}`, () => 'svc_node_x'), log: createLogger('error', () => {}), clock: new FakeClock() }, 'job-1')
      reporter.report({ status: 'running', step: 0 })
      await until(() => got.length === 1, 'the first report in flight')
      reporter.report({ status: 'running', step: 1, resumed_from_step: 1 })
      // A runner printing checkpoint lines in a loop: 300 000 of them queued a POST each.
      for (let i = 2; i <= 50_000; i++) reporter.report({ status: 'running', step: i, loss: 1 / i })
      reporter.report({ status: 'paused', step: 50_000 })
      for (let i = 1; i <= 20; i++) reporter.report({ status: i % 2 ? 'running' : 'checkpointed', step: 50_000 + i })
      reporter.report({ status: 'completed', step: 50_021 })
      release()
      await reporter.settled()
      expect(got.length).toBeLessThanOrEqual(1 + 16)
      expect(got.at(-1)).toEqual({ status: 'completed', step: 50_021 })
      expect(got.at(-2)).toEqual({ status: 'checkpointed', step: 50_020 })
      expect(got.slice(1).map((r) => r.step)).toEqual([...got.slice(1).map((r) => r.step!)].sort((a, b) => a - b)) // in order
    } finally {
      slow.stop(true)
    }
  })

  test('a report like the last one waiting is merged into it: the latest figures, and what only the earlier one said', async () => {
    const got: StatusReport[] = []
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const slow = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        got.push((await req.json()) as StatusReport)
        if (got.length === 1) await held
        return new Response(null, { status: 204 })
      },
    })
    try {
      const reporter = new StatusReporter({ client: new LeaderClient(`http://127.0.0.1:${slow.port}`, () => 'svc_node_x'), log: createLogger('error', () => {}), clock: new FakeClock() }, 'job-1')
      reporter.report({ status: 'paused', step: 0 })
      await until(() => got.length === 1, 'the first report in flight')
      reporter.report({ status: 'running', step: 7, resumed_from_step: 7 })
      reporter.report({ status: 'running', step: 9, loss: 0.5, throughput: 2 })
      release()
      await reporter.settled()
      expect(got).toEqual([
        { status: 'paused', step: 0 },
        { status: 'running', step: 9, resumed_from_step: 7, loss: 0.5, throughput: 2 },
      ])
    } finally {
      slow.stop(true)
    }
  })
})
