// The relay's WebSocket data channel: the same queues as the HTTP push/pop routes (hub.ts), the
// same frame encoding and caps, without a request per frame. A fellow's socket pushes frames for
// its neighbours (each message answered with a PushAck, in order) and receives the frames queued
// for its own stage, sent as fast as the socket drains: a reader that does not read leaves them in
// the queue, the queue fills to its cap, and the sender's pushes are refused with retry_after_s
// until it drains. The leader's memory holds the queues and at most SOCKET_HIGH_WATER bytes a socket.
// Wire format: src/wire/relay-socket.ts.
import { AppError } from '../errors'
import { decodeFrames, wireParts, type Frame } from '../wire/frames'
import { CHANNEL_OF_TAG, CHANNEL_TAG, RELAY_CLOSE, type PushAck, type RelayChannelName } from '../wire/relay-socket'
import { EXCEEDS_CAPACITY_DETAIL, FULL_DETAIL, type RelayHub } from './hub'
import type { Assignment } from '../jobs/model'
import type { Counters } from '../observability/metrics'

/** Bytes a socket may have queued for sending before the leader waits for it to drain. */
export const SOCKET_HIGH_WATER = 8 * 1024 * 1024
/** Bun's per-socket limit of unsent bytes (src/server.ts): room for one message past the high water. */
export const socketBackpressureLimit = (maxFrameBytes: number) => maxFrameBytes + 2 * SOCKET_HIGH_WATER
/** How long one pop waits before the socket's assignment is checked again. */
const POP_WAIT_MS = 25_000
/** Frames taken from a queue at once. */
const POP_MAX = 16

/** What the relay needs of Bun's server socket (`ws.raw` in Elysia's callbacks). */
export interface RelaySocket {
  send(data: string | Uint8Array): number
  close(code?: number, reason?: string): void
  getBufferedAmount(): number
}

/** Where a fellow stands in the job now; throws (AppError) when it is no longer assigned. */
export type WhereIs = () => { stage: number; assignments: Assignment[]; poolId: string }

interface Open {
  /** The fellow and job it serves: one socket each (`attach`). */
  holder: string
  where: WhereIs
  stop: AbortController
  /** Pumps waiting for the socket to drain (one a channel). */
  drained: (() => void)[]
}

/**
 * Frames popped for `stage` go to the fellow that waited for them only if it still holds that
 * stage when they arrive: one removed or released while its pop waited got the frames meant for
 * the stage's next holder (a pool's activations, on a machine its owner had just taken out), and
 * the next holder waited for a resend. Else they go back to the head of their queue, unless the
 * job has ended (its queues are dropped). Returns null to deliver them; else the refusal to answer
 * with, or 'moved' when the fellow now holds another stage of the job.
 */
export function refuseUnlessHeld(
  relay: RelayHub,
  where: WhereIs,
  at: { jobId: string; key: string; stage: number; poolId: string },
  channel: RelayChannelName,
  frames: Frame[],
  isActive: (jobId: string) => boolean,
): AppError | 'moved' | null {
  let refusal: AppError | 'moved' = 'moved'
  try {
    if (where().stage === at.stage) return null
  } catch (e) {
    if (!(e instanceof AppError)) throw e
    refusal = e
  }
  if (isActive(at.jobId)) relay.putBack(at.key, channel, frames, at.poolId)
  return refusal
}

/** Close code of a socket replaced by a newer one of the same fellow for the same job. */
export const CLOSE_REPLACED = 4409

export class RelaySockets {
  private open = new Map<RelaySocket, Open>()
  /** The open socket of each fellow and job. */
  private byHolder = new Map<string, RelaySocket>()

  constructor(
    private relay: RelayHub,
    private key: (jobId: string, stage: number) => string,
    private maxFrameBytes: number,
    private counters: Counters,
    private isActive: (jobId: string) => boolean,
  ) {}

  get size(): number {
    return this.open.size
  }

  /**
   * A socket of a fellow assigned to `jobId`: starts sending it what is queued for its stage. One
   * socket a fellow and job (`holder`): a newer one replaces the older (closed with 4409), as a
   * restarted agent's does. Two took turns at the stage's frames (each got about half, the agent
   * waited for the sender's resend of the rest): a pipeline ran a step per resend interval.
   */
  attach(ws: RelaySocket, jobId: string, where: WhereIs, holder: string): void {
    const earlier = this.byHolder.get(holder)
    if (earlier !== undefined && earlier !== ws) {
      this.detach(earlier)
      earlier.close(CLOSE_REPLACED, 'replaced by a newer relay socket of this fellow for this job')
    }
    const o: Open = { holder, where, stop: new AbortController(), drained: [] }
    this.open.set(ws, o)
    this.byHolder.set(holder, ws)
    const { stage, assignments } = where()
    if (stage > 0) void this.pump(ws, o, jobId, 'activations')
    if (stage < assignments.length - 1) void this.pump(ws, o, jobId, 'gradients')
  }

  detach(ws: RelaySocket): void {
    const o = this.open.get(ws)
    if (!o) return
    this.open.delete(ws)
    if (this.byHolder.get(o.holder) === ws) this.byHolder.delete(o.holder)
    o.stop.abort()
    for (const d of o.drained.splice(0)) d()
  }

  drain(ws: RelaySocket): void {
    const o = this.open.get(ws)
    if (o) for (const d of o.drained.splice(0)) d()
  }

  /** One pushed message: queued for the neighbour whole, or refused whole; answered with a PushAck. */
  message(ws: RelaySocket, jobId: string, data: unknown): void {
    const o = this.open.get(ws)
    if (!o) return
    // Elysia hands a text message over parsed (JSON, numbers): anything but bytes is refused.
    if (!(data instanceof Uint8Array) || data.byteLength < 1 || data[0]! > 1) {
      return ws.close(RELAY_CLOSE.unsupported, 'binary messages only: a channel tag (0 activations, 1 gradients) and frames')
    }
    const channel = CHANNEL_OF_TAG[data[0]!]!
    let frames: Frame[]
    try {
      frames = decodeFrames(data.subarray(1), { maxFrameBytes: this.maxFrameBytes })
    } catch (e) {
      if (!(e instanceof AppError)) throw e
      // Nothing of the message is queued: decoding is all-or-nothing.
      if (e.code === 'payload_too_large') return ws.close(RELAY_CLOSE.tooBig, clip(`${e.message} (SVC_RELAY_MAX_FRAME_BYTES)`))
      return ws.close(RELAY_CLOSE.unsupported, clip(e.message))
    }
    let ack: PushAck
    try {
      const { stage, assignments, poolId } = o.where()
      const to = channel === 'activations' ? stage + 1 : stage - 1
      if (to < 0 || to >= assignments.length) {
        ack = { ok: false, code: 'conflict', detail: `Stage ${stage} has no ${channel === 'activations' ? 'next' : 'previous'} stage to send ${channel} to.` }
      } else {
        const r = this.relay.push(this.key(jobId, to), channel, frames, poolId)
        if (r.ok) {
          this.counters.relayBytesIn += data.byteLength - 1
          this.counters.relayFramesIn += frames.length
          ack = { ok: true, queued_frames: frames.length, depth_bytes: r.depthBytes }
        } else if (r.reason === 'exceeds_capacity') ack = { ok: false, code: 'payload_too_large', detail: EXCEEDS_CAPACITY_DETAIL }
        else ack = { ok: false, code: 'rate_limited', detail: FULL_DETAIL[r.scope], retry_after_s: r.retryAfterS }
      }
    } catch (e) {
      if (!(e instanceof AppError)) throw e
      return ws.close(RELAY_CLOSE.policy, clip(e.message))
    }
    ws.send(JSON.stringify(ack))
  }

  /** Sends the frames queued for this stage's `channel` as they come, pausing while the socket is full. */
  private async pump(ws: RelaySocket, o: Open, jobId: string, channel: RelayChannelName): Promise<void> {
    const tag = CHANNEL_TAG[channel]
    while (!o.stop.signal.aborted) {
      let stage: number
      let poolId: string
      try {
        ;({ stage, poolId } = o.where())
      } catch (e) {
        if (e instanceof AppError) ws.close(RELAY_CLOSE.policy, clip(e.message))
        return
      }
      // Frames stay in the queue while this socket is full: another socket of the stage, or an
      // HTTP pop, may take them meanwhile.
      if (ws.getBufferedAmount() > SOCKET_HIGH_WATER) await new Promise<void>((resolve) => o.drained.push(resolve))
      if (o.stop.signal.aborted) return
      const room = Math.max(0, SOCKET_HIGH_WATER - ws.getBufferedAmount())
      const key = this.key(jobId, stage)
      const frames = await this.relay.pop(key, channel, { max: POP_MAX, maxBytes: room, waitMs: POP_WAIT_MS, signal: o.stop.signal })
      if (frames.length === 0) continue
      if (o.stop.signal.aborted) {
        // The socket went between the pop and now: its frames go back to no one (the stage restarts
        // from a checkpoint when a fellow goes), as they would with an HTTP pop cut off mid-answer.
        return
      }
      const refusal = refuseUnlessHeld(this.relay, o.where, { jobId, key, stage, poolId }, channel, frames, this.isActive)
      if (refusal === 'moved') continue
      if (refusal !== null) return ws.close(RELAY_CLOSE.policy, clip(refusal.message))
      // At most the room left under the high water, or one frame past it: under Bun's backpressure
      // limit (SVC_RELAY_MAX_FRAME_BYTES + 16 MiB, src/server.ts), past which it drops a message.
      for (const part of wireParts(frames)) {
        ws.send(tagged(tag, part))
        this.counters.relayBytesOut += part.byteLength
      }
    }
  }


}

const clip = (s: string) => (s.length > 120 ? s.slice(0, 119) + '…' : s)

/**
 * `tag | part` as one message. A part pushed over a socket still has its tag byte just before it
 * in the message that carried it, so that view is sent as it is (no copy of a 4 MiB frame); any
 * byte equal to the tag would do, since the message is then the same bytes.
 */
function tagged(tag: number, part: Uint8Array): Uint8Array {
  if (part.byteOffset > 0) {
    const withPrev = new Uint8Array(part.buffer, part.byteOffset - 1, part.byteLength + 1)
    if (withPrev[0] === tag) return withPrev
  }
  const out = new Uint8Array(part.byteLength + 1)
  out[0] = tag
  out.set(part, 1)
  return out
}
