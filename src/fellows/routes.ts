// HTTP and WebSocket surface of fellows: bootstrap, registration, heartbeats, signals, logs,
// and the operator views /api/v1/workers and /api/v1/cluster/*.
import { Elysia, t } from 'elysia'
import { AppError, notFound } from '../errors'
import { actorOf } from '../pools/routes'
import { problem } from '../http/errors'
import { bearerOf, type Caller } from '../http/policy'
import { binaryDigest, fellowScript, manifest } from './bootstrap'
import type { AppBase } from '../http/base'
import type { Ctx } from '../context'
import type { Fellows } from './service'
import type { FellowViews } from './views'
import type { LogRings } from './logs'
import type { Counters } from '../observability/metrics'
import * as M from './model'

export interface FellowRouteDeps {
  counters: Counters
  fellows: Fellows
  views: FellowViews
  logs: LogRings
}

/** The fellow a node call acts for: its token's fellow, or (node auth off, no token) the body's. */
function fellowOf(caller: Caller, claimed: string | undefined): string {
  if (caller.kind === 'node') {
    if (claimed !== undefined && claimed !== caller.fellowId) throw new AppError('forbidden', 'This node token belongs to another fellow.')
    return caller.fellowId
  }
  if (caller.kind === 'anonymous' && claimed !== undefined) return claimed
  throw new AppError('unauthorized', 'A node token is required.')
}

export function fellowRoutes(base: AppBase, ctx: Ctx, { fellows, views, logs, counters }: FellowRouteDeps) {
  const requireBootstrapToken = (headers: Record<string, string | undefined>) => {
    if (!ctx.cfg.bootstrapRequireToken) return
    const token = headers['x-bootstrap-token']
    if (!token || fellows.resolveJoinToken(token) === null) throw new AppError('unauthorized', 'A valid X-Bootstrap-Token header (a join token) is required.')
  }
  const registry = fellows.registry
  return (
    new Elysia({ name: 'fellows' })
      .use(base)
      // Join sessions and bootstrap downloads.
      .post(
        '/api/v1/bootstrap/join-sessions',
        ({ caller, clientIp, body, set }) => {
          set.status = 201
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
          requireBootstrapToken(headers)
          return new Response(fellowScript(ctx.cfg.baseUrl), { headers: { 'content-type': 'text/x-shellscript; charset=utf-8', 'cache-control': 'no-store' } })
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
          return fellows.register(bearerOf(headers.authorization ?? null), body, clientIp)
        },
        { policy: 'public', body: M.RegisterBody, response: { 201: M.RegisterResponse } },
      )
      .post(
        '/api/v1/workers/heartbeat',
        ({ caller, body }) => {
          const id = fellowOf(caller, body.fellow_id)
          const f = registry.get(id)
          if (!f || f.released) throw notFound('Fellow')
          registry.heartbeat(f, body, ctx.clock.now())
          counters.heartbeats++
          const pending = fellows.signals.takePending(id)
          return { ok: true as const, next_heartbeat_s: ctx.cfg.heartbeatIntervalS, ...(pending.length > 0 ? { pending_signals: pending } : {}) }
        },
        { policy: 'node', body: M.HeartbeatBody, response: { 200: M.HeartbeatResponse } },
      )
      .post(
        '/api/v1/workers/:fellow_id/logs',
        ({ caller, params, body, set }) => {
          fellowOf(caller, params.fellow_id)
          if (!registry.get(params.fellow_id)) throw notFound('Fellow')
          logs.append(params.fellow_id, body.lines, ctx.clock.now())
          set.status = 204
        },
        { policy: 'node', params: M.FellowParams, body: M.LogLinesBody },
      )
      .ws('/ws/signals/:fellow_id', {
        policy: 'node',
        params: M.FellowParams,
        beforeHandle({ caller, params }) {
          // The handshake is refused before the socket exists: a token only opens its own fellow's channel.
          const f = registry.get(params.fellow_id)
          if (caller.kind === 'node' && caller.fellowId !== params.fellow_id) return problem('forbidden', 'This node token belongs to another fellow.')
          if (!f || f.released) return problem('forbidden', 'Unknown or released fellow.')
        },
        // The hub holds Bun's own socket: Elysia hands every callback a fresh wrapper, so the wrapper
        // seen on close is never the one seen on open, and the raw socket is all a send needs.
        open(ws) {
          fellows.signals.attach(ws.data.params.fellow_id, ws.raw)
        },
        close(ws) {
          fellows.signals.detach(ws.data.params.fellow_id, ws.raw)
        },
        message() {
          // Fellows report over HTTP; the socket only carries signals to them.
        },
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
          if (body.fellow_id) views.fellow(caller, body.fellow_id)
          else if (!body.pool_id) throw new AppError('validation_failed', 'Name a fellow_id or a pool_id.')
          return fellows.update(actorOf(caller, clientIp), body)
        },
        { policy: 'operator', body: M.UpdateBody },
      )
      .get(
        '/api/v1/workers/:fellow_id/logs/stream',
        ({ caller, params, headers, request }) => {
          views.fellow(caller, params.fellow_id)
          const fellowId = params.fellow_id
          let after = Number(headers['last-event-id'] ?? 0)
          if (!Number.isSafeInteger(after) || after < 0) after = 0
          const signal = request.signal
          const encoder = new TextEncoder()
          const stream = new ReadableStream<Uint8Array>({
            async pull(controller) {
              for (;;) {
                if (signal.aborted) return controller.close()
                const lines = logs.since(fellowId, after)
                if (lines.length > 0) {
                  let out = ''
                  for (const l of lines) {
                    out += `id: ${l.id}\nevent: log\ndata: ${JSON.stringify({ ts: new Date(l.ts).toISOString(), line: l.line })}\n\n`
                    after = l.id
                  }
                  controller.enqueue(encoder.encode(out))
                  return
                }
                controller.enqueue(encoder.encode(': keep-alive\n\n'))
                await logs.wait(fellowId, signal, 15_000)
              }
            },
          })
          return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' } })
        },
        { policy: 'operator', params: M.FellowParams },
      )
  )
}
