// The served OpenAPI document is valid (a kept validator, and every schema compiled by Ajv in strict
// mode, as client generators do), and says what a client needs: the credentials each operation
// takes, the body each one reads, and the errors each one can answer.
import { afterAll, describe, expect, test } from 'bun:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { makeHarness, seedUser, tokenClient, type Harness } from '../helpers/harness'
import { deref, operationsOf, schemaCompiler, schemasOf, type Json } from '../helpers/openapi'

const h: Harness = makeHarness()
afterAll(() => h.close())
const doc: Json = (await h.client().get('/api/v1/openapi.json')).body
const ops = operationsOf(doc)

type Hooks = { body?: unknown; detail?: Record<string, unknown> }
const routes = h.app.routes
  .filter((r) => !(r.hooks as Hooks | undefined)?.detail?.hide)
  .map((r) => {
    const hooks = (r.hooks ?? {}) as Hooks
    return {
      method: r.method === 'WS' ? 'get' : r.method.toLowerCase(),
      path: r.path.replace(/:([^/]+)/g, '{$1}'),
      policy: String(hooks.detail?.['x-policy'] ?? 'admin'),
      binary: hooks.detail?.['x-body'] === 'binary',
      body: hooks.body !== undefined,
    }
  })
const opOf = (method: string, path: string): Json => doc.paths[path]?.[method]

describe('the OpenAPI document', () => {
  test('is a valid OpenAPI 3.1 document for @seriousme/openapi-schema-validator', async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(doc))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe('3.1')
  })

  test('every schema compiles in strict JSON Schema 2020-12, with no 3.0 keywords and valid defaults', () => {
    const compile = schemaCompiler(doc, { strict: true })
    const problems: string[] = []
    const text = JSON.stringify(doc)
    expect(text).not.toContain('"nullable"')
    expect(text).not.toContain('"format":"integer"')
    expect(text).not.toContain('"type":"undefined"')
    for (const { where, schema } of schemasOf(doc)) {
      try {
        compile(schema)
      } catch (e) {
        problems.push(`${where}: ${(e as Error).message}`)
      }
      // A default the schema itself refuses misleads every generator.
      const walk = (s: unknown, at: string) => {
        if (s === null || typeof s !== 'object') return
        const o = s as Json
        if ('default' in o) {
          const { default: value, ...rest } = o
          if (!compile(rest)(value)) problems.push(`${where} ${at}: default ${JSON.stringify(value)} is refused by its own schema`)
        }
        for (const [k, v] of Object.entries(o)) if (k !== 'default' && k !== 'enum' && k !== 'const') walk(v, `${at}/${k}`)
      }
      walk(schema, '')
    }
    expect(problems).toEqual([])
  })

  test('a required field or parameter has no default: the leader would fill it in, and a request without it would pass', () => {
    // Elysia's t.UnionEnum defaults to its first value unless told otherwise: an upload without
    // `kind` became a checkpoint (found by the fuzzer, seed 763901751).
    const problems: string[] = []
    const walk = (s: unknown, at: string) => {
      if (s === null || typeof s !== 'object') return
      const o = s as Json
      if (Array.isArray(o.required) && o.properties) {
        for (const k of o.required as string[]) {
          const p = o.properties[k] === undefined ? undefined : deref(doc, o.properties[k])
          if (p && 'default' in p) problems.push(`${at}/properties/${k}: required, with default ${JSON.stringify(p.default)}`)
        }
      }
      for (const [k, v] of Object.entries(o)) if (k !== 'default' && k !== 'enum' && k !== 'const' && k !== 'example' && k !== 'examples') walk(v, `${at}/${k}`)
    }
    for (const { where, schema } of schemasOf(doc)) walk(schema, where)
    for (const op of ops) {
      for (const p of (op.op.parameters ?? []) as Json[]) {
        const param = deref(doc, p)
        if (param.required && param.schema && 'default' in deref(doc, param.schema)) problems.push(`${op.method.toUpperCase()} ${op.path} ${param.in} ${param.name}: required, with a default`)
      }
    }
    expect(problems).toEqual([])
  })

  test('lists every route once, the WebSocket upgrade as a GET answering 101, with unique operation ids', () => {
    expect(ops.length).toBe(routes.length)
    for (const r of routes) expect(opOf(r.method, r.path)?.['x-policy']).toBe(r.policy)
    const ws = opOf('get', '/ws/signals/{fellow_id}')
    expect(ws['x-websocket']).toBe(true)
    expect(Object.keys(ws.responses)).toContain('101')
    expect(Object.values<Json>(doc.paths).some((item) => 'ws' in item)).toBe(false)
    const ids = ops.map((o) => o.op.operationId)
    expect(new Set(ids).size).toBe(ids.length)
  })

  test('integers are integers: query numbers and integer fields carry no numeric-string twin', () => {
    const page = opOf('get', '/api/v1/admin/users').parameters.find((p: Json) => p.name === 'page')
    expect(page.schema).toEqual({ type: 'integer', minimum: 1, maximum: 1_000_000_000 })
    const list = deref(doc, deref(doc, opOf('get', '/api/v1/admin/users').responses['200']).content['application/json'].schema)
    expect(list.properties.total).toEqual({ type: 'integer' })
    const poll = opOf('get', '/api/v1/infer/requests/{fellow_id}').responses['204']
    expect(poll.content).toBeUndefined()
  })

  test('declares bearer and cookie schemes, and each operation the credentials of its policy class', () => {
    expect(Object.keys(doc.components.securitySchemes)).toEqual(expect.arrayContaining(['apiToken', 'nodeToken', 'session', 'csrf']))
    expect(doc.components.securitySchemes.session).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'svc_session' })
    expect(doc.components.securitySchemes.apiToken).toMatchObject({ type: 'http', scheme: 'bearer' })
    const schemes = (op: Json) => (op.security as Json[]).map((r) => Object.keys(r).sort().join('+')).sort()
    const expected: Record<string, (unsafe: boolean) => string[]> = {
      public: () => [],
      page: () => [],
      node: () => ['nodeToken'],
      chat: () => ['apiToken'],
      session: (unsafe) => [unsafe ? 'csrf+session' : 'session'],
      operator: (unsafe) => ['apiToken', unsafe ? 'csrf+session' : 'session'],
      member: (unsafe) => ['apiToken', 'nodeToken', unsafe ? 'csrf+session' : 'session'],
      admin: (unsafe) => ['apiToken', unsafe ? 'csrf+session' : 'session'],
    }
    for (const r of routes) {
      if (r.path === '/api/v1/workers/register') continue // public, takes a join or node token when it has one
      const op = opOf(r.method, r.path)
      expect([`${r.method} ${r.path}`, schemes(op)]).toEqual([`${r.method} ${r.path}`, expected[r.policy]!(r.method !== 'get').sort()])
    }
    expect(schemes(opOf('post', '/api/v1/workers/register'))).toEqual(['', 'joinToken', 'nodeToken'])
  })

  test('with node or operator auth turned off, the routes it opens list "no credential" too; session and admin routes do not', async () => {
    const open = makeHarness({ SVC_REQUIRE_NODE_AUTH: '0', SVC_REQUIRE_OPERATOR_AUTH: '0' })
    try {
      const d: Json = (await open.client().get('/api/v1/openapi.json')).body
      const anonymous = (method: string, path: string) => (d.paths[path][method].security as Json[]).some((r) => Object.keys(r).length === 0)
      expect(anonymous('post', '/api/v1/workers/heartbeat')).toBe(true) // node
      expect(anonymous('get', '/api/v1/artifacts')).toBe(true) // member
      expect(anonymous('get', '/api/v1/pools')).toBe(true) // operator
      expect(anonymous('post', '/api/v1/auth/logout')).toBe(false) // session
      expect(anonymous('get', '/api/v1/admin/users')).toBe(false) // admin
      // And it says what the gate does: an artifact list without a credential is answered.
      expect((await open.client().get('/api/v1/artifacts')).status).toBe(200)
    } finally {
      open.close()
    }
  })

  test('every route with a body declares it: JSON with its schema, or octet-stream for binary routes', () => {
    const withBody = routes.filter((r) => r.body || r.binary)
    expect(withBody.length).toBeGreaterThan(20)
    for (const r of withBody) {
      const content = opOf(r.method, r.path).requestBody?.content ?? {}
      const want = r.binary ? 'application/octet-stream' : 'application/json'
      expect([`${r.method} ${r.path}`, Object.keys(content)]).toEqual([`${r.method} ${r.path}`, [want]])
      if (!r.binary) expect(content[want].schema.type).toBe('object')
    }
    for (const r of routes.filter((x) => !x.body && !x.binary)) expect(opOf(r.method, r.path).requestBody).toBeUndefined()
  })

  test('every operation declares a success and the errors its class and shape can answer, as problem+json', () => {
    expect(doc.components.schemas.Problem.required).toEqual(['type', 'title', 'status', 'detail', 'code'])
    for (const r of routes) {
      const op = opOf(r.method, r.path)
      const statuses = Object.keys(op.responses).map(Number)
      const at = `${r.method.toUpperCase()} ${r.path}`
      expect([at, statuses.some((s) => s < 400)]).toEqual([at, true])
      const must = [
        // A Host the leader does not answer to (DNS rebinding), on any route.
        421,
        // A refused WebSocket handshake is a 403 (docs/api.md, Signals).
        ...(['node', 'chat', 'session', 'operator', 'member', 'admin'].includes(r.policy) ? (r.path.startsWith('/ws/') ? [403] : [401, 403]) : []),
        // A full disk answers any write 507 (docs/operations.md).
        ...(r.method !== 'get' ? [400, 403, 413, 415, 507] : []),
        // The OpenAI-compatible routes refuse a field with 400, OpenAI's status.
        ...(r.body ? [r.path.startsWith('/api/v1/chat/') || r.path.startsWith('/api/v1/models') || r.path === '/api/v1/embeddings' ? 400 : 422] : []),
        ...(r.path.includes('{') && !r.path.startsWith('/ws/') ? [404] : []),
      ]
      for (const s of must) expect([at, s, statuses.includes(s)]).toEqual([at, s, true])
      for (const s of statuses.filter((x) => x >= 400)) {
        const res = deref(doc, op.responses[String(s)])
        const media = r.path.startsWith('/api/v1/chat/') || r.path.startsWith('/api/v1/models') || r.path === '/api/v1/embeddings' ? 'application/json' : r.path.startsWith('/api/') || r.path.startsWith('/ws/') || r.path === '/metrics' ? 'application/problem+json' : null
        if (media !== null) expect([at, s, Object.keys(res.content)]).toEqual([at, s, [media]])
      }
    }
    expect(deref(doc, opOf('post', '/api/v1/auth/login').responses['429']).headers['Retry-After']).toBeDefined()
    expect(deref(doc, opOf('put', '/api/v1/artifacts/uploads/{upload_id}').responses['507']).headers['Retry-After']).toBeDefined()
    expect(Object.keys(opOf('delete', '/api/v1/pools/{id}').responses)).toContain('409')
  })
})

describe('query integers', () => {
  test('a missing, non-numeric or out-of-range ?page= says "must be an integer" and names the parameter', async () => {
    const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
    const a = tokenClient(h, admin.id)
    for (const q of ['page=', 'page=abc', 'page=1.5', 'page=0', 'page=0x10', 'page=1e2', 'page=%207%20', 'page=Infinity']) {
      const r = await a.get(`/api/v1/admin/users?${q}`)
      expect(r.status).toBe(422)
      expect(r.body.detail).toBe('query /page: must be an integer from 1 to 1000000000')
      expect(r.body.errors).toEqual([{ path: '/page', message: 'must be an integer from 1 to 1000000000' }])
    }
    expect((await a.get('/api/v1/admin/users?page=2')).status).toBe(200)
  })
})

describe('query enums', () => {
  test('a value no enum member matches says which ones it takes, not the name of a type', async () => {
    const admin = await seedUser(h, 'enum-admin@example.com', { role: 'admin' })
    const a = tokenClient(h, admin.id)
    const jobs = await a.get('/api/v1/jobs?status=nope')
    expect([jobs.status, jobs.body.detail]).toEqual([422, 'query /status: must be one of: "queued", "scheduled", "running", "paused", "completed", "failed", "cancelled"'])
    const artifacts = await a.get('/api/v1/artifacts?kind=weights')
    expect(artifacts.body.errors).toEqual([{ path: '/kind', message: 'must be one of: "checkpoint", "model", "file"' }])
    expect((await a.get('/api/v1/artifacts?kind=model')).status).toBe(200)
  })
})

describe('serving the document', () => {
  test('does not change how the leader validates: an internationalised address still registers after the document was built', async () => {
    // @elysiajs/openapi sets its own `email` and `uuid` formats on import; this file fetched the
    // document above, so the generator is loaded by now.
    const res = await h.client().post('/api/v1/auth/register', { email: 'Jörg.After@example.org', password: 'a long enough password' })
    expect(res.status).toBe(201)
    const bad = await h.client().get('/api/v1/pools/not-a-uuid')
    expect(bad.status).not.toBe(500)
  })
})
