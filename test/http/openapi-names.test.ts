// What client generators name after the OpenAPI document: every operation's function (its
// operationId) and doc comment (its summary).
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, type Harness } from '../helpers/harness'
import { operationsOf, type Json } from '../helpers/openapi'
import { operationIdFor } from '../../src/observability/openapi-names'

const h: Harness = makeHarness()
afterAll(() => h.close())
const doc: Json = (await h.client().get('/api/v1/openapi.json')).body
const ops = operationsOf(doc)
const opOf = (method: string, path: string): Json => doc.paths[path]?.[method]

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

  test('every operation has a short summary for the doc comment generators write', () => {
    const bad = ops.filter((o) => typeof o.op.summary !== 'string' || o.op.summary.length < 3 || o.op.summary.length > 80 || o.op.summary.endsWith('.'))
    expect(bad.map((o) => `${o.method} ${o.path}: ${o.op.summary}`)).toEqual([])
    expect(opOf('post', '/api/v1/jobs/{job_id}/pause').summary).toBe('Pause a job')
  })
})
