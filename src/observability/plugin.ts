// Request ids, one structured log line per request, and HTTP counters by route class and status.
import { Elysia } from 'elysia'
import type { Logger } from '../log'
import type { PolicyIndex } from '../http/policy'
import type { Counters } from './metrics'

const started = new WeakMap<Request, { t: number; id: string }>()
const SAFE_ID = /^[A-Za-z0-9._-]{1,64}$/

/** The request id an answer carries: a proxy's X-Request-Id when it looks like one, or a new one. */
export function idOf(request: Request): string {
  const given = request.headers.get('x-request-id')
  return given !== null && SAFE_ID.test(given) ? given : Bun.randomUUIDv7()
}

export function observabilityPlugin(log: Logger, counters: Counters, index: PolicyIndex) {
  return new Elysia({ name: 'observability' })
    .onRequest(({ request, set }) => {
      // A proxy's request id is kept (if it looks like one) so log lines can be joined up.
      const id = idOf(request)
      started.set(request, { t: performance.now(), id })
      set.headers['x-request-id'] = id
    })
    .onAfterResponse({ as: 'global' }, (c) => {
      const { request, set, route } = c
      const rv = (c as { responseValue?: unknown }).responseValue
      // An error status in `set` is the answer sent: the error plugin sets it, and so does a hook that
      // rewrote the answer (the OpenAI error shape) after the first Response was recorded here.
      const setStatus = typeof set.status === 'number' ? set.status : 200
      const status = rv instanceof Response ? (setStatus >= 400 ? setStatus : rv.status) : setStatus
      const s = started.get(request)
      recordRequest(log, counters, index, request, route ?? null, status, s?.t ?? null, s?.id)
    })
}

/** The counter and the log line of one answered request (also for the routes Bun serves itself, src/http/native.ts). */
export function recordRequest(log: Logger, counters: Counters, index: PolicyIndex, request: Request, route: string | null, status: number, startedAt: number | null, requestId?: string): void {
  const cls = route ? index.lookup(request.method, route).policy : 'unknown'
  counters.httpRequest(cls, status)
  // Fellow traffic (heartbeats, relay, handshakes) is the bulk of requests: only its failures are logged at info.
  const level = status >= 500 ? 'error' : cls === 'node' && status < 400 ? 'debug' : 'info'
  if (!log.enabled(level)) return
  log[level]('request', {
    request_id: requestId ?? idOf(request),
    method: request.method,
    route,
    class: cls,
    status,
    duration_ms: startedAt !== null ? Math.round((performance.now() - startedAt) * 100) / 100 : null,
  })
}
