// Log lines shipped by fellows: a bounded ring per fellow, streamed to operators as SSE with
// increasing ids so a reconnecting viewer resumes from Last-Event-ID.
export interface LogLine {
  id: number
  ts: number
  line: string
}

const LINES_PER_FELLOW = 1000

export class LogRings {
  private rings = new Map<string, { next: number; lines: LogLine[] }>()
  private waiters = new Map<string, Set<() => void>>()

  append(fellowId: string, lines: string[], now: number): void {
    const ring = this.rings.get(fellowId) ?? { next: 1, lines: [] }
    for (const line of lines) ring.lines.push({ id: ring.next++, ts: now, line })
    if (ring.lines.length > LINES_PER_FELLOW) ring.lines.splice(0, ring.lines.length - LINES_PER_FELLOW)
    this.rings.set(fellowId, ring)
    const w = this.waiters.get(fellowId)
    if (w) for (const wake of w) wake()
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
    this.rings.delete(fellowId)
  }
}
