// The signal hub: one live WebSocket per fellow, and a small bounded queue for fellows that are
// not connected (delivered when they reconnect, or in their next heartbeat response). Behind an
// interface so a multi-leader deployment can put a shared bus behind the same calls.
import { newId } from '../crypto'
import { iso, type Clock } from '../time'
import type { Signal, SignalName } from './model'

export interface SignalSocket {
  send(data: string): unknown
  close(code?: number, reason?: string): unknown
}

export interface SignalHub {
  attach(fellowId: string, socket: SignalSocket): void
  detach(fellowId: string, socket: SignalSocket): void
  send(fellowId: string, signal: SignalName, extra?: { jobId?: string; payload?: Record<string, unknown> }): 'delivered' | 'queued'
  takePending(fellowId: string): Signal[]
  /** The fellow's credential died (released, removed): close its socket at once, drop its queue. */
  revoke(fellowId: string, reason: string): void
  /**
   * The fellow registered again (a new agent, a new token): the socket held for it belonged to the
   * old one, and may be dead without a close (a machine that rebooted). Closed and forgotten, so
   * what is sent next waits in the queue for the new connection instead of vanishing into it.
   */
  reset(fellowId: string): void
  connected(fellowId: string): boolean
  count(): number
  closeAll(): void
}

/** Close code sent to a socket replaced by a newer connection of the same fellow. */
export const CLOSE_REPLACED = 4409
/** Close code sent when the fellow's node token stops working (released or removed): reconnecting cannot succeed. */
export const CLOSE_REVOKED = 4401
const MAX_PENDING = 64

export class MemorySignalHub implements SignalHub {
  private sockets = new Map<string, SignalSocket>()
  private pending = new Map<string, Signal[]>()

  constructor(private clock: Clock) {}

  attach(fellowId: string, socket: SignalSocket): void {
    const old = this.sockets.get(fellowId)
    this.sockets.set(fellowId, socket)
    if (old && old !== socket) old.close(CLOSE_REPLACED, 'replaced by a newer connection of this fellow')
    for (const s of this.takePending(fellowId)) socket.send(JSON.stringify(s))
  }

  detach(fellowId: string, socket: SignalSocket): void {
    if (this.sockets.get(fellowId) === socket) this.sockets.delete(fellowId)
  }

  send(fellowId: string, signal: SignalName, extra: { jobId?: string; payload?: Record<string, unknown> } = {}): 'delivered' | 'queued' {
    const msg: Signal = { id: newId(), signal, ts: iso(this.clock.now()) }
    if (extra.jobId !== undefined) msg.job_id = extra.jobId
    if (extra.payload !== undefined) msg.payload = extra.payload
    const socket = this.sockets.get(fellowId)
    if (socket) {
      socket.send(JSON.stringify(msg))
      return 'delivered'
    }
    const q = this.pending.get(fellowId) ?? []
    q.push(msg)
    // Bounded: the oldest signals give way; the newest describe what the fellow should do now.
    if (q.length > MAX_PENDING) q.splice(0, q.length - MAX_PENDING)
    this.pending.set(fellowId, q)
    return 'queued'
  }

  revoke(fellowId: string, reason: string): void {
    const socket = this.sockets.get(fellowId)
    this.sockets.delete(fellowId)
    this.pending.delete(fellowId)
    // A socket outliving its credential kept receiving signals for 3 s (release) to 25 s (delete).
    socket?.close(CLOSE_REVOKED, reason)
  }

  reset(fellowId: string): void {
    const socket = this.sockets.get(fellowId)
    this.sockets.delete(fellowId)
    // An ordinary close: a live agent (re-registered after a refused token) connects again at once.
    socket?.close(1012, 'the fellow registered again: connect again')
  }

  takePending(fellowId: string): Signal[] {
    const q = this.pending.get(fellowId)
    if (!q) return []
    this.pending.delete(fellowId)
    return q
  }

  connected(fellowId: string): boolean {
    return this.sockets.has(fellowId)
  }

  count(): number {
    return this.sockets.size
  }

  closeAll(): void {
    for (const s of this.sockets.values()) s.close(1001, 'leader shutting down')
    this.sockets.clear()
  }
}
