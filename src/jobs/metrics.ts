// Per-job metric events (step, loss, throughput from its fellows) kept in a bounded ring and
// streamed as SSE; ids increase so a viewer resumes with Last-Event-ID.
import { EventRings } from '../events'
import { sseStream } from '../http/sse'

export interface MetricEvent {
  id: number
  ts: number
  fellow_id: string
  stage: number
  step: number | null
  loss: number | null
  throughput: number | null
  status: string
}

const EVENTS_PER_JOB = 5000

/**
 * How long an ended job's events stay for late viewers (the job page's chart of a job that just
 * finished). Then they go, as a restart would take them: kept for good, every finished job held
 * up to 5000 events (about half a megabyte) until the leader stopped.
 */
export const ENDED_KEEP_MS = 60 * 60 * 1000

/** A job's metric events: one event ring per job (src/events.ts), ended when the job ends. */
export class JobMetrics {
  private rings: EventRings<Omit<MetricEvent, 'id'>>
  private readonly live = new Set<string>()
  /** Ended jobs by the time they ended, oldest first (a Map keeps its insertion order). */
  private readonly endedAt = new Map<string, number>()

  /** `now` numbers the events (see EventRings) and times their keeping: the leader's clock, so ids outlast a restart. */
  constructor(private readonly now: () => number = () => Date.now()) {
    this.rings = new EventRings(EVENTS_PER_JOB, now)
  }

  append(jobId: string, e: Omit<MetricEvent, 'id'>): void {
    this.rings.append(jobId, [e])
    if (!this.rings.ended(jobId)) this.live.add(jobId)
  }

  /** Marks the stream finished so viewers get a final `end` event and close. */
  end(jobId: string): void {
    this.rings.end(jobId)
    this.live.delete(jobId)
    if (!this.endedAt.has(jobId)) this.endedAt.set(jobId, this.now())
  }

  /** Drops the events of jobs that ended ENDED_KEEP_MS ago or more (the scheduler's tick). */
  forgetEnded(): void {
    const cutoff = this.now() - ENDED_KEEP_MS
    for (const [jobId, at] of this.endedAt) {
      if (at > cutoff) break
      this.drop(jobId)
    }
  }

  ended(jobId: string): boolean {
    return this.rings.ended(jobId)
  }

  /** Jobs whose streams are not ended (kept as a set: ended jobs' rings stay for late viewers). */
  open(): string[] {
    return [...this.live]
  }

  since(jobId: string, afterId: number): MetricEvent[] {
    return this.rings.since(jobId, afterId)
  }

  drop(jobId: string): void {
    this.rings.drop(jobId)
    this.live.delete(jobId)
    this.endedAt.delete(jobId)
  }

  wait(jobId: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    return this.rings.wait(jobId, signal, timeoutMs)
  }
}

/**
 * An SSE response that replays events after `after` and follows new ones until the job ends, or is
 * over without a ring saying so (`over`: deleted by a purge, or ended long enough ago that its
 * events were dropped: its viewers waited for an end that never came).
 */
export function metricsStream(metrics: JobMetrics, jobId: string, after: number, signal: AbortSignal, over: () => boolean, allowed: () => boolean): Response {
  return sseStream(
    { since: (id) => metrics.since(jobId, id), wait: (sig, ms) => metrics.wait(jobId, sig, ms), ended: () => metrics.ended(jobId) || over() },
    { event: 'metrics', data: ({ id: _id, ts, ...rest }) => ({ ...rest, ts: new Date(ts).toISOString() }), after, signal, allowed },
  )
}
