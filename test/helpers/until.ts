// The one way a test waits for something that happens on its own time (a socket, a child process,
// another event-loop turn): poll a predicate, bounded, and say what was awaited when it times out.
// Timers of the code under test run on a fake clock instead (test/helpers/clock.ts); `tick` moves
// that clock between polls when the awaited thing needs time to pass as well.

export interface UntilOptions {
  /** Give up after this long (real time); 5 s unless told. */
  timeoutMs?: number
  /** Real time between polls; 10 ms unless told. */
  everyMs?: number
  /** Called before each poll after the first: e.g. `() => clock.advance(250)`. */
  tick?: () => void
}

/**
 * Resolves with the predicate's first truthy answer. The predicate may be async; one that throws
 * counts as not yet, and the last answer or error is named in the timeout's message.
 */
export async function until<T>(predicate: () => T | Promise<T>, what: string, opts: UntilOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 5000
  const deadline = Date.now() + timeoutMs
  let last: unknown = undefined
  for (let first = true; ; first = false) {
    if (!first) opts.tick?.()
    try {
      const v = await predicate()
      if (v) return v as NonNullable<T>
      last = v
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) break
    await Bun.sleep(opts.everyMs ?? 10)
  }
  const detail = last instanceof Error ? ` (last: ${last.message})` : last === undefined || last === false ? '' : ` (last: ${JSON.stringify(last)})`
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`)
}
