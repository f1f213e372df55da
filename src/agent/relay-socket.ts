// The agent's end of the relay's WebSocket data channel (/ws/relay/{job_id}; wire format in
// src/wire/relay-socket.ts). One socket per job carries this stage's pushes to its neighbours and
// the frames the leader holds for it. A push resolves with the leader's answer; a socket that
// cannot open (an older leader, a proxy without WebSockets) or that drops answers null, and the
// caller uses the HTTP routes instead.
import { decodeFrames } from '../wire/frames'
import { systemClock, type TimerClock } from '../time'
import { openLeaderSocket } from './leader-socket'
import { CHANNEL_OF_TAG, CHANNEL_TAG, RELAY_CLOSE, type PushAck, type RelayChannelName } from '../wire/relay-socket'
import type { Frame } from '../wire/frames'
import type { Logger } from '../log'

/** The largest frame the agent accepts from the leader (its own limit applies before). */
const MAX_FRAME_BYTES = 1024 * 1024 * 1024

/** A ping goes out this often; a socket that has answered nothing (no pong, ack or frame) since the last one is dead. */
export const RELAY_LIVENESS_MS = 15_000

export interface RelaySocketOptions {
  url: string
  token: () => string | null
  deliver: (channel: RelayChannelName, frame: Frame) => void
  log: Logger
  jobId: string
  /** The liveness pings run on it; the system clock by default. */
  clock?: TimerClock
  livenessMs?: number
}

export class RelaySocketClient {
  private ws: WebSocket | null = null
  /** Pushes waiting for their answer, in the order they were sent (the leader answers in order). */
  private unanswered: ((ack: PushAck | null) => void)[] = []
  private whenClosed: Promise<void> = Promise.resolve()
  private gone = false
  /** Something came from the leader (a pong, an ack, frames) since the last liveness ping. */
  private heard = false

  constructor(private readonly o: RelaySocketOptions) {}

  get isOpen(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN
  }

  /** Opens the socket; true once open, false when it could not be (the caller falls back to HTTP). */
  open(): Promise<boolean> {
    if (this.gone) return Promise.resolve(false)
    const s = openLeaderSocket(this.o.url, this.o.token(), {
      binary: true,
      message: (data) => this.onMessage(data),
      close: (ev, wasOpen) => {
        if (this.ws === s.ws) this.ws = null
        // Pushes the leader never answered: the caller sends them again over HTTP. A close for a
        // message too big (1009) answers the oldest: the leader answers in order and closes on
        // the message it cannot take, so sending that one again (over HTTP) cannot help.
        const [first, ...rest] = this.unanswered.splice(0)
        first?.(ev.code === RELAY_CLOSE.tooBig ? { ok: false, code: 'payload_too_large', detail: ev.reason || 'the message is larger than the relay takes' } : null)
        for (const r of rest) r(null)
        // Closed by close() (the stage ended here) is no news; closed by the leader or the network is.
        if (wasOpen && !this.gone) this.o.log.warn('relay socket closed', { job_id: this.o.jobId, code: ev.code, reason: ev.reason })
      },
    })
    this.ws = s.ws
    this.whenClosed = s.closed
    s.ws.addEventListener('pong', () => (this.heard = true))
    return s.opened.then((ok) => {
      if (ok) this.watch(s.ws)
      return ok
    })
  }

  /**
   * A connection gone half-open (the leader's machine or a NAT on the way lost it without a FIN)
   * froze tunnel and auto jobs until the kernel gave up, about 15 minutes: pushes waited for an
   * ack that never came and nothing arrived. A socket that answers no ping within the liveness
   * window, and is not busy sending (its buffer shrinking), is closed: unanswered pushes go over
   * HTTP and the relay loop opens a new one.
   */
  private watch(ws: WebSocket): void {
    const clock = this.o.clock ?? systemClock
    const ms = this.o.livenessMs ?? RELAY_LIVENESS_MS
    this.heard = true
    let buffered = ws.bufferedAmount
    const tick = () => {
      if (this.ws !== ws || ws.readyState !== WebSocket.OPEN) return
      const now = ws.bufferedAmount
      if (!this.heard && !(now < buffered)) {
        this.o.log.warn('relay socket: the leader answered nothing in time; closing it to reconnect', { job_id: this.o.jobId, silent_ms: ms, unanswered_pushes: this.unanswered.length })
        ws.terminate()
        return
      }
      this.heard = false
      buffered = now
      ws.ping()
      cancel = clock.setTimeout(tick, ms)
    }
    let cancel = clock.setTimeout(tick, ms)
    ws.addEventListener('close', () => cancel())
  }

  /** Resolves when the socket (opened by the last open()) has closed. */
  closed(): Promise<void> {
    return this.whenClosed
  }

  /** Sends encoded frames on `channel`; the leader's answer, or null when the socket is not usable. */
  push(channel: RelayChannelName, frames: Uint8Array): Promise<PushAck | null> {
    const ws = this.ws
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.resolve(null)
    const msg = new Uint8Array(frames.byteLength + 1)
    msg[0] = CHANNEL_TAG[channel]
    msg.set(frames, 1)
    return new Promise<PushAck | null>((resolve) => {
      this.unanswered.push(resolve)
      ws.send(msg)
    })
  }

  /** Closes for good (the job ended here). */
  close(): void {
    this.gone = true
    this.ws?.close(1000, 'the stage ended')
    this.ws = null
  }

  private onMessage(data: unknown): void {
    this.heard = true
    if (typeof data === 'string') {
      let ack: PushAck
      try {
        ack = JSON.parse(data) as PushAck
      } catch {
        return
      }
      this.unanswered.shift()?.(ack)
      return
    }
    const bytes = new Uint8Array(data as ArrayBuffer)
    const channel = CHANNEL_OF_TAG[bytes[0] ?? 255]
    if (!channel) return
    let frames: Frame[]
    try {
      frames = decodeFrames(bytes.subarray(1), { maxFrameBytes: MAX_FRAME_BYTES })
    } catch (e) {
      this.o.log.warn('relay socket: frames that do not decode; dropped', { job_id: this.o.jobId, error: (e as Error).message })
      return
    }
    for (const f of frames) this.o.deliver(channel, f)
  }
}
