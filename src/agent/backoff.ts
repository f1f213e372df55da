// Jittered exponential backoff. When a leader restarts, every fellow loses it at the same moment;
// without jitter they would all reconnect in lockstep and hammer it again on each retry.

export interface BackoffOptions {
  baseMs: number
  maxMs: number
  factor?: number
  /** Fraction of the delay that is random: 0.5 draws each delay from [cap/2, cap]. */
  jitter?: number
  random?: () => number
}

export class Backoff {
  private attempt = 0
  private readonly factor: number
  private readonly jitter: number
  private readonly random: () => number

  constructor(private readonly opts: BackoffOptions) {
    this.factor = opts.factor ?? 2
    this.jitter = Math.min(1, Math.max(0, opts.jitter ?? 0.5))
    this.random = opts.random ?? Math.random
  }

  /** The cap for the current attempt: base * factor^attempt, never above maxMs. */
  cap(): number {
    return Math.min(this.opts.maxMs, this.opts.baseMs * this.factor ** this.attempt)
  }

  /** The next delay, in [cap * (1 - jitter), cap]; advances the attempt counter. */
  next(): number {
    const cap = this.cap()
    this.attempt = Math.min(this.attempt + 1, 64)
    return Math.round(cap * (1 - this.jitter * this.random()))
  }

  reset(): void {
    this.attempt = 0
  }

  get attempts(): number {
    return this.attempt
  }
}
