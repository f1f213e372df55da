// Log lines shipped by fellows: a bounded ring per fellow, streamed to operators as SSE with
// increasing ids so a reconnecting viewer resumes from Last-Event-ID.
//
// Two bounds: LINES_PER_FELLOW per ring, and a byte budget for all rings together
// (SVC_LOG_MAX_TOTAL_BYTES, 16 MiB by default). The per-ring bound alone let memory grow with the
// number of fellows: 1000 lines of 4096 characters is 8 MiB a fellow, and anyone may register
// fellows without a token (issue 26). Past the budget, the fellow that wrote least recently loses
// its oldest lines first, ring after ring, until the total fits again.
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

  /** `now` numbers the lines (see EventRings): the leader's clock, so ids outlast a restart. */
  constructor(
    private maxTotalBytes = DEFAULT_LOG_MAX_TOTAL_BYTES,
    now?: () => number,
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
    if (this.rings.held(fellowId).length > 0) this.order.set(fellowId, bytes)
    this.evict()
  }

  /** Past the budget, the fellow that wrote least recently loses its oldest lines first. */
  private evict(): void {
    for (const [fellowId, bytes] of this.order) {
      if (this.total <= this.maxTotalBytes) return
      const held = this.rings.held(fellowId)
      let n = 0
      let freed = 0
      while (n < held.length && this.total - freed > this.maxTotalBytes) freed += lineBytes(held[n++]!.line)
      this.rings.trim(fellowId, n)
      this.total -= freed
      if (this.rings.held(fellowId).length === 0) this.order.delete(fellowId)
      else this.order.set(fellowId, bytes - freed)
    }
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
    this.order.delete(fellowId)
    this.rings.drop(fellowId, { wake: false })
  }
}

/** The SSE stream of a fellow's log lines, from the line after `after`. */
export function logStream(logs: LogRings, fellowId: string, after: number, signal: AbortSignal): Response {
  return sseStream(
    { since: (id) => logs.since(fellowId, id), wait: (sig, ms) => logs.wait(fellowId, sig, ms) },
    { event: 'log', data: (l) => ({ ts: new Date(l.ts).toISOString(), line: l.line }), after, signal, headers: { connection: 'keep-alive' } },
  )
}
