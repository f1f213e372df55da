// Request bodies: JSON only on state-changing routes (415 otherwise), at most SVC_MAX_BODY_BYTES;
// binary (application/octet-stream) only on routes that declare `detail.body = 'binary'`, read
// whole, or handed over unread as a BodyStream where the route also declares `x-body-stream`.
// The caller is authorized before a byte is read, and the bytes being read across all requests
// are bounded: an anonymous caller holding half-sent 65 MiB bodies took the leader from 60 to
// 540 MiB with 8 connections (issue 26, item 1).
import { Elysia } from 'elysia'
import { AppError, invalid, isStorageFull } from '../errors'
import type { PolicyIndex, RequestGate } from './policy'

/** Bytes of request bodies being read at once, across all requests. Full means a fast 503. */
export class BodyBudget {
  inFlight = 0
  constructor(readonly maxBytes: number) {}

  take(bytes: number): void {
    if (this.inFlight + bytes > this.maxBytes) {
      throw new AppError('service_unavailable', 'The leader is reading too many request bodies at once; retry shortly.', { retryAfterS: 1 })
    }
    this.inFlight += bytes
  }

  give(bytes: number): void {
    this.inFlight -= bytes
  }
}

/** The server's idle timeout (s): long polls (relay pop, inference requests) hold a request up to
 * 30 s. A streamed body's connection gets it back once the body is in (BodyStream.toFile). */
export const SERVER_IDLE_TIMEOUT_S = 120

const unlimited = new BodyBudget(Number.MAX_SAFE_INTEGER)

/** How long a whole body may take to arrive: a body trickled at 1 byte / 5 s held a connection 125 s. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000

function timedOut(ms: number): AppError {
  return new AppError('request_timeout', `The request body did not arrive within ${Math.round(ms / 1000)} s.`)
}

/**
 * Body reads waiting on their deadline. One sweep a second rejects the overdue ones: a timer per
 * request (setTimeout + clearTimeout + a race) was 2.5 % of the leader's CPU per heartbeat.
 */
const waiting = new Set<{ deadline: number; ms: number; reject(e: AppError): void }>()
let sweeper: ReturnType<typeof setInterval> | null = null

function sweep(): void {
  const now = performance.now()
  for (const w of waiting) {
    if (w.deadline > now) continue
    waiting.delete(w)
    w.reject(timedOut(w.ms))
  }
  if (waiting.size === 0 && sweeper !== null) {
    clearInterval(sweeper)
    sweeper = null
  }
}

/** `p`, or a 408 once `ms` have passed (to within the sweep's second, or a tenth of `ms` if shorter). */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const w = { deadline: performance.now() + ms, ms, reject }
    waiting.add(w)
    if (sweeper === null) {
      sweeper = setInterval(sweep, Math.min(1000, Math.max(10, ms / 10)))
      sweeper.unref?.()
    }
    p.then(
      (v) => {
        waiting.delete(w)
        resolve(v)
      },
      (e) => {
        waiting.delete(w)
        reject(e)
      },
    )
  })
}

export async function readLimited(request: Request, limit: number, budget: BodyBudget = unlimited, timeoutMs = DEFAULT_BODY_TIMEOUT_MS): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) {
    throw new AppError('payload_too_large', `The body is larger than ${limit} bytes.`)
  }
  // A declared length frames the body (the server reads exactly that many bytes) and was checked
  // just above, so read it in one call: pulling it through a ReadableStream reader was about a
  // fifth of the leader's CPU per heartbeat (docs/benchmarks.md). Only a body without a length
  // (chunked) needs the counting loop below.
  if (declared !== null && Number.isSafeInteger(Number(declared))) {
    const reserved = Number(declared)
    budget.take(reserved)
    try {
      const bytes = await within(request.bytes(), timeoutMs)
      // Over HTTP the length frames the body; an in-process Request (app.handle) can still lie.
      if (bytes.byteLength > limit) throw new AppError('payload_too_large', `The body is larger than ${limit} bytes.`)
      return bytes
    } finally {
      budget.give(reserved)
    }
  }
  if (request.body === null) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = request.body.getReader()
  const deadline = performance.now() + timeoutMs
  try {
    for (;;) {
      const { done, value } = await within(reader.read(), Math.max(1, deadline - performance.now()))
      if (done) break
      size += value.byteLength
      if (size > limit) throw new AppError('payload_too_large', `The body is larger than ${limit} bytes.`)
      budget.take(value.byteLength)
      chunks.push(value)
    }
  } catch (e) {
    await reader.cancel().catch(() => {})
    throw e
  } finally {
    budget.give(chunks.reduce((n, c) => n + c.byteLength, 0))
  }
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

const decoder = new TextDecoder('utf-8', { fatal: true })

/**
 * Deepest nesting a JSON body may have. Real bodies nest a few levels (a job's config a few more).
 * A deeper one is refused before parsing: Elysia echoes a refused value into its validation error
 * (pretty-printed, so a 100 kB body of nested brackets cost seconds of CPU) and walks it
 * recursively (a few thousand levels overflowed the stack: a 500).
 */
export const MAX_JSON_DEPTH = 64

/** True when brackets outside strings nest deeper than `max`; one pass, no recursion. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return false
}

export async function readJson(request: Request, limit: number, budget: BodyBudget = unlimited, timeoutMs = DEFAULT_BODY_TIMEOUT_MS): Promise<unknown> {
  return parseJsonBody(await readLimited(request, limit, budget, timeoutMs))
}

/** A content type (without its parameters, lower case) that announces a JSON body. */
export const isJsonType = (ct: string) => ct === 'application/json' || (ct.startsWith('application/') && ct.endsWith('+json'))

/**
 * The charset a JSON body's Content-Type names when it is not UTF-8 (null when it names none or
 * UTF-8): JSON travels as UTF-8 (RFC 8259), and such a body would be read wrongly or refused as
 * "not valid UTF-8" (415 names the charset instead).
 */
export function foreignCharset(request: Request): string | null {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(request.headers.get('content-type') ?? '')
  if (!m) return null
  const cs = m[1]!.toLowerCase()
  return cs === 'utf-8' || cs === 'utf8' ? null : m[1]!
}

/** A read body as JSON (undefined when empty), with the same refusals as every JSON route. */
export function parseJsonBody(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) return undefined
  let text: string
  try {
    text = decoder.decode(bytes)
  } catch {
    throw new AppError('bad_request', 'The body is not valid UTF-8.')
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new AppError('bad_request', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new AppError('bad_request', 'The body is not valid JSON.')
  }
  // JSON.parse makes "__proto__" an own key, which Elysia's compiled closed schemas let through
  // (POST /pools answered 201): refuse it like any unknown field, before any code can merge it.
  // Only a body that names it (or hides it behind a \u escape) is walked.
  if (text.includes('proto') || text.includes('\\u')) {
    const at = protoKeyPath(value, '')
    if (at !== null) throw new AppError('validation_failed', `body ${at}: Unknown field.`, { errors: [{ path: at, message: 'Unknown field.' }] })
  }
  // A \u escape can make half of a UTF-16 pair ("a\ud800b"), which is no text: it was stored and
  // then broke whatever encoded it again (mail, logs, other JSON readers). Only a body with such an
  // escape is walked.
  if (/\\u[dD][89a-fA-F]/.test(text)) {
    const at = brokenTextPath(value, '')
    if (at !== null) throw new AppError('validation_failed', `body ${at}: holds half of a UTF-16 surrogate pair, which is no text.`, { errors: [{ path: at, message: 'holds half of a UTF-16 surrogate pair, which is no text' }] })
  }
  return value
}

/** The JSON pointer of the first string (value or key) that is not well-formed UTF-16, or null. */
function brokenTextPath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.isWellFormed() ? null : path || '/'
  if (value === null || typeof value !== 'object') return null
  for (const [k, v] of Object.entries(value)) {
    const at = `${path}/${k}`
    if (!k.isWellFormed()) return at
    const hit = brokenTextPath(v, at)
    if (hit !== null) return hit
  }
  return null
}

/** The JSON pointer of the first own `__proto__` key, or null. Depth is bounded by MAX_JSON_DEPTH. */
function protoKeyPath(value: unknown, path: string): string | null {
  if (value === null || typeof value !== 'object') return null
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = protoKeyPath(value[i], `${path}/${i}`)
      if (hit !== null) return hit
    }
    return null
  }
  if (Object.hasOwn(value, '__proto__')) return `${path}/__proto__`
  for (const [k, v] of Object.entries(value)) {
    const hit = protoKeyPath(v, `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`)
    if (hit !== null) return hit
  }
  return null
}

/**
 * The body of a streamed binary route (detail['x-body-stream']), unread: what the parser hands the
 * handler instead of bytes, so an artifact of gigabytes goes to disk a chunk at a time. Reading
 * keeps the rules of the other bodies: the caller was authorized before this exists, a declared
 * length over the limit is refused before a byte is read, each chunk's bytes count against the
 * shared budget until the consumer asks for the next one, and a body that stalls for the body
 * timeout is cut (408). There is no deadline for the whole body: gigabytes take minutes.
 */
export class BodyStream {
  constructor(
    private request: Request,
    readonly limit: number,
    private budget: BodyBudget,
    private idleTimeoutMs: number,
    /** The server the request came through (absent for an in-process Request): toFile needs it. */
    private server: Bun.Server<unknown> | null = null,
    /** toFile's idle timeout (s): SVC_UPLOAD_IDLE_TIMEOUT_S. */
    private copyIdleS = 60,
    /**
     * Run when the whole body is in: the request gate's second decision (a removed member's or a
     * revoked token's upload does not complete). Throws the refusal.
     */
    private whenDone: () => void = () => {},
  ) {}

  /** Content-Length, when the client sent one (and it is a number). */
  get declaredBytes(): number | null {
    const v = this.request.headers.get('content-length')
    return v !== null && /^\d{1,16}$/.test(v) ? Number(v) : null
  }

  /** True when toFile can copy the body: its length is declared and it came over a connection. */
  get copyable(): boolean {
    return this.declaredBytes !== null && this.server !== null && this.request.body !== null
  }

  /**
   * The body written into the open, empty file `fd` by Bun's own copy, no
   * JavaScript per chunk: about twice the rate of pulling chunks through a reader (an artifact
   * upload, docs/benchmarks.md). Only when `copyable`. A body that makes no progress for
   * SVC_UPLOAD_IDLE_TIMEOUT_S has its connection closed (a 408 cannot be answered while the copy
   * holds the body; and a disk that cannot keep up stops the copy reading, so the body timeout
   * would cut uploads the client is sending fine); what arrived stays in the file either way, and
   * the caller learns how much from the file. Resolves with the bytes written; rejects with a 400
   * when the connection broke off.
   */
  async toFile(fd: number): Promise<number> {
    const declared = this.declaredBytes
    if (declared === null || this.server === null || this.request.body === null) throw new Error('toFile: the body is not copyable')
    if (declared > this.limit) throw new AppError('payload_too_large', `The body is larger than ${this.limit} bytes.`)
    // Memory holds what the copy has in hand (Bun's read buffer), not the body: no budget share.
    this.server.timeout(this.request, this.copyIdleS)
    let written: number
    try {
      written = await Bun.write(Bun.file(fd), this.request)
    } catch (e) {
      // The file refused the bytes (a full disk, a file-size limit): the leader's trouble, a 507,
      // not the client's body cut off (a 400 told the fellow to send what it had sent in full).
      if (isStorageFull(e)) throw e
      throw new AppError('bad_request', 'The request body was cut off before its end.')
    } finally {
      this.server.timeout(this.request, SERVER_IDLE_TIMEOUT_S)
    }
    this.whenDone()
    return written
  }

  async *chunks(): AsyncGenerator<Uint8Array> {
    const declared = this.declaredBytes
    if (declared !== null && declared > this.limit) throw new AppError('payload_too_large', `The body is larger than ${this.limit} bytes.`)
    if (this.request.body === null) return this.whenDone()
    const reader = this.request.body.getReader()
    let size = 0
    try {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>
        try {
          next = await within(reader.read(), this.idleTimeoutMs)
        } catch (e) {
          if (e instanceof AppError) throw e
          // The client went away (or its connection broke) mid-body: a refusal, not a 500.
          throw new AppError('bad_request', 'The request body was cut off before its end.')
        }
        if (next.done) return this.whenDone()
        const chunk = next.value
        size += chunk.byteLength
        if (size > this.limit) throw new AppError('payload_too_large', `The body is larger than ${this.limit} bytes.`)
        this.budget.take(chunk.byteLength)
        try {
          yield chunk
        } finally {
          this.budget.give(chunk.byteLength)
        }
      }
    } finally {
      await reader.cancel().catch(() => {})
    }
  }
}

export interface BodyLimits {
  /** A copied upload body's idle timeout (s). */
  copyIdleS: number
  maxJsonBytes: number
  maxBinaryBytes: number
  /** The largest streamed body (BodyStream). */
  maxStreamBytes: number
  budget: BodyBudget
  timeoutMs: number
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

export function bodyPlugin({ maxJsonBytes, maxBinaryBytes, maxStreamBytes, budget, timeoutMs, copyIdleS }: BodyLimits, index: PolicyIndex, gate: RequestGate) {
  return new Elysia({ name: 'body' }).onParse({ as: 'global' }, async ({ request, contentType, route, server }) => {
    // Credential, route class and CSRF first: a refused caller's body is never read. Then once
    // more when the body is in (src/http/policy.ts, requestGate): it may have taken its time.
    gate(request, route, server)
    const again = () => void gate.again(request, route, server)
    // Elysia hands over an empty content type for an empty body (Content-Length: 0): the header says.
    const ct = (contentType || request.headers.get('content-type') || '').trim().toLowerCase()
    const meta = index.lookup(request.method, route)
    if (meta.binary) {
      // Unread, and refused by the handler once it has checked the caller's job: a fellow of another
      // pool learns "not found" there, not that it sent the wrong type to a job it cannot see.
      if (ct !== 'application/octet-stream') return { unsupportedMediaType: ct }
      if (meta.stream) return new BodyStream(request, maxStreamBytes, budget, timeoutMs, server ?? null, copyIdleS, again)
      const bytes = await readLimited(request, maxBinaryBytes, budget, timeoutMs)
      again()
      return bytes
    }
    if (isJsonType(ct)) {
      const charset = foreignCharset(request)
      if (charset !== null) throw new AppError('unsupported_media_type', `Send JSON as UTF-8 (charset=utf-8, or no charset); this body says charset=${charset.slice(0, 40)}.`)
      const value = await readJson(request, maxJsonBytes, budget, timeoutMs)
      again()
      // A route that takes no body refuses one with something in it: a field sent there would
      // otherwise be dropped without a word ({"to": ...} to the test mail went to the admin).
      if (meta.bodyless && value !== undefined && !(isRecord(value) && Object.keys(value).length === 0)) {
        throw invalid('body: this request takes no body; send none (or {}).', { errors: [{ path: '/', message: 'takes no body' }] })
      }
      if (meta.objectBody && Array.isArray(value)) {
        throw invalid('body: must be a JSON object ({...}), not a list.', { errors: [{ path: '/', message: 'must be a JSON object' }] })
      }
      return value
    }
    // No content type: fine when there is no body at all (a bodiless POST or DELETE).
    if (ct === '' && (await readLimited(request, maxJsonBytes, budget, timeoutMs)).byteLength === 0) {
      again()
      return undefined
    }
    throw new AppError('unsupported_media_type', 'Send a JSON body with Content-Type: application/json.')
  })
}
