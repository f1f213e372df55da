// A blob's bytes opened before the leader answers: the store is asked for the first chunk, so a
// store that cannot serve the object (S3 answering 503 SlowDown, a reset, a missing file) fails
// the request with a status the client can act on (503 + Retry-After) instead of a 200 whose
// body breaks off at its first byte, which a fellow took for a bad checkpoint and started afresh.

/**
 * Waits for the first chunk of `source` (none for an empty blob) and hands back a stream that
 * gives that chunk and then the rest. The stream errors when the source ends before `expected`
 * bytes: a short body must never end as if it were whole (the client would keep a cut-off file).
 */
export async function readAhead(source: ReadableStream<Uint8Array>, expected: number): Promise<ReadableStream<Uint8Array>> {
  const reader = source.getReader()
  let first: Awaited<ReturnType<typeof reader.read>>
  try {
    first = await reader.read()
  } catch (e) {
    reader.releaseLock()
    void source.cancel().catch(() => {})
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
        const next = await reader.read()
        if (!next.done) {
          sent += next.value.byteLength
          controller.enqueue(next.value)
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
