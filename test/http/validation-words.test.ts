// What a refused request is told, in words: every rule of the schemas that the validator would
// otherwise state in its own terms ("Expected object", "Property 'zzz' should not be provided",
// "Expected string to match '^[a-z0-9](?:...'", "Property 'since' should be date-time", ...).
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'

const h = makeHarness()
afterAll(() => h.close())
const admin = sessionClient(h, (await seedUser(h, 'admin@example.com', { role: 'admin' })).id)
const pool = (await admin.post('/api/v1/pools', { name: 'Lab' })).body

/** The detail of a 422 (with the path and message of its first issue). */
async function refusal(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
  const res = await admin.call(method, path, body, headers)
  expect([method, path, res.status]).toEqual([method, path, 422])
  return res.body.detail as string
}

describe('validation in words', () => {
  test('shapes: an object, a known field, at least one field', async () => {
    expect(await refusal('POST', '/api/v1/pools', JSON.stringify('just a string'), { 'content-type': 'application/json' })).toBe('body: must be a JSON object ({...})')
    expect(await refusal('POST', '/api/v1/pools', { name: 'x', zzz: 1 })).toBe('body /zzz: is not a field this request takes')
    expect(await refusal('PATCH', `/api/v1/pools/${pool.id}`, {})).toBe('body: must name at least one field to change')
  })

  test('patterns: each rule in words', async () => {
    expect(await refusal('POST', '/api/v1/pools', { name: 'x', slug: 'Not A Slug' })).toBe("body /slug: must be 1 to 48 lower-case letters, digits or '-', starting and ending with a letter or digit")
    expect(await refusal('POST', '/api/v1/artifacts/uploads', { kind: 'file', name: 'x', size_bytes: 1, sha256: 'zz', pool_id: pool.id })).toBe('body /sha256: must be 64 lower-case hex digits (0-9, a-f)')
    expect(await refusal('POST', '/api/v1/jobs', { name: 'x', pool_id: pool.id, runner: '--evil' })).toBe("body /runner: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
  })

  test('formats and lists', async () => {
    expect(await refusal('GET', '/api/v1/admin/audit?since=yesterday')).toBe('query /since: must be a date and time such as 2026-11-27T09:30:00Z')
    expect(await refusal('PATCH', '/api/v1/admin/role-limits/user', { allowed_visibilities: [] })).toBe('body /allowed_visibilities: must hold at least 1 item')
    expect(await refusal('PATCH', '/api/v1/admin/role-limits/user', { allowed_visibilities: ['private', 'private'] })).toBe('body /allowed_visibilities: must not name an item twice')
  })

  test('a route that takes no query parameters refuses them, not ignores them (?force=1 on a delete, ?page=2 on an unpaged list looked applied)', async () => {
    for (const path of [`/api/v1/pools/${pool.id}?foo=1`, '/api/v1/auth/me?verbose=true', '/api/v1/admin/pools?page=2']) {
      const res = await admin.get(path)
      expect([path, res.status, res.body.errors?.[0]?.message]).toEqual([path, 422, 'is not a parameter this request takes'])
    }
    const keep = await seedUser(h, 'keep@example.com')
    const del = await admin.delete(`/api/v1/admin/users/${keep.id}?force=1&also=x`)
    expect([del.status, del.body.detail]).toEqual([422, 'query: this request takes no parameters (got force, also).'])
    expect((await admin.get('/api/v1/admin/users?q=keep@example.com')).body.total).toBe(1)
    // An empty query string is no parameter; routes that take some still take them.
    expect((await admin.get(`/api/v1/pools/${pool.id}?`)).status).toBe(200)
    expect((await admin.get(`/api/v1/pools?mine=true`)).status).toBe(200)
    // Anonymous callers are refused for the credential first, as before.
    expect((await h.client().get('/api/v1/auth/me?x=1')).status).toBe(401)
    // The OpenAI-compatible routes take what OpenAI's clients add (Azure's ?api-version=).
    expect((await admin.get('/api/v1/models?api-version=2024-06-01')).status).toBe(200)
    // The document says so: every such route declares the 422.
    const doc = (await admin.get('/api/v1/openapi.json')).body
    expect(Object.keys(doc.paths['/api/v1/auth/me'].get.responses)).toContain('422')
    expect(Object.keys(doc.paths['/api/v1/models'].get.responses)).not.toContain('422')
  })

  test('ids are UUIDs as the leader writes them: upper case or a urn: prefix is refused in words (it read as "not found")', async () => {
    expect(await refusal('GET', `/api/v1/pools/${pool.id.toUpperCase()}`)).toBe('params /id: must be an id in lower case, as the leader gives them (a UUID)')
    expect(await refusal('GET', `/api/v1/pools/urn:uuid:${pool.id}`)).toBe('params /id: must be an id (a UUID)')
    expect((await admin.get(`/api/v1/pools/${pool.id}`)).status).toBe(200)
  })
})
