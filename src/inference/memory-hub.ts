// Inference queues in memory (the InferenceHub of one leader). A request waiting for its fellow is
// handed to that fellow's waiting long-poll the moment it arrives (no polling), and a client's read
// wakes on the fellow's post. Bounded: open requests, long-polls per fellow, unread output per
// request, and the characters held in all prompts and unread output together.
import { AppError } from '../errors'
import { newId } from '../crypto'
import type { Frame, InferRequest } from './model'
import { MAX_ANSWER_CHARS, toolCallsChars, type Delta, type Ending, type InferJob, type InferenceHub, type InferenceStats, type Output, type PostResult, type Ticket, type TokenUsage } from './hub'

export interface MemoryInferenceHubOptions {
  now: () => number
  /** SVC_INFER_DISPATCH_TIMEOUT_S in ms: the longest wait for a pick-up, and between frames. */
  timeoutMs: number
  /** Told about every request a fellow finished, for contribution accounting. */
  onServed?: (fellowId: string, usage: TokenUsage) => void
  maxOpen?: number
  maxWaitersPerFellow?: number
  /** Unread output per request, in UTF-16 code units; beyond it the fellow's post answers 429. */
  maxBufferedChars?: number
  /** Prompts plus unread output of all requests, in UTF-16 code units: the hub's memory budget. */
  maxHeldChars?: number
  /** What the requests of one share (a pool) may hold of it together; a quarter unless told. */
  maxShareChars?: number
}

interface Live {
  id: string
  fellowId: string
  /** Whose part of the memory budget it takes (the pool it was routed to). */
  share: string
  job: InferJob
  /** The prompt's text (content, embeddings input): the usage estimate when the engine gave none. */
  promptChars: number
  /** What the request takes of the memory budget while open: its job's JSON (tools, tool calls and all). */
  heldChars: number
  state: 'queued' | 'dispatched' | 'ended'
  /** When it was queued, then when its fellow last posted: the timeouts count from here. */
  since: number
  /** When a post was last refused because the client had not read the earlier frames (0: never). */
  fullAt: number
  deltas: Delta[]
  chars: number
  completionFrames: number
  usage: TokenUsage | null
  finishReason: string | null
  /** A result sent in pieces (result_chunk), joined at done. */
  resultText: string
  end: Ending | null
  reader: ((o: Output) => void) | null
  readerTimer: ReturnType<typeof setTimeout> | null
  pick: (e: Ending | null) => void
}

/** Hands a waiting fellow its request, or null (`evicted`: it held more waits than it may). */
type Waiter = (r: InferRequest | null, evicted?: boolean) => void

/** The largest whole result (embeddings) a request may carry, in UTF-16 code units. */
const MAX_RESULT_CHARS = 64 << 20

/**
 * A request that ended while its fellow was serving it (it timed out, or its client went away)
 * still holds the fellow's engine until the fellow hears so: it counts in the fellow's load until
 * the fellow posts for it (answered 410) or goes away, for at most this many frame timeouts.
 */
const LINGER_TIMEOUTS = 10

export class MemoryInferenceHub implements InferenceHub {
  private readonly live = new Map<string, Live>()
  private readonly queues = new Map<string, Live[]>()
  private readonly waiters = new Map<string, Waiter[]>()
  private readonly busy = new Map<string, number>()
  /** Ended requests their fellow may still be serving, by id, with when they stop counting. */
  private readonly lingering = new Map<string, { fellowId: string; until: number }>()
  private readonly lingeringPer = new Map<string, number>()
  private bufferedChars = 0
  /** Prompts (their JSON) and result pieces of all open requests. */
  private promptChars = 0
  private waiterCount = 0
  /** Prompts, result pieces and unread output held per share. */
  private readonly shareChars = new Map<string, number>()
  private readonly maxOpen: number
  private readonly maxWaiters: number
  private readonly maxBuffered: number
  private readonly maxHeld: number
  private readonly maxShare: number

  constructor(private readonly opts: MemoryInferenceHubOptions) {
    this.maxOpen = opts.maxOpen ?? 10_000
    this.maxWaiters = opts.maxWaitersPerFellow ?? 64
    this.maxBuffered = opts.maxBufferedChars ?? MAX_ANSWER_CHARS
    this.maxHeld = opts.maxHeldChars ?? 128 << 20
    this.maxShare = opts.maxShareChars ?? Math.floor(this.maxHeld / 4)
  }

  submit(fellowId: string, job: InferJob, share = fellowId): Ticket {
    // The prompt's text, for the usage estimate; embeddings carry theirs in params.input (a string
    // or a list of them).
    let promptChars = 0
    for (const m of job.messages) promptChars += m.content?.length ?? 0
    const input = job.params?.input
    if (typeof input === 'string') promptChars += input.length
    else if (Array.isArray(input)) for (const x of input) promptChars += typeof x === 'string' ? x.length : 8
    // Counted as the JSON it is sent as: tool calls, tools and schemas in params weigh like content
    // (counting content alone let prompts of tool calls hold gigabytes within the budget).
    const heldChars = JSON.stringify(job.messages).length + (job.params === undefined ? 0 : JSON.stringify(job.params).length)
    if (this.live.size >= this.maxOpen || this.held() + heldChars > this.maxHeld) {
      throw new AppError('service_unavailable', 'The leader is at its limit of open inference requests; retry shortly.', { retryAfterS: 1 })
    }
    // One pool's requests (prompts its fellows have not answered, output its clients have not read)
    // could otherwise fill the leader's budget and refuse chat to every other pool.
    if ((this.shareChars.get(share) ?? 0) + heldChars > this.maxShare) {
      throw new AppError('service_unavailable', `This pool's open inference requests would hold more than ${this.maxShare} characters of prompts and unread answers, its share (a quarter) of the leader's inference memory; retry shortly.`, { retryAfterS: 1 })
    }
    let pick!: (e: Ending | null) => void
    const pickedUp = new Promise<Ending | null>((r) => (pick = r))
    const l: Live = {
      id: newId(), fellowId, share, job, promptChars, heldChars, state: 'queued', since: this.opts.now(), fullAt: 0, deltas: [], chars: 0,
      completionFrames: 0, usage: null, finishReason: null, resultText: '', end: null, reader: null, readerTimer: null, pick,
    }
    this.live.set(l.id, l)
    this.promptChars += heldChars
    this.charge(share, heldChars)
    this.busy.set(fellowId, (this.busy.get(fellowId) ?? 0) + 1)
    const waiting = this.waiters.get(fellowId)
    const w = waiting?.shift()
    if (waiting?.length === 0) this.waiters.delete(fellowId)
    if (w) {
      this.waiterCount--
      w(this.dispatch(l))
    } else {
      const q = this.queues.get(fellowId)
      if (q) q.push(l)
      else this.queues.set(fellowId, [l])
    }
    const cancel = () => {
      const serving = l.state === 'dispatched'
      this.finish(l, { ok: false, code: 'gone', message: 'The client went away.' })
      if (serving) this.linger(l)
      this.drain(l) // nobody will read what is buffered
    }
    return { id: l.id, pickedUp, read: (ms) => this.read(l, ms), cancel }
  }

  next(fellowId: string, waitMs: number, signal?: AbortSignal, onEvicted?: () => void): Promise<InferRequest | null> {
    if (signal?.aborted) return Promise.resolve(null)
    const q = this.queues.get(fellowId)
    const l = q?.shift()
    if (q?.length === 0) this.queues.delete(fellowId)
    if (l) return Promise.resolve(this.dispatch(l))
    if (!(waitMs > 0)) return Promise.resolve(null)
    return new Promise((resolve) => {
      const list = this.waiters.get(fellowId) ?? []
      const w: Waiter = (r, evicted) => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', leave)
        if (evicted) onEvicted?.()
        resolve(r)
      }
      // Leaving without a request: unlist the waiter so no request is handed to a dead poll.
      const leave = () => {
        const i = list.indexOf(w)
        if (i >= 0) {
          list.splice(i, 1)
          this.waiterCount--
        }
        if (list.length === 0 && this.waiters.get(fellowId) === list) this.waiters.delete(fellowId)
        w(null)
      }
      const timer = setTimeout(leave, waitMs)
      signal?.addEventListener('abort', leave, { once: true })
      // A fellow holding more polls than it can use gets its oldest one answered empty.
      if (list.length >= this.maxWaiters) {
        list.shift()!(null, true)
        this.waiterCount--
      }
      list.push(w)
      this.waiterCount++
      this.waiters.set(fellowId, list)
    })
  }

  post(requestId: string, fellowId: string | null, frames: Frame[]): PostResult {
    const l = this.live.get(requestId)
    if (!l) {
      // Its fellow hears that the request is over: it stops, and its engine is free again.
      const ended = this.lingering.get(requestId)
      if (ended && (fellowId === null || fellowId === ended.fellowId)) this.unlinger(requestId)
      return 'gone'
    }
    if (l.state !== 'dispatched' || (fellowId !== null && fellowId !== l.fellowId)) return 'not_yours'
    let incoming = 0
    let resultChars = 0
    for (const f of frames) {
      incoming += f.delta?.length ?? 0
      if (f.tool_calls !== undefined) incoming += toolCallsChars(f.tool_calls)
      resultChars += f.result_chunk?.length ?? 0
    }
    // A result larger than its pool's share would never fit: it fails now, not by waiting as full.
    const resultLimit = Math.min(MAX_RESULT_CHARS, this.maxShare)
    if (l.resultText.length + resultChars > resultLimit) {
      this.finish(l, { ok: false, code: 'fellow_failed', message: `The answer of the engine serving ${l.job.model} is larger than ${resultLimit % (1 << 20) === 0 ? `${resultLimit / (1 << 20)} Mi` : resultLimit} characters.` })
      return 'ok'
    }
    // Refused whole, so the fellow can resend the same batch once the client caught up. A result
    // is read only when whole, so its pieces count against the budgets (the leader's and its pool's
    // share), not the request's.
    if (l.chars + incoming > this.maxBuffered || this.held() + incoming + resultChars > this.maxHeld || (this.shareChars.get(l.share) ?? 0) + incoming + resultChars > this.maxShare) {
      l.fullAt = this.opts.now()
      return 'full'
    }
    // Any post, even an empty one, shows the fellow is alive: it restarts the frame timeout.
    l.since = this.opts.now()
    for (const f of frames) {
      if (f.delta !== undefined && f.delta !== '') {
        l.deltas.push(f.delta)
        l.chars += f.delta.length
        this.bufferedChars += f.delta.length
        this.charge(l.share, f.delta.length)
        l.completionFrames++
      }
      if (f.tool_calls !== undefined && f.tool_calls.length > 0) {
        const n = toolCallsChars(f.tool_calls)
        l.deltas.push({ tool_calls: f.tool_calls })
        l.chars += n
        this.bufferedChars += n
        this.charge(l.share, n)
      }
      if (f.usage) l.usage = f.usage
      if (f.finish_reason !== undefined) l.finishReason = f.finish_reason
      if (f.result_chunk !== undefined) {
        l.resultText += f.result_chunk
        this.promptChars += f.result_chunk.length // held until the request ends
        this.charge(l.share, f.result_chunk.length)
      }
      if (f.error !== undefined) {
        // An engine that refused the request (4xx) says the caller's request was at fault.
        const refused = f.error_status !== undefined && f.error_status < 500
        this.finish(l, refused
          ? { ok: false, code: 'bad_request', message: `The engine serving ${l.job.model} refused the request: ${f.error}` }
          : { ok: false, code: 'fellow_failed', message: `The fellow serving ${l.job.model} failed: ${f.error}` })
        break
      }
      if (f.done) {
        let result = f.result
        if (result === undefined && l.resultText !== '') {
          try {
            result = JSON.parse(l.resultText) as unknown
          } catch {
            this.finish(l, { ok: false, code: 'fellow_failed', message: `The fellow serving ${l.job.model} sent a result that is not JSON.` })
            break
          }
        }
        this.finish(l, this.success(l, result))
        break
      }
    }
    this.wake(l)
    return 'ok'
  }

  inFlight(fellowId: string): number {
    return (this.busy.get(fellowId) ?? 0) + (this.lingeringPer.get(fellowId) ?? 0)
  }

  expire(now: number): number {
    const s = Math.round(this.opts.timeoutMs / 1000)
    let n = 0
    for (const l of this.live.values()) {
      if (now - l.since < this.opts.timeoutMs) continue
      n++
      if (l.state === 'queued') this.finish(l, { ok: false, code: 'dispatch_timeout', message: `No fellow picked the request up within ${s} s.` })
      else {
        // The fellow kept sending, and its frames were refused while the client did not read: the
        // wait is the client's, not a silent fellow's (which sent operators after the wrong machine).
        if (l.fullAt > l.since) this.finish(l, { ok: false, code: 'fellow_timeout', message: `The client did not read the answer of ${l.job.model} for ${s} s.` })
        else this.finish(l, { ok: false, code: 'fellow_timeout', message: `The fellow serving ${l.job.model} sent nothing for ${s} s.` })
        // A silent fellow is not an idle one: routing more to it queued them behind a wedged engine.
        this.linger(l)
      }
    }
    for (const [id, e] of this.lingering) if (e.until <= now) this.unlinger(id)
    return n
  }

  abandon(fellowId: string, why: string): number {
    for (const [id, e] of this.lingering) if (e.fellowId === fellowId) this.unlinger(id)
    let n = 0
    for (const l of [...this.live.values()]) {
      if (l.fellowId !== fellowId) continue
      n++
      // Its caller hears it now, not when the timeout runs out.
      this.finish(l, { ok: false, code: 'fellow_timeout', message: `The fellow serving ${l.job.model} ${why} before it answered.` })
    }
    return n
  }

  stats(): InferenceStats {
    let queued = 0
    for (const q of this.queues.values()) queued += q.length
    return { open: this.live.size, queued, waiters: this.waiterCount, bufferedChars: this.bufferedChars }
  }

  private held(): number {
    return this.promptChars + this.bufferedChars
  }

  private linger(l: Live): void {
    // As many as requests may be open: past that the oldest stops counting (each is a few bytes).
    if (this.lingering.size >= this.maxOpen) this.unlinger(this.lingering.keys().next().value!)
    this.lingering.set(l.id, { fellowId: l.fellowId, until: this.opts.now() + LINGER_TIMEOUTS * this.opts.timeoutMs })
    this.lingeringPer.set(l.fellowId, (this.lingeringPer.get(l.fellowId) ?? 0) + 1)
  }

  private unlinger(id: string): void {
    const e = this.lingering.get(id)
    if (!e) return
    this.lingering.delete(id)
    const n = (this.lingeringPer.get(e.fellowId) ?? 1) - 1
    if (n > 0) this.lingeringPer.set(e.fellowId, n)
    else this.lingeringPer.delete(e.fellowId)
  }

  private charge(share: string, n: number): void {
    const v = (this.shareChars.get(share) ?? 0) + n
    if (v > 0) this.shareChars.set(share, v)
    else this.shareChars.delete(share)
  }

  closeAll(): void {
    for (const l of [...this.live.values()]) this.finish(l, { ok: false, code: 'service_unavailable', message: 'The leader is shutting down.' })
    for (const list of this.waiters.values()) for (const w of list.splice(0)) w(null)
    this.waiters.clear()
    this.waiterCount = 0
  }

  private dispatch(l: Live): InferRequest {
    l.state = 'dispatched'
    l.since = this.opts.now()
    l.pick(null)
    const { kind, model, messages, max_tokens, stream, temperature, top_p, params } = l.job
    return {
      request_id: l.id, kind, model, messages, max_tokens, stream,
      ...(temperature !== undefined ? { temperature } : {}),
      ...(top_p !== undefined ? { top_p } : {}),
      ...(params !== undefined ? { params } : {}),
    }
  }

  /**
   * Usage as the fellow reported it; otherwise estimated (4 characters a prompt token, a frame a
   * token). The finish reason as the engine said it; otherwise `length` when the limit was reached.
   */
  private success(l: Live, result: unknown): Ending {
    const usage = l.usage ?? { prompt_tokens: Math.ceil(l.promptChars / 4), completion_tokens: l.completionFrames }
    const capped = l.job.max_tokens !== null && usage.completion_tokens >= l.job.max_tokens
    const finish = l.finishReason ?? (capped ? 'length' : 'stop')
    return result === undefined ? { ok: true, usage, finish } : { ok: true, usage, finish, result }
  }

  private finish(l: Live, end: Ending): void {
    if (l.state === 'ended') return
    if (l.state === 'queued') {
      const q = this.queues.get(l.fellowId)
      const i = q?.indexOf(l) ?? -1
      if (i >= 0) q!.splice(i, 1)
      if (q?.length === 0) this.queues.delete(l.fellowId)
    }
    l.state = 'ended'
    l.end = end
    this.live.delete(l.id)
    this.promptChars -= l.heldChars + l.resultText.length
    this.charge(l.share, -(l.heldChars + l.resultText.length))
    l.resultText = ''
    const b = (this.busy.get(l.fellowId) ?? 1) - 1
    if (b > 0) this.busy.set(l.fellowId, b)
    else this.busy.delete(l.fellowId)
    l.pick(end)
    if (end.ok) this.opts.onServed?.(l.fellowId, end.usage)
    this.wake(l)
  }

  private read(l: Live, waitMs: number): Promise<Output> {
    if (l.deltas.length > 0 || l.end) return Promise.resolve(this.drain(l))
    if (l.reader) return Promise.reject(new Error('a request has one reader'))
    return new Promise((resolve) => {
      l.reader = resolve
      l.readerTimer = setTimeout(() => {
        l.reader = null
        resolve({ deltas: [], end: null })
      }, waitMs)
    })
  }

  private wake(l: Live): void {
    const r = l.reader
    if (!r || (l.deltas.length === 0 && !l.end)) return
    l.reader = null
    if (l.readerTimer) clearTimeout(l.readerTimer)
    r(this.drain(l))
  }

  private drain(l: Live): Output {
    const deltas = l.deltas
    l.deltas = []
    this.bufferedChars -= l.chars
    this.charge(l.share, -l.chars)
    l.chars = 0
    return { deltas, end: l.end }
  }
}
