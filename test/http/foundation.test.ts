import { afterAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'
import { PolicyIndex, POLICY_CLASSES } from '../../src/http/policy'
import { createBase } from '../../src/http/base'
import { errorPlugin } from '../../src/http/problem'
import { silentLogger } from '../../src/log'

const h = makeHarness()
afterAll(() => h.close())

describe('route policy', () => {
  test('every registered route declares a policy class', () => {
    const missing = h.app.routes.filter((r) => !(POLICY_CLASSES as readonly string[]).includes(r.hooks?.detail?.['x-policy'] as string))
    expect(missing.map((r) => `${r.method} ${r.path}`)).toEqual([])
    expect(h.app.routes.length).toBeGreaterThan(5)
  })

  test('a route added without a class is caught by the walk and locked to admin', async () => {
    const index = new PolicyIndex()
    const base = createBase({ cfg: h.cfg, log: silentLogger, resolve: () => null, index })
    const app = new Elysia()
      .use(errorPlugin(silentLogger, () => null))
      .use(base)
      .get('/declared', () => 'ok', { policy: 'public' })
      .get('/forgotten', () => 'secret')
    index.load(app.routes)
    expect(index.undeclared()).toEqual(['GET /forgotten'])
    expect((await app.handle(new Request('http://localhost/declared'))).status).toBe(200)
    const res = await app.handle(new Request('http://localhost/forgotten'))
    expect(res.status).toBe(401)
    expect(await res.text()).not.toContain('secret')
  })
})

describe('per-request work', () => {
  test('no hook makes every request build what it does not use: no cookie jar, parsed query or header map', () => {
    // Elysia reads each hook's parameters; one hook written as (c) => ... made every heartbeat parse
    // its cookies and query (+13 us of leader CPU per heartbeat, docs/benchmarks.md).
    const inferred = (h.app as unknown as { inference: Record<string, boolean> }).inference
    expect({ cookie: inferred.cookie, query: inferred.query, headers: inferred.headers, body: inferred.body }).toEqual({ cookie: false, query: false, headers: false, body: false })
  })
})

describe('errors are problem+json', () => {
  test('unknown routes are admin-only: 401 without a credential', async () => {
    const res = await h.client().get('/api/v1/does-not-exist')
    expect(res.status).toBe(401)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(res.body).toMatchObject({ type: 'about:blank', status: 401, code: 'unauthorized' })
    expect(typeof res.body.title).toBe('string')
    expect(typeof res.body.detail).toBe('string')
  })

  test('an unknown route says so to a signed-in non-admin, without saying which it is (it said "Admins only.")', async () => {
    const user = sessionClient(h, (await seedUser(h, `plain-${Date.now()}@example.com`)).id)
    for (const [method, path] of [['POST', '/api/v1/completions'], ['GET', '/api/v1/does-not-exist']] as const) {
      const res = await user.call(method, path, method === 'POST' ? {} : undefined)
      expect([path, res.status, res.body.detail]).toEqual([path, 403, 'No such route, or one for admins only.'])
    }
    // A route that is there and for admins says just that.
    expect((await user.get('/api/v1/admin/users')).body.detail).toBe('Admins only.')
  })

  test('malformed JSON answers 400 without echoing internals', async () => {
    const res = await h.client().post('/api/v1/auth/login', '{"email":', { 'content-type': 'application/json' })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('bad_request')
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts|SyntaxError|stack/)
  })

  test('non-JSON bodies on state-changing routes answer 415', async () => {
    const res = await h.client().post('/api/v1/auth/login', 'email=a&password=b', { 'content-type': 'application/x-www-form-urlencoded' })
    expect(res.status).toBe(415)
    expect(res.body.code).toBe('unsupported_media_type')
  })

  test('a JSON body in a charset other than UTF-8 answers 415 naming it (it was read, then refused as "not valid UTF-8"); utf-8 in any spelling passes', async () => {
    const latin1 = await h.client().post('/api/v1/auth/login', Buffer.from('{"email":"j\xf6rg@example.com","password":"x"}', 'latin1'), { 'content-type': 'application/json; charset=ISO-8859-1' })
    expect([latin1.status, latin1.body.code, latin1.body.detail]).toEqual([415, 'unsupported_media_type', 'Send JSON as UTF-8 (charset=utf-8, or no charset); this body says charset=ISO-8859-1.'])
    for (const ct of ['application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/json; charset=utf8']) {
      // Read and checked against the schema (no password: 422), not refused for its type.
      const ok = await h.client().post('/api/v1/auth/login', JSON.stringify({ email: 'nobody@example.com' }), { 'content-type': ct })
      expect([ct, ok.status]).toEqual([ct, 422])
    }
  })

  test('JSON bodies over SVC_MAX_BODY_BYTES answer 413', async () => {
    const big = JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(h.cfg.maxBodyBytes) })
    const res = await h.client().post('/api/v1/auth/login', big, { 'content-type': 'application/json' })
    expect(res.status).toBe(413)
    expect(res.body.code).toBe('payload_too_large')
  })

  test('a "__proto__" member is refused with 422 like any unknown field, also when spelled with \\u escapes or nested', async () => {
    const admin = await seedUser(h, `proto-${Date.now()}@example.com`, { role: 'admin' })
    const c = sessionClient(h, admin.id)
    const bodies: [string, string][] = [
      ['/api/v1/pools', '{"__proto__": {"owner_user_id": "x"}, "name": "Lab"}'],
      ['/api/v1/admin/pools', '{"name": "Lab", "\\u005f_proto__": {"visibility": "public"}}'],
      ['/api/v1/jobs', '{"name": "j", "stages": 1, "config": {"a": [{"__proto__": {"polluted": true}}]}}'],
    ]
    for (const [path, body] of bodies) {
      const res = await c.post(path, body, { 'content-type': 'application/json' })
      expect([path, res.status, res.body.code]).toEqual([path, 422, 'validation_failed'])
      expect(res.body.errors[0].path).toEndWith('/__proto__')
    }
    // A string that merely mentions it is fine.
    expect((await c.post('/api/v1/pools', { name: 'about __proto__' })).status).toBe(201)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  test('schema violations answer 422 validation_failed with the field', async () => {
    const res = await h.client().post('/api/v1/auth/register', { email: 'not-an-email', password: 'long enough pw' })
    expect(res.status).toBe(422)
    expect(res.body.code).toBe('validation_failed')
    expect(JSON.stringify(res.body.errors)).toContain('email')
  })
})

describe('health', () => {
  test('health and ready answer without a credential', async () => {
    const c = h.client()
    expect((await c.get('/api/v1/health')).body.status).toBe('ok')
    expect((await c.get('/api/v1/ready')).body).toEqual({ status: 'ready' })
  })
})
