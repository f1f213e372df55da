// The inference channel's leader end (wire format: src/wire/infer-socket.ts). A fellow's socket is
// a long-poll that never has to be made again: while the fellow has credit, the next request routed
// to it is taken from the hub (the same queue the HTTP long-poll reads) and sent the moment it is
// submitted; the frames the fellow sends back go to the hub as a POST's would, each message
// answered with an ack. No request per batch, no poll round trip per request: under 1,000 streams
// opening at once those were what a frame waited behind (docs/benchmarks.md, issue 22).
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { FellowMessage, INFER_CLOSE, type AckResult, type LeaderMessage } from '../wire/infer-socket'
import type { Inference } from './service'

/** What the channel needs of Bun's server socket. */
export interface InferSocket {
  send(data: string): number
  close(code?: number, reason?: string): void
}

/** How long one wait for a request lasts before the fellow's standing is checked again. */
const NEXT_WAIT_MS = 25_000

/**
 * Inference sockets one fellow may hold open. The agent holds one (a second for a moment while
 * it reconnects); each socket is a wait for requests and may hold a message of up to Bun's
 * per-server payload limit while it arrives, so a fellow without a cap (one registered without
 * any token, say) could open them by the thousand.
 */
export const MAX_SOCKETS_PER_FELLOW = 4

const checkMessage = TypeCompiler.Compile(FellowMessage)

interface Open {
  fellowId: string
  credit: number
  /** Wakes the pump when credit arrives. */
  wake: (() => void) | null
  stop: AbortController
}

export class InferSockets {
  private readonly open = new Map<InferSocket, Open>()
  /** Open sockets per fellow. */
  private readonly perFellow = new Map<string, number>()

  constructor(
    private readonly inference: Inference,
    /** The largest message taken (SVC_MAX_BODY_BYTES, the POST's limit), in bytes of UTF-8. */
    private readonly maxMessageBytes: number,
  ) {}

  get size(): number {
    return this.open.size
  }

  attach(ws: InferSocket, fellowId: string): void {
    const held = this.perFellow.get(fellowId) ?? 0
    if (held >= MAX_SOCKETS_PER_FELLOW) {
      ws.close(INFER_CLOSE.policy, `This fellow holds ${MAX_SOCKETS_PER_FELLOW} inference sockets already, the most it may; close one first.`)
      return
    }
    this.perFellow.set(fellowId, held + 1)
    const o: Open = { fellowId, credit: 0, wake: null, stop: new AbortController() }
    this.open.set(ws, o)
    void this.pump(ws, o)
  }

  detach(ws: InferSocket): void {
    const o = this.open.get(ws)
    if (!o) return
    this.open.delete(ws)
    const held = (this.perFellow.get(o.fellowId) ?? 1) - 1
    if (held > 0) this.perFellow.set(o.fellowId, held)
    else this.perFellow.delete(o.fellowId)
    o.stop.abort()
    o.wake?.()
  }

  message(ws: InferSocket, message: unknown): void {
    const o = this.open.get(ws)
    if (!o) return
    if (typeof message !== 'string') return this.refuse(ws, INFER_CLOSE.unsupported, 'Send text messages (JSON), not binary ones.')
    // A string of n UTF-16 units is at least n bytes of UTF-8; only a long one is measured.
    if (message.length > this.maxMessageBytes / 3 && Buffer.byteLength(message) > this.maxMessageBytes) {
      return this.refuse(ws, INFER_CLOSE.tooBig, `A message may be at most ${this.maxMessageBytes} bytes.`)
    }
    let m: unknown
    try {
      m = JSON.parse(message)
    } catch {
      return this.refuse(ws, INFER_CLOSE.unsupported, 'A message must be one JSON object.')
    }
    if (!checkMessage.Check(m)) return this.refuse(ws, INFER_CLOSE.unsupported, describe(m))
    if (m.t === 'credit') {
      o.credit = Math.min(o.credit + m.n, 1024)
      const wake = o.wake
      o.wake = null
      wake?.()
      return
    }
    const result: AckResult = this.inference.deliver(o.fellowId, m.id, m.frames)
    this.send(ws, { t: 'ack', seq: m.seq, result })
  }

  /** Sends the fellow its requests while it has credit, until the socket closes. */
  private async pump(ws: InferSocket, o: Open): Promise<void> {
    const signal = o.stop.signal
    while (!signal.aborted) {
      if (o.credit <= 0) {
        await new Promise<void>((r) => (o.wake = r))
        continue
      }
      if (!this.inference.mayServe(o.fellowId)) return this.refuse(ws, INFER_CLOSE.policy, 'The fellow was released or removed.')
      let evicted = false
      const request = await this.inference.hub.next(o.fellowId, NEXT_WAIT_MS, signal, () => (evicted = true))
      // The fellow holds more waits (this socket's and its long-polls) than the hub keeps, and this
      // one was the oldest: waiting again at once would end the next oldest, and two sockets ending
      // each other's waits kept the leader in a loop that never yielded (no request, no SIGTERM).
      if (evicted) return this.refuse(ws, INFER_CLOSE.policy, 'This fellow holds more waits for requests (sockets, long-polls) than the leader keeps (64); this one was the oldest.')
      if (!request) continue
      o.credit--
      this.send(ws, { t: 'request', request })
    }
  }

  private send(ws: InferSocket, m: LeaderMessage): void {
    ws.send(JSON.stringify(m))
  }

  private refuse(ws: InferSocket, code: number, reason: string): void {
    this.detach(ws)
    ws.close(code, reason.slice(0, 120))
  }
}

/** What was wrong with a message, in one line for the close frame. */
function describe(m: unknown): string {
  const t = typeof m === 'object' && m !== null ? (m as { t?: unknown }).t : undefined
  if (t === 'credit') return 'A credit message is {"t":"credit","n":1..1024}.'
  if (t === 'frames') return 'A frames message is {"t":"frames","id","seq","frames":[...]} with valid frames.'
  return 'Unknown message: t must be "credit" or "frames".'
}
