// The data plane of one job on one fellow: activations go to the next stage, gradients to the
// previous one, per the job's transport. p2p: direct TCP only. tunnel: the leader's relay only.
// auto: p2p, and the relay for a neighbour that cannot be reached within a short timeout. So
// that both ends of a link agree without negotiating, a receiver in tunnel or auto mode always
// reads both its p2p listeners (fed in by the agent) and its relay queues.
import { encodeFrames, type Frame } from '../wire/frames'
import { Backoff } from './backoff'
import { LeaderError, isRetryable, type LeaderClient } from './client'
import { P2PRefused, P2PSender, parseAddress, type Channel } from './p2p'
import { RelaySocketClient } from './relay-socket'
import { monotonicNow, sleep, systemClock, type TimerClock } from '../time'
import type { Logger } from '../log'

export type TransportMode = 'p2p' | 'tunnel' | 'auto'
export interface Peer {
  fellow_id: string
  address: string | null
}
/**
 * What became of one frame: handed on; not now (the neighbour or the relay cannot be reached:
 * send again); or too large for the relay to ever carry (SVC_RELAY_MAX_FRAME_BYTES): do not resend.
 */
export type SendOutcome = 'sent' | 'unreachable' | 'too_large'

export interface Counters {
  sent: number
  received: number
}

/**
 * Frames received for a job, per channel, bounded in count and in bytes: a flood (even from a
 * peer that knows the job's key) costs old frames, not memory.
 */
export class Inbox {
  private readonly queues: Record<Channel, Frame[]> = { activations: [], gradients: [] }
  private readonly bytes: Record<Channel, number> = { activations: 0, gradients: 0 }
  private readonly waiters = new Set<() => void>()
  dropped = 0
  private readonly max: number
  private readonly maxBytes: number
  private readonly clock: TimerClock

  constructor(o: { max?: number; maxBytes?: number; clock?: TimerClock } = {}) {
    this.max = o.max ?? 256
    this.maxBytes = o.maxBytes ?? 256 * 1024 * 1024
    this.clock = o.clock ?? systemClock
  }

  push(channel: Channel, frame: Frame): void {
    const q = this.queues[channel]
    q.push(frame)
    this.bytes[channel] += frame.data.byteLength
    // The newest frame stays even when it alone is over the byte limit: it is what comes next.
    while (q.length > 1 && (q.length > this.max || this.bytes[channel] > this.maxBytes)) {
      this.bytes[channel] -= q.shift()!.data.byteLength
      this.dropped++
    }
    for (const w of [...this.waiters]) w()
  }

  /** Bytes of frame data held for `channel`. */
  heldBytes(channel: Channel): number {
    return this.bytes[channel]
  }

  size(channel: Channel): number {
    return this.queues[channel].length
  }

  clear(): void {
    this.queues.activations.length = 0
    this.queues.gradients.length = 0
    this.bytes.activations = this.bytes.gradients = 0
  }

  /** The next frame from `channels` (earlier channels first); null on abort or timeout. */
  async take(channels: Channel[], signal: AbortSignal, timeoutMs = Infinity): Promise<{ channel: Channel; frame: Frame } | null> {
    const deadline = monotonicNow(this.clock) + timeoutMs
    for (;;) {
      for (const channel of channels) {
        const frame = this.queues[channel].shift()
        if (frame) {
          this.bytes[channel] -= frame.data.byteLength
          return { channel, frame }
        }
      }
      const left = deadline - monotonicNow(this.clock)
      if (signal.aborted || left <= 0) return null
      await new Promise<void>((resolve) => {
        const done = () => {
          cancel?.()
          this.waiters.delete(done)
          signal.removeEventListener('abort', done)
          resolve()
        }
        const cancel = Number.isFinite(left) ? this.clock.setTimeout(done, left) : undefined
        this.waiters.add(done)
        signal.addEventListener('abort', done)
      })
    }
  }
}

export interface LinkOptions {
  jobId: string
  stage: number
  stages: number
  mode: TransportMode
  relayUrl: string
  prev: Peer | null
  next: Peer | null
  client: LeaderClient
  log: Logger
  counters: Counters
  /** Retry delays, deadlines and the inbox's waits run on it. */
  clock: TimerClock
  /** The job's p2p key (START's p2p_key): what proves this stage to its neighbours' listeners. */
  key?: Uint8Array | null
  /** How long auto mode tries a neighbour's listener before using the relay. */
  connectTimeoutMs?: number
  /** false: the relay's HTTP routes only, never its WebSocket data channel (tests of the fallback). */
  relaySocket?: boolean
  /**
   * How long auto mode keeps trying a neighbour whose listener refuses our handshake before using
   * the relay: signals reach fellows one by one, so it may not have taken this job's START, or
   * the RECONFIGURE with the job's new key, yet.
   */
  refusedGraceMs?: number
}

export class Link {
  readonly inbox: Inbox
  private readonly senders = new Map<string, P2PSender>()
  private readonly viaRelay = new Set<string>()
  private epoch = new AbortController()
  private readonly closed = new AbortController()

  /** The relay's WebSocket data channel; null in p2p mode or when turned off. */
  private readonly socket: RelaySocketClient | null

  constructor(private readonly o: LinkOptions) {
    this.inbox = new Inbox({ clock: o.clock })
    const url = o.mode === 'p2p' || o.relaySocket === false ? null : o.client.relaySocketUrl(o.jobId)
    this.socket = url === null ? null : new RelaySocketClient({ url, token: () => o.client.bearer(), deliver: (ch, f) => this.deliver(ch, f), log: o.log, jobId: o.jobId, clock: o.clock })
  }

  get jobId(): string {
    return this.o.jobId
  }

  /** Aborted when the neighbours change, so a send stuck on a dead neighbour gives up. */
  get epochSignal(): AbortSignal {
    return AbortSignal.any([this.epoch.signal, this.closed.signal])
  }

  start(): void {
    if (this.o.mode === 'p2p') return
    void this.relayLoop()
  }

  /**
   * Receives from the relay: over its WebSocket while one is open, else by HTTP long polls, trying
   * the socket again now and then (a leader that restarted, a proxy that let it through).
   */
  private async relayLoop(): Promise<void> {
    const signal = this.closed.signal
    const channels: Channel[] = []
    if (this.o.stage > 0) channels.push('activations')
    if (this.o.stage < this.o.stages - 1) channels.push('gradients')
    // A 1-stage job has no neighbour to hear from. Looping anyway spun: with no socket, on
    // promises alone, which held the agent's event loop for good; with one, reconnecting at once.
    if (channels.length === 0) return
    const backoff = new Backoff({ baseMs: 1000, maxMs: 30_000 })
    while (!signal.aborted) {
      if (this.socket && (await this.socket.open())) {
        backoff.reset()
        await this.socket.closed()
        continue
      }
      if (signal.aborted) return
      // No socket: poll over HTTP until it is time to try the socket again.
      const polling = new AbortController()
      const stopPolling = this.socket ? this.o.clock.setTimeout(() => polling.abort(), backoff.next()) : undefined
      await Promise.all(channels.map((ch) => this.popLoop(ch, AbortSignal.any([signal, polling.signal]))))
      stopPolling?.()
    }
  }

  /** A frame from the p2p listeners or the relay; frames of other jobs are stale and dropped. */
  deliver(channel: Channel, frame: Frame): boolean {
    if (frame.meta.job_id !== this.o.jobId || this.closed.signal.aborted) return false
    this.o.counters.received += frame.data.byteLength
    this.inbox.push(channel, frame)
    return true
  }

  /** New neighbours, and the key that goes with them (it changes with the job's fellows). */
  setNeighbours(prev: Peer | null, next: Peer | null, key: Uint8Array | null | undefined = this.o.key): void {
    this.o.prev = prev
    this.o.next = next
    this.o.key = key
    // A replaced neighbour may listen where the old one did not answer: try p2p afresh.
    this.viaRelay.clear()
    for (const s of this.senders.values()) s.close()
    this.senders.clear()
    this.epoch.abort()
    this.epoch = new AbortController()
  }

  close(): void {
    this.closed.abort()
    this.socket?.close()
    for (const s of this.senders.values()) s.close()
    this.senders.clear()
    this.inbox.clear()
  }

  /** Sends one frame to the neighbour the channel points at; false when it could not be sent. */
  async send(channel: Channel, frame: Frame): Promise<boolean> {
    return (await this.sendFrame(channel, frame)) === 'sent'
  }

  /** send(), saying why a frame was not sent: a frame too large for the relay is not worth sending again. */
  async sendFrame(channel: Channel, frame: Frame): Promise<SendOutcome> {
    const peer = channel === 'activations' ? this.o.next : this.o.prev
    if (!peer) return 'unreachable'
    const signal = this.epochSignal
    const { mode, log, clock } = this.o
    const addr = parseAddress(peer.address)
    const jobKey = this.o.key
    if (mode === 'tunnel' || (mode === 'auto' && (!addr || !jobKey || this.viaRelay.has(peer.fellow_id)))) return this.pushRelay(channel, [frame], signal)
    if (!addr || !jobKey) {
      log.warn(addr ? 'p2p: START carried no p2p_key; cannot authenticate to the neighbour' : 'p2p: the neighbour advertised no address; cannot send', { job_id: this.o.jobId, peer: peer.fellow_id })
      return 'unreachable'
    }
    const port = channel === 'activations' ? addr.port : addr.port + 1
    const key = `${addr.host}:${port}`
    const auth = { jobId: this.o.jobId, key: jobKey, channel, stage: channel === 'activations' ? this.o.stage + 1 : this.o.stage - 1 }
    let sender = this.senders.get(key)
    if (!sender) this.senders.set(key, (sender = new P2PSender(addr.host, port, auth, log, clock)))
    const backoff = new Backoff({ baseMs: 200, maxMs: 5000 })
    const started = monotonicNow(clock)
    while (!signal.aborted) {
      try {
        this.o.counters.sent += await sender.send([frame], mode === 'auto' ? (this.o.connectTimeoutMs ?? 1500) : 5000)
        return 'sent'
      } catch (e) {
        if (signal.aborted) return 'unreachable'
        const waitForPeer = e instanceof P2PRefused && monotonicNow(clock) - started < (this.o.refusedGraceMs ?? 3000)
        if (mode === 'auto' && !waitForPeer) {
          this.viaRelay.add(peer.fellow_id)
          log.warn('p2p: neighbour unreachable; using the relay for it', { job_id: this.o.jobId, peer: key, error: (e as Error).message })
          return this.pushRelay(channel, [frame], signal)
        }
        const ms = backoff.next()
        if (backoff.attempts === 1 || backoff.attempts % 10 === 0) log.warn('p2p: send failed; retrying', { peer: key, error: (e as Error).message, retry_ms: ms, attempt: backoff.attempts })
        if (!(await sleep(clock, ms, signal))) return 'unreachable'
      }
    }
    return 'unreachable'
  }

  private async pushRelay(channel: Channel, frames: Frame[], signal: AbortSignal): Promise<SendOutcome> {
    const bytes = encodeFrames(frames)
    const backoff = new Backoff({ baseMs: 250, maxMs: 5000 })
    while (!signal.aborted) {
      // Over the socket while it is open: the same answers as the HTTP route, without a request.
      const ack = this.socket?.isOpen ? await this.socket.push(channel, bytes) : null
      if (ack?.ok) {
        this.o.counters.sent += bytes.byteLength
        return 'sent'
      }
      if (ack && ack.code === 'rate_limited') {
        if (!(await sleep(this.o.clock, ack.retry_after_s * 1000, signal))) return 'unreachable'
        continue
      }
      if (ack) return this.refused(channel, bytes, ack.code === 'payload_too_large', ack.detail)
      try {
        await this.o.client.relayPush(this.o.relayUrl, channel, bytes, signal)
        this.o.counters.sent += bytes.byteLength
        return 'sent'
      } catch (e) {
        if (signal.aborted) return 'unreachable'
        // 429: the neighbour's queue is full; Retry-After says when it will have room.
        const full = e instanceof LeaderError && e.status === 429
        if (!full && !isRetryable(e)) return this.refused(channel, bytes, e instanceof LeaderError && e.status === 413, (e as Error).message)
        const ms = full && e.retryAfterS !== null ? e.retryAfterS * 1000 : backoff.next()
        if (!(await sleep(this.o.clock, ms, signal))) return 'unreachable'
      }
    }
    return 'unreachable'
  }

  /**
   * The relay refused a push. Too large (past SVC_RELAY_MAX_FRAME_BYTES, or more than its queues
   * can ever hold) is for good: answered "send again", a runner resent that frame forever.
   */
  private refused(channel: Channel, bytes: Uint8Array, tooLarge: boolean, error: string): SendOutcome {
    if (!tooLarge) {
      this.o.log.warn('relay push refused', { job_id: this.o.jobId, channel, error })
      return 'unreachable'
    }
    this.o.log.warn('relay push refused: the frame is larger than the relay carries; it is not sent again', { job_id: this.o.jobId, channel, bytes: bytes.byteLength, error })
    return 'too_large'
  }

  private async popLoop(channel: Channel, signal: AbortSignal): Promise<void> {
    const backoff = new Backoff({ baseMs: 250, maxMs: 5000 })
    while (!signal.aborted) {
      try {
        const polled = monotonicNow(this.o.clock)
        const frames = await this.o.client.relayPop(this.o.relayUrl, channel, 25_000, signal)
        backoff.reset()
        for (const f of frames) this.deliver(channel, f)
        // An empty answer that came at once (a leader not holding the poll) must not spin.
        if (frames.length === 0 && monotonicNow(this.o.clock) - polled < 200) await sleep(this.o.clock, 250, signal)
      } catch (e) {
        if (signal.aborted) return
        const ms = backoff.next()
        if (backoff.attempts === 1) this.o.log.warn('relay pop failed; retrying', { job_id: this.o.jobId, channel, error: (e as Error).message, retry_ms: ms })
        await sleep(this.o.clock, ms, signal)
      }
    }
  }
}
