// Request ids, one structured log line per request, and HTTP counters by route class and status.
import { Elysia } from 'elysia'
import type { Logger } from '../log'
import type { PolicyIndex } from '../http/policy'
import type { Counters } from './metrics'

const started = new WeakMap<Request, { t: number; id: string }>()
const SAFE_ID = /^[A-Za-z0-9._-]{1,64}$/

export function observabilityPlugin(log: Logger, counters: Counters, index: PolicyIndex) {
  return new Elysia({ name: 'observability' })
    .onRequest(({ request, set }) => {
      // A proxy's request id is kept (if it looks like one) so log lines can be joined up.
      const given = request.headers.get('x-request-id')
      const id = given !== null && SAFE_ID.test(given) ? given : Bun.randomUUIDv7()
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
      const cls = route ? index.lookup(request.method, route).policy : 'unknown'
      counters.httpRequest(cls, status)
      const s = started.get(request)
      const fields = {
        request_id: s?.id,
        method: request.method,
        route: route ?? null,
        class: cls,
        status,
        duration_ms: s ? Math.round((performance.now() - s.t) * 100) / 100 : null,
      }
      // Fellow traffic (heartbeats, relay) is the bulk of requests: only its failures are logged at info.
      if (status >= 500) log.error('request', fields)
      else if (cls === 'node' && status < 400) log.debug('request', fields)
      else log.info('request', fields)
    })
}
