// In-memory relay queues behind a small interface, so a shared bus can replace them when there
// is more than one leader. Bounded per channel: full means the pusher backs off, never growth.
import { AppError } from '../errors'
import { frameWireBytes, type Frame } from './frames'

export type RelayChannel = 'activations' | 'gradients'

export type PushResult =
  | { ok: true; depthBytes: number }
  /**
   * 'full': retry after retryAfterS. 'exceeds_capacity': the push alone is larger than a channel
   * can ever hold, so retrying cannot help (the route should answer 413, not 429).
   */
  | { ok: false; retryAfterS: number; reason: 'full' | 'exceeds_capacity' }

export interface PopOptions {
  max: number
  waitMs: number
  signal?: AbortSignal
}

export interface RelayStats {
  channels: number
  queuedBytes: number
  waiters: number
}

export interface RelayHub {
  push(jobId: string, channel: RelayChannel, frames: Frame[]): PushResult
  /** Up to `max` frames; waits up to `waitMs` for the first; resolves [] on timeout or abort. */
  pop(jobId: string, channel: RelayChannel, opts: PopOptions): Promise<Frame[]>
  /** Drops the job's queues; its pending waiters resolve []. */
  dropJob(jobId: string): void
  stats(): RelayStats
}

export interface MemoryRelayHubOptions {
  maxQueueBytes: number
  retryAfterS?: number
}

/** Contract: pop blocks at most 30 s; also keeps setTimeout clear of its 2^31 ms overflow. */
export const MAX_POP_WAIT_MS = 30_000

interface Waiter {
  max: number
  resolve: (frames: Frame[]) => void
  timer: ReturnType<typeof setTimeout> | null
  signal?: AbortSignal
  onAbort?: () => void
}

// Invariant: a channel has waiters only while its queue is empty, since a push hands frames to
// waiters before they rest in the queue. So FIFO order holds across queued and waiting pops.
interface Queue {
  frames: Frame[]
  costs: number[]
  head: number
  bytes: number
  waiters: Waiter[]
}

export class MemoryRelayHub implements RelayHub {
  private readonly jobs = new Map<string, Map<RelayChannel, Queue>>()
  private readonly maxQueueBytes: number
  private readonly retryAfterS: number
  private queuedBytes = 0
  private waiterCount = 0

  constructor(opts: MemoryRelayHubOptions) {
    this.maxQueueBytes = opts.maxQueueBytes
    this.retryAfterS = opts.retryAfterS ?? 1
  }

  push(jobId: string, channel: RelayChannel, frames: Frame[]): PushResult {
    const costs = frames.map(frameWireBytes)
    const cost = costs.reduce((a, b) => a + b, 0)
    if (cost > this.maxQueueBytes) return { ok: false, retryAfterS: this.retryAfterS, reason: 'exceeds_capacity' }
    const existing = this.jobs.get(jobId)?.get(channel)
    // Refused whole: a partial enqueue would leave the pusher unable to know what to resend.
    if ((existing?.bytes ?? 0) + cost > this.maxQueueBytes) {
      return { ok: false, retryAfterS: this.retryAfterS, reason: 'full' }
    }
    if (frames.length === 0) return { ok: true, depthBytes: existing?.bytes ?? 0 }
    const q = existing ?? this.queue(jobId, channel)
    for (let i = 0; i < frames.length; i++) {
      q.frames.push(frames[i]!)
      q.costs.push(costs[i]!)
    }
    q.bytes += cost
    this.queuedBytes += cost
    while (q.waiters.length > 0 && q.head < q.frames.length) {
      const w = q.waiters.shift()!
      this.waiterCount--
      this.settle(w, this.take(q, w.max))
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
      const frames = this.take(existing, opts.max)
      this.prune(jobId, channel, existing)
      return Promise.resolve(frames)
    }
    const waitMs = Math.min(Math.max(0, opts.waitMs), MAX_POP_WAIT_MS)
    if (!(waitMs > 0)) return Promise.resolve([])
    const q = existing ?? this.queue(jobId, channel)
    return new Promise<Frame[]>((resolve) => {
      const w: Waiter = { max: opts.max, resolve, timer: null, signal: opts.signal }
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

  dropJob(jobId: string): void {
    const channels = this.jobs.get(jobId)
    if (!channels) return
    this.jobs.delete(jobId)
    for (const q of channels.values()) {
      this.queuedBytes -= q.bytes
      this.waiterCount -= q.waiters.length
      const waiters = q.waiters.splice(0)
      for (const w of waiters) this.settle(w, [])
    }
  }

  stats(): RelayStats {
    let channels = 0
    for (const m of this.jobs.values()) channels += m.size
    return { channels, queuedBytes: this.queuedBytes, waiters: this.waiterCount }
  }

  private queue(jobId: string, channel: RelayChannel): Queue {
    let channels = this.jobs.get(jobId)
    if (!channels) this.jobs.set(jobId, (channels = new Map()))
    const q: Queue = { frames: [], costs: [], head: 0, bytes: 0, waiters: [] }
    channels.set(channel, q)
    return q
  }

  private take(q: Queue, max: number): Frame[] {
    const end = Math.min(q.frames.length, q.head + max)
    const frames = q.frames.slice(q.head, end)
    let freed = 0
    for (let i = q.head; i < end; i++) freed += q.costs[i]!
    q.head = end
    q.bytes -= freed
    this.queuedBytes -= freed
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
