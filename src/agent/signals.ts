// The control-signal WebSocket. It reconnects with jittered exponential backoff (a restarted
// leader must not be met by every fellow at once), reports a refused handshake so the agent can
// re-register (a revoked token answers the upgrade with 403), and honours eviction: close code
// 4409 means a newer agent with this fellow_id took over, and two agents fighting over one
// identity would evict each other forever, so this one stops for good.
import { SIGNALS, type Signal } from '../wire/fellow'
import { Backoff } from './backoff'
import { redactUrl } from './redact'
import type { TimerClock } from '../time'
import type { Logger } from '../log'

export const CLOSE_REPLACED = 4409
const CLOSE_REFUSED = 4401

export interface SignalChannelOptions {
  url: () => string
  token: () => string | null
  onSignal: (s: Signal) => void
  /** The handshake was refused (HTTP status when known): the token is likely revoked. */
  onRefused: (status: number | null) => void
  onEvicted: (reason: string) => void
  log: Logger
  /** The reconnect delays run on it. */
  clock: TimerClock
  backoff?: Backoff
}

const KNOWN = new Set<string>(SIGNALS)

/** A signal message, or null for anything that is not one (logged and ignored, never fatal). */
export function parseSignal(text: string): Signal | null {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    return null
  }
  if (typeof v !== 'object' || v === null) return null
  const s = v as Record<string, unknown>
  if (typeof s.id !== 'string' || typeof s.signal !== 'string' || !KNOWN.has(s.signal)) return null
  if (s.job_id !== undefined && typeof s.job_id !== 'string') return null
  if (s.payload !== undefined && (typeof s.payload !== 'object' || s.payload === null || Array.isArray(s.payload))) return null
  return v as Signal
}

/** The HTTP status of a failed handshake, from Bun's error text ("Expected 101 status code: 403"). */
export function handshakeStatus(message: string): number | null {
  const m = /status code:? (\d{3})/i.exec(message)
  return m ? Number(m[1]) : null
}

export class SignalChannel {
  private ws: WebSocket | null = null
  private cancelTimer: (() => void) | null = null
  private closed = false
  private readonly backoff: Backoff
  /** The last attempt got an HTTP answer refusing it: the leader was there all along. */
  private refused = false
  connected = false

  constructor(private readonly opts: SignalChannelOptions) {
    this.backoff = opts.backoff ?? new Backoff({ baseMs: 500, maxMs: 30_000 })
  }

  start(): void {
    if (!this.closed && !this.ws && !this.cancelTimer) this.connect()
  }

  /**
   * The leader answers again (a heartbeat went through) while this socket waits out its back-off:
   * it connects now instead of up to 30 s later (after an outage of half a minute, the wait left
   * signals to the heartbeats' answers for as long again). A socket open or connecting is left be,
   * and so is one the leader refused: it answered then too, and trying again at every heartbeat
   * would undo the back-off.
   */
  leaderIsBack(): void {
    if (this.closed || this.ws || !this.cancelTimer || this.refused) return
    this.clearTimer()
    this.connect()
  }

  /** Drops the current socket and connects at once (after re-registration: new token, maybe new id). */
  reconnectNow(): void {
    if (this.closed) return
    this.clearTimer()
    this.backoff.reset()
    const old = this.ws
    this.ws = null
    this.connected = false
    if (old) {
      old.onclose = null
      old.close(1000, 'reconnecting')
    }
    this.connect()
  }

  close(): void {
    this.closed = true
    this.clearTimer()
    const ws = this.ws
    this.ws = null
    this.connected = false
    if (ws) {
      ws.onclose = null
      ws.close(1000, 'fellow stopping')
    }
  }

  private clearTimer(): void {
    this.cancelTimer?.()
    this.cancelTimer = null
  }

  private connect(): void {
    const { log } = this.opts
    const token = this.opts.token()
    const url = this.opts.url()
    const ws = new WebSocket(url, { headers: token ? { authorization: `Bearer ${token}` } : {} })
    this.ws = ws
    let opened = false
    let failure = ''
    ws.onopen = () => {
      opened = true
      this.connected = true
      this.backoff.reset()
      log.info('signals connected', { url: redactUrl(url.replace(/\/ws\/signals\/.*/, '/ws/signals/...')) })
    }
    ws.onmessage = (ev) => {
      const s = parseSignal(typeof ev.data === 'string' ? ev.data : new TextDecoder().decode(ev.data as ArrayBuffer))
      if (!s) return log.warn('ignored a malformed signal message')
      this.opts.onSignal(s)
    }
    ws.onerror = (ev) => {
      failure = (ev as ErrorEvent).message ?? ''
    }
    ws.onclose = (ev) => {
      if (this.ws !== ws) return
      this.ws = null
      this.connected = false
      if (this.closed) return
      if (ev.code === CLOSE_REPLACED) {
        this.closed = true
        this.opts.onEvicted(ev.reason || 'replaced by a newer connection of this fellow')
        return
      }
      const status = handshakeStatus(failure)
      // Refused by the leader (4xx). A proxy's 502-504 while the leader is down is no refusal: the
      // socket reconnects with the first heartbeat the leader takes again (leaderIsBack).
      this.refused = !opened && status !== null && status >= 400 && status < 500
      if (!opened && (status === 401 || status === 403 || ev.code === CLOSE_REFUSED)) this.opts.onRefused(status)
      const ms = this.backoff.next()
      log.warn('signals disconnected; reconnecting', { code: ev.code, ...(status ? { status } : {}), ...(failure && !opened ? { error: failure } : {}), retry_ms: ms })
      this.cancelTimer = this.opts.clock.setTimeout(() => {
        this.cancelTimer = null
        if (!this.closed && !this.ws) this.connect()
      }, ms)
    }
  }
}
