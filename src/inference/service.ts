// Inference: which models a caller may use, routing a chat request to a fellow that serves the
// model, and the fellow's side of the transport. Scoping: a caller sees the catalog rows its pools
// may see plus what online fellows of its pools advertise in heartbeats; it is routed only to
// online fellows of its own pools. A model outside that view is "not found", like any foreign id.
//
// The default pool is the exception for unscoped callers (admins, or anyone with operator auth
// off): anyone may put a fellow there without a token, so its fellows would otherwise be handed an
// admin's prompts by claiming a model in a heartbeat (issue 26). They serve a request only when it
// names the default pool in `pool_id`; a member of a pool keeps being routed within their pools.
import { eq } from 'drizzle-orm'
import { pools } from '../db/schema'
import { AppError, notFound } from '../errors'
import { inScope, poolExists, scopeOf } from '../pools/scope'
import { MemoryInferenceHub, type MemoryInferenceHubOptions } from './memory-hub'
import type { InferenceHub, PostResult, Ticket, TokenUsage } from './hub'
import type { Ctx } from '../context'
import { monotonicNow } from '../time'
import type { Caller } from '../caller'
import type { FellowRegistry, LiveFellow } from '../fellows/live'
import type { Servables } from '../servables/service'
import type { LoopSpec } from '../loops'
import type { Gauge } from '../observability/metrics'
import type { ChatCompletionInput, ChatMessage, EmbeddingsInput, Frame, InferMessage, InferRequest, ModelObject } from './model'
import type { InferJob } from './hub'
import { CHAT_PARAMS, EMBEDDING_PARAMS, pickParams } from '../wire/inference'

/** Contract: a long-poll holds at most 30 s. */
export const MAX_POLL_WAIT_MS = 30_000

/** Retry-After when no online fellow serves a model: about when a starting one's engine is up. */
const NO_SERVER_RETRY_S = 5

export interface OpenedCompletion {
  ticket: Ticket
  /** The OpenAI completion id (chatcmpl-...); the transport's request id is ticket.id. */
  id: string
  created: number
  model: string
  stream: boolean
  includeUsage: boolean
}

/** OpenAI content may be a list of parts; fellows get the text of the text parts. */
function textOf(content: ChatMessage['content']): string | null {
  if (typeof content === 'string') return content
  if (!content) return null
  return content.map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('')
}

/** A message as the transport carries it: text content and the fields of a tool conversation. */
function messageOf(m: ChatMessage): InferMessage {
  const out: InferMessage = { role: m.role, content: textOf(m.content) }
  if (m.name !== undefined) out.name = m.name
  if (m.tool_calls != null) out.tool_calls = m.tool_calls
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id
  return out
}


function defaultPoolLookup(ctx: Ctx) {
  return ctx.db.select({ id: pools.id }).from(pools).where(eq(pools.isDefault, true)).prepare()
}

export class Inference {
  readonly hub: InferenceHub
  /** Requests and tokens served and frames posted since start (the svc_inference_* counters). */
  readonly counts = { requestsServed: 0, tokensServed: 0, frames: 0 }
  /** Also told of every finished request (the contribution meter). */
  private onServed: (fellowId: string, usage: TokenUsage, ts: number) => void
  private rr = 0
  /** Read on every request, not kept: an admin may delete the default pool and it is created anew. */
  private defaultPool: ReturnType<typeof defaultPoolLookup>

  /** `makeHub` swaps the in-memory queues for another InferenceHub (a shared bus, say). */
  constructor(
    private ctx: Ctx,
    private registry: FellowRegistry,
    private servables: Servables,
    opts: {
      onServed?: (fellowId: string, usage: TokenUsage, ts: number) => void
      makeHub?: (opts: MemoryInferenceHubOptions) => InferenceHub
    } = {},
  ) {
    this.defaultPool = defaultPoolLookup(ctx)
    this.onServed = opts.onServed ?? (() => {})
    const makeHub = opts.makeHub ?? ((o: MemoryInferenceHubOptions) => new MemoryInferenceHub(o))
    this.hub = makeHub({
      // Timeouts measure how long a request waited: on the monotonic clock, so a step of the wall
      // clock neither ends every open request (forward) nor leaves them waiting for the step (back).
      now: () => monotonicNow(ctx.clock),
      timeoutMs: ctx.cfg.inferDispatchTimeoutS * 1000,
      onServed: (fellowId, usage) => {
        this.counts.requestsServed++
        this.counts.tokensServed += usage.prompt_tokens + usage.completion_tokens
        this.onServed(fellowId, usage, ctx.clock.now())
      },
    })
  }

  /**
   * Online fellows of the scope that say (in their last heartbeat) they serve `model`. An unscoped
   * scope (null) leaves out the default pool's fellows; naming that pool makes a scope of it alone.
   */
  private servers(scope: Set<string> | null, model: string | null): LiveFellow[] {
    const now = this.ctx.clock.now()
    const anonymous = scope === null ? (this.defaultPool.get()?.id ?? null) : null
    return this.registry
      .inPools(scope)
      .filter((f) => f.poolId !== null && f.poolId !== anonymous && !f.released && (model === null || f.servables.includes(model)) && this.registry.stateOf(f, now) === 'online')
  }

  models(caller: Caller): ModelObject[] {
    const scope = scopeOf(this.ctx.db, caller)
    const created = this.servables.visibleNames(scope)
    const fellows = new Map<string, number>()
    for (const f of this.servers(scope, null)) for (const m of new Set(f.servables)) fellows.set(m, (fellows.get(m) ?? 0) + 1)
    const now = this.ctx.clock.now()
    const names = [...new Set([...created.keys(), ...fellows.keys()])].sort()
    return names.map((id) => ({ id, object: 'model' as const, created: Math.floor((created.get(id) ?? now) / 1000), owned_by: 'svc', fellows: fellows.get(id) ?? 0 }))
  }

  model(caller: Caller, name: string): ModelObject {
    const m = this.models(caller).find((x) => x.id === name)
    if (!m) throw this.modelNotFound(name)
    return m
  }

  private modelNotFound(name: string): AppError {
    return new AppError('model_not_found', `The model '${name}' does not exist or you do not have access to it.`)
  }

  /**
   * Routes a chat request to the least loaded online fellow of the caller's pools serving the
   * model, or of the one pool it names in `pool_id` (one of the caller's; a foreign pool is not found).
   */
  open(caller: Caller, input: ChatCompletionInput): OpenedCompletion {
    const stream = input.stream === true
    // Nothing a caller sends reaches an engine unless it is named in CHAT_PARAMS (or is a message).
    const params = pickParams(input, CHAT_PARAMS)
    const ticket = this.submit(caller, input.model, input.pool_id, {
      kind: 'chat',
      model: input.model,
      messages: input.messages.map(messageOf),
      max_tokens: input.max_completion_tokens ?? input.max_tokens ?? null,
      stream,
      ...(input.temperature != null ? { temperature: input.temperature } : {}),
      ...(input.top_p != null ? { top_p: input.top_p } : {}),
      ...(params ? { params } : {}),
    })
    return {
      ticket,
      id: `chatcmpl-${ticket.id}`,
      created: Math.floor(this.ctx.clock.now() / 1000),
      model: input.model,
      stream,
      includeUsage: input.stream_options?.include_usage === true,
    }
  }

  /** An embeddings request, routed like a chat request; its answer is one result. */
  openEmbeddings(caller: Caller, input: EmbeddingsInput): OpenedCompletion {
    const ticket = this.submit(caller, input.model, input.pool_id, {
      kind: 'embeddings',
      model: input.model,
      messages: [],
      max_tokens: null,
      stream: false,
      params: pickParams(input, EMBEDDING_PARAMS)!,
    })
    return { ticket, id: ticket.id, created: Math.floor(this.ctx.clock.now() / 1000), model: input.model, stream: false, includeUsage: false }
  }

  private submit(caller: Caller, name: string, poolId: string | undefined, job: InferJob) {
    const callerScope = scopeOf(this.ctx.db, caller)
    if (poolId !== undefined && (!inScope(callerScope, poolId) || !poolExists(this.ctx.db, poolId))) {
      throw notFound('Pool')
    }
    const scope = poolId !== undefined ? new Set([poolId]) : callerScope
    const candidates = this.servers(scope, name)
    if (candidates.length === 0) {
      const anonymous = scope === null ? this.defaultPool.get()?.id : undefined
      if (anonymous !== undefined && this.servers(new Set([anonymous]), name).length > 0) {
        throw new AppError('service_unavailable', `Only fellows of the default pool serve the model '${name}'; they take a request only when it names that pool: "pool_id": "${anonymous}".`)
      }
      if (!this.servables.visibleNames(callerScope).has(name)) throw this.modelNotFound(name)
      throw new AppError('service_unavailable', `No online fellow in ${poolId !== undefined ? 'that pool' : 'your pools'} serves the model '${name}' right now.`, { retryAfterS: NO_SERVER_RETRY_S })
    }
    const f = this.leastLoaded(candidates, name)
    return this.hub.submit(f.id, job, f.poolId!)
  }

  /**
   * The fellow for the next request of the model: among those with room (fewer requests in flight
   * than the capacity it said for the model: its engine's max_concurrent), the one with the fewest
   * in flight; when every one is full, the one least over its capacity (it queues there until the
   * dispatch timeout). Ties rotate, so equally idle fellows share the work. The capacity is a
   * fellow's word about itself, so it only says when a fellow is full: weighing the load by it let
   * one that claimed 10,000 take nearly every request of the pool's model (a member's machine
   * answering, with whatever it liked, for another member's engine).
   */
  private leastLoaded(candidates: LiveFellow[], model: string): LiveFellow {
    let best: LiveFellow[] = []
    let bestKey: [number, number] = [Infinity, Infinity]
    for (const f of candidates) {
      const cap = f.capacity !== null && Object.hasOwn(f.capacity, model) ? f.capacity[model]! : 1
      const inFlight = this.hub.inFlight(f.id)
      const key: [number, number] = inFlight < cap ? [0, inFlight] : [1, inFlight / cap]
      const order = key[0] - bestKey[0] || key[1] - bestKey[1]
      if (order < 0) [bestKey, best] = [key, [f]]
      else if (order === 0) best.push(f)
    }
    return best[this.rr++ % best.length]!
  }

  /** Which fellows serve which model now, with their capacity and load (the inference page). */
  serving(caller: Caller): { model: string; fellows: { id: string; hostname: string; pool_id: string; capacity: number; in_flight: number }[] }[] {
    const byModel = new Map<string, { id: string; hostname: string; pool_id: string; capacity: number; in_flight: number }[]>()
    for (const f of this.servers(scopeOf(this.ctx.db, caller), null)) {
      for (const m of new Set(f.servables)) {
        const cap = f.capacity !== null && Object.hasOwn(f.capacity, m) ? f.capacity[m]! : 1
        const list = byModel.get(m) ?? []
        list.push({ id: f.id, hostname: f.hostname, pool_id: f.poolId!, capacity: cap, in_flight: this.hub.inFlight(f.id) })
        byModel.set(m, list)
      }
    }
    return [...byModel.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([model, fellows]) => ({ model, fellows }))
  }

  /** A fellow's long-poll for work: only its own queue, even with a valid token of another fellow. */
  poll(caller: Caller, fellowId: string, waitMs: number, signal?: AbortSignal): Promise<InferRequest | null> {
    if (caller.kind === 'node' && caller.fellowId !== fellowId) throw new AppError('forbidden', 'This node token belongs to another fellow.')
    const f = this.registry.get(fellowId)
    if (!f || f.released) throw new AppError('not_found', 'Fellow not found')
    return this.hub.next(fellowId, Math.min(waitMs, MAX_POLL_WAIT_MS), signal)
  }

  /**
   * Frames from a fellow. SPEC node auth rule 2: the credential is checked against the fellow the
   * request was dispatched to, not any registered node. A caller without a token gets this far only
   * with SVC_REQUIRE_NODE_AUTH=0, where missing credentials pass.
   */
  post(caller: Caller, requestId: string, frames: Frame[]): void {
    const r = this.deliver(caller.kind === 'node' ? caller.fellowId : null, requestId, frames)
    if (r === 'gone') throw new AppError('gone', 'The request is unknown or finished, or its client went away: stop generating.')
    if (r === 'not_yours') throw new AppError('forbidden', 'This request was not dispatched to this fellow.')
    if (r === 'full') throw new AppError('rate_limited', 'The client has not read the earlier frames yet; resend this batch shortly.', { retryAfterS: 1 })
  }

  /** Frames of a request, from the fellow it was dispatched to (a POST or the inference socket). */
  deliver(fellowId: string | null, requestId: string, frames: Frame[]): PostResult {
    const r = this.hub.post(requestId, fellowId, frames)
    if (r === 'ok') this.counts.frames += frames.length
    return r
  }

  /** Whether a fellow may take requests now (known and not released): checked as its socket opens. */
  mayServe(fellowId: string): boolean {
    const f = this.registry.get(fellowId)
    return !!f && !f.released
  }

  /** Ends requests that timed out (by the context's monotonic clock, so tests drive it with a fake one). */
  expire(): number {
    return this.hub.expire(monotonicNow(this.ctx.clock))
  }

  loops(): LoopSpec[] {
    return [{ name: 'inference-timeouts', intervalMs: 250, run: () => void this.expire() }]
  }

  /** The svc_inference_* series of /metrics. */
  metrics(): Gauge[] {
    const s = this.hub.stats()
    const c = this.counts
    return [
      { name: 'svc_inference_requests', help: 'Inference requests open, queued for a fellow, and fellows long-polling.', type: 'gauge', samples: [{ labels: { state: 'open' }, value: s.open }, { labels: { state: 'queued' }, value: s.queued }, { labels: { state: 'waiting_fellows' }, value: s.waiters }] },
      { name: 'svc_inference_served_total', help: 'Inference requests completed by fellows.', type: 'counter', samples: [{ value: c.requestsServed }] },
      { name: 'svc_inference_tokens_total', help: 'Tokens served (prompt and completion).', type: 'counter', samples: [{ value: c.tokensServed }] },
      { name: 'svc_inference_frames_total', help: 'Response frames posted by fellows.', type: 'counter', samples: [{ value: c.frames }] },
    ]
  }

  close(): void {
    this.hub.closeAll()
  }
}
