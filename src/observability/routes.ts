// GET /metrics (Prometheus text; admins, or the SVC_METRICS_TOKEN bearer), the OpenAPI document
// and a docs page that renders it with a script served by the binary itself (no CDN).
import type { AnyElysia } from 'elysia'
import { FormatRegistry } from '@sinclair/typebox'
import { count, eq } from 'drizzle-orm'
import { mailOutbox } from '../db/schema'
import { renderPrometheus, type Counters, type Gauge } from './metrics'
import { DOCS_HTML, DOCS_JS } from './docs-page'
import { BASE_CSP, PAGE_SECURITY_HEADERS } from '../http/security-headers'

// The reference page's own styles are inline; its script is a file of ours.
const DOCS_CSP = ["default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "connect-src 'self'", ...BASE_CSP].join('; ')
import type { AppBase } from '../http/base'
import type { Ctx } from '../context'
import type { FellowRegistry } from '../fellows/live'
import type { SignalHub } from '../fellows/signals'
import type { RelayHub } from '../relay/hub'

export interface ObservabilityDeps {
  counters: Counters
  registry: FellowRegistry
  signals: SignalHub
  relay: RelayHub
  /** Extra gauges from features composed later (inference...). */
  extra?: () => Gauge[]
  /** The composed app, for the OpenAPI document (set once composition is done). */
  app: () => AnyElysia
}

export function observabilityRoutes(app: AppBase, ctx: Ctx, deps: ObservabilityDeps) {
  let doc: unknown = null
  const gauges = (): Gauge[] => {
    const now = ctx.clock.now()
    const byState: Record<string, number> = { online: 0, stale: 0, offline: 0, released: 0 }
    for (const f of deps.registry.all()) byState[deps.registry.stateOf(f, now)]!++
    const mail = (status: 'pending' | 'failed') => ctx.db.select({ n: count() }).from(mailOutbox).where(eq(mailOutbox.status, status)).get()?.n ?? 0
    const relay = deps.relay.stats()
    const mem = process.memoryUsage()
    const c = deps.counters
    return [
      { name: 'svc_fellows', help: 'Fellows by liveness state.', type: 'gauge', samples: Object.entries(byState).map(([state, value]) => ({ labels: { state }, value })) },
      { name: 'svc_heartbeats_total', help: 'Heartbeats received.', type: 'counter', samples: [{ value: c.heartbeats }] },
      { name: 'svc_signal_sockets_open', help: 'Open signal WebSockets.', type: 'gauge', samples: [{ value: deps.signals.count() }] },
      { name: 'svc_relay_bytes_total', help: 'Relay frame bytes pushed and popped.', type: 'counter', samples: [{ labels: { direction: 'in' }, value: c.relayBytesIn }, { labels: { direction: 'out' }, value: c.relayBytesOut }] },
      { name: 'svc_relay_queued_bytes', help: 'Bytes waiting in relay queues.', type: 'gauge', samples: [{ value: relay.queuedBytes }] },
      { name: 'svc_relay_channels', help: 'Relay channels holding frames or waiters.', type: 'gauge', samples: [{ value: relay.channels }] },
      { name: 'svc_mail_outbox', help: 'Mail outbox rows by status.', type: 'gauge', samples: [{ labels: { status: 'pending' }, value: mail('pending') }, { labels: { status: 'failed' }, value: mail('failed') }] },
      {
        name: 'svc_http_requests_total',
        help: 'HTTP requests by route class and status.',
        type: 'counter',
        samples: [...c.http].map(([k, value]) => {
          const [cls, status] = k.split(' ')
          return { labels: { class: cls!, status: status! }, value }
        }),
      },
      { name: 'svc_process_resident_memory_bytes', help: 'Resident set size.', type: 'gauge', samples: [{ value: mem.rss }] },
      { name: 'svc_process_heap_used_bytes', help: 'JavaScript heap in use.', type: 'gauge', samples: [{ value: mem.heapUsed }] },
      ...(deps.extra?.() ?? []),
    ]
  }
  return app
    .get('/metrics', () => new Response(renderPrometheus(gauges()), { headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' } }), {
      policy: 'admin',
      detail: { 'x-metrics-token': true, summary: 'Prometheus metrics' },
    })
    .get(
      '/api/v1/openapi.json',
      async () => {
        // The generator is loaded on the first request: a leader that nobody asks for its
        // document does not carry it in memory.
        doc ??= (await importKeepingFormats(() => import('./openapi'))).openApiDocument(deps.app(), ctx.cfg)
        return doc
      },
      { policy: 'public', detail: { summary: 'This OpenAPI document' } },
    )
    .get('/api/v1/docs', () => new Response(DOCS_HTML, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': DOCS_CSP, 'cache-control': 'no-cache', ...PAGE_SECURITY_HEADERS } }), {
      policy: 'public',
      detail: { summary: 'API reference page' },
    })
    .get('/api/v1/docs/docs.js', () => new Response(DOCS_JS, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache', ...PAGE_SECURITY_HEADERS } }), {
      policy: 'public',
      detail: { hide: true },
    })
}

/**
 * Loads a module without letting it change the process's TypeBox formats. @elysiajs/openapi sets
 * its own `email`, `uuid`, `date`, `url`... on import (valibot's rules): after the first request
 * for the document, every route validated addresses and ids differently (an internationalised
 * address that registered before was refused after). Formats it adds are kept; ours win.
 */
async function importKeepingFormats<T>(load: () => Promise<T>): Promise<T> {
  const before = new Map(FormatRegistry.Entries())
  try {
    return await load()
  } finally {
    for (const [name, check] of before) FormatRegistry.Set(name, check)
  }
}
