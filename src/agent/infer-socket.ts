// The agent's end of the inference channel (/ws/infer/{fellow_id}; wire format in
// src/wire/infer-socket.ts): requests arrive as the leader routes them, against the credit the
// agent gives, and frames go back as messages, each answered with an ack. A socket that cannot
// open (an older leader, a proxy without WebSockets) or that drops answers null, and the caller
// uses the HTTP long-poll and POST instead.
import { openLeaderSocket } from './leader-socket'
import type { AckResult, FellowMessage, LeaderMessage } from '../wire/infer-socket'
import type { InferFrame, InferRequest } from '../wire/inference'
import type { Logger } from '../log'

export interface InferSocketOptions {
  url: string
  token: () => string | null
  log: Logger
  onRequest: (req: InferRequest) => void
}

export class InferSocketClient {
  private ws: WebSocket | null = null
  private seq = 0
  /** Frames messages waiting for their ack, by seq. */
  private readonly unanswered = new Map<number, (r: AckResult | null) => void>()
  private whenClosed: Promise<void> = Promise.resolve()

  constructor(private readonly o: InferSocketOptions) {}

  get isOpen(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN
  }

  /** Opens the socket; true once open, false when it could not be (the caller polls over HTTP). */
  open(): Promise<boolean> {
    const s = openLeaderSocket(this.o.url, this.o.token(), {
      message: (data) => this.onMessage(data),
      close: (ev, wasOpen) => {
        if (this.ws === s.ws) this.ws = null
        // Frames the leader never acknowledged: the caller sends them again over HTTP.
        for (const r of this.unanswered.values()) r(null)
        this.unanswered.clear()
        if (wasOpen) this.o.log.warn('inference socket closed', { code: ev.code, reason: ev.reason })
      },
    })
    this.ws = s.ws
    this.whenClosed = s.closed
    return s.opened
  }

  /** Resolves when the socket (opened by the last open()) has closed. */
  closed(): Promise<void> {
    return this.whenClosed
  }

  /** Tells the leader it may send `n` more requests. */
  credit(n: number): void {
    if (n > 0) this.send({ t: 'credit', n })
  }

  /** Sends frames of a request; the leader's answer, or null when the socket is not usable. */
  frames(id: string, frames: InferFrame[]): Promise<AckResult | null> {
    const seq = this.seq++
    return new Promise((resolve) => {
      if (!this.send({ t: 'frames', id, seq, frames })) return resolve(null)
      this.unanswered.set(seq, resolve)
    })
  }

  close(): void {
    this.ws?.close(1000, 'the agent is stopping')
    this.ws = null
  }

  private send(m: FellowMessage): boolean {
    const ws = this.ws
    if (!ws || ws.readyState !== WebSocket.OPEN) return false
    ws.send(JSON.stringify(m))
    return true
  }

  private onMessage(data: unknown): void {
    if (typeof data !== 'string') return
    let m: LeaderMessage
    try {
      m = JSON.parse(data) as LeaderMessage
    } catch {
      return
    }
    if (m.t === 'request') this.o.onRequest(m.request)
    else if (m.t === 'ack') {
      const r = this.unanswered.get(m.seq)
      this.unanswered.delete(m.seq)
      r?.(m.result)
    }
  }
}
