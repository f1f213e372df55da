// A clock the test moves by hand. Timers armed on it (the agent's backoff, heartbeat and shipping
// loops, reconnects, handshake deadlines) fire only when advance() passes their time, in order and
// each at its own time, so a test says how much time goes by instead of sleeping through it.
import type { TimerClock } from '../../src/time'

interface Timer {
  at: number
  seq: number
  fn: () => void
}

export class FakeClock implements TimerClock {
  private timers: Timer[] = []
  private seq = 0
  /** The monotonic clock: moved by advance() only, not by set() (a step of the wall clock). */
  private m = 0

  constructor(private t = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.t
  }

  monotonic(): number {
    return this.m
  }

  setTimeout(fn: () => void, ms: number): () => void {
    const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn }
    this.timers.push(timer)
    return () => {
      this.timers = this.timers.filter((x) => x !== timer)
    }
  }

  /** Moves time forward by ms, running every timer that falls due on the way (also those they arm). */
  advance(ms: number): void {
    const end = this.t + ms
    for (;;) {
      let next: Timer | null = null
      for (const x of this.timers) if (x.at <= end && (!next || x.at < next.at || (x.at === next.at && x.seq < next.seq))) next = x
      if (!next) break
      this.timers = this.timers.filter((x) => x !== next)
      const at = Math.max(this.t, next.at)
      this.m += at - this.t
      this.t = at
      next.fn()
    }
    this.m += end - this.t
    this.t = end
  }

  /** Sets the wall time, running no timers and leaving the monotonic clock (a step of the wall clock: NTP, an operator). */
  set(ms: number): void {
    this.t = ms
  }

  /** Timers armed and not yet fired or cancelled. */
  get pending(): number {
    return this.timers.length
  }
}
