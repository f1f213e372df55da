// HTTP surface of inference: the OpenAI-compatible chat API for people and the transport fellows
// long-poll and post frames to. The model catalog it builds on (src/servables) has its own routes.
//
// Policy of the chat routes: `operator` (a session or an API token), not `chat` (API token only).
// SPEC gives chat clients an API token, and the issue also lets the /ops/inference page call these
// routes with its browser session; `operator` is exactly "session or API token", cookie callers
// pass the CSRF check on POST like everywhere else, and fellows are refused (403).
import { Elysia, t } from 'elysia'
import { AppError } from '../errors'
import { FellowParams } from '../fellows/model'
import { InferSockets, type InferSocket } from './socket'
import { asOpenAiError, awaitPickUp, collectCompletion, collectEmbeddings, completionStream } from './openai'
import type { AppBase } from '../http/base'
import { stopOrLeave, type Ctx } from '../context'
import type { Inference, OpenedCompletion } from './service'
import * as M from './model'
import { upgradeOrRefuse } from '../http/native'
import { stillSees } from '../http/sse'
import { monotonicNow, type Clock } from '../time'

/** A socket of the inference channel as Elysia's dispatcher hands it over: Bun's, with its data. */
type InferWs = InferSocket & { data: { fellowId: string } }

export interface InferenceRouteDeps {
  inference: Inference
}

/**
 * A routed request, once a fellow picked it up; the client going away cancels it. Nothing is
 * written until then (and, without stream, until the answer is complete): no idle timeout for the
 * request; the dispatch and frame timeouts bound it instead, and an SSE stream sends keep-alive
 * comments.
 */
async function pickedUp(opened: OpenedCompletion, request: Request, server: { timeout(r: Request, s: number): void } | null): Promise<OpenedCompletion> {
  if (request.signal.aborted) opened.ticket.cancel()
  else request.signal.addEventListener('abort', () => opened.ticket.cancel(), { once: true })
  server?.timeout(request, 0)
  await awaitPickUp(opened)
  return opened
}

/** How often a streaming answer asks whether its caller may still have it. */
const RECHECK_MS = 5000

/**
 * An `allowed` for a long answer: the caller decided again at most every `everyMs` (a lookup of
 * the credential), the last answer kept in between, so a stream's hot path pays a clock read.
 */
function decidedAgainEvery(clock: Clock, everyMs: number, reauthorize: () => unknown): () => boolean {
  // On the monotonic clock: a step back of the wall clock put off the next check (and with it a
  // revoked token's end) by the step's length.
  let at = monotonicNow(clock)
  let ok = true
  return () => {
    const now = monotonicNow(clock)
    if (ok && now - at >= everyMs) {
      at = now
      ok = stillSees(reauthorize)
    }
    return ok
  }
}

function chatRoutes(base: AppBase, inference: Inference, clock: Clock) {
  return (
    new Elysia({ name: 'inference-chat' })
      .use(base)
      // Local to these routes: every error they answer, whoever raised it, in OpenAI's shape.
      // Destructured, not (c): Elysia reads a hook's parameters to decide what every request
      // must build, and a whole-context hook made it parse cookies (and more) on every heartbeat.
      .mapResponse(({ responseValue, set }) => asOpenAiError({ responseValue, set }))
      .get('/api/v1/models', ({ caller }) => ({ object: 'list' as const, data: inference.models(caller) }), {
        policy: 'operator',
        response: { 200: M.ModelList },
      })
      .get('/api/v1/models/:model', ({ caller, params }) => inference.model(caller, params.model), {
        policy: 'operator',
        params: M.ModelParams,
        response: { 200: M.ModelObject },
      })
      .post(
        '/api/v1/chat/completions',
        async ({ caller, body, request, server, reauthorize }) => {
          const opened = await pickedUp(inference.open(caller, body), request, server)
          if (opened.stream) return completionStream(opened, decidedAgainEvery(clock, RECHECK_MS, reauthorize))
          // A Response either way (the stream is one); the body is built field by field in openai.ts.
          return Response.json(await collectCompletion(opened))
        },
        { policy: 'operator', body: M.ChatCompletionBody, response: { 200: M.ChatCompletion } },
      )
      .post(
        '/api/v1/embeddings',
        async ({ caller, body, request, server }) => {
          const opened = await pickedUp(inference.openEmbeddings(caller, body), request, server)
          return Response.json(await collectEmbeddings(opened))
        },
        { policy: 'operator', body: M.EmbeddingsBody, response: { 200: M.EmbeddingList } },
      )
  )
}

function transportRoutes(base: AppBase, ctx: Ctx, inference: Inference) {
  const sockets = new InferSockets(inference, ctx.cfg.maxBodyBytes)
  // One set of handlers for every inference socket; its data is these and the fellow id.
  const handlers = {
    open: (ws: InferWs) => sockets.attach(ws, ws.data.fellowId),
    message: (ws: InferWs, message: unknown) => sockets.message(ws, message),
    close: (ws: InferWs) => sockets.detach(ws),
  }
  return new Elysia({ name: 'inference-transport' })
    .use(base)
    // The inference channel (src/inference/socket.ts, wire format src/wire/infer-socket.ts): the
    // requests routed to a fellow and the frames it answers with over one socket, instead of the
    // long-poll and the POST below (which stay, for agents and proxies without WebSockets). A GET
    // that upgrades itself once the policy and the checks passed, like the signal socket.
    .get(
      '/ws/infer/:fellow_id',
      ({ caller, params, request, server }) => {
        if (caller.kind === 'node' && caller.fellowId !== params.fellow_id) throw new AppError('forbidden', 'This node token belongs to another fellow.')
        if (!inference.mayServe(params.fellow_id)) throw new AppError('forbidden', 'Unknown or released fellow.')
        upgradeOrRefuse(server, request, { fellowId: params.fellow_id, ...handlers })
      },
      { policy: 'node', params: FellowParams, detail: { 'x-websocket': true } },
    )
    // Not OpenAI's API (problem+json errors like the rest): who serves what, for the inference page.
    .get('/api/v1/inference/serving', ({ caller }) => ({ items: inference.serving(caller) }), {
      policy: 'operator',
      response: { 200: M.ServingList },
    })
    .get(
      '/api/v1/infer/requests/:fellow_id',
      async ({ caller, params, query, request, status }) => {
        const r = await inference.poll(caller, params.fellow_id, query.wait_ms ?? 0, stopOrLeave(ctx, request))
        return r ?? status(204, undefined)
      },
      { policy: 'node', params: FellowParams, query: M.PollQuery, response: { 200: M.InferRequest, 204: t.Undefined() } },
    )
    .post(
      '/api/v1/infer/responses/:request_id',
      ({ caller, params, body, set }) => {
        inference.post(caller, params.request_id, body.frames)
        set.status = 204
      },
      { policy: 'node', params: M.RequestParams, body: M.FramesBody },
    )
}

export function inferenceRoutes(base: AppBase, ctx: Ctx, { inference }: InferenceRouteDeps) {
  return new Elysia({ name: 'inference' })
    .use(chatRoutes(base, inference, ctx.clock))
    .use(transportRoutes(base, ctx, inference))
}
