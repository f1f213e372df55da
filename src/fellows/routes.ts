// HTTP and WebSocket surface of fellows: bootstrap, registration, heartbeats, signals, logs,
// and the operator views /api/v1/workers and /api/v1/cluster/*.
import { t } from 'elysia'
import { AppError, invalid, notFound } from '../errors'
import { actorOf, fellowOf } from '../http/callers'
import { problem } from '../http/problem'
import { bearerOf } from '../http/policy'
import { binaryDigest, fellowScript, manifest } from './bootstrap'
import type { AppBase } from '../http/base'
import { stopOrLeave, type Ctx } from '../context'
import type { Fellows } from './service'
import type { FellowViews } from './views'
import { logStream, type LogRings } from './logs'
import { lastEventId, stillSees } from '../http/sse'
import type { Counters } from '../observability/metrics'
import * as M from './model'
import type { SignalSocket } from './signals'
import { dataRoute, upgradeOrRefuse, upgradeRoute } from '../http/native'

type SignalWs = SignalSocket & { data: { fellowId: string } }

export interface FellowRouteDeps {
  counters: Counters
  fellows: Fellows
  views: FellowViews
  logs: LogRings
  signalSocket: ReturnType<typeof signalSocketRoute>
  heartbeat: ReturnType<typeof heartbeatRoute>
}

/**
 * The heartbeat: every fellow, every interval, so the leader's most frequent request. Bun's router
 * takes it on its fast path (src/http/native.ts); Elysia answers what does not fit it.
 */
export function heartbeatRoute(fellows: Fellows, counters: Counters) {
  return dataRoute({
    method: 'POST',
    path: '/api/v1/workers/heartbeat',
    body: M.HeartbeatBody,
    handle({ caller, body }) {
      const answer = fellows.heartbeat(fellowOf(caller, body.fellow_id), body)
      counters.heartbeats++
      return Response.json(answer)
    },
  })
}

/**
 * The signal socket: a GET that upgrades itself once the policy and the checks passed, served by
 * Bun's router on its fast path (src/http/native.ts). Its data is the fellow id and the handlers
 * Elysia's socket dispatcher calls (on the prototype, shared by every socket), not the upgrade
 * request's context an Elysia .ws route keeps per socket: 100,000 fellows hold one socket each.
 * Fellows report over HTTP; the socket only carries signals to them.
 */
export function signalSocketRoute(fellows: Fellows) {
  class SignalSocketData {
    constructor(readonly fellowId: string) {}
    open(ws: SignalWs): void {
      fellows.signals.attach(this.fellowId, ws)
    }
    close(ws: SignalWs): void {
      fellows.signals.detach(this.fellowId, ws)
    }
    // Fellows report over HTTP; a message here is not of an agent. Closed, so a caller cannot use
    // its socket to make the leader take message after message of up to Bun's payload limit (one
    // for every socket of the server: the relay's frame size).
    message(ws: SignalWs): void {
      ws.close(1003, 'The signal socket carries signals to the fellow; it takes no messages.')
    }
  }
  return upgradeRoute({
    path: '/ws/signals/:fellow_id',
    params: M.FellowParams,
    upgrade({ caller, params, request, server }) {
      // The handshake is refused before the socket exists: a token only opens its own fellow's channel.
      if (caller.kind === 'node' && caller.fellowId !== params.fellow_id) throw new AppError('forbidden', 'This node token belongs to another fellow.')
      if (!fellows.isActive(params.fellow_id)) throw new AppError('forbidden', 'Unknown or released fellow.')
      upgradeOrRefuse(server, request, new SignalSocketData(params.fellow_id))
    },
  })
}

export function fellowRoutes(app: AppBase, ctx: Ctx, { fellows, views, logs, counters, signalSocket, heartbeat }: FellowRouteDeps) {
  /** The presented join token when it is valid (else null); refuses without one when the leader requires it. */
  const requireBootstrapToken = (headers: Record<string, string | undefined>): string | null => {
    const token = headers['x-bootstrap-token']
    const valid = token !== undefined && token !== '' && fellows.resolveJoinToken(token) !== null ? token : null
    if (ctx.cfg.bootstrapRequireToken && valid === null) throw new AppError('unauthorized', 'A valid X-Bootstrap-Token header (a join token) is required.')
    return valid
  }
  return (
    app
      // Join sessions and bootstrap downloads.
      .post(
        '/api/v1/bootstrap/join-sessions',
        ({ caller, clientIp, body, set }) => {
          set.status = 201
          set.headers['cache-control'] = 'no-store' // the join token and the command carrying it
          return fellows.mintJoinSession(actorOf(caller, clientIp), body.pool_id)
        },
        { policy: 'operator', body: M.JoinSessionBody, response: { 201: M.JoinSession } },
      )
      .delete(
        '/api/v1/bootstrap/join-sessions/:id',
        ({ caller, clientIp, params, set }) => {
          fellows.revokeJoinSession(actorOf(caller, clientIp), params.id)
          set.status = 204
        },
        { policy: 'operator', params: t.Object({ id: t.String({ format: 'uuid' }) }) },
      )
      .get(
        '/api/v1/bootstrap/manifest.json',
        async ({ headers }) => {
          requireBootstrapToken(headers)
          return manifest(ctx.cfg.baseUrl, ctx.cfg.heartbeatIntervalS)
        },
        { policy: 'public' },
      )
      .get(
        '/api/v1/bootstrap/fellow.sh',
        ({ headers }) => {
          const token = requireBootstrapToken(headers)
          return new Response(fellowScript(ctx.cfg.baseUrl, token), { headers: { 'content-type': 'text/x-shellscript; charset=utf-8', 'cache-control': 'no-store' } })
        },
        { policy: 'public' },
      )
      .get(
        '/api/v1/bootstrap/svc',
        async ({ headers }) => {
          requireBootstrapToken(headers)
          const d = binaryDigest()
          if (!d) return problem('not_found', 'This leader runs from source, not the compiled dist/svc, so it has no agent binary to hand out.')
          const { sha256, size } = await d
          return new Response(Bun.file(process.execPath), {
            headers: { 'content-type': 'application/octet-stream', 'content-length': String(size), 'x-checksum-sha256': sha256 },
          })
        },
        { policy: 'public' },
      )
      // The fellow side.
      .post(
        '/api/v1/workers/register',
        ({ headers, body, clientIp, set }) => {
          set.status = 201
          set.headers['cache-control'] = 'no-store' // the node token
          return fellows.register(bearerOf(headers.authorization ?? null), body, clientIp)
        },
        { policy: 'public', body: M.RegisterBody, response: { 201: M.RegisterResponse } },
      )
      .post(
        '/api/v1/workers/heartbeat',
        ({ caller, body, request }) => heartbeat.handle({ caller, params: {}, query: {}, body, request }),
        { policy: 'node', body: M.HeartbeatBody, response: { 200: M.HeartbeatResponse } },
      )
      .post(
        '/api/v1/workers/goodbye',
        ({ caller, body, set }) => {
          fellows.goodbye(fellowOf(caller, body.fellow_id))
          set.status = 204
        },
        { policy: 'node', body: M.GoodbyeBody },
      )
      .post(
        '/api/v1/workers/:fellow_id/logs',
        ({ caller, params, body, set }) => {
          fellowOf(caller, params.fellow_id)
          if (!fellows.isKnown(params.fellow_id)) throw notFound('Fellow')
          logs.append(params.fellow_id, body.lines, ctx.clock.now())
          set.status = 204
        },
        { policy: 'node', params: M.FellowParams, body: M.LogLinesBody },
      )
      // The signal socket (signalSocketRoute): what Bun's router does not take on its fast path.
      .get('/ws/signals/:fellow_id', ({ caller, params, request, server }) => signalSocket.upgrade({ caller, params, request, server }), {
        policy: 'node',
        params: signalSocket.params,
        detail: { 'x-websocket': true },
      })
      // Operator views and management.
      .get('/api/v1/workers', ({ caller, query }) => ({ items: views.nodes(caller, query.pool_id) }), {
        policy: 'operator',
        query: M.PoolFilter,
        response: { 200: M.NodeList },
      })
      .get('/api/v1/cluster/nodes', ({ caller, query }) => ({ items: views.nodes(caller, query.pool_id) }), {
        policy: 'operator',
        query: M.PoolFilter,
        response: { 200: M.NodeList },
      })
      .get('/api/v1/cluster/devices', ({ caller, query }) => ({ items: views.devices(caller, query.pool_id) }), {
        policy: 'operator',
        query: M.PoolFilter,
        response: { 200: M.DeviceList },
      })
      .delete(
        '/api/v1/workers/:fellow_id',
        ({ caller, clientIp, params, set }) => {
          views.fellow(caller, params.fellow_id)
          fellows.remove(actorOf(caller, clientIp), params.fellow_id)
          logs.drop(params.fellow_id)
          set.status = 204
        },
        { policy: 'operator', params: M.FellowParams },
      )
      .post(
        '/api/v1/workers/release',
        ({ caller, clientIp, body }) => {
          views.fellow(caller, body.fellow_id)
          fellows.release(actorOf(caller, clientIp), body.fellow_id)
          return { released: true as const, fellow_id: body.fellow_id }
        },
        { policy: 'operator', body: M.FellowRef },
      )
      .post(
        '/api/v1/workers/update',
        ({ caller, clientIp, body }) => {
          // One or the other: with both, which did the caller mean (it signalled the fellow alone)?
          if (body.fellow_id && body.pool_id) throw invalid('body: name a fellow_id or a pool_id, not both.', { errors: [{ path: '/pool_id', message: 'not with fellow_id' }] })
          if (body.fellow_id) views.fellow(caller, body.fellow_id)
          else if (!body.pool_id) throw invalid('body: name a fellow_id or a pool_id.', { errors: [{ path: '/fellow_id', message: 'is missing (or name a pool_id)' }] })
          return fellows.update(actorOf(caller, clientIp), body)
        },
        { policy: 'operator', body: M.UpdateBody },
      )
      .get('/api/v1/workers/:fellow_id', ({ caller, params }) => views.view(views.fellow(caller, params.fellow_id)), {
        policy: 'operator',
        params: M.FellowParams,
        response: { 200: M.NodeView },
      })
      .get('/api/v1/workers/:fellow_id/telemetry', ({ caller, params, query }) => views.telemetry(caller, params.fellow_id, query.range ?? '1h'), {
        policy: 'operator',
        params: M.FellowParams,
        query: M.TelemetryQuery,
        response: { 200: M.FellowTelemetry },
      })
      .get(
        '/api/v1/workers/:fellow_id/logs/stream',
        ({ caller, params, headers, request, reauthorize }) => {
          views.fellow(caller, params.fellow_id)
          const allowed = () => stillSees(() => views.fellow(reauthorize(), params.fellow_id))
          return logStream(logs, params.fellow_id, lastEventId(headers['last-event-id']), stopOrLeave(ctx, request), allowed)
        },
        { policy: 'operator', params: M.FellowParams },
      )
  )
}
