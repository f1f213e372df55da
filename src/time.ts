// Time as a dependency: loops, windows, lockouts and liveness read the clock they are given, and
// the agent's timers run on it, so tests move a fake clock (test/helpers/clock.ts) instead of
// sleeping. A leaf module: the leader and the agent both load it.
export interface Clock {
  now(): number
  /**
   * Milliseconds on a clock no one sets: it moves only forward, at the rate time passes, whatever
   * NTP or an operator does to the wall clock. For how long ago something happened (a fellow's
   * last heartbeat) where `now()` would jump with the wall clock. Without it, `now()` stands in.
   */
  monotonic?(): number
}

/** The clock's monotonic time, or its wall time where it has none: for how long something took or waited. */
export const monotonicNow = (clock: Clock): number => clock.monotonic?.() ?? clock.now()

/** A clock that can also wake code up later: what code with timers takes (the agent's loops). */
export interface TimerClock extends Clock {
  /** Calls fn once, ms from now; the function returned cancels it. */
  setTimeout(fn: () => void, ms: number): () => void
}

export const systemClock: TimerClock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => {
    const timer = setTimeout(fn, Math.max(0, ms))
    return () => clearTimeout(timer)
  },
}

/** Waits ms on `clock`; resolves false early when the signal aborts (so shutdown never waits on a retry). */
export function sleep(clock: TimerClock, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false)
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      cancel()
      signal?.removeEventListener('abort', onAbort)
      resolve(ok)
    }
    const onAbort = () => done(false)
    const cancel = clock.setTimeout(() => done(true), Math.max(0, ms))
    signal?.addEventListener('abort', onAbort)
  })
}

export const iso = (ms: number): string => new Date(ms).toISOString()
export const isoOrNull = (ms: number | null | undefined): string | null => (ms == null ? null : iso(ms))
export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS
