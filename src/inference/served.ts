// Requests and tokens served per fellow, for the contribution roll-up. Held in memory as one open
// window; the roll-up takes it each tick, which closes it at that instant and opens the next, so
// consecutive windows abut and never overlap (SPEC "Contribution totals"). Bounded by the number of
// fellows that served since the last take.
import type { TokenUsage } from './hub'

export interface ServedCounts {
  requests: number
  prompt_tokens: number
  completion_tokens: number
  /** prompt + completion: what "tokens served" counts. */
  tokens: number
}

export interface ServedWindow {
  /** Unix ms; the previous window's `to` (or the ledger's start). */
  from: number
  to: number
  byFellow: Map<string, ServedCounts>
}

export class ServedLedger {
  private open = new Map<string, ServedCounts>()
  private from: number

  constructor(private now: () => number) {
    this.from = now()
  }

  record(fellowId: string, usage: TokenUsage): void {
    let c = this.open.get(fellowId)
    if (!c) this.open.set(fellowId, (c = { requests: 0, prompt_tokens: 0, completion_tokens: 0, tokens: 0 }))
    c.requests++
    c.prompt_tokens += usage.prompt_tokens
    c.completion_tokens += usage.completion_tokens
    c.tokens += usage.prompt_tokens + usage.completion_tokens
  }

  /** Closes the open window at now() and returns it; the next one starts exactly there. */
  take(): ServedWindow {
    const to = Math.max(this.now(), this.from)
    const window = { from: this.from, to, byFellow: this.open }
    this.open = new Map()
    this.from = to
    return window
  }

  /** The open window so far, without closing it. */
  peek(): ReadonlyMap<string, Readonly<ServedCounts>> {
    return this.open
  }
}
