// Log lines shipped by fellows: a bounded ring per fellow, streamed to operators as SSE with
// increasing ids so a reconnecting viewer resumes from Last-Event-ID.
//
// Two bounds: LINES_PER_FELLOW per ring, and a byte budget for all rings together
// (SVC_LOG_MAX_TOTAL_BYTES, 16 MiB by default). The per-ring bound alone let memory grow with the
// number of fellows: 1000 lines of 4096 characters is 8 MiB a fellow, and anyone may register
// fellows without a token (issue 26). Past the budget, the fellow that wrote least recently loses
// its oldest lines first, ring after ring, until the total fits again.
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

interface Ring {
  next: number
  lines: LogLine[]
  bytes: number
}

export class LogRings {
  /** Every ring that ever held lines: an emptied ring keeps its next id, so ids never repeat. */
  private rings = new Map<string, Ring>()
  /** The rings holding lines, least recently appended to first: the eviction order. */
  private order = new Map<string, Ring>()
  private total = 0
  private waiters = new Map<string, Set<() => void>>()

  constructor(private maxTotalBytes = DEFAULT_LOG_MAX_TOTAL_BYTES) {}

  /** Bytes held for all fellows together (at most the budget once an append returns). */
  get totalBytes(): number {
    return this.total
  }

  append(fellowId: string, lines: string[], now: number): void {
    let ring = this.rings.get(fellowId)
    if (!ring) this.rings.set(fellowId, (ring = { next: 1, lines: [], bytes: 0 }))
    this.order.delete(fellowId)
    this.order.set(fellowId, ring)
    let added = 0
    for (const line of lines) {
      ring.lines.push({ id: ring.next++, ts: now, line })
      added += lineBytes(line)
    }
    ring.bytes += added
    this.total += added
    if (ring.lines.length > LINES_PER_FELLOW) this.trim(fellowId, ring, ring.lines.length - LINES_PER_FELLOW)
    this.evict()
    const w = this.waiters.get(fellowId)
    if (w) for (const wake of w) wake()
  }

  /** Drops a ring's oldest n lines. */
  private trim(fellowId: string, ring: Ring, n: number): void {
    let bytes = 0
    for (const l of ring.lines.splice(0, n)) bytes += lineBytes(l.line)
    ring.bytes -= bytes
    this.total -= bytes
    if (ring.lines.length === 0) this.order.delete(fellowId)
  }

  private evict(): void {
    for (const [fellowId, ring] of this.order) {
      if (this.total <= this.maxTotalBytes) return
      let n = 0
      let bytes = 0
      while (n < ring.lines.length && this.total - bytes > this.maxTotalBytes) bytes += lineBytes(ring.lines[n++]!.line)
      this.trim(fellowId, ring, n)
    }
  }

  since(fellowId: string, afterId: number): LogLine[] {
    return (this.rings.get(fellowId)?.lines ?? []).filter((l) => l.id > afterId)
  }

  /** Resolves when new lines arrive or the signal aborts. */
  wait(fellowId: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(fellowId) ?? new Set()
      this.waiters.set(fellowId, set)
      const done = () => {
        clearTimeout(timer)
        set.delete(done)
        if (set.size === 0) this.waiters.delete(fellowId)
        signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, timeoutMs)
      signal.addEventListener('abort', done)
      set.add(done)
    })
  }

  drop(fellowId: string): void {
    const ring = this.rings.get(fellowId)
    if (ring) this.total -= ring.bytes
    this.rings.delete(fellowId)
    this.order.delete(fellowId)
  }
}
