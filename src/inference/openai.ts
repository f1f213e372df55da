// OpenAI's wire format for the chat routes: completion bodies, SSE chunks and the error shape
// {error: {message, type, param, code}}, so the official clients work against {base_url}/api/v1.
import { AppError } from '../errors'
import { statusOf } from '../http/problem'
import { MAX_ANSWER_CHARS, deltaChars, type Ending, type TokenUsage } from './hub'
import type { OpenedCompletion } from './service'
import { CHAT_FIELD_RULES, CHAT_MESSAGE_RULES, EMBEDDING_FIELD_RULES, type ChatCompletion, type EmbeddingList, type ToolCall, type Usage } from './model'

/** How long an idle SSE stream waits before a comment line keeps proxies and idle timers at bay. */
const KEEP_ALIVE_MS = 15_000
/** A non-streaming client waits in reads of this length; the frame timeout ends a stalled fellow. */
const COLLECT_READ_MS = 60_000

/** OpenAI's usage object: the engine's counts and detail objects; its own members stay behind. */
export function usageOf(u: TokenUsage): Usage {
  const out: Usage = { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens }
  if (u.prompt_tokens_details != null) out.prompt_tokens_details = u.prompt_tokens_details
  if (u.completion_tokens_details != null) out.completion_tokens_details = u.completion_tokens_details
  return out
}

/** The rules of both routes' fields (chat and embeddings share model and pool_id). */
const FIELD_RULES: Record<string, { message: string; unsupported?: true }> = { ...EMBEDDING_FIELD_RULES, ...CHAT_FIELD_RULES }

function typeFor(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 429) return 'rate_limit_error'
  if (status >= 500) return 'server_error'
  return 'invalid_request_error'
}

export function errorBody(status: number, code: string, message: string, param: string | null = null) {
  return { error: { message, type: typeFor(status), param, code } }
}

interface Problem {
  status?: number
  detail?: string
  code?: string
  errors?: { path?: string }[]
}

/** The plain words and OpenAI code for a refused field, by its dotted param (`messages.0.role`). */
function ruleFor(param: string): { message: string; code: string } | null {
  const [top = '', index, field = ''] = param.split('.')
  if (top === 'messages' && index !== undefined && /^\d+$/.test(index)) {
    // Own keys only: a refused "__proto__" member names Object.prototype's, not a rule.
    const text = Object.hasOwn(CHAT_MESSAGE_RULES, field) ? CHAT_MESSAGE_RULES[field] : undefined
    return text === undefined ? null : { message: text.replaceAll('{i}', index), code: 'validation_failed' }
  }
  const rule = Object.hasOwn(FIELD_RULES, top) ? FIELD_RULES[top] : undefined
  return rule === undefined ? null : { message: rule.message, code: rule.unsupported ? 'unsupported_parameter' : 'validation_failed' }
}

/**
 * Rewrites a problem+json answer (from the policy layer, the body parser, validation or a service)
 * into OpenAI's error shape, keeping status and headers such as Retry-After. Anything else passes.
 *
 * One status changes: a refused field is 400, not the 422 of the rest of the API. OpenAI answers a
 * request it cannot take with 400 invalid_request_error and its clients raise BadRequestError for
 * it; a 422 would surface as UnprocessableEntityError, which code written for OpenAI does not
 * expect. The hook sets `set.status` to the answer actually sent, so the access log and the HTTP
 * counters record 400 too.
 */
export function asOpenAiError(c: { responseValue: unknown; set: { status?: number | string } }): Promise<Response> | undefined {
  const res = c.responseValue
  // Synchronous when there is nothing to rewrite: Elysia reads a promise as a replacement answer.
  if (!(res instanceof Response) || !(res.headers.get('content-type') ?? '').startsWith('application/problem+json')) return undefined
  // 422 is validation_failed and nothing else (src/http/problem.ts).
  const status = res.status === 422 ? 400 : res.status
  c.set.status = status
  return rewriteProblem(res, status)
}

async function rewriteProblem(res: Response, status: number): Promise<Response> {
  let p: Problem = {}
  try {
    p = (await res.json()) as Problem
  } catch {
    // An unreadable problem body still gets a well-formed OpenAI error below.
  }
  const path = p.errors?.[0]?.path?.replace(/^\//, '').replaceAll('/', '.')
  const headers = new Headers(res.headers)
  headers.set('content-type', 'application/json')
  headers.delete('content-length')
  headers.delete('content-encoding') // the body below is built here, plain
  const rule = p.code === 'validation_failed' && path ? ruleFor(path) : null
  const body = errorBody(status, rule?.code ?? p.code ?? 'error', rule?.message ?? p.detail ?? res.statusText, path ? path : null)
  return new Response(JSON.stringify(body), { status, headers })
}

const failure = (end: Extract<Ending, { ok: false }>) => new AppError(end.code, end.message)

/**
 * Tool calls put together from their stream deltas: a delta with an `index` adds to that call
 * (its id, type and name when first given; its arguments text appended), as OpenAI's clients do.
 */
export class ToolCallMerger {
  private readonly calls: ToolCall[] = []

  add(deltas: unknown[]): void {
    for (const d of deltas) {
      if (typeof d !== 'object' || d === null) continue
      const delta = d as { index?: unknown; id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } }
      const i = typeof delta.index === 'number' && Number.isInteger(delta.index) && delta.index >= 0 && delta.index < 128 ? delta.index : this.calls.length
      const call = (this.calls[i] ??= { id: '', type: 'function', function: { name: '', arguments: '' } })
      if (typeof delta.id === 'string' && call.id === '') call.id = delta.id
      if (typeof delta.type === 'string') call.type = delta.type
      if (typeof delta.function?.name === 'string') call.function.name += delta.function.name
      if (typeof delta.function?.arguments === 'string') call.function.arguments += delta.function.arguments
    }
  }

  get result(): ToolCall[] {
    return this.calls.filter((c) => c !== undefined)
  }
}

/**
 * Waits for the whole answer (non-streaming); a failed request throws its AppError. An answer past
 * MAX_ANSWER_CHARS ends the request (its fellow's next post is told to stop) and throws.
 */
export async function collectCompletion(o: OpenedCompletion): Promise<ChatCompletion> {
  const parts: string[] = []
  const tools = new ToolCallMerger()
  let sawTools = false
  let chars = 0
  for (;;) {
    const out = await o.ticket.read(COLLECT_READ_MS)
    for (const d of out.deltas) chars += deltaChars(d)
    if (chars > MAX_ANSWER_CHARS) {
      o.ticket.cancel()
      throw new AppError('fellow_failed', `The answer of the engine serving ${o.model} is longer than ${MAX_ANSWER_CHARS} characters, the most a non-streamed answer may be; ask with "stream": true for a longer one.`)
    }
    for (const d of out.deltas) {
      if (typeof d === 'string') parts.push(d)
      else {
        sawTools = true
        tools.add(d.tool_calls)
      }
    }
    if (out.end === null) continue
    if (!out.end.ok) throw failure(out.end)
    const text = parts.join('')
    const message: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content: sawTools && text === '' ? null : text, refusal: null }
    if (sawTools) message.tool_calls = tools.result
    return {
      id: o.id,
      object: 'chat.completion',
      created: o.created,
      model: o.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: out.end.finish }],
      usage: usageOf(out.end.usage),
    }
  }
}

/**
 * The engine's embeddings answer, checked for OpenAI's shape (a fellow's `result` is untrusted
 * JSON) and named by the model the caller asked for.
 */
export async function collectEmbeddings(o: OpenedCompletion): Promise<EmbeddingList> {
  for (;;) {
    const out = await o.ticket.read(COLLECT_READ_MS)
    if (out.end === null) continue
    if (!out.end.ok) throw failure(out.end)
    const r = out.end.result as { data?: unknown; usage?: { prompt_tokens?: unknown; total_tokens?: unknown } } | undefined
    const data = Array.isArray(r?.data) ? r.data : null
    const valid =
      data !== null &&
      data.every((e: unknown, i: number) => {
        const x = e as { index?: unknown; embedding?: unknown }
        return typeof x === 'object' && x !== null && (x.index === undefined || x.index === i) && (typeof x.embedding === 'string' || (Array.isArray(x.embedding) && x.embedding.every((v) => typeof v === 'number')))
      })
    if (!valid) throw new AppError('fellow_failed', `The engine serving ${o.model} did not answer with embeddings.`)
    const count = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : fallback)
    const prompt = count(r?.usage?.prompt_tokens, out.end.usage.prompt_tokens)
    return {
      object: 'list',
      data: data.map((e: unknown, index: number) => ({ object: 'embedding' as const, index, embedding: (e as { embedding: number[] | string }).embedding })),
      model: o.model,
      usage: { prompt_tokens: prompt, total_tokens: count(r?.usage?.total_tokens, prompt) },
    }
  }
}

/** Waits until a fellow picked the request up, so a dispatch failure is still a plain HTTP error. */
export async function awaitPickUp(o: OpenedCompletion): Promise<void> {
  const early = await o.ticket.pickedUp
  if (early && !early.ok) throw failure(early)
}

/**
 * The streaming answer: `data: {chunk}` events, then `data: [DONE]`. A failure after the stream
 * began is sent as `data: {error}` (which OpenAI's clients raise) and the stream ends without
 * [DONE]. Closing the stream early (the client went away) cancels the request, so the fellow's
 * next post answers 410. Event ids count up, but a chat stream cannot resume from Last-Event-ID.
 *
 * `allowed` (the caller decided again) is asked before each piece is sent, and may answer from its
 * last decision: a caller whose token was revoked or whose account was disabled while a long answer
 * streams gets an error chunk and the end, and the fellow's request is cancelled.
 */
export function completionStream(o: OpenedCompletion, allowed: () => boolean = () => true): Response {
  let seq = 0
  let begun = false
  let closed = false
  const head = { id: o.id, object: 'chat.completion.chunk', created: o.created, model: o.model, system_fingerprint: null }
  const usageNull = o.includeUsage ? { usage: null } : {}
  const event = (data: unknown) => `id: ${++seq}\ndata: ${JSON.stringify(data)}\n\n`
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    event({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usageNull })
  // Content chunks are most of a stream: only the text is serialized per frame (the same JSON as
  // chunk() writes), unless the marker also occurs elsewhere (a model named like it, say).
  const parts = JSON.stringify({ ...head, choices: [{ index: 0, delta: { content: '\u0000' }, logprobs: null, finish_reason: null }], ...usageNull }).split('"\\u0000"')
  const content =
    parts.length === 2 ? (d: string) => `id: ${++seq}\ndata: ${parts[0]}${JSON.stringify(d)}${parts[1]}\n\n` : (d: string) => chunk({ content: d }, null)
  // Chunks are strings: Bun writes them into the response as UTF-8 itself (encoding each batch
  // here first cost 8 % of the leader's CPU in the flood benchmark).
  const stream = new ReadableStream<string>({
    async pull(controller) {
      if (!begun) {
        begun = true
        controller.enqueue(chunk({ role: 'assistant', content: '' }, null))
        return
      }
      const out = await o.ticket.read(KEEP_ALIVE_MS)
      if (closed) return
      if (!allowed()) {
        closed = true
        o.ticket.cancel()
        controller.enqueue(event(errorBody(401, 'unauthorized', 'The credential of this request was revoked, or its account disabled, while the answer streamed; it stops here.')))
        controller.close()
        return
      }
      let text = ''
      for (const d of out.deltas) text += typeof d === 'string' ? content(d) : chunk({ tool_calls: d.tool_calls }, null)
      const end = out.end
      if (end?.ok) {
        text += chunk({}, end.finish)
        if (o.includeUsage) text += event({ ...head, choices: [], usage: usageOf(end.usage) })
        text += 'data: [DONE]\n\n'
      } else if (end) {
        text += event(errorBody(statusOf(end.code), end.code, end.message))
      }
      controller.enqueue(text === '' ? ': keep-alive\n\n' : text)
      if (end) {
        closed = true
        controller.close()
      }
    },
    cancel() {
      closed = true
      o.ticket.cancel()
    },
  })
  return new Response(stream, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' },
  })
}
