import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, tokenClient, type Client } from '../helpers/harness'
import { bindPath, expected, matches, type CallerKind, type Expect } from '../helpers/matrix'
import { buildChain, buildWorld, refsOf, type Chain } from '../helpers/world'
import { stateDigest, stateDump, diffDumps } from '../helpers/state'
import { exampleOf, type JsonSchema } from '../helpers/schema-arb'
import { mintCsrfToken } from '../../src/http/csrf'
import { createSession } from '../../src/accounts/sessions'
import type { PolicyClass } from '../../src/http/policy'

const h = makeHarness()
afterAll(() => h.close())

// Shared: the admin, another person's pool with its fellow, and (for GET routes, which change
// nothing) the caller's own pool. State-changing routes get a fresh own pool each.
const world = await buildWorld(h)
const revoked = tokenClient(h, world.mine.user.id)
await revoked.delete(`/api/v1/api-tokens/${revoked.tokenId}`)

/** A fresh client per request: some routes (logout) end the session they are called with. */
function callerFor(kind: CallerKind, own: Chain): Client {
  switch (kind) {
    case 'none':
      return h.client()
    case 'garbage_bearer':
      return h.client({ bearer: 'svc_pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })
    case 'garbage_cookie': {
      const c = h.client()
      c.cookies.set('svc_session', 'not-a-session')
      return c
    }
    case 'revoked_token':
      return h.client({ bearer: revoked.opts.bearer! })
    case 'user_session':
      return sessionClient(h, own.user.id)
    case 'user_token':
      return tokenClient(h, own.user.id)
    case 'other_pool_member':
      return sessionClient(h, world.other.user.id)
    case 'admin_session':
      return sessionClient(h, world.admin.id)
    case 'admin_token':
      return tokenClient(h, world.admin.id)
    case 'own_node':
      return h.client({ bearer: own.nodeToken })
    case 'foreign_node':
      return h.client({ bearer: world.other.nodeToken })
    case 'revoked_node':
      return h.client({ bearer: own.revokedNodeToken })
  }
}

/**
 * Client.call without reading event streams to their (never coming) end: a log or metrics stream
 * the caller may open answers 200 text/event-stream, and that is the whole verdict.
 */
async function send(c: Client, method: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const h2: Record<string, string> = { ...headers }
  if (body !== undefined) h2['content-type'] = 'application/json'
  if (c.opts.bearer) h2['authorization'] = `Bearer ${c.opts.bearer}`
  if (c.cookies.size > 0) h2['cookie'] = [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  const csrf = c.cookies.get('svc_csrf')
  if (csrf && !c.opts.noCsrf && !('x-csrf-token' in h2)) h2['x-csrf-token'] = csrf
  const ac = new AbortController()
  const res = await h.app.handle(new Request(`http://leader.test${path}`, { method, headers: h2, body: body === undefined ? undefined : JSON.stringify(body), signal: ac.signal }))
  let parsed: unknown = null
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) await res.body?.cancel()
  else {
    const text = await res.text()
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  ac.abort()
  return { status: res.status, body: parsed }
}

const KINDS: CallerKind[] = ['none', 'garbage_bearer', 'garbage_cookie', 'revoked_token', 'revoked_node', 'user_session', 'user_token', 'other_pool_member', 'admin_session', 'admin_token', 'own_node', 'foreign_node']
const routes = h.app.routes
  .filter((r) => r.method !== 'WS')
  .map((r) => {
    const hooks = r.hooks as { body?: JsonSchema; query?: JsonSchema } | undefined
    // A GET that upgrades itself (the relay socket): refused like any route, but an allowed plain GET
    // is told to upgrade (400), so it answers no data here.
    const upgrades = r.hooks?.detail?.['x-websocket'] === true
    return { method: r.method, path: r.path, cls: r.hooks?.detail?.['x-policy'] as PolicyClass, body: hooks?.body, query: hooks?.query, known: true, upgrades }
  })
routes.push({ method: 'GET', path: '/api/v1/no-such-route', cls: 'admin', body: undefined, query: undefined, known: false, upgrades: false })
routes.push({ method: 'POST', path: '/api/v1/no-such-route', cls: 'admin', body: undefined, query: undefined, known: false, upgrades: false })

/** Classes whose GET answers data to an allowed caller: with real ids that must be a 2xx, not a 404. */
const DATA_CLASSES = new Set<PolicyClass>(['session', 'operator', 'member', 'admin', 'node'])

describe('authorization matrix', () => {
  test('the matrix covers every caller kind the issue names', () => {
    expect(new Set(KINDS).size).toBe(12)
    // A route whose path names the own pool: an outsider gets 404, a fellow of another pool a refusal.
    expect(expected('operator', 'other_pool_member', 'pool')).toBe(404)
    expect(expected('node', 'foreign_node', 'pool')).toBe('refused')
    expect(expected('node', 'own_node', 'pool')).toBe('allowed')
    expect(expected('admin', 'other_pool_member', 'pool')).toBe(403)
  })

  for (const r of routes) {
    test(`${r.method} ${r.path} (${r.cls})`, async () => {
      // A fresh own pool for anything that names one or may change one (an admin purge of all jobs
      // would otherwise pull the ids from under the routes after it).
      const own = r.method === 'GET' && !r.path.includes(':') ? world.mine : await buildChain(h, 'route')
      const bound0 = bindPath(r.path, refsOf(own))
      const { scope, bound } = bound0
      // Where the path names the own pool, a valid body and query: validation answers 422 before
      // any lookup, which would hide whether pool scoping holds.
      const valid = scope !== 'none' && r.body !== undefined ? exampleOf(r.body) : {}
      const query = scope !== 'none' && r.query !== undefined ? new URLSearchParams(Object.entries(exampleOf(r.query) as Record<string, unknown>).map(([k, v]): [string, string] => [k, String(v)])).toString() : ''
      const path = query === '' ? bound0.path : `${bound0.path}?${query}`
      // Callers that must be refused go first: a refusal changes nothing, and an allowed call may
      // (a DELETE removes what the next caller would have been refused).
      // A socket path answers a missing or refused credential with 403 (docs/api.md, Signals).
      const wants = KINDS.map((kind) => ({ kind, want: ((w: Expect) => (r.upgrades && w === 401 ? 403 : w))(expected(r.cls, kind, scope)) }))
      const order = [...wants.filter((w) => w.want !== 'allowed'), ...wants.filter((w) => w.want === 'allowed')]
      const rows: string[] = []
      for (const { kind, want } of order) {
        const body = r.method === 'GET' || r.method === 'DELETE' ? undefined : valid
        const res = await send(callerFor(kind, own), r.method, path, body)
        if (!matches(want, res.status, res.body)) rows.push(`${kind}: expected ${want}, got ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
        else if (want === 'allowed' && bound && r.known && !r.upgrades && r.method === 'GET' && DATA_CLASSES.has(r.cls) && res.status >= 300) {
          rows.push(`${kind}: allowed with the own pool's ids, yet got ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
        }
      }
      expect(rows).toEqual([] as string[])
    })
  }
})

describe('CSRF on every cookie-authenticated state change', () => {
  const changing = routes.filter((r) => r.method !== 'GET' && (r.cls === 'session' || r.cls === 'operator' || r.cls === 'admin') && !r.path.includes('no-such-route'))

  test('there are such routes to check', () => {
    expect(changing.length).toBeGreaterThan(20)
  })

  const planted = (label: string, who: string, session: string | null) => {
    const c = sessionClient(h, who)
    const token = mintCsrfToken(h.cfg.secretKey, session)
    c.cookies.set('svc_csrf', token)
    return { label: `a CSRF token ${label}`, headers: { 'x-csrf-token': token }, c }
  }

  for (const r of changing) {
    test(`${r.method} ${r.path} (${r.cls}) refuses a session cookie without a matching X-CSRF-Token, and changes nothing`, async () => {
      const { path } = bindPath(r.path, refsOf(world.mine))
      const who = r.cls === 'admin' ? world.admin.id : world.mine.user.id
      const variants: { label: string; headers: Record<string, string>; c: Client }[] = [
        { label: 'no header', headers: {}, c: sessionClient(h, who, { noCsrf: true }) },
        { label: 'the header of another CSRF cookie', headers: { 'x-csrf-token': mintCsrfToken(h.cfg.secretKey, null) }, c: sessionClient(h, who) },
        { label: 'an empty header', headers: { 'x-csrf-token': '' }, c: sessionClient(h, who) },
        // A token that is genuine but not this session's, planted as the cookie and sent as the
        // header (a sibling host or plain HTTP can set the cookie; any page view hands one out).
        planted('one handed to a visitor before login', who, null),
        planted("another session's", who, createSession(h.ctx, who, '127.0.0.1').token),
      ]
      const before = stateDigest(h.ctx.sqlite)
      const dump = stateDump(h.ctx.sqlite)
      const got: string[] = []
      for (const { label, headers, c } of variants) {
        const body = r.method === 'DELETE' ? undefined : {}
        const res = await send(c, r.method, path, body, headers)
        // problem+json, or OpenAI's error shape on the chat routes.
        const b = res.body as { code?: string; error?: { code?: string } } | null
        const code = b?.code ?? b?.error?.code
        if (res.status !== 403 || code !== 'csrf_failed') got.push(`${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 160)}`)
      }
      expect(got).toEqual([] as string[])
      const after = stateDigest(h.ctx.sqlite)
      expect(after === before ? [] : diffDumps(dump, stateDump(h.ctx.sqlite))).toEqual([] as string[])
    })
  }
})

describe("admin row actions on the caller's own account (issue 26)", () => {
  // An active admin cannot be approved or sent a verification mail: on oneself these change nothing.
  const HARMLESS_ON_SELF = new Set(['POST /api/v1/admin/users/:id/approve', 'POST /api/v1/admin/users/:id/resend-verification'])
  const BODIES: Record<string, unknown> = {
    'PATCH /api/v1/admin/users/:id': { role: 'user', email: 'taken-over@example.net' },
    'POST /api/v1/admin/users/:id/status': { status: 'disabled' },
  }
  const rowActions = routes.filter((r) => r.method !== 'GET' && r.path.startsWith('/api/v1/admin/users/:id'))

  test('there are such routes to check', () => {
    expect(rowActions.length).toBeGreaterThanOrEqual(6)
  })

  for (const r of rowActions) {
    const key = `${r.method} ${r.path}`
    if (HARMLESS_ON_SELF.has(key)) continue
    test(`${key} with an admin's own API token on its own account answers 403 session_required and changes nothing`, async () => {
      const me = await seedUser(h, `self-${crypto.randomUUID()}@example.com`, { role: 'admin' })
      await seedUser(h, `other-admin-${crypto.randomUUID()}@example.com`, { role: 'admin' }) // not the last admin
      const token = tokenClient(h, me.id)
      const before = stateDigest(h.ctx.sqlite)
      const dump = stateDump(h.ctx.sqlite)
      const res = await send(token, r.method, r.path.replace(':id', me.id), r.method === 'DELETE' ? undefined : (BODIES[key] ?? {}))
      expect([res.status, (res.body as { code?: string }).code]).toEqual([403, 'session_required'])
      expect(stateDigest(h.ctx.sqlite) === before ? [] : diffDumps(dump, stateDump(h.ctx.sqlite))).toEqual([] as string[])
      // A session of the same admin passes the rule (whatever the action then answers).
      const bySession = await send(sessionClient(h, me.id), r.method, r.path.replace(':id', me.id), r.method === 'DELETE' ? undefined : (BODIES[key] ?? {}))
      expect((bySession.body as { code?: string }).code).not.toBe('session_required')
    })
  }
})
