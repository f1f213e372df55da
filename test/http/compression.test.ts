// Responses people and tools download are compressed when asked for, and assets revalidate with
// an ETag instead of downloading in full (issue 28).
import { afterAll, describe, expect, test } from 'bun:test'
import { brotliDecompressSync } from 'node:zlib'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'
import { pickEncoding } from '../../src/http/compress'

const h = makeHarness()
afterAll(() => h.close())

const get = (path: string, headers: Record<string, string> = {}) => h.app.handle(new Request(`http://leader.test${path}`, { headers }))

describe('compression', () => {
  test('the OpenAPI document, pages and assets are brotli- or gzip-encoded per Accept-Encoding, and decode to the plain bytes', async () => {
    for (const path of ['/api/v1/openapi.json', '/login', '/assets/app.css']) {
      const plain = await (await get(path)).text()
      expect(plain.length).toBeGreaterThan(1024)
      const br = await get(path, { 'accept-encoding': 'gzip, deflate, br' })
      expect([path, br.headers.get('content-encoding'), br.headers.get('vary')]).toEqual([path, 'br', 'Accept-Encoding'])
      const brBytes = new Uint8Array(await br.arrayBuffer())
      expect(brBytes.byteLength).toBeLessThan(plain.length)
      const gz = await get(path, { 'accept-encoding': 'gzip' })
      expect(gz.headers.get('content-encoding')).toBe('gzip')
      const gzBytes = new Uint8Array(await gz.arrayBuffer())
      if (path === '/login') continue // each view mints its own CSRF cookie and nonce-free markup may differ by it
      expect(new TextDecoder().decode(brotliDecompressSync(brBytes))).toBe(plain)
      expect(new TextDecoder().decode(Bun.gunzipSync(gzBytes))).toBe(plain)
    }
  })

  test('headers set by the route survive: cookies and security headers on a compressed page', async () => {
    const res = await get('/login', { 'accept-encoding': 'gzip' })
    expect(res.headers.get('content-encoding')).toBe('gzip')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'")
    expect(res.headers.getSetCookie().some((c) => c.startsWith('svc_csrf='))).toBe(true)
    expect(Bun.gunzipSync(new Uint8Array(await res.arrayBuffer())).byteLength).toBeGreaterThan(1024)
  })

  test('small answers, refused encodings and fellow traffic go out as they are', async () => {
    expect((await get('/api/v1/health', { 'accept-encoding': 'gzip, br' })).headers.get('content-encoding')).toBeNull()
    expect((await get('/api/v1/openapi.json', { 'accept-encoding': 'identity' })).headers.get('content-encoding')).toBeNull()
    expect((await get('/api/v1/openapi.json', { 'accept-encoding': 'br;q=0, gzip;q=0' })).headers.get('content-encoding')).toBeNull()
    expect(pickEncoding('gzip;q=1.0, br;q=0')).toBe('gzip')
    expect(pickEncoding('*')).toBe('gzip')
    expect(pickEncoding(null)).toBeNull()
    const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
    const a = sessionClient(h, admin.id)
    const pool = (await a.post('/api/v1/admin/pools', { name: 'Lab', visibility: 'private' })).body
    const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu-0' })).body
    // Twenty queued UPDATE signals make a heartbeat answer of several KiB: still not encoded.
    for (let i = 0; i < 20; i++) await a.post('/api/v1/workers/update', { fellow_id: reg.fellow_id, version: `v${i}-${'x'.repeat(40)}` })
    const hb = await h.app.handle(
      new Request('http://leader.test/api/v1/workers/heartbeat', {
        method: 'POST',
        headers: { authorization: `Bearer ${reg.node_token}`, 'content-type': 'application/json', 'accept-encoding': 'gzip, br' },
        body: JSON.stringify({ status: 'idle' }),
      }),
    )
    expect(hb.status).toBe(200)
    expect(hb.headers.get('content-encoding')).toBeNull()
    expect((await hb.text()).length).toBeGreaterThan(2048)
  })
})

describe('asset revalidation', () => {
  test('assets carry a weak ETag and Last-Modified; If-None-Match answers 304 with no body', async () => {
    const first = await get('/assets/app.css')
    const etag = first.headers.get('etag')
    expect(etag).toMatch(/^W\/"[0-9a-z]+"$/)
    expect(Number.isNaN(Date.parse(first.headers.get('last-modified') ?? ''))).toBe(false)
    expect(first.headers.get('cache-control')).toBe('no-cache')
    const again = await get('/assets/app.css', { 'if-none-match': etag! })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')
    expect(again.headers.get('etag')).toBe(etag)
    // The weak comparison: a proxy may strip the W/ prefix.
    expect((await get('/assets/app.css', { 'if-none-match': etag!.slice(2) })).status).toBe(304)
    expect((await get('/assets/app.css', { 'if-none-match': 'W/"other"' })).status).toBe(200)
  })
})
