// Bounded rings of events, one per key (a fellow's log lines, a job's metrics), with ids that only
// increase per key so a viewer resumes with Last-Event-ID, and waiting with an abort signal for
// the next append. What a ring may hold beyond its length cap (a byte budget, say) is its owner's
// rule: trim() takes the oldest events out for it.

/** An event as held: what was appended, stamped with its id. */
export type Stamped<T> = T & { id: number }

interface Ring<T> {
  next: number
  events: Stamped<T>[]
  ended: boolean
}

export class EventRings<T extends object> {
  private rings = new Map<string, Ring<T>>()
  /** Kept apart from the rings: a viewer may wait on a key before it has a ring, or after a drop. */
  private waiters = new Map<string, Set<() => void>>()

  /**
   * `perKey`: the most events a ring holds; past it the oldest go first. `now` (ms) numbers a new
   * ring's events from now x 1000 + 1: a ring made later (after a drop, or by the next leader
   * after a restart) numbers above any earlier one of its key at under 1000 events a millisecond,
   * so a viewer resuming with a Last-Event-ID from before misses none of the new events. Without
   * it, rings number from 1.
   */
  constructor(
    private perKey: number,
    private now: () => number = () => 0,
  ) {}

  private ring(key: string): Ring<T> {
    let ring = this.rings.get(key)
    if (!ring) this.rings.set(key, (ring = { next: this.now() * 1000 + 1, events: [], ended: false }))
    return ring
  }

  /** Stamps and appends the events, wakes the key's waiters, and returns what the length cap pushed out. */
  append(key: string, events: T[]): Stamped<T>[] {
    const ring = this.ring(key)
    for (const e of events) ring.events.push({ ...e, id: ring.next++ })
    const over = ring.events.length - this.perKey
    const dropped = over > 0 ? ring.events.splice(0, over) : []
    this.wake(key)
    return dropped
  }

  /** Takes a ring's oldest n events out (an owner's budget); its next id stays, ids never repeat. */
  trim(key: string, n: number): Stamped<T>[] {
    return this.rings.get(key)?.events.splice(0, n) ?? []
  }

  /** The events held for a key, oldest first (read only). */
  held(key: string): readonly Stamped<T>[] {
    return this.rings.get(key)?.events ?? []
  }

  since(key: string, afterId: number): Stamped<T>[] {
    return this.held(key).filter((e) => e.id > afterId)
  }

  /** Marks the key's stream finished, so viewers get to its end and close. */
  end(key: string): void {
    this.ring(key).ended = true
    this.wake(key)
  }

  ended(key: string): boolean {
    return this.rings.get(key)?.ended ?? false
  }


  /** Forgets the key's ring (a new one numbers on from the time it is made); `wake` tells its viewers at once. */
  drop(key: string, { wake = true }: { wake?: boolean } = {}): void {
    this.rings.delete(key)
    if (wake) this.wake(key)
  }

  /** Resolves at the key's next append, end or drop, when the signal aborts, or after timeoutMs. */
  wait(key: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(key) ?? new Set()
      this.waiters.set(key, set)
      const done = () => {
        clearTimeout(timer)
        set.delete(done)
        if (set.size === 0) this.waiters.delete(key)
        signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, timeoutMs)
      signal.addEventListener('abort', done)
      set.add(done)
    })
  }

  private wake(key: string): void {
    const set = this.waiters.get(key)
    if (set) for (const w of [...set]) w()
  }
}
