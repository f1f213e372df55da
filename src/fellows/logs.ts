// Log lines shipped by fellows: a bounded ring per fellow, streamed to operators as SSE with
// increasing ids so a reconnecting viewer resumes from Last-Event-ID.
//
// Two bounds: LINES_PER_FELLOW per ring, and a byte budget for all rings together
// (SVC_LOG_MAX_TOTAL_BYTES, 16 MiB by default). The per-ring bound alone let memory grow with the
// number of fellows: 1000 lines of 4096 characters is 8 MiB a fellow, and anyone may register
// fellows without a token (issue 26). Past the budget, lines go by fair share: the budget divided
// among the pools with lines, then among each pool's fellows with lines. The fellow that wrote
// loses its own oldest lines first while it holds more than its share, then the others above
// theirs, least recently written first, then (only if still over) anyone, least recently written
// first. With the least recently written alone, a few fellows registered without a token and
// writing without pause emptied every other pool's machines' logs; with one share per fellow, a
// few hundred of them did.
import { EventRings } from '../events'
import { sseStream } from '../http/sse'

export interface LogLine {
  id: number
  ts: number
  line: string
}

const LINES_PER_FELLOW = 1000
export const DEFAULT_LOG_MAX_TOTAL_BYTES = 16 * 1024 * 1024
/** What a line is counted as: two bytes a character (a JS string at worst) and the record around it. */
const LINE_OVERHEAD_BYTES = 64
export const lineBytes = (line: string): number => line.length * 2 + LINE_OVERHEAD_BYTES

/** One event ring per fellow (src/events.ts); this class adds the byte budget over all of them. */
export class LogRings {
  private rings: EventRings<Omit<LogLine, 'id'>>
  /** Bytes held per fellow with lines, least recently appended to first: the eviction order. */
  private order = new Map<string, number>()
  private total = 0
  /** The pool each fellow with lines was in at its last append, and how many such fellows each pool has. */
  private poolOf = new Map<string, string>()
  private fellowsIn = new Map<string, number>()

  /**
   * `now` numbers the lines (see EventRings): the leader's clock, so ids outlast a restart.
   * `poolOf` names a fellow's pool: the budget is shared by pool first, then by fellow within it, so
   * that registering many fellows (token-less ones all land in the default pool) shrinks no other
   * pool's share.
   */
  constructor(
    private maxTotalBytes = DEFAULT_LOG_MAX_TOTAL_BYTES,
    now?: () => number,
    private readonly poolOfFellow: (fellowId: string) => string | null = () => null,
  ) {
    this.rings = new EventRings(LINES_PER_FELLOW, now)
  }

  /** Bytes held for all fellows together (at most the budget once an append returns). */
  get totalBytes(): number {
    return this.total
  }

  append(fellowId: string, lines: string[], now: number): void {
    let bytes = this.order.get(fellowId) ?? 0
    this.order.delete(fellowId)
    let added = 0
    for (const line of lines) added += lineBytes(line)
    // The ring drops what passes its line cap itself; those lines leave the count here.
    for (const l of this.rings.append(fellowId, lines.map((line) => ({ ts: now, line })))) added -= lineBytes(l.line)
    bytes += added
    this.total += added
    if (this.rings.held(fellowId).length > 0) this.hold(fellowId, bytes, this.poolOfFellow(fellowId) ?? '')
    else this.release(fellowId)
    if (this.total <= this.maxTotalBytes) return
    this.trim(fellowId, this.share(fellowId))
    for (const fair of [true, false]) {
      for (const id of this.order.keys()) {
        if (this.total <= this.maxTotalBytes) return
        this.trim(id, fair ? this.share(id) : 0)
      }
    }
  }

  /** The budget divided among the pools with lines, then among that pool's fellows with lines. */
  private share(fellowId: string): number {
    const pool = this.poolOf.get(fellowId) ?? ''
    return this.maxTotalBytes / Math.max(1, this.fellowsIn.size) / Math.max(1, this.fellowsIn.get(pool) ?? 1)
  }

  /** The fellow now holds `bytes` (appended last: the end of the eviction order), counted in `pool`. */
  private hold(fellowId: string, bytes: number, pool: string): void {
    this.order.set(fellowId, bytes)
    const before = this.poolOf.get(fellowId)
    if (before === pool) return
    if (before !== undefined) this.uncount(before)
    this.poolOf.set(fellowId, pool)
    this.fellowsIn.set(pool, (this.fellowsIn.get(pool) ?? 0) + 1)
  }

  /** The fellow holds no lines any more. */
  private release(fellowId: string): void {
    this.order.delete(fellowId)
    const pool = this.poolOf.get(fellowId)
    if (pool === undefined) return
    this.poolOf.delete(fellowId)
    this.uncount(pool)
  }

  private uncount(pool: string): void {
    const n = (this.fellowsIn.get(pool) ?? 1) - 1
    if (n > 0) this.fellowsIn.set(pool, n)
    else this.fellowsIn.delete(pool)
  }

  /** The fellow's oldest lines, while the total is over the budget and it holds more than `keep` bytes. */
  private trim(fellowId: string, keep: number): void {
    let bytes = this.order.get(fellowId)
    if (bytes === undefined || bytes <= keep) return
    const held = this.rings.held(fellowId)
    let n = 0
    let freed = 0
    while (n < held.length && this.total - freed > this.maxTotalBytes && bytes - freed > keep) freed += lineBytes(held[n++]!.line)
    if (n === 0) return
    this.rings.trim(fellowId, n)
    this.total -= freed
    bytes -= freed
    // Trimmed, not written: it keeps its place in the eviction order.
    if (this.rings.held(fellowId).length === 0) this.release(fellowId)
    else this.order.set(fellowId, bytes)
  }

  since(fellowId: string, afterId: number): LogLine[] {
    return this.rings.since(fellowId, afterId)
  }

  /** Resolves when new lines arrive or the signal aborts. */
  wait(fellowId: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    return this.rings.wait(fellowId, signal, timeoutMs)
  }

  drop(fellowId: string): void {
    this.total -= this.order.get(fellowId) ?? 0
    this.release(fellowId)
    this.rings.drop(fellowId, { wake: false })
  }
}

/** The SSE stream of a fellow's log lines, from the line after `after`. */
export function logStream(logs: LogRings, fellowId: string, after: number, signal: AbortSignal, allowed: () => boolean): Response {
  return sseStream(
    { since: (id) => logs.since(fellowId, id), wait: (sig, ms) => logs.wait(fellowId, sig, ms) },
    { event: 'log', data: (l) => ({ ts: new Date(l.ts).toISOString(), line: l.line }), after, signal, allowed, headers: { connection: 'keep-alive' } },
  )
}
