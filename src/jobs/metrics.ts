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

/** A job's metric events: one event ring per job (src/events.ts), ended when the job ends. */
export class JobMetrics {
  private rings: EventRings<Omit<MetricEvent, 'id'>>
  private readonly live = new Set<string>()

  /** `now` numbers the events (see EventRings): the leader's clock, so ids outlast a restart. */
  constructor(now?: () => number) {
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
  }

  wait(jobId: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    return this.rings.wait(jobId, signal, timeoutMs)
  }
}

/**
 * An SSE response that replays events after `after` and follows new ones until the job ends, or is
 * gone (a purge deletes the job and its events: its viewers waited for an end that never came).
 */
export function metricsStream(metrics: JobMetrics, jobId: string, after: number, signal: AbortSignal, gone: () => boolean, allowed: () => boolean): Response {
  return sseStream(
    { since: (id) => metrics.since(jobId, id), wait: (sig, ms) => metrics.wait(jobId, sig, ms), ended: () => metrics.ended(jobId) || gone() },
    { event: 'metrics', data: ({ id: _id, ts, ...rest }) => ({ ...rest, ts: new Date(ts).toISOString() }), after, signal, allowed },
  )
}
