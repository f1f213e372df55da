// Serving models. The fellow long-polls the leader for requests, hands each to the engine that
// serves its model (engines.ts), and streams the engine's output back as frames. Posting is
// pipelined: the first token is posted at once, and whatever the engine produces while a post
// is on its way goes into the next one, so one slow round trip batches instead of queueing.
// A 410 from the leader (the client went away) aborts the engine's request at once.
//
// Concurrency: as many long-polls as the engines take requests at once together (at most
// MAX_SLOTS), and each engine never more than its max_concurrent (a request beyond waits here,
// without holding one of those slots, so that a busy model does not block an idle one).
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Backoff } from './backoff'
import { InferSocketClient } from './infer-socket'
import { downloadVerified } from './checkpoints'
import { createEngine, EngineError, type Engine, type EngineEvent } from './engines'
import { LeaderError, NetworkError, isRetryable, type InferFrame, type LeaderClient, type StoredArtifact } from './client'
import { BUILTIN_MODEL, type EngineSpec } from './fellow-config'
import { MODEL_BYTES } from './textgen'
import { VERSION } from '../version'
import { RESULT_CHUNK_CHARS, type InferRequest } from '../wire/inference'
import type { EngineState } from '../wire/fellow'
import { monotonicNow, sleep, type TimerClock } from '../time'
import type { Logger } from '../log'

export const MODEL_NAME = BUILTIN_MODEL
const POLL_WAIT_MS = 25_000
/** The leader holds at most 64 long-polls per fellow. */
const MAX_SLOTS = 48
/** Requests waiting for their engine without holding a slot; past this many, a waiting one keeps its slot. */
const MAX_WAITING = 256
/** Content frames merge up to this many characters (the leader takes 65,536 per frame). */
const MERGE_CHARS = 16_384
const MAX_FRAMES_PER_POST = 4096
/** About this many characters of frames go in one post (the leader takes 1 MiB bodies by default). */
const POST_CHARS = 384 * 1024
/**
 * With nothing posted for this long, a request being served posts an empty batch: the leader ends
 * a request whose fellow posts nothing for SVC_INFER_DISPATCH_TIMEOUT_S (30 s by default).
 */
export const KEEPALIVE_MS = 5000

export interface InferenceDeps {
  client: LeaderClient
  log: Logger
  fellowId: () => string
  signal: AbortSignal
  clock: TimerClock
  /** Model files from the leader's artifact store are kept under <stateDir>/models, by SHA-256. */
  stateDir?: string
  /** The inference channel's URL (/ws/infer/{fellow_id}); absent: long-polls only. */
  socketUrl?: () => string | null
}

/** A counting gate: at most `limit` holders; the rest wait in order. */
class Gate {
  private held = 0
  private readonly waiting: (() => void)[] = []
  constructor(private readonly limit: number) {}
  get inUse(): number {
    return this.held
  }
  get full(): boolean {
    return this.held >= this.limit
  }
  /** Resolves once in; true when it had to wait. */
  async enter(): Promise<boolean> {
    if (this.held < this.limit) {
      this.held++
      return false
    }
    await new Promise<void>((r) => this.waiting.push(r))
    return true
  }
  leave(): void {
    const next = this.waiting.shift()
    if (next) next()
    else this.held--
  }
}

export class InferenceServer {
  readonly engines: Engine[]
  private readonly gates = new Map<Engine, Gate>()
  private readonly announced = new Set<string>()
  /** Sizes of the model files fetched from the store, for the catalog. */
  private readonly modelSizes = new Map<string, number>()
  /** Kept model files whose bytes matched their name (their SHA-256) in this run: the size and mtime they had then. */
  private readonly verified = new Map<string, string>()
  /** The inference channel, while it is open. */
  private socket: InferSocketClient | null = null
  /** Requests taken at once (MAX_SLOTS at most), how many hold one now, and how many wait for their engine without one. */
  private slots = 0
  private busy = 0
  private waiting = 0

  constructor(
    private readonly deps: InferenceDeps,
    specs: EngineSpec[],
    /** Told when an engine's health changes: the fellow heartbeats at once. */
    private readonly onChange: () => void = () => {},
  ) {
    this.engines = specs.map((s) =>
      createEngine(s, {
        log: deps.log,
        clock: deps.clock,
        onHealth: (e) => {
          if (e.healthy) void this.announce(e)
          this.onChange()
        },
        fetchModel: (id) => this.fetchModel(id),
      }),
    )
    for (const e of this.engines) this.gates.set(e, new Gate(e.spec.maxConcurrent))
  }

  /** The models of healthy engines: what the heartbeat says this fellow serves. */
  servables(): string[] {
    return this.engines.filter((e) => e.healthy).map((e) => e.spec.model)
  }

  /** Every declared engine (the built-in one is named `builtin`), healthy or not: the machine page lists them. */
  engineStates(): EngineState[] {
    return this.engines.map((e) => ({ name: e.spec.name, model: e.spec.model, healthy: e.healthy }))
  }

  /** What each served model takes at once. */
  capacity(): Record<string, number> {
    const out: Record<string, number> = {}
    for (const e of this.engines) if (e.healthy) out[e.spec.model] = e.spec.maxConcurrent
    return out
  }

  /** Starts the engines and the long-polls; the built-in engine is announced at once. */
  start(): void {
    for (const e of this.engines) {
      e.start()
      if (e.healthy) void this.announce(e)
    }
    this.slots = Math.min(MAX_SLOTS, this.engines.reduce((n, e) => n + e.spec.maxConcurrent, 0))
    const url = this.deps.socketUrl
    if (url) void this.channelLoop(url)
    else for (let i = 0; i < this.slots; i++) void this.pollLoop(i, this.deps.signal)
  }

  /** Stops the engines the agent started (SIGTERM, SIGKILL after their grace period). */
  async stop(): Promise<void> {
    await Promise.all(this.engines.map((e) => e.stop()))
  }

  /**
   * A model file from the leader's artifact store (of this fellow's pool), downloaded once and
   * kept by its SHA-256: a restart or a second engine with the same file does not fetch it again,
   * and a kept copy whose bytes no longer match is fetched again.
   * The leader is asked before every start (an artifact deleted or out of the pool's reach is not
   * served); when it cannot be reached, the copy kept for the SHA-256 it last named starts the
   * engine, checked again against that hash: an engine restarts while its leader is away.
   */
  private async fetchModel(id: string): Promise<string> {
    if (!this.deps.stateDir) throw new Error('no state directory to keep model files in')
    const dir = join(this.deps.stateDir, 'models')
    let art: StoredArtifact
    try {
      art = await this.deps.client.artifact(id)
    } catch (e) {
      const unreachable = e instanceof NetworkError || (e instanceof LeaderError && e.status >= 500)
      if (!unreachable) throw e
      const cached = await this.cachedModel(id, dir)
      if (!cached) throw new Error(`${(e as Error).message}; and no copy of it kept on this fellow`)
      this.deps.log.warn('leader not reachable; engine starts from the kept model file', { artifact_id: id, sha256: cached.sha256, error: (e as Error).message })
      return cached.file
    }
    this.modelSizes.set(id, art.size_bytes)
    const file = join(dir, art.sha256)
    const kept = existsSync(file) && statSync(file).size === art.size_bytes
    // Checked, not only measured: a kept file whose bytes changed in place was started from as it was.
    const whole = kept && (await this.intact(file, art.sha256))
    if (kept && !whole) this.deps.log.warn('kept model file does not match its SHA-256; downloading it again', { artifact_id: id, file })
    if (!whole) {
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const part = `${file}.part`
      this.deps.log.info('downloading model file', { artifact_id: id, name: art.name, bytes: art.size_bytes })
      await downloadVerified({ client: this.deps.client, log: this.deps.log, clock: this.deps.clock, signal: this.deps.signal }, art, part)
      renameSync(part, file)
      const stamp = stampOf(file)
      if (stamp !== null) this.verified.set(file, stamp)
    }
    // What the leader last said this artifact is: the kept copy to start from when it cannot be
    // asked. Written whole or not at all; a disk that refuses it costs that fallback, not the start.
    const note = join(dir, `${id}.json`)
    try {
      writeFileSync(`${note}.part`, JSON.stringify({ sha256: art.sha256, size_bytes: art.size_bytes }), { mode: 0o600 })
      renameSync(`${note}.part`, note)
    } catch (e) {
      this.deps.log.warn('cannot note the model file for starts without the leader', { artifact_id: id, error: (e as Error).message })
    }
    return file
  }

  /** The kept copy of an artifact, when its hash is the one the leader last named for it. */
  private async cachedModel(id: string, dir: string): Promise<{ file: string; sha256: string } | null> {
    let known: { sha256?: unknown; size_bytes?: unknown }
    try {
      known = JSON.parse(readFileSync(join(dir, `${id}.json`), 'utf8')) as typeof known
    } catch {
      return null
    }
    if (typeof known.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(known.sha256)) return null
    const file = join(dir, known.sha256)
    if (!existsSync(file)) return null
    if (!(await this.intact(file, known.sha256))) {
      this.deps.log.warn('kept model file does not match its SHA-256; not used', { artifact_id: id, file })
      return null
    }
    if (typeof known.size_bytes === 'number') this.modelSizes.set(id, known.size_bytes)
    return { file, sha256: known.sha256 }
  }

  /**
   * Whether a kept file's bytes are those its name (its SHA-256) says. Hashed once per agent run,
   * and again when its size or mtime changed since: a restarted engine does not read gigabytes
   * again for nothing, and an agent start reads them once (the engine then loads them anyway).
   */
  private async intact(file: string, sha256: string): Promise<boolean> {
    const stamp = stampOf(file)
    if (stamp !== null && this.verified.get(file) === stamp) return true
    this.verified.delete(file)
    const h = new Bun.CryptoHasher('sha256')
    for await (const chunk of Bun.file(file).stream()) h.update(chunk)
    if (h.digest('hex') !== sha256) return false
    if (stamp !== null) this.verified.set(file, stamp)
    return true
  }

  /** The model in the leader's catalog, once per model per agent run. */
  private async announce(e: Engine): Promise<void> {
    if (this.announced.has(e.spec.model)) return
    this.announced.add(e.spec.model)
    const builtin = e.spec.url === 'builtin'
    const manifest = builtin
      ? { name: e.spec.model, version: VERSION, format: 'markov-text', size_bytes: MODEL_BYTES }
      : {
          name: e.spec.model,
          version: e.spec.upstreamModel.slice(0, 100),
          format: 'openai-compatible',
          // A model file from the store is named in the catalog, with its size.
          size_bytes: (e.spec.modelArtifact && this.modelSizes.get(e.spec.modelArtifact)) || 0,
          ...(e.spec.modelArtifact ? { artifact_id: e.spec.modelArtifact } : {}),
        }
    try {
      await this.deps.client.announceServable(manifest)
      this.deps.log.info('servable announced', { name: manifest.name, version: manifest.version, engine: e.spec.name })
    } catch (err) {
      this.announced.delete(e.spec.model)
      this.deps.log.warn('servable not announced', { name: manifest.name, error: (err as Error).message })
    }
  }

  /** One long-poll at a time, until `signal`; a request is served before the next poll. */
  private async pollLoop(slot: number, signal: AbortSignal): Promise<void> {
    const { client, log, clock } = this.deps
    const backoff = new Backoff({ baseMs: 500, maxMs: 60_000 })
    while (!signal.aborted) {
      try {
        const polled = monotonicNow(clock)
        const req = await client.inferPoll(this.deps.fellowId(), POLL_WAIT_MS, signal)
        backoff.reset()
        if (req) await this.serve(req)
        // A leader that answers 204 without holding the poll must not turn this into a busy loop.
        else if (monotonicNow(clock) - polled < 1000) await sleep(clock, 500, signal)
      } catch (e) {
        if (signal.aborted) return
        const ms = backoff.next()
        // A leader without the inference transport answers 403/404 for good: say so once, poll rarely.
        if (backoff.attempts === 1 && slot === 0) log.warn('inference poll failed; retrying', { error: (e as Error).message, retry_ms: ms })
        await sleep(clock, ms, signal)
      }
    }
  }

  /**
   * The inference channel while it is open; while it is not (it cannot open, or dropped), the
   * long-polls run until the next attempt to open it.
   */
  private async channelLoop(url: () => string | null): Promise<void> {
    const { log, signal, clock } = this.deps
    const backoff = new Backoff({ baseMs: 1000, maxMs: 60_000 })
    const stopped = new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }))
    let polling = false
    while (!signal.aborted) {
      const target = url()
      const sock = target ? new InferSocketClient({ url: target, token: () => this.deps.client.bearer(), log, onRequest: (r) => void this.serve(r) }) : null
      if (sock && (await sock.open())) {
        log.info('inference socket open', { long_polls_stopped: polling })
        polling = false
        this.socket = sock
        // What the leader may send: the slots not taken by requests still being served.
        sock.credit(this.slots - this.busy)
        await Promise.race([sock.closed(), stopped])
        this.socket = null
        sock.close()
        if (signal.aborted) return
        backoff.reset()
      }
      // Long-polls until the socket is tried again.
      const ms = backoff.next()
      if (!polling) log.info('inference socket unavailable; long-polling', { retry_ms: ms })
      polling = true
      const polls = new AbortController()
      const stop = AbortSignal.any([signal, polls.signal])
      // A poll serving a request when they stop finishes serving it first.
      for (let i = 0; i < this.slots; i++) void this.pollLoop(i, stop)
      await sleep(clock, ms, signal)
      polls.abort()
    }
  }

  /**
   * Serves a request in one of the fellow's slots; resolves once the slot is free again: the
   * request was served, or it waits for its engine and holds none meanwhile (it goes on).
   */
  serve(req: InferRequest): Promise<void> {
    this.busy++
    let held = true
    let freed!: () => void
    const slotFree = new Promise<void>((r) => (freed = r))
    const release = () => {
      if (!held) return
      held = false
      this.busy--
      // The slot is free again: the leader may send another request over the socket.
      this.socket?.credit(1)
      freed()
    }
    void this.serveOne(req, release).finally(release)
    return slotFree
  }

  private async serveOne(req: InferRequest, release: () => void): Promise<void> {
    const engine = this.engines.find((e) => e.spec.model === req.model)
    const out = new FramePoster(this.deps, req.request_id, () => this.socket)
    if (!engine || !engine.healthy) {
      out.push({ error: engine ? `the engine of ${req.model} is not healthy right now` : `this fellow does not serve ${req.model}` })
      return out.close()
    }
    const gate = this.gates.get(engine)!
    // Only requests for this model wait: their slots take requests for the other engines meanwhile
    // (a slow model's queue took every slot, and an idle model's requests waited behind it).
    const free = gate.full && this.waiting < MAX_WAITING
    if (free) {
      this.waiting++
      release()
    }
    let waited: boolean
    try {
      waited = await gate.enter()
    } finally {
      if (free) this.waiting--
    }
    try {
      // Its client may have gone meanwhile, or the leader's dispatch timeout ended it: asked first
      // (an empty post), so the engine does not start an answer nobody reads.
      if (waited && !(await out.alive())) return
      await serveWith(this.deps, engine, req, out)
    } finally {
      gate.leave()
    }
  }
}

/** A file's size and mtime, to tell whether it changed since it was checked; null when it is gone. */
function stampOf(file: string): string | null {
  try {
    const st = statSync(file)
    return `${st.size}:${st.mtimeMs}`
  } catch {
    return null
  }
}

/** One request through one engine, its events posted as frames. */
export async function serveWith(deps: InferenceDeps, engine: Engine, req: InferRequest, out: FramePoster): Promise<void> {
  const { log, clock } = deps
  const started = monotonicNow(clock)
  const signal = AbortSignal.any([out.gone, deps.signal])
  let tokens = 0
  const stopKeepAlive = out.keepAlive()
  try {
    if (req.kind === 'embeddings') {
      const { result, usage } = await engine.embeddings(req, signal)
      // In pieces: a result of many inputs is far larger than one post may be.
      const text = JSON.stringify(result)
      for (let at = 0; at < text.length; at += RESULT_CHUNK_CHARS) out.push({ result_chunk: text.slice(at, at + RESULT_CHUNK_CHARS) })
      out.push({ done: true, usage })
    } else {
      let finish: string | undefined
      let usage: InferFrame['usage']
      for await (const e of engine.chat(req, signal) as AsyncGenerator<EngineEvent>) {
        if ('content' in e) {
          tokens++
          out.push({ delta: e.content })
        } else if ('reasoning' in e) {
          // Not passed on, as OpenAI's own reasoning models keep theirs: the answer is the content
          // (the usage counts the thinking). Meanwhile the keep-alive posts say the fellow is busy.
        } else if ('tool_calls' in e) out.push({ tool_calls: e.tool_calls })
        else if ('finish' in e) finish = e.finish
        else usage = e.usage
        if (out.gone.aborted) break
      }
      if (!out.gone.aborted && !deps.signal.aborted) out.push({ done: true, ...(finish !== undefined ? { finish_reason: finish } : {}), ...(usage ? { usage } : {}) })
    }
  } catch (e) {
    if (!out.gone.aborted && !deps.signal.aborted) {
      const err = e instanceof EngineError ? e : new EngineError((e as Error).message)
      log.warn('engine request failed', { request_id: req.request_id, engine: engine.spec.name, status: err.status, error: err.message })
      out.push({ error: err.message.slice(0, 2000), ...(err.status !== null && err.status >= 400 && err.status <= 599 ? { error_status: err.status } : {}) })
    }
  } finally {
    stopKeepAlive()
  }
  await out.close()
  if (out.gone.aborted) log.info('inference request gone; generation aborted', { request_id: req.request_id, engine: engine.spec.name })
  else if (!deps.signal.aborted) log.info('inference answered', { request_id: req.request_id, model: req.model, engine: engine.spec.name, chunks: tokens, ms: Math.round(monotonicNow(clock) - started) })
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff

/**
 * Tool-call deltas cut so that none carries more than `max` characters of arguments, each call in
 * its own: a call's arguments in pieces, the first with its id, type and name, the rest with its
 * index alone (clients append them by index). One without an index cannot be continued: it goes whole.
 */
export function toolCallPieces(calls: unknown[], max: number): unknown[][] {
  const out: unknown[][] = []
  for (const c of calls) {
    const call = c as { index?: unknown; function?: { arguments?: unknown } } | null
    const args = typeof call === 'object' && call !== null && Number.isInteger(call.index) && typeof call.function?.arguments === 'string' ? call.function.arguments : null
    if (args === null || args.length <= max) {
      out.push([c])
      continue
    }
    for (let at = 0; at < args.length; ) {
      let end = Math.min(at + max, args.length)
      if (end < args.length && isHighSurrogate(args.charCodeAt(end - 1))) end--
      const piece = args.slice(at, end)
      out.push([at === 0 ? { ...call, function: { ...call!.function, arguments: piece } } : { index: call!.index, function: { arguments: piece } }])
      at = end
    }
  }
  return out
}

/**
 * Frames of one request, posted in order: one post at a time, and frames pushed meanwhile go
 * together in the next. `gone` aborts when the leader answers 410/404 (the client went away) or
 * posting failed for good: the engine's request is aborted with it.
 */
export class FramePoster {
  private pending: InferFrame[] = []
  private posting: Promise<void> | null = null
  private readonly stopper = new AbortController()
  /** When the last post began (the monotonic clock): the keep-alive counts from here. */
  private lastPost: number

  constructor(
    private readonly deps: InferenceDeps,
    private readonly requestId: string,
    /** The inference channel when it is open: frames go over it, else by POST. */
    private readonly socket: () => InferSocketClient | null = () => null,
  ) {
    this.lastPost = monotonicNow(deps.clock)
  }

  get gone(): AbortSignal {
    return this.stopper.signal
  }

  push(f: InferFrame): void {
    if (this.gone.aborted) return
    // One content delta over a frame's size (an engine that ignores `stream` answers in one piece)
    // goes as several: the leader takes at most 65,536 characters a delta, and refused the whole
    // answer, which its caller then waited 30 s for. Cut between characters, not inside a pair.
    if (f.delta !== undefined && Object.keys(f).length === 1 && f.delta.length > MERGE_CHARS) {
      for (let at = 0; at < f.delta.length; ) {
        let end = Math.min(at + MERGE_CHARS, f.delta.length)
        if (end < f.delta.length && isHighSurrogate(f.delta.charCodeAt(end - 1))) end--
        this.push({ delta: f.delta.slice(at, end) })
        at = end
      }
      return
    }
    // So does one tool-call delta whose arguments came in one piece (the leader refused its frame
    // as too large, 413, even in a stream): its arguments go in pieces, as OpenAI streams them.
    if (f.tool_calls !== undefined && Object.keys(f).length === 1 && JSON.stringify(f.tool_calls).length > MERGE_CHARS) {
      for (const calls of toolCallPieces(f.tool_calls, MERGE_CHARS)) this.pending.push({ tool_calls: calls })
      this.posting ??= this.drain()
      return
    }
    const last = this.pending[this.pending.length - 1]
    // A content frame joins the content frame before it, so a batch is one frame, not one per token.
    if (f.delta !== undefined && Object.keys(f).length === 1 && last && last.delta !== undefined && Object.keys(last).length === 1 && last.delta.length + f.delta.length <= MERGE_CHARS) {
      last.delta += f.delta
    } else {
      this.pending.push(f)
    }
    this.posting ??= this.drain()
  }

  /** Waits until everything pushed is posted (or the request is gone). */
  async close(): Promise<void> {
    while (this.posting) await this.posting
  }

  /**
   * Posts an empty batch whenever nothing was posted for KEEPALIVE_MS, until the returned function
   * is called. An engine reading a long prompt, thinking (reasoning, not passed on) or sending
   * empty chunks gives nothing to post, and the leader took the fellow for silent: 504 at its
   * frame timeout while the engine went on. The answer to it also says within seconds that the
   * client went away (410), which a post of the next token alone said only if one ever came.
   */
  keepAlive(): () => void {
    const { clock } = this.deps
    let cancel = () => {}
    const tick = () => {
      if (this.gone.aborted) return
      const idle = monotonicNow(clock) - this.lastPost
      if (idle >= KEEPALIVE_MS && !this.posting) this.posting = this.drain([])
      cancel = clock.setTimeout(tick, idle >= KEEPALIVE_MS ? KEEPALIVE_MS : KEEPALIVE_MS - idle)
    }
    cancel = clock.setTimeout(tick, KEEPALIVE_MS)
    return () => cancel()
  }

  /** Whether the request is still wanted: posts an empty batch (when nothing was posted yet) and reads the answer. */
  async alive(): Promise<boolean> {
    if (!this.posting && !this.gone.aborted) this.posting = this.drain([])
    await this.close()
    return !this.gone.aborted
  }

  /** Posts `first` (a keep-alive's empty batch), then what is pending. */
  private async drain(first?: InferFrame[]): Promise<void> {
    try {
      if (first) await this.send(first)
      while (this.pending.length > 0 && !this.gone.aborted) await this.send(this.pending.splice(0, this.batchSize()))
    } finally {
      this.posting = null
    }
  }

  /** How many pending frames the next post takes: at most MAX_FRAMES_PER_POST, and about POST_CHARS. */
  private batchSize(): number {
    let chars = 0
    let n = 0
    for (const f of this.pending) {
      const size = 32 + (f.delta?.length ?? 0) + (f.result_chunk?.length ?? 0) + (f.tool_calls ? JSON.stringify(f.tool_calls).length : 0) + (f.error?.length ?? 0)
      if (n > 0 && (chars + size > POST_CHARS || n >= MAX_FRAMES_PER_POST)) break
      chars += size
      n++
    }
    return n
  }

  private async send(frames: InferFrame[]): Promise<void> {
    const { client, log, clock, signal } = this.deps
    this.lastPost = monotonicNow(clock)
    for (let attempt = 1; ; attempt++) {
      const sock = this.socket()
      const acked = sock?.isOpen ? await sock.frames(this.requestId, frames) : null
      if (acked === 'ok') return
      if (acked === 'gone' || acked === 'not_yours') return this.stopper.abort()
      if (acked === 'full') {
        // The client has not read the earlier frames yet; the same batch goes again shortly.
        if (!(await sleep(clock, 50 * Math.min(attempt, 20), signal))) return this.stopper.abort()
        continue
      }
      // No socket, or it dropped before answering: by POST.
      try {
        return await client.inferRespond(this.requestId, frames, signal)
      } catch (e) {
        if (e instanceof LeaderError && (e.status === 410 || e.status === 404)) return this.stopper.abort()
        // 429: the client has not read the earlier frames yet; the same batch goes again shortly.
        const full = e instanceof LeaderError && e.status === 429
        if (!isRetryable(e) || (!full && attempt >= 3) || signal.aborted) {
          log.warn('inference response failed; generation aborted', { request_id: this.requestId, error: (e as Error).message })
          // Refused for what the frames hold (422, 413): the caller is told now, with an error
          // frame, rather than left to wait out the leader's timeout for a fellow that went quiet.
          if (e instanceof LeaderError && (e.status === 422 || e.status === 413) && !frames.some((f) => f.error !== undefined) && !signal.aborted) {
            const error = `the fellow could not pass the engine's answer on: the leader refused it (${e.status}: ${e.message})`.slice(0, 2000)
            await client.inferRespond(this.requestId, [{ error, error_status: 502 }], signal).catch(() => {})
          }
          return this.stopper.abort()
        }
        if (!(await sleep(clock, full ? 50 * Math.min(attempt, 20) : 100 * attempt, signal))) return this.stopper.abort()
      }
    }
  }
}
