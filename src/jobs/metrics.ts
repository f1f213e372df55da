// Per-job metric events (step, loss, throughput from its fellows) kept in a bounded ring and
// streamed as SSE; ids increase so a viewer resumes with Last-Event-ID.
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

export class JobMetrics {
  private rings = new Map<string, { next: number; events: MetricEvent[]; ended: boolean }>()
  private waiters = new Map<string, Set<() => void>>()

  append(jobId: string, e: Omit<MetricEvent, 'id'>): void {
    const ring = this.rings.get(jobId) ?? { next: 1, events: [], ended: false }
    ring.events.push({ ...e, id: ring.next++ })
    if (ring.events.length > EVENTS_PER_JOB) ring.events.splice(0, ring.events.length - EVENTS_PER_JOB)
    this.rings.set(jobId, ring)
    this.wake(jobId)
  }

  /** Marks the stream finished so viewers get a final `end` event and close. */
  end(jobId: string): void {
    const ring = this.rings.get(jobId) ?? { next: 1, events: [], ended: true }
    ring.ended = true
    this.rings.set(jobId, ring)
    this.wake(jobId)
  }

  ended(jobId: string): boolean {
    return this.rings.get(jobId)?.ended ?? false
  }

  since(jobId: string, afterId: number): MetricEvent[] {
    return (this.rings.get(jobId)?.events ?? []).filter((e) => e.id > afterId)
  }

  drop(jobId: string): void {
    this.rings.delete(jobId)
    this.wake(jobId)
  }

  wait(jobId: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(jobId) ?? new Set()
      this.waiters.set(jobId, set)
      const done = () => {
        clearTimeout(timer)
        set.delete(done)
        if (set.size === 0) this.waiters.delete(jobId)
        signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, timeoutMs)
      signal.addEventListener('abort', done)
      set.add(done)
    })
  }

  private wake(jobId: string): void {
    const set = this.waiters.get(jobId)
    if (set) for (const w of [...set]) w()
  }
}

/** An SSE response that replays events after `after` and follows new ones until the job ends. */
export function metricsStream(metrics: JobMetrics, jobId: string, after: number, signal: AbortSignal): Response {
  const encoder = new TextEncoder()
  let last = after
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (signal.aborted) return controller.close()
        const events = metrics.since(jobId, last)
        if (events.length > 0) {
          let out = ''
          for (const e of events) {
            const { id, ts, ...rest } = e
            out += `id: ${id}\nevent: metrics\ndata: ${JSON.stringify({ ...rest, ts: new Date(ts).toISOString() })}\n\n`
            last = id
          }
          controller.enqueue(encoder.encode(out))
          return
        }
        if (metrics.ended(jobId)) {
          controller.enqueue(encoder.encode('event: end\ndata: {}\n\n'))
          return controller.close()
        }
        controller.enqueue(encoder.encode(': keep-alive\n\n'))
        await metrics.wait(jobId, signal, 15_000)
      }
    },
  })
  return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } })
}
