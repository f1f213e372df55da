// A blob's bytes opened before the leader answers: the store is asked for the first chunk, so a
// store that cannot serve the object (S3 answering 503 SlowDown, a reset, a missing file) fails
// the request with a status the client can act on (503 + Retry-After) instead of a 200 whose
// body breaks off at its first byte, which a fellow took for a bad checkpoint and started afresh.

/** The store sent nothing for too long: a bucket that stopped answering. */
export class StoreTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: no answer within ${Math.round(ms / 1000)} s`)
  }
}

/** `p`, or a StoreTimeout once `ms` have passed without it settling. */
export function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new StoreTimeout(what, ms)), ms)))
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}

/**
 * Waits for the first chunk of `source` (none for an empty blob) and hands back a stream that
 * gives that chunk and then the rest. The stream errors when the source ends before `expected`
 * bytes: a short body must never end as if it were whole (the client would keep a cut-off file);
 * and when the source sends nothing for `idleMs` (a bucket that stalls mid-body), rather than
 * holding the download open for as long as the store's client waits.
 */
export async function readAhead(source: ReadableStream<Uint8Array>, expected: number, idleMs: number): Promise<ReadableStream<Uint8Array>> {
  const reader = source.getReader()
  const next = () => withDeadline(reader.read(), idleMs, 'reading the object')
  let first: Awaited<ReturnType<typeof reader.read>>
  try {
    first = await next()
  } catch (e) {
    void reader.cancel().catch(() => {})
    throw e
  }
  let pending: Uint8Array | null = first.done ? null : first.value
  let ended = first.done
  let sent = 0
  const short = () => new Error(`the store's object ended after ${sent} of ${expected} bytes`)
  if (ended && expected > 0) throw short()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending !== null) {
        const chunk = pending
        pending = null
        sent += chunk.byteLength
        controller.enqueue(chunk)
        return
      }
      if (!ended) {
        let got: Awaited<ReturnType<typeof reader.read>>
        try {
          got = await next()
        } catch (e) {
          void reader.cancel().catch(() => {})
          throw e
        }
        if (!got.done) {
          sent += got.value.byteLength
          controller.enqueue(got.value)
          return
        }
        ended = true
      }
      if (sent < expected) controller.error(short())
      else controller.close()
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
}
