// The engines a fellow serves models with, behind one interface: the built-in tiny-llm, and any
// OpenAI-compatible server (llama.cpp's llama-server, vLLM, SGLang, Ollama) either already running
// at a URL or started and supervised by the agent. A request is forwarded to the engine's
// /chat/completions as a stream and its chunks come back as events (content, tool-call deltas,
// finish reason, usage); anything an engine does wrong (an error status, HTML, a malformed chunk,
// silence) ends the request with an EngineError the caller reads as an OpenAI error, and never
// touches the engine's health, which only its health check decides.
import { countTokens, generate } from './textgen'
import { Backoff } from './backoff'
import { LineLimiter, childEnv, readLines, signalChild, spawnChild } from './lines'
import { redactUrl, secretEnvValues, secretMask } from './redact'
import { CHAT_PARAMS, EMBEDDING_PARAMS, pickParams, type InferRequest, type InferUsage } from '../wire/inference'
import { monotonicNow, sleep, type TimerClock } from '../time'
import type { EngineSpec } from './fellow-config'
import type { Logger } from '../log'

/** `reasoning`: a reasoning model's thinking (llama-server's and vLLM's reasoning parsers stream it apart from the content). */
export type EngineEvent = { content: string } | { reasoning: string } | { tool_calls: unknown[] } | { finish: string } | { usage: InferUsage }

/** The request could not be answered; `status` is the engine's HTTP status when it refused it. */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly status: number | null = null,
  ) {
    super(message)
  }
}

export interface Engine {
  readonly spec: EngineSpec
  /** Answering its health check now: only then is its model announced. */
  readonly healthy: boolean
  start(): void
  stop(): Promise<void>
  chat(req: InferRequest, signal: AbortSignal): AsyncGenerator<EngineEvent>
  embeddings(req: InferRequest, signal: AbortSignal): Promise<{ result: unknown; usage: InferUsage }>
}

export const DEFAULT_BUILTIN_MAX_TOKENS = 64
const BUILTIN_MAX_TOKENS_CAP = 4096

/** The built-in Markov model (textgen.ts): always healthy, plain text only. */
export class BuiltinEngine implements Engine {
  readonly healthy = true
  constructor(readonly spec: EngineSpec) {}
  start(): void {}
  async stop(): Promise<void> {}

  async *chat(req: InferRequest, signal: AbortSignal): AsyncGenerator<EngineEvent> {
    const p = req.params ?? {}
    if (Array.isArray(p.tools) && p.tools.length > 0 && p.tool_choice !== 'none') throw new EngineError(`${this.spec.model} does not call tools.`, 400)
    const format = (p.response_format as { type?: unknown } | undefined)?.type
    if (format !== undefined && format !== 'text') throw new EngineError(`${this.spec.model} writes plain text only (response_format ${JSON.stringify(format)}).`, 400)
    const prompt = req.messages.map((m) => m.content ?? '').join('\n')
    const maxTokens = Math.min(BUILTIN_MAX_TOKENS_CAP, req.max_tokens ?? DEFAULT_BUILTIN_MAX_TOKENS)
    let tokens = 0
    for await (const word of generate(prompt, { maxTokens, signal })) {
      // Words joined by single spaces, none trailing: the reply reads as plain text.
      yield { content: (tokens === 0 ? '' : ' ') + word.trimEnd() }
      tokens++
    }
    if (signal.aborted) return
    // Its words never run out: what ends them is a token limit, the caller's, the default or the
    // cap (it said "stop" when the default or the cap cut it).
    yield { finish: tokens >= maxTokens ? 'length' : 'stop' }
    yield { usage: { prompt_tokens: countTokens(prompt), completion_tokens: tokens } }
  }

  async embeddings(): Promise<never> {
    throw new EngineError(`${this.spec.model} does not offer embeddings.`, 400)
  }
}

const HEALTH_EVERY_MS = 2000
const HEALTH_TIMEOUT_MS = 2000
/** Consecutive failed checks before a healthy engine counts as down (a busy engine may miss one). */
const HEALTH_FAILURES = 2
/** An engine that ran this long before it exited restarts at the shortest backoff again. */
const STABLE_MS = 30_000
const ERROR_TEXT_MAX = 2000
const MAX_LINE_BYTES = 16 << 20
/**
 * After its finish_reason, how long an engine has to end its stream (the usage chunk, [DONE], the
 * close): one that never did turned a complete answer into a timeout. Past it the answer ends as it is.
 */
const FINISH_GRACE_MS = 2000

export interface OpenAiEngineDeps {
  log: Logger
  clock: TimerClock
  /** Told whenever `healthy` changes, so the fellow's next heartbeat says so at once. */
  onHealth: (e: Engine) => void
  /** The local path of a model file from the leader's artifact store, downloaded when missing. */
  fetchModel?: (artifactId: string) => Promise<string>
}

/** A free TCP port on the loopback interface (bound, read, released). */
function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}

/**
 * `path` under an engine's base URL (from its origin when it starts with /), with the base URL's
 * query (`?api_key=…`, for a proxy that wants it) unless `path` has one of its own: appended as
 * text, the path went after the query and the engine was asked for the wrong one.
 */
export function engineUrl(base: string, path: string): string {
  const u = new URL(base)
  const q = path.indexOf('?')
  const p = q < 0 ? path : path.slice(0, q)
  u.pathname = p.startsWith('/') ? p : `${u.pathname.replace(/\/+$/, '')}/${p}`
  if (q >= 0) u.search = path.slice(q)
  u.hash = ''
  return u.href
}

/** The message of an engine's error body: OpenAI's {error: {message}}, vLLM's {message}, FastAPI's {detail}, or the text. */
export function errorMessageOf(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown }
    const m = typeof j.error === 'string' ? j.error : (j.error?.message ?? j.message ?? j.detail)
    if (typeof m === 'string' && m !== '') return m.slice(0, ERROR_TEXT_MAX)
  } catch {
    // not JSON
  }
  const plain = text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim()
  return (plain || 'no message').slice(0, ERROR_TEXT_MAX)
}

/**
 * An OpenAI-compatible server. With a command, the agent starts it on a free loopback port,
 * waits for its health check, restarts it with backoff when it exits or never gets healthy, and
 * stops it with SIGTERM (SIGKILL after the grace period); its output goes to the agent's log.
 */
export class OpenAiEngine implements Engine {
  private ok = false
  private failures = 0
  private base: string
  private proc: ReturnType<typeof Bun.spawn> | null = null
  private startedAt = 0
  private stopping = false
  private cancelCheck: (() => void) | null = null
  private readonly backoff = new Backoff({ baseMs: 1000, maxMs: 60_000 })
  private readonly stopper = new AbortController()
  /** Output lines logged per second (an engine logging every token must not flood the leader). */
  private readonly output: LineLimiter
  /** What it prints, without its api_key and declared secrets (redact.ts). */
  private readonly scrub: (line: string) => string

  constructor(
    readonly spec: EngineSpec,
    private readonly deps: OpenAiEngineDeps,
  ) {
    this.base = spec.url
    this.scrub = secretMask(() => [spec.apiKey, ...secretEnvValues(spec.env)])
    this.output = new LineLimiter(200, deps.clock, (n) => deps.log.warn('engine output suppressed', { engine: spec.name, lines: n, limit_per_s: 200 }))
  }

  get healthy(): boolean {
    return this.ok
  }

  /** The base URL now (a started engine's port is picked at each start). */
  get url(): string {
    return this.base
  }

  start(): void {
    if (this.spec.command) void this.launch()
    this.schedule(0)
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.stopper.abort()
    this.cancelCheck?.()
    this.setHealthy(false)
    const p = this.proc
    if (!p || p.exitCode !== null || p.signalCode !== null) return
    signalChild(p, 'SIGTERM')
    const exited = await Promise.race([p.exited.then(() => true), sleep(this.deps.clock, this.spec.stopGraceS * 1000).then(() => false)])
    if (!exited) {
      this.deps.log.warn('engine did not stop after SIGTERM; killing it', { engine: this.spec.name, grace_s: this.spec.stopGraceS })
      signalChild(p, 'SIGKILL')
      await p.exited
    }
    // What it started and left behind (a worker holding the GPU) goes with it.
    signalChild(p, 'SIGKILL')
  }

  private setHealthy(ok: boolean): void {
    this.failures = 0
    if (ok === this.ok) return
    this.ok = ok
    this.deps.log[ok ? 'info' : 'warn'](ok ? 'engine healthy; model announced' : 'engine unhealthy; model withdrawn', { engine: this.spec.name, model: this.spec.model, url: redactUrl(this.base) })
    this.deps.onHealth(this)
  }

  private async launch(): Promise<void> {
    const spec = this.spec
    const log = this.deps.log
    let modelFile = ''
    if (spec.modelArtifact) {
      try {
        if (!this.deps.fetchModel) throw new Error('no artifact store to fetch it from')
        modelFile = await this.deps.fetchModel(spec.modelArtifact)
      } catch (e) {
        const ms = this.backoff.next()
        log.error('engine model file not available; retrying', { engine: spec.name, artifact_id: spec.modelArtifact, error: (e as Error).message, retry_ms: ms })
        void sleep(this.deps.clock, ms, this.stopper.signal).then((go) => void (go && !this.stopping && this.launch()))
        return
      }
      if (this.stopping) return
    }
    const port = String(freePort())
    const argv = spec.command!.map((w) => w.replaceAll('{port}', port).replaceAll('{model_file}', modelFile))
    this.base = spec.url.replaceAll('{port}', port)
    this.startedAt = monotonicNow(this.deps.clock)
    let proc: ReturnType<typeof Bun.spawn>
    try {
      proc = spawnChild(argv, { ...childEnv(), ...spec.env, ...(modelFile ? { SVC_MODEL_FILE: modelFile } : {}) }, 'ignore')
    } catch (e) {
      const ms = this.backoff.next()
      log.error('engine command could not start', { engine: spec.name, command: argv[0], error: (e as Error).message, retry_ms: ms })
      void sleep(this.deps.clock, ms, this.stopper.signal).then((go) => void (go && this.launch()))
      return
    }
    this.proc = proc
    log.info('engine started', { engine: spec.name, pid: proc.pid, url: redactUrl(this.base) })
    void this.pipe(proc.stdout as ReadableStream<Uint8Array>, 'stdout')
    void this.pipe(proc.stderr as ReadableStream<Uint8Array>, 'stderr')
    void proc.exited.then((code) => {
      // What it started and left behind (a worker holding the GPU) goes with it: a crashing engine
      // otherwise left one set of orphans per restart, re-parented and outliving the agent.
      signalChild(proc, 'SIGKILL')
      if (this.proc !== proc) return
      this.proc = null
      this.setHealthy(false)
      if (this.stopping) return log.info('engine stopped', { engine: spec.name, code, signal: proc.signalCode })
      if (monotonicNow(this.deps.clock) - this.startedAt >= STABLE_MS) this.backoff.reset()
      const ms = this.backoff.next()
      log.warn('engine exited; restarting', { engine: spec.name, code, signal: proc.signalCode, retry_ms: ms })
      void sleep(this.deps.clock, ms, this.stopper.signal).then((go) => void (go && !this.stopping && this.launch()))
    })
  }

  /** The engine's output, line by line, into the agent's log (and so to the leader). */
  private pipe(stream: ReadableStream<Uint8Array>, which: 'stdout' | 'stderr'): Promise<void> {
    return readLines(stream, (line) => {
      if (this.output.allow()) this.deps.log.info('engine output', { engine: this.spec.name, stream: which, line: this.scrub(line) })
    })
  }

  private schedule(ms: number): void {
    if (this.stopping) return
    this.cancelCheck = this.deps.clock.setTimeout(() => void this.check(), ms)
  }

  private healthUrl(): string {
    return engineUrl(this.base, this.spec.healthPath)
  }

  private headers(json = false): Record<string, string> {
    const h: Record<string, string> = {}
    if (this.spec.apiKey) h.authorization = `Bearer ${this.spec.apiKey}`
    if (json) h['content-type'] = 'application/json'
    return h
  }

  private async check(): Promise<void> {
    if (this.stopping) return
    if (this.spec.command && !this.proc) return this.schedule(HEALTH_EVERY_MS) // restarting
    let good = false
    try {
      const res = await fetch(this.healthUrl(), { headers: this.headers(), signal: AbortSignal.any([AbortSignal.timeout(HEALTH_TIMEOUT_MS), this.stopper.signal]) })
      await res.arrayBuffer().catch(() => undefined)
      good = res.ok
    } catch {
      good = false
    }
    if (this.stopping) return
    if (good) {
      this.setHealthy(true)
    } else if (this.ok) {
      if (++this.failures >= HEALTH_FAILURES) this.setHealthy(false)
    } else if (this.proc && monotonicNow(this.deps.clock) - this.startedAt > this.spec.startTimeoutS * 1000) {
      this.deps.log.warn('engine did not get healthy in time; restarting it', { engine: this.spec.name, start_timeout_s: this.spec.startTimeoutS, health: redactUrl(this.healthUrl()) })
      signalChild(this.proc, 'SIGKILL') // the exit handler restarts it
    }
    this.schedule(HEALTH_EVERY_MS)
  }

  /**
   * The body sent to the engine: the transport's fields, the passed OpenAI fields, a stream with
   * usage. Only named fields: a request never adds anything else to what reaches the engine.
   */
  private chatBody(req: InferRequest): Record<string, unknown> {
    return {
      ...pickParams(req.params, CHAT_PARAMS),
      model: this.spec.upstreamModel,
      messages: req.messages,
      ...(req.max_tokens !== null ? { max_tokens: req.max_tokens } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.top_p !== undefined ? { top_p: req.top_p } : {}),
      stream: true,
      stream_options: { include_usage: true },
    }
  }

  /**
   * A fetch whose every wait (for the answer, then for each chunk) is bounded by the engine's
   * request timeout; `touch()` restarts it, `empty()` notes a chunk that did not, `answered()`
   * that the answer has begun, and `grace()` ends the wait FINISH_GRACE_MS from now (`graceOver`
   * then). Aborting `signal` (the client went away) aborts the upstream request, so the engine
   * stops generating.
   */
  private timed(signal: AbortSignal) {
    const ms = this.spec.requestTimeoutS * 1000
    const ctl = new AbortController()
    let timedOut = false
    let emptyOnly = false
    let begun = false
    let graceOver = false
    let cancel = () => {}
    const arm = (after: number, then: () => void) => {
      cancel()
      cancel = this.deps.clock.setTimeout(() => {
        then()
        ctl.abort()
      }, after)
    }
    const touch = () => {
      emptyOnly = false
      arm(ms, () => (timedOut = true))
    }
    touch()
    const quiet = () => `the engine sent ${emptyOnly ? 'only empty chunks' : 'nothing'} for ${this.spec.requestTimeoutS} s`
    return {
      signal: AbortSignal.any([signal, ctl.signal]),
      touch,
      empty: () => void (emptyOnly = true),
      answered: () => void (begun = true),
      grace: () => arm(FINISH_GRACE_MS, () => (graceOver = true)),
      get graceOver() {
        return graceOver
      },
      done: () => cancel(),
      abort: () => ctl.abort(),
      // What happened, in words for the caller: a connection that broke once the answer had begun
      // is the engine closing it mid-answer (a crash, the OOM killer), not an engine out of reach.
      fail: (e: unknown): EngineError =>
        timedOut
          ? new EngineError(quiet())
          : e instanceof EngineError
            ? e
            : new EngineError(begun ? `the engine closed the connection mid-answer (${reasonOf(e)})` : `the engine is not reachable: ${reasonOf(e)}`),
    }
  }

  async *chat(req: InferRequest, signal: AbortSignal): AsyncGenerator<EngineEvent> {
    const t = this.timed(signal)
    // Read to its end: the connection goes back to the pool. Left early: closed, so the engine stops.
    let clean = false
    try {
      const res = await fetch(engineUrl(this.base, 'chat/completions'), { method: 'POST', headers: this.headers(true), body: JSON.stringify(this.chatBody(req)), signal: t.signal })
      t.touch()
      t.answered()
      if (res.status >= 400) throw new EngineError(errorMessageOf(await boundedText(res)), res.status)
      const type = (res.headers.get('content-type') ?? '').toLowerCase()
      if (type.startsWith('application/json')) {
        // An engine that ignores `stream`: its one answer, as events.
        yield* eventsOfCompletion(parseJson(await boundedText(res, 64 << 20)))
        clean = true
        return
      }
      if (!type.startsWith('text/event-stream')) {
        await res.body?.cancel().catch(() => undefined)
        throw new EngineError(`the engine answered ${type || 'without a content type'}, not an event stream`)
      }
      let finished = false
      for await (const data of sseData(res.body!)) {
        if (data === '[DONE]') {
          clean = true
          return
        }
        let chunk: unknown
        try {
          chunk = JSON.parse(data)
        } catch {
          throw new EngineError(`the engine sent a malformed chunk: ${JSON.stringify(data.slice(0, 80))}`)
        }
        const events = eventsOfChunk(chunk)
        // Only a chunk with something in it restarts the wait: one with an empty delta (or a role
        // alone) is no progress, and an engine sending nothing else held its slot for good. After
        // the finish only the usage and the end may come, within the grace.
        if (finished) {
          // within the grace
        } else if (events.length > 0) t.touch()
        else t.empty()
        for (const e of events) {
          if ('finish' in e && !finished) {
            finished = true
            t.grace()
          }
          yield e
        }
      }
      if (!finished) throw new EngineError('the engine ended the stream before finishing the answer')
      clean = true
    } catch (e) {
      // Finished, and its stream not ended within the grace: the answer is whole as it is.
      if (signal.aborted || t.graceOver) return
      throw t.fail(e)
    } finally {
      t.done()
      if (!clean) t.abort()
    }
  }

  async embeddings(req: InferRequest, signal: AbortSignal): Promise<{ result: unknown; usage: InferUsage }> {
    const t = this.timed(signal)
    try {
      const body = { ...pickParams(req.params, EMBEDDING_PARAMS), model: this.spec.upstreamModel }
      const res = await fetch(engineUrl(this.base, 'embeddings'), { method: 'POST', headers: this.headers(true), body: JSON.stringify(body), signal: t.signal })
      t.answered()
      const text = await boundedText(res, 256 << 20)
      if (res.status >= 400) throw new EngineError(errorMessageOf(text), res.status)
      let result: { usage?: { prompt_tokens?: unknown; total_tokens?: unknown } }
      try {
        result = JSON.parse(text) as typeof result
      } catch {
        throw new EngineError('the engine answered embeddings with something that is not JSON')
      }
      const n = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0)
      const prompt = n(result?.usage?.prompt_tokens)
      return { result, usage: { prompt_tokens: prompt, completion_tokens: 0, total_tokens: n(result?.usage?.total_tokens) || prompt } }
    } catch (e) {
      throw t.fail(e)
    } finally {
      t.done()
    }
  }
}

/** Why a request to the engine failed, for a person: without Bun's advice to its programmers ("pass `verbose: true` ... to fetch()"). */
function reasonOf(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e)
  return message.replace(/\s*For more information, pass `verbose: true`.*$/s, '').trim() || 'no reason given'
}

/** An answer the engine said is JSON. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw new EngineError(`the engine answered application/json that is not JSON: ${text.slice(0, 80).replace(/\s+/g, ' ')}`)
  }
}

async function boundedText(res: Response, max = ERROR_TEXT_MAX * 4): Promise<string> {
  const reader = res.body?.getReader()
  if (!reader) return ''
  const dec = new TextDecoder()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    text += dec.decode(value, { stream: true })
    if (text.length >= max) {
      await reader.cancel().catch(() => undefined)
      break
    }
  }
  return text
}

/**
 * The `data:` payloads of a Server-Sent Events body (one per event; comments and other fields
 * skipped). Lines end with CRLF, LF or CR alone, as the format allows.
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const dec = new TextDecoder()
  let buf = ''
  let data: string[] = []
  let dataChars = 0
  /** The whole lines in `buf`: a CR at its very end waits for what follows (an LF, maybe) unless the body ended. */
  const lines = (ended: boolean): string[] => {
    const out: string[] = []
    for (;;) {
      const end = buf.search(/[\r\n]/)
      if (end < 0 || (end === buf.length - 1 && buf.charCodeAt(end) === 13 && !ended)) break
      out.push(buf.slice(0, end))
      buf = buf.slice(end + (buf.charCodeAt(end) === 13 && buf.charCodeAt(end + 1) === 10 ? 2 : 1))
    }
    return out
  }
  /** An event's payload when `line` ends one. */
  const take = (line: string): string | null => {
    if (line === '') {
      const event = data.length > 0 ? data.join('\n') : null
      data = []
      dataChars = 0
      return event
    }
    if (line.startsWith('data:')) {
      const piece = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
      // An event is held until its blank line: one that never comes grew the agent by gigabytes.
      dataChars += piece.length + 1
      if (dataChars > MAX_LINE_BYTES) throw new EngineError('the engine sent an event larger than 16 MiB (data lines without the blank line that ends an event)')
      data.push(piece)
    }
    return null
  }
  for await (const chunk of body) {
    buf += dec.decode(chunk, { stream: true })
    for (const line of lines(false)) {
      const event = take(line)
      if (event !== null) yield event
    }
    if (buf.length > MAX_LINE_BYTES) throw new EngineError('the engine sent a line longer than 16 MiB')
  }
  buf += dec.decode()
  for (const line of lines(true)) {
    const event = take(line)
    if (event !== null) yield event
  }
  if (data.length > 0) yield data.join('\n')
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** A usage object with the counts a caller needs; anything else is not usage. */
function usageOf(v: unknown): InferUsage | null {
  if (!isObject(v)) return null
  const n = (x: unknown) => typeof x === 'number' && Number.isInteger(x) && x >= 0
  if (!n(v.prompt_tokens) || !n(v.completion_tokens)) return null
  const u: InferUsage = { prompt_tokens: v.prompt_tokens as number, completion_tokens: v.completion_tokens as number }
  if (n(v.total_tokens)) u.total_tokens = v.total_tokens as number
  if (isObject(v.prompt_tokens_details)) u.prompt_tokens_details = v.prompt_tokens_details
  if (isObject(v.completion_tokens_details)) u.completion_tokens_details = v.completion_tokens_details
  return u
}

/** The events of one streamed chunk; an error chunk (OpenAI's, llama.cpp's or vLLM's shape) throws. */
export function eventsOfChunk(chunk: unknown): EngineEvent[] {
  if (!isObject(chunk)) throw new EngineError('the engine sent a chunk that is not an object')
  if (chunk.error !== undefined || chunk.object === 'error') {
    const e = isObject(chunk.error) ? chunk.error : chunk
    throw new EngineError(`the engine failed mid-answer: ${typeof e.message === 'string' ? e.message.slice(0, ERROR_TEXT_MAX) : 'no message'}`)
  }
  const out: EngineEvent[] = []
  const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
  if (isObject(choice)) {
    const delta = isObject(choice.delta) ? choice.delta : {}
    // llama-server and older vLLM name the thinking reasoning_content, vLLM 0.10 on `reasoning`.
    const thought = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : typeof delta.reasoning === 'string' ? delta.reasoning : ''
    if (thought !== '') out.push({ reasoning: thought })
    if (typeof delta.content === 'string' && delta.content !== '') out.push({ content: delta.content })
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) out.push({ tool_calls: delta.tool_calls.slice(0, 128) })
    if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') out.push({ finish: choice.finish_reason.slice(0, 32) })
  }
  const usage = usageOf(chunk.usage)
  if (usage) out.push({ usage })
  return out
}

/** A whole chat.completion (an engine that answered without streaming) as the same events. */
function eventsOfCompletion(body: unknown): EngineEvent[] {
  if (!isObject(body)) throw new EngineError('the engine answered with JSON that is not a chat completion')
  if (body.error !== undefined || body.object === 'error') return eventsOfChunk(body)
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined
  if (!isObject(choice) || !isObject(choice.message)) throw new EngineError('the engine answered with JSON that is not a chat completion')
  const m = choice.message
  const out: EngineEvent[] = []
  if (typeof m.content === 'string' && m.content !== '') out.push({ content: m.content })
  if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) out.push({ tool_calls: m.tool_calls.slice(0, 128).map((c, index) => (isObject(c) ? { index, ...c } : c)) })
  out.push({ finish: typeof choice.finish_reason === 'string' ? choice.finish_reason.slice(0, 32) : 'stop' })
  const usage = usageOf(body.usage)
  if (usage) out.push({ usage })
  return out
}

export function createEngine(spec: EngineSpec, deps: OpenAiEngineDeps): Engine {
  return spec.url === 'builtin' ? new BuiltinEngine(spec) : new OpenAiEngine(spec, deps)
}
