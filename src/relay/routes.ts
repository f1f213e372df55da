// The relay: fellows of one job exchange activation and gradient frames through the leader when a
// direct connection is not possible. Frames are routed by pipeline position: activations go to
// the next stage, gradients to the previous one; each fellow pops only its own stage's queues.
import { t } from 'elysia'
import { UnionEnum } from '../model'
import { AppError } from '../errors'
import { problem } from '../http/problem'
import { decodeFrames, wireParts } from '../wire/frames'
import { EXCEEDS_CAPACITY_DETAIL, FULL_DETAIL, MAX_POP_WAIT_MS, type RelayChannel, type RelayHub } from './hub'
import { RelaySockets, refuseUnlessHeld, type RelaySocket } from './socket'
import { nodeOrOpen } from '../http/callers'
import type { AppBase } from '../http/base'
import { stopOrLeave, type Ctx } from '../context'
import type { JobService } from '../jobs/service'
import type { Counters } from '../observability/metrics'
import { dataRoute, upgradeOrRefuse } from '../http/native'

const Params = t.Object({ job_id: t.String({ format: 'uuid' }), channel: UnionEnum(['activations', 'gradients']) })
const PushQuery = t.Object({ fellow_id: t.Optional(t.String({ format: 'uuid' })) }, { additionalProperties: false })
const PopQuery = t.Object(
  {
    wait_ms: t.Optional(t.Integer({ minimum: 0, maximum: MAX_POP_WAIT_MS })),
    max: t.Optional(t.Integer({ minimum: 1, maximum: 10_000 })),
    fellow_id: t.Optional(t.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
)

export const relayKey = (jobId: string, stage: number) => `${jobId}/${stage}`

export function relayRoutes(app: AppBase, ctx: Ctx, relay: RelayHub, jobs: JobService, counters: Counters, data: ReturnType<typeof relayDataRoutes>) {
  const sockets = new RelaySockets(relay, relayKey, ctx.cfg.relayMaxFrameBytes, counters, (id) => jobs.isActive(id))
  return app
    // The data channel over one WebSocket (src/relay/socket.ts, wire format src/wire/relay-socket.ts):
    // the same queues and caps as push/pop below, without a request per frame. A GET route that
    // upgrades the request itself, after the policy and the route's checks: the socket's data is
    // its four handlers and nothing of the request, and a message reaches RelaySockets straight
    // from Elysia's socket dispatcher, without a wrapper and a parse per 4 MiB message (an Elysia
    // .ws route cost a quarter of the channel's throughput, docs/benchmarks.md).
    .get(
      '/ws/relay/:job_id',
      ({ caller, params, query, request, server }) => {
        const node = nodeOrOpen(caller)
        // Refused at the upgrade: only a fellow assigned to the live job gets a socket.
        jobs.placementOf(node, params.job_id, query.fellow_id)
        const where = () => jobs.placementOf(node, params.job_id, query.fellow_id)
        const jobId = params.job_id
        const holder = `${jobId}/${node?.fellowId ?? query.fellow_id ?? ''}`
        const data = {
          open(ws: RelaySocket) {
            try {
              sockets.attach(ws, jobId, where, holder)
            } catch (e) {
              if (!(e instanceof AppError)) throw e
              ws.close(1008, e.message.slice(0, 120))
            }
          },
          message: (ws: RelaySocket, message: unknown) => sockets.message(ws, jobId, message),
          drain: (ws: RelaySocket) => sockets.drain(ws),
          close: (ws: RelaySocket) => sockets.detach(ws),
        }
        upgradeOrRefuse(server, request, data)
      },
      {
        policy: 'node',
        detail: { 'x-websocket': true },
        params: t.Object({ job_id: t.String({ format: 'uuid' }) }),
        // ?token=: the node token, for a client that cannot set headers on a handshake (the gate reads it).
        query: t.Object({ fellow_id: t.Optional(t.String({ format: 'uuid' })), token: t.Optional(t.String({ maxLength: 200 })) }, { additionalProperties: false }),
      },
    )
    // Push and pop (relayDataRoutes): Bun's router takes them on their fast path; Elysia answers
    // what does not fit it (src/http/native.ts), from the same handlers.
    .post('/api/v1/relay/:job_id/:channel/push', ({ caller, params, query, body, request }) => data.push.handle({ caller, params, query, body, request }), {
      policy: 'node',
      detail: { 'x-body': 'binary' },
      params: Params,
      query: PushQuery,
    })
    .get('/api/v1/relay/:job_id/:channel/pop', ({ caller, params, query, request }) => data.pop.handle({ caller, params, query, body: undefined, request }), {
      policy: 'node',
      params: Params,
      query: PopQuery,
    })
}

/**
 * The relay's push and pop over HTTP. Answers are built here as Responses (both paths send them
 * as they are): a popped body goes out as the view of the pushed one it is, copied once by Bun.
 */
export function relayDataRoutes(ctx: Ctx, relay: RelayHub, jobs: JobService, counters: Counters) {
  const push = dataRoute({
    method: 'POST',
    path: '/api/v1/relay/:job_id/:channel/push',
    params: Params,
    query: PushQuery,
    body: 'binary',
    handle({ caller, params, query, body }) {
      const { poolId, stage, assignments } = jobs.placementOf(nodeOrOpen(caller), params.job_id, query.fellow_id)
      const to = params.channel === 'activations' ? stage + 1 : stage - 1
      if (to < 0 || to >= assignments.length) throw new AppError('conflict', `Stage ${stage} has no ${params.channel === 'activations' ? 'next' : 'previous'} stage to send ${params.channel} to.`)
      if (!(body instanceof Uint8Array)) throw new AppError('unsupported_media_type', 'Send application/octet-stream.')
      const frames = decodeFrames(body, { maxFrameBytes: ctx.cfg.relayMaxFrameBytes })
      const r = relay.push(relayKey(params.job_id, to), params.channel as RelayChannel, frames, poolId)
      if (!r.ok) {
        if (r.reason === 'exceeds_capacity') return problem('payload_too_large', EXCEEDS_CAPACITY_DETAIL)
        return problem('rate_limited', FULL_DETAIL[r.scope], { retryAfterS: r.retryAfterS })
      }
      counters.relayBytesIn += body.byteLength
      counters.relayFramesIn += frames.length
      return Response.json({ queued_frames: frames.length, depth_bytes: r.depthBytes }, { status: 202 })
    },
  })
  const pop = dataRoute({
    method: 'GET',
    path: '/api/v1/relay/:job_id/:channel/pop',
    params: Params,
    query: PopQuery,
    async handle({ caller, params, query, request }) {
      const where = () => jobs.placementOf(nodeOrOpen(caller), params.job_id, query.fellow_id)
      const { stage, poolId } = where()
      const key = relayKey(params.job_id, stage)
      const channel = params.channel as RelayChannel
      const frames = await relay.pop(key, channel, {
        max: query.max ?? 64,
        waitMs: Math.min(query.wait_ms ?? 0, MAX_POP_WAIT_MS),
        signal: stopOrLeave(ctx, request),
      })
      if (frames.length === 0) return new Response(null, { status: 204 })
      const refusal = refuseUnlessHeld(relay, where, { jobId: params.job_id, key, stage, poolId }, channel, frames, (id) => jobs.isActive(id))
      if (refusal === 'moved') return new Response(null, { status: 204 })
      if (refusal !== null) throw refusal
      // The frames as they were pushed: a view into the pushed body, or one buffer when they came
      // from several pushes.
      const parts = wireParts(frames)
      const out = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
      counters.relayBytesOut += out.byteLength
      return new Response(out, { headers: { 'content-type': 'application/octet-stream', 'x-frame-count': String(frames.length) } })
    },
  })
  return { push, pop }
}
