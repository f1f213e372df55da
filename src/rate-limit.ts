// Fixed-window counters per key, in memory and bounded: at most maxKeys windows are kept; the
// oldest are dropped first so a flood of distinct addresses cannot grow the map without end.
// Windows run on the monotonic clock: in memory only, they need no wall time, and a step of the
// wall clock back by an hour made a 60 s window last an hour (Retry-After: 3656).
import { monotonicNow, type Clock } from './time'

export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>()

  constructor(
    private clock: Clock,
    private max: number,
    private windowMs: number,
    private maxKeys = 100_000,
  ) {}

  /** Counts one attempt; returns the seconds to wait when over the limit, else 0. */
  hit(key: string): number {
    const now = monotonicNow(this.clock)
    let w = this.windows.get(key)
    if (w === undefined || now - w.start >= this.windowMs) {
      this.windows.delete(key)
      w = { start: now, count: 0 }
      this.windows.set(key, w)
      if (this.windows.size > this.maxKeys) this.evict(now)
    }
    w.count++
    if (w.count > this.max) return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000))
    return 0
  }

  private evict(now: number): void {
    for (const [k, w] of this.windows) {
      if (this.windows.size <= this.maxKeys && now - w.start < this.windowMs) break
      this.windows.delete(k)
    }
  }
}
