// What client generators name after the OpenAPI document: every operation's function (its
// operationId) and doc comment (its summary), and the types of the resources the routes answer
// with (components.schemas, referenced with $ref wherever a route returns one).
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, type Harness } from '../helpers/harness'
import { deref, operationsOf, type Json } from '../helpers/openapi'
import { operationIdFor } from '../../src/observability/openapi-names'

const h: Harness = makeHarness()
afterAll(() => h.close())
const doc: Json = (await h.client().get('/api/v1/openapi.json')).body
const ops = operationsOf(doc)
const opOf = (method: string, path: string): Json => doc.paths[path]?.[method]
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const answer = (method: string, path: string, status = '200'): Json => deref(doc, opOf(method, path).responses[status]).content['application/json'].schema

/** Canonical JSON (sorted keys), to compare schemas whatever order their keys came in. */
const canon = (v: unknown): string =>
  Array.isArray(v) ? `[${v.map(canon).join(',')}]` : v !== null && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon((v as Json)[k])}`).join(',')}}` : JSON.stringify(v)

describe('operation ids', () => {
  test('every operation has one, an identifier in TypeScript, Python, Go and Java, unique even without regard to case', () => {
    const ids = ops.map((o) => o.op.operationId as string)
    expect(ids.filter((id) => !/^[a-z][A-Za-z0-9]*$/.test(id))).toEqual([])
    // snake_case generators (Python) and case-insensitive file systems fold case.
    const folded = ids.map((id) => id.toLowerCase())
    expect(folded.filter((id, i) => folded.indexOf(id) !== i)).toEqual([])
  })

  test('read as what the operation does', () => {
    const want: [string, string, string][] = [
      ['get', '/api/v1/pools', 'listPools'],
      ['post', '/api/v1/pools', 'createPool'],
      ['get', '/api/v1/pools/{id}', 'getPool'],
      ['patch', '/api/v1/pools/{id}', 'updatePool'],
      ['delete', '/api/v1/pools/{id}', 'deletePool'],
      ['get', '/api/v1/pools/{id}/members', 'listPoolMembers'],
      ['post', '/api/v1/auth/login', 'login'],
      ['get', '/api/v1/auth/me', 'getMe'],
      ['post', '/api/v1/auth/verify-email', 'verifyEmail'],
      ['post', '/api/v1/pools/{id}/join-requests/{user_id}/approve', 'approveJoinRequest'],
      ['post', '/api/v1/pools/invites/{invite_id}/accept', 'acceptInvite'],
      ['delete', '/api/v1/api-tokens/{id}', 'revokeApiToken'],
      ['get', '/ws/signals/{fellow_id}', 'openSignalSocket'],
      ['get', '/api/v1/jobs', 'listJobs'],
      ['post', '/api/v1/jobs/{job_id}/pause', 'pauseJob'],
      ['post', '/api/v1/workers/register', 'registerFellow'],
      ['post', '/api/v1/chat/completions', 'createChatCompletion'],
      ['get', '/api/v1/admin/users', 'adminListUsers'],
      ['get', '/api/v1/openapi.json', 'getOpenApiDocument'],
      ['get', '/dashboard', 'getDashboardPage'],
    ]
    expect(want.map(([m, p]) => [m, p, opOf(m, p)?.operationId])).toEqual(want)
  })

  test('a route nobody named gets one from its method and path', () => {
    expect(operationIdFor('get', '/api/v1/widgets', true)).toBe('listWidgets')
    expect(operationIdFor('get', '/api/v1/widgets/{id}', false)).toBe('getWidget')
    expect(operationIdFor('post', '/api/v1/widgets', false)).toBe('createWidget')
    expect(operationIdFor('patch', '/api/v1/widgets/{id}', false)).toBe('updateWidget')
    expect(operationIdFor('delete', '/api/v1/widgets/{widget_id}/gear-boxes/{id}', false)).toBe('deleteWidgetGearBox')
    expect(operationIdFor('post', '/api/v1/widgets/{id}/polish', false)).toBe('polishWidget')
    expect(operationIdFor('get', '/api/v1/widgets/{id}/spare-parts', true)).toBe('listWidgetSpareParts')
    expect(operationIdFor('get', '/ws/widgets/{id}', false)).toBe('openWidgetSocket')
    expect(operationIdFor('get', '/api/v1/admin/widgets', true)).toBe('adminListWidgets')
    expect(operationIdFor('get', '/legal/terms-of-use', false)).toBe('getLegalTermsOfUsePage')
  })

  test('no operation id makes a type name that a named schema already has', () => {
    // @hey-api/openapi-ts types each operation as <Id>Data, <Id>Responses, <Id>Response, <Id>Errors
    // and <Id>Error; a schema of the same name is renamed RegisterResponse2 (openapi-typescript-codegen
    // and others do alike).
    const derived = ops.flatMap((o) => ['Data', 'Response', 'Responses', 'Error', 'Errors'].map((s) => `${o.op.operationId.charAt(0).toUpperCase()}${o.op.operationId.slice(1)}${s}`))
    expect(derived.filter((n) => n in doc.components.schemas)).toEqual([])
  })

  test('every operation has a short summary for the doc comment generators write', () => {
    const bad = ops.filter((o) => typeof o.op.summary !== 'string' || o.op.summary.length < 3 || o.op.summary.length > 80 || o.op.summary.endsWith('.'))
    expect(bad.map((o) => `${o.method} ${o.path}: ${o.op.summary}`)).toEqual([])
    expect(opOf('post', '/api/v1/jobs/{job_id}/pause').summary).toBe('Pause a job')
  })
})

describe('named schemas', () => {
  test('the resources the routes answer with are named schemas, referenced by every route that returns them', () => {
    const want: [string, string, string, string][] = [
      ['get', '/api/v1/auth/me', '200', 'User'],
      ['get', '/api/v1/pools', '200', 'PoolList'],
      ['get', '/api/v1/pools/{id}', '200', 'Pool'],
      ['post', '/api/v1/pools', '201', 'Pool'],
      ['patch', '/api/v1/admin/pools/{id}', '200', 'Pool'],
      ['get', '/api/v1/pools/{id}/members', '200', 'PoolMemberList'],
      ['get', '/api/v1/pools/{id}/invites', '200', 'PoolInviteList'],
      ['get', '/api/v1/pools/{id}/join-requests', '200', 'JoinRequestList'],
      ['get', '/api/v1/workers/{fellow_id}', '200', 'Fellow'],
      ['get', '/api/v1/workers', '200', 'FellowList'],
      ['get', '/api/v1/cluster/nodes', '200', 'FellowList'],
      ['get', '/api/v1/jobs', '200', 'JobList'],
      ['get', '/api/v1/jobs/{job_id}', '200', 'Job'],
      ['post', '/api/v1/jobs', '201', 'Job'],
      ['get', '/api/v1/api-tokens', '200', 'ApiTokenList'],
      ['delete', '/api/v1/api-tokens/{id}', '200', 'ApiToken'],
      ['post', '/api/v1/api-tokens', '201', 'NewApiToken'],
      ['get', '/api/v1/admin/audit', '200', 'AuditList'],
      ['get', '/api/v1/admin/users', '200', 'AdminUserList'],
      ['get', '/api/v1/servables', '200', 'ServableList'],
      ['get', '/api/v1/models/{model}', '200', 'Model'],
      ['get', '/api/v1/artifacts/{id}', '200', 'Artifact'],
      ['get', '/api/v1/jobs/{job_id}/checkpoints/latest', '200', 'Artifact'],
    ]
    expect(want.map(([m, p, s]) => [m, p, s, answer(m, p, s)])).toEqual(want.map(([m, p, s, name]) => [m, p, s, ref(name)]))
  })

  test('a list names the schema of its items, and a resource the resources it holds', () => {
    const schemas: Json = doc.components.schemas
    expect(schemas.PoolList.properties.items.items).toEqual(ref('Pool'))
    expect(schemas.JobList.properties.items.items).toEqual(ref('JobSummary'))
    expect(schemas.AuditList.properties.items.items).toEqual(ref('AuditEntry'))
    expect(schemas.AdminUserList.properties.items.items).toEqual(ref('AdminUser'))
    expect(schemas.FellowList.properties.items.items).toEqual(ref('Fellow'))
    expect(schemas.Fellow.properties.gpus.items).toEqual(ref('Gpu'))
    expect(schemas.RegisterResult.properties.user).toEqual(ref('User'))
    expect(schemas.Job.properties.assignments.items).toEqual(ref('JobAssignment'))
  })

  test('no answer holds an inline copy of a named schema, and every name is used and reads as a type', () => {
    const byShape = new Map(Object.entries<Json>(doc.components.schemas).map(([name, s]) => [canon(s), name]))
    const copies: string[] = []
    const used = new Set<string>()
    const walk = (s: unknown, at: string, top: boolean) => {
      if (s === null || typeof s !== 'object') return
      if (typeof (s as Json).$ref === 'string') used.add((s as Json).$ref.split('/').pop())
      else if (!top && byShape.has(canon(s))) copies.push(`${at}: ${byShape.get(canon(s))}`)
      for (const [k, v] of Object.entries(s as Json)) if (k !== 'enum' && k !== 'const' && k !== 'default') walk(v, `${at}/${k}`, false)
    }
    for (const { method, path, op } of ops) {
      for (const [status, r] of Object.entries<Json>(op.responses)) {
        for (const [mt, m] of Object.entries<Json>(deref(doc, r).content ?? {})) walk(m.schema, `${method} ${path} ${status} ${mt}`, false)
      }
    }
    for (const [name, s] of Object.entries<Json>(doc.components.schemas)) walk(s, name, true)
    expect(copies).toEqual([])
    const names = Object.keys(doc.components.schemas)
    expect(names.filter((n) => !/^[A-Z][A-Za-z0-9]*$/.test(n))).toEqual([])
    expect(names.filter((n) => !used.has(n))).toEqual([])
    expect(names.length).toBeGreaterThan(40)
  })
})
