import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, tokenClient, type Harness } from '../helpers/harness'
import { createApp, createServices } from '../../src/app'
import { createLogger } from '../../src/log'
import { until } from '../helpers/until'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

async function setup(env: Record<string, string> = {}) {
  const h = makeHarness(env)
  all.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const user = await seedUser(h, 'user@example.com')
  return { h, A: sessionClient(h, admin.id), u: sessionClient(h, user.id), admin }
}

const LINE = /^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?\d+(\.\d+)?(e[+-]?\d+)?$/

describe('/metrics', () => {
  test('Prometheus text for admins: fellows by state, heartbeats, sockets, relay, mail, HTTP by class and status, memory', async () => {
    const { h, A } = await setup()
    const pool = (await A.post('/api/v1/admin/pools', { name: 'M' })).body
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const f = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'm' })).body
    await h.client({ bearer: f.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle' })
    // Counters are bumped after the response is sent: poll until the heartbeat's answer is counted.
    const r = await until(async () => {
      const m = await A.get('/metrics')
      return /svc_http_requests_total\{class="node",status="200"\} 1/.test(String(m.body)) ? m : null
    }, 'the heartbeat counted')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/plain; version=0.0.4')
    const lines = String(r.body).trim().split('\n')
    for (const l of lines) if (!l.startsWith('#')) expect(l).toMatch(LINE)
    const text = String(r.body)
    expect(text).toContain('svc_fellows{state="online"} 1')
    expect(text).toContain('svc_heartbeats_total 1')
    expect(text).toContain('svc_signal_sockets_open 0')
    expect(text).toContain('svc_relay_bytes_total{direction="in"} 0')
    expect(text).toContain('svc_mail_outbox{status="pending"} 0')
    expect(text).toMatch(/svc_http_requests_total\{class="node",status="200"\} 1/)
    expect(text).toMatch(/svc_process_resident_memory_bytes \d+/)
  })

  test('plain users get 403, anonymous 401; the SVC_METRICS_TOKEN bearer may scrape, a wrong one may not', async () => {
    const { h, u } = await setup({ SVC_METRICS_TOKEN: 'scrape-token-0123456789' })
    expect((await u.get('/metrics')).status).toBe(403)
    expect((await h.client().get('/metrics')).status).toBe(401)
    expect((await h.client({ bearer: 'scrape-token-0123456789' }).get('/metrics')).status).toBe(200)
    expect((await h.client({ bearer: 'scrape-token-wrong-000000' }).get('/metrics')).status).toBe(401)
  })
})

describe('OpenAPI', () => {
  test('a 3.1 document listing every registered route with its policy class', async () => {
    const { h } = await setup()
    const r = await h.client().get('/api/v1/openapi.json')
    expect(r.status).toBe(200)
    const doc = r.body
    expect(doc.openapi).toBe('3.1.0')
    expect(typeof doc.info.title).toBe('string')
    const ops = new Map<string, { 'x-policy'?: string; responses?: unknown }>()
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, object>>)) {
      for (const [method, op] of Object.entries(item)) ops.set(`${method.toUpperCase()} ${path}`, op)
    }
    const missing: string[] = []
    for (const route of h.app.routes) {
      if (route.method === 'WS' || route.hooks?.detail?.hide) continue
      const path = route.path.replace(/:([A-Za-z_]+)/g, '{$1}')
      const op = ops.get(`${route.method} ${path}`)
      if (!op) missing.push(`${route.method} ${path}`)
      else expect(op['x-policy']).toBe(route.hooks?.detail?.['x-policy'])
    }
    expect(missing).toEqual([])
  })

  test('the docs page is served by the binary, with no third-party assets', async () => {
    const { h } = await setup()
    const page = await h.client().get('/api/v1/docs')
    expect(page.status).toBe(200)
    expect(String(page.body)).toContain('<script src="/api/v1/docs/docs.js">')
    expect(String(page.body)).not.toMatch(/(src|href)="https?:/)
    expect((await h.client().get('/api/v1/docs/docs.js')).status).toBe(200)
  })

  test('the docs page and its script send the security headers every other page sends', async () => {
    const { h } = await setup()
    const login = await h.client().get('/login')
    for (const path of ['/api/v1/docs', '/api/v1/docs/docs.js']) {
      const res = await h.client().get(path)
      for (const name of ['x-content-type-options', 'referrer-policy', 'x-frame-options']) {
        expect([path, name, res.headers.get(name)]).toEqual([path, name, login.headers.get(name)])
      }
    }
    const csp = (await h.client().get('/api/v1/docs')).headers.get('content-security-policy') ?? ''
    for (const d of ["frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'", "script-src 'self'"]) expect(csp).toContain(d)
  })
})

describe('structured logs', () => {
  test('one JSON line per request with request id, route, class, status and duration; no secrets', async () => {
    const { h, admin } = await setup()
    const lines: string[] = []
    const ctx = { ...h.ctx, log: createLogger('debug', (l) => lines.push(l)) }
    const app = createApp(ctx, createServices(ctx))
    const t = tokenClient(h, admin.id)
    const res = await app.handle(new Request('http://leader.test/api/v1/auth/me', { headers: { authorization: `Bearer ${t.opts.bearer}`, 'x-request-id': 'req-123' } }))
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toBe('req-123')
    await app.handle(new Request('http://leader.test/api/v1/auth/me'))
    // The line is written after the answer.
    const entries = await until(() => {
      const e = lines.map((l) => JSON.parse(l)).filter((x) => x.msg === 'request')
      return e.length >= 2 ? e : null
    }, 'both request lines')
    expect(entries[0]).toMatchObject({ level: 'info', request_id: 'req-123', method: 'GET', route: '/api/v1/auth/me', class: 'operator', status: 200 })
    expect(typeof entries[0].duration_ms).toBe('number')
    expect(entries[1]).toMatchObject({ status: 401 })
    expect(lines.join('\n')).not.toContain(t.opts.bearer!)
  })
})

describe('/metrics inference figures', () => {
  test('requests, tokens and frames of the inference transport are exported', async () => {
    const { A } = await setup()
    const text = String((await A.get('/metrics')).body)
    for (const name of ['svc_inference_requests{state="open"}', 'svc_inference_served_total', 'svc_inference_tokens_total', 'svc_inference_frames_total']) expect(text).toContain(name)
  })
})
