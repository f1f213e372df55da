// Server-sent events from an event ring: replay what came after Last-Event-ID, then follow new
// events, with a keep-alive comment while idle so proxies keep the connection open.

/** The Last-Event-ID a viewer resumes after: a non-negative safe integer, else 0 (from the start). */
export function lastEventId(header: string | undefined): number {
  const after = Number(header ?? 0)
  return Number.isSafeInteger(after) && after > 0 ? after : 0
}

export interface SseSource<E extends { id: number }> {
  /** Events after an id, oldest first. */
  since(afterId: number): E[]
  /** Resolves when there may be more to send (or after timeoutMs, or on abort). */
  wait(signal: AbortSignal, timeoutMs: number): Promise<void>
  /** True once the stream has no more to come: an `end` event is sent and the stream closes. */
  ended?(): boolean
}

export interface SseOptions<E extends { id: number }> {
  /** The `event:` name of every event. */
  event: string
  /** The JSON `data:` of an event. */
  data(e: E): unknown
  after: number
  signal: AbortSignal
  headers?: Record<string, string>
  keepAliveMs?: number
  /**
   * Whether the viewer may still see the stream: their session or token may be revoked, their
   * account disabled or their membership ended while it is open. Asked before anything is sent
   * (events, the end, a keep-alive): false ends the stream without another byte. A lookup of the
   * credential and the scope, for streams people watch, not a hot path.
   */
  allowed?: () => boolean
}

/**
 * An `allowed` for sseStream from the route's own check (which throws when the viewer may not
 * see the thing): a refusal, or a failure to decide, is a no. Runs the check against the caller
 * decided anew (the route's `reauthorize`).
 */
export function stillSees(check: () => unknown): boolean {
  try {
    check()
    return true
  } catch {
    return false
  }
}

export function sseStream<E extends { id: number }>(source: SseSource<E>, opts: SseOptions<E>): Response {
  const encoder = new TextEncoder()
  const { signal } = opts
  const keepAliveMs = opts.keepAliveMs ?? 15_000
  let last = opts.after
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (signal.aborted) return controller.close()
        const events = source.since(last)
        if (opts.allowed?.() === false) return controller.close()
        if (events.length > 0) {
          let out = ''
          for (const e of events) {
            out += `id: ${e.id}\nevent: ${opts.event}\ndata: ${JSON.stringify(opts.data(e))}\n\n`
            last = e.id
          }
          controller.enqueue(encoder.encode(out))
          return
        }
        if (source.ended?.()) {
          controller.enqueue(encoder.encode('event: end\ndata: {}\n\n'))
          return controller.close()
        }
        controller.enqueue(encoder.encode(': keep-alive\n\n'))
        await source.wait(signal, keepAliveMs)
      }
    },
  })
  // X-Accel-Buffering: nginx (and proxies that honour it) pass each event on as it comes; with
  // nginx's default buffering a follower of a log or metrics stream saw nothing at all.
  return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no', ...opts.headers } })
}
