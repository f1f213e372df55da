// In-memory relay queues behind a small interface, so a shared bus can replace them when there
// is more than one leader. Bounded per channel, per pool and in total: full means the pusher backs
// off, never growth (per-channel caps alone let 8 channels x 60 MiB unpopped take RSS 270 -> 751 MiB).
import { AppError } from '../errors'
import { frameWireBytes, type Frame } from '../wire/frames'

export type RelayChannel = 'activations' | 'gradients'

export type PushResult =
  | { ok: true; depthBytes: number }
  /**
   * 'full': retry after retryAfterS; `scope` says which cap is reached (the channel, the job's
   * pool, or the relay as a whole). 'exceeds_capacity': the push alone is larger than the smallest
   * of those caps can ever hold, so retrying cannot help (the route should answer 413, not 429).
   */
  | { ok: false; retryAfterS: number; reason: 'full'; scope: FullScope }
  | { ok: false; retryAfterS: number; reason: 'exceeds_capacity' }

export type FullScope = 'channel' | 'pool' | 'relay'

/** What a refused push is told, over HTTP (routes.ts) and over the socket (socket.ts) alike. */
export const FULL_DETAIL: Record<FullScope, string> = {
  channel: 'The relay channel is full; retry shortly.',
  pool: "The relay queues of this pool's jobs are full; retry shortly.",
  relay: 'The relay is full; retry shortly.',
}
export const EXCEEDS_CAPACITY_DETAIL = 'This push is larger than the relay can ever hold for one channel.'

export interface PopOptions {
  max: number
  /** At most this many bytes of frames (always at least one frame). Default: no byte limit. */
  maxBytes?: number
  waitMs: number
  signal?: AbortSignal
}

export interface RelayStats {
  channels: number
  queuedBytes: number
  waiters: number
}

export interface RelayHub {
  /** `poolId`: the pool of the job, whose channels share the per-pool cap (null: none applies). */
  push(jobId: string, channel: RelayChannel, frames: Frame[], poolId?: string | null): PushResult
  /** Up to `max` frames; waits up to `waitMs` for the first; resolves [] on timeout or abort. */
  pop(jobId: string, channel: RelayChannel, opts: PopOptions): Promise<Frame[]>
  /**
   * Frames a pop took that its caller may not have after all: back at the head of their queue, in
   * their order, ahead of anything pushed since, and handed to waiting pops first. Not held to the
   * caps (they were in the queue a moment ago).
   */
  putBack(jobId: string, channel: RelayChannel, frames: Frame[], poolId?: string | null): void
  /** Drops the job's queues; its pending waiters resolve []. */
  dropJob(jobId: string): void
  /** The keys (`job/stage`) that hold queues. */
  queueKeys(): string[]
  stats(): RelayStats
}

export interface MemoryRelayHubOptions {
  /** Bytes one channel may hold. */
  maxQueueBytes: number
  /** Bytes every channel together may hold (default: no cap beyond the per-channel one). */
  maxTotalBytes?: number
  /** Bytes the channels of one pool's jobs may hold together (default: no such cap). */
  maxPoolBytes?: number
  retryAfterS?: number
}

/** Contract: pop blocks at most 30 s; also keeps setTimeout clear of its 2^31 ms overflow. */
export const MAX_POP_WAIT_MS = 30_000

interface Waiter {
  max: number
  maxBytes: number
  resolve: (frames: Frame[]) => void
  timer: ReturnType<typeof setTimeout> | null
  signal?: AbortSignal
  onAbort?: () => void
}

// Invariant: a channel has waiters only while its queue is empty, since a push hands frames to
// waiters before they rest in the queue. So FIFO order holds across queued and waiting pops.
interface Queue {
  /** Frames from `head` on are queued; a taken slot is null, so its bytes are not kept alive. */
  frames: (Frame | null)[]
  costs: number[]
  head: number
  bytes: number
  waiters: Waiter[]
  /** The pool its bytes count against; set by a push while the queue holds nothing. */
  pool: string | null
}

export class MemoryRelayHub implements RelayHub {
  private readonly jobs = new Map<string, Map<RelayChannel, Queue>>()
  private readonly maxQueueBytes: number
  private readonly maxTotalBytes: number
  private readonly maxPoolBytes: number
  private readonly retryAfterS: number
  private queuedBytes = 0
  private readonly poolBytes = new Map<string, number>()
  private waiterCount = 0

  constructor(opts: MemoryRelayHubOptions) {
    this.maxQueueBytes = opts.maxQueueBytes
    this.maxTotalBytes = opts.maxTotalBytes ?? Infinity
    this.maxPoolBytes = opts.maxPoolBytes ?? Infinity
    this.retryAfterS = opts.retryAfterS ?? 1
  }

  push(jobId: string, channel: RelayChannel, frames: Frame[], poolId: string | null = null): PushResult {
    const costs = frames.map(frameWireBytes)
    const cost = costs.reduce((a, b) => a + b, 0)
    const existing = this.jobs.get(jobId)?.get(channel)
    const pool = existing && existing.bytes > 0 ? existing.pool : poolId
    const capacity = Math.min(this.maxQueueBytes, this.maxTotalBytes, pool === null ? Infinity : this.maxPoolBytes)
    if (cost > capacity) return { ok: false, retryAfterS: this.retryAfterS, reason: 'exceeds_capacity' }
    // Frames that waiting pops take at once are never held, so only the rest meet the caps: a
    // relay filled by other jobs still lets a consumer that is keeping up receive.
    let held = cost
    if (existing && existing.waiters.length > 0) {
      // As take() will hand them out: each waiter its count, within its bytes (at least one frame).
      let i = 0
      for (const w of existing.waiters) {
        let bytes = 0
        for (let n = 0; n < w.max && i < frames.length; n++, i++) {
          if (n > 0 && bytes + costs[i]! > w.maxBytes) break
          bytes += costs[i]!
          held -= costs[i]!
        }
        if (i >= frames.length) break
      }
    }
    // Refused whole: a partial enqueue would leave the pusher unable to know what to resend.
    const full = (scope: FullScope): PushResult => ({ ok: false, retryAfterS: this.retryAfterS, reason: 'full', scope })
    if ((existing?.bytes ?? 0) + held > this.maxQueueBytes) return full('channel')
    if (pool !== null && (this.poolBytes.get(pool) ?? 0) + held > this.maxPoolBytes) return full('pool')
    if (this.queuedBytes + held > this.maxTotalBytes) return full('relay')
    if (frames.length === 0) return { ok: true, depthBytes: existing?.bytes ?? 0 }
    const q = existing ?? this.queue(jobId, channel)
    q.pool = pool
    for (let i = 0; i < frames.length; i++) {
      q.frames.push(frames[i]!)
      q.costs.push(costs[i]!)
    }
    this.charge(q, cost)
    while (q.waiters.length > 0 && q.head < q.frames.length) {
      const w = q.waiters.shift()!
      this.waiterCount--
      this.settle(w, this.take(q, w.max, w.maxBytes))
    }
    const depthBytes = q.bytes
    this.prune(jobId, channel, q)
    return { ok: true, depthBytes }
  }

  pop(jobId: string, channel: RelayChannel, opts: PopOptions): Promise<Frame[]> {
    if (!Number.isInteger(opts.max) || opts.max < 1) throw new AppError('bad_request', 'max must be a positive integer')
    // A caller that already left must not take frames another pop could deliver.
    if (opts.signal?.aborted) return Promise.resolve([])
    const existing = this.jobs.get(jobId)?.get(channel)
    if (existing && existing.head < existing.frames.length) {
      const frames = this.take(existing, opts.max, opts.maxBytes)
      this.prune(jobId, channel, existing)
      return Promise.resolve(frames)
    }
    const waitMs = Math.min(Math.max(0, opts.waitMs), MAX_POP_WAIT_MS)
    if (!(waitMs > 0)) return Promise.resolve([])
    const q = existing ?? this.queue(jobId, channel)
    return new Promise<Frame[]>((resolve) => {
      const w: Waiter = { max: opts.max, maxBytes: opts.maxBytes ?? Infinity, resolve, timer: null, signal: opts.signal }
      const leave = () => {
        const i = q.waiters.indexOf(w)
        if (i < 0) return
        q.waiters.splice(i, 1)
        this.waiterCount--
        this.settle(w, [])
        this.prune(jobId, channel, q)
      }
      w.timer = setTimeout(leave, waitMs)
      if (opts.signal) {
        w.onAbort = leave
        opts.signal.addEventListener('abort', leave, { once: true })
      }
      q.waiters.push(w)
      this.waiterCount++
    })
  }

  putBack(jobId: string, channel: RelayChannel, frames: Frame[], poolId: string | null = null): void {
    if (frames.length === 0) return
    const q = this.jobs.get(jobId)?.get(channel) ?? this.queue(jobId, channel)
    if (q.bytes === 0) q.pool = poolId
    const costs = frames.map(frameWireBytes)
    // Waiting pops mean an empty queue (the invariant above): they take the frames at once, in order.
    let i = 0
    while (q.waiters.length > 0 && i < frames.length) {
      const w = q.waiters.shift()!
      this.waiterCount--
      let bytes = 0
      let end = i
      while (end < frames.length && end - i < w.max && (end === i || bytes + costs[end]! <= w.maxBytes)) bytes += costs[end++]!
      this.settle(w, frames.slice(i, end))
      i = end
    }
    if (i < frames.length) {
      q.frames = [...frames.slice(i), ...q.frames.slice(q.head)]
      q.costs = [...costs.slice(i), ...q.costs.slice(q.head)]
      q.head = 0
      this.charge(q, costs.slice(i).reduce((a, b) => a + b, 0))
    }
    this.prune(jobId, channel, q)
  }

  dropJob(jobId: string): void {
    const channels = this.jobs.get(jobId)
    if (!channels) return
    this.jobs.delete(jobId)
    for (const q of channels.values()) {
      this.charge(q, -q.bytes)
      this.waiterCount -= q.waiters.length
      const waiters = q.waiters.splice(0)
      for (const w of waiters) this.settle(w, [])
    }
  }

  queueKeys(): string[] {
    return [...this.jobs.keys()]
  }

  stats(): RelayStats {
    let channels = 0
    for (const m of this.jobs.values()) channels += m.size
    return { channels, queuedBytes: this.queuedBytes, waiters: this.waiterCount }
  }

  private queue(jobId: string, channel: RelayChannel): Queue {
    let channels = this.jobs.get(jobId)
    if (!channels) this.jobs.set(jobId, (channels = new Map()))
    const q: Queue = { frames: [], costs: [], head: 0, bytes: 0, waiters: [], pool: null }
    channels.set(channel, q)
    return q
  }

  private take(q: Queue, max: number, maxBytes = Infinity): Frame[] {
    let end = Math.min(q.frames.length, q.head + max)
    if (maxBytes !== Infinity) {
      let bytes = q.costs[q.head]!
      for (let i = q.head + 1; i < end; i++) {
        bytes += q.costs[i]!
        if (bytes > maxBytes) {
          end = i
          break
        }
      }
    }
    const frames = q.frames.slice(q.head, end) as Frame[]
    let freed = 0
    for (let i = q.head; i < end; i++) {
      freed += q.costs[i]!
      // A taken frame belongs to its popper: the queue must not hold its bytes (a 4 MiB body each)
      // until it next runs empty, or a queue that never does kept up to 1,024 popped bodies alive.
      q.frames[i] = null
    }
    q.head = end
    this.charge(q, -freed)
    // Compact lazily: shifting on every pop would make draining a long queue quadratic.
    if (q.head === q.frames.length) {
      q.frames = []
      q.costs = []
      q.head = 0
    } else if (q.head > 1024 && q.head * 2 > q.frames.length) {
      q.frames = q.frames.slice(q.head)
      q.costs = q.costs.slice(q.head)
      q.head = 0
    }
    return frames
  }

  /** Adds `delta` bytes to a queue and to the pool and relay totals it counts against. */
  private charge(q: Queue, delta: number): void {
    if (delta === 0) return
    q.bytes += delta
    this.queuedBytes += delta
    if (q.pool === null) return
    const left = (this.poolBytes.get(q.pool) ?? 0) + delta
    if (left > 0) this.poolBytes.set(q.pool, left)
    else this.poolBytes.delete(q.pool)
  }

  /** Bytes queued for the jobs of one pool (tests and metrics). */
  poolQueuedBytes(poolId: string): number {
    return this.poolBytes.get(poolId) ?? 0
  }

  private settle(w: Waiter, frames: Frame[]): void {
    if (w.timer) clearTimeout(w.timer)
    if (w.signal && w.onAbort) w.signal.removeEventListener('abort', w.onAbort)
    w.resolve(frames)
  }

  // Empty channels are forgotten so job ids that come and go do not accumulate.
  private prune(jobId: string, channel: RelayChannel, q: Queue): void {
    if (q.head < q.frames.length || q.waiters.length > 0) return
    const channels = this.jobs.get(jobId)
    if (channels?.get(channel) !== q) return
    channels.delete(channel)
    if (channels.size === 0) this.jobs.delete(jobId)
  }
}
