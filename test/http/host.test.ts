// The Host a request names (src/http/host.ts): a page of another site rebound to the leader's
// address (DNS rebinding) names that site, and is refused before anything is decided for it (by
// its Origin on changes and sockets, when a proxy sets a Host of its own); a
// request without Host (HTTP/1.0, a health checker) is answered, pages included (they were a bare
// 500). Raw requests over a real port, since a client library sets the Host itself.
import { afterAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { makeHarness, seedUser } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { hostCheck, originCheck } from '../../src/http/host'
import { silentLogger } from '../../src/log'

const stops: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const s of stops) await s()
})

function serve(env: Record<string, string> = {}) {
  const h = makeHarness(env)
  const server = listen(h)
  stops.push(async () => {
    await server.stop()
    h.close()
  })
  return { h, port: server.port }
}

interface Raw {
  status: number
  headers: string
  body: string
}

/** One request as written (`host` null: no Host line), read to the connection's end. */
function raw(port: number, opts: { method?: string; path: string; host: string | null; version?: string; headers?: Record<string, string>; body?: string }): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => {
      const body = opts.body ?? ''
      const lines = [
        `${opts.method ?? 'GET'} ${opts.path} HTTP/${opts.version ?? '1.1'}`,
        ...(opts.host === null ? [] : [`Host: ${opts.host}`]),
        'Connection: close',
        ...Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
        ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : []),
        '',
        body,
      ]
      sock.write(lines.join('\r\n'))
    })
    let buf = ''
    sock.on('data', (d) => (buf += d.toString()))
    sock.on('end', () => {
      const [head, ...rest] = buf.split('\r\n\r\n')
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1] ?? 0), headers: head ?? '', body: rest.join('\r\n\r\n') })
    })
    sock.on('error', reject)
  })
}

const json = { 'content-type': 'application/json' }

describe('the Host header (DNS rebinding)', () => {
  test('a name the leader does not answer to is refused 421 before anything is decided: no first admin, no tokenless fellow, no page', async () => {
    const { h, port } = serve({ SVC_ALLOW_TOKENLESS_JOIN: '1' })
    const evil = `rebind.attacker.example:${port}`
    const register = await raw(port, { method: 'POST', path: '/api/v1/auth/register', host: evil, headers: { ...json, origin: `http://${evil}` }, body: JSON.stringify({ email: 'mallory@example.com', password: 'correct horse battery' }) })
    expect(register.status).toBe(421)
    expect(register.headers).toContain('application/problem+json')
    expect(JSON.parse(register.body)).toMatchObject({ status: 421, code: 'misdirected_request' })
    expect(JSON.parse(register.body).detail).toContain('SVC_ALLOWED_HOSTS')
    expect(h.ctx.sqlite.query('SELECT count(*) AS n FROM users').get()).toEqual({ n: 0 })
    const fellow = await raw(port, { method: 'POST', path: '/api/v1/workers/register', host: evil, headers: json, body: JSON.stringify({ hostname: 'x' }) })
    expect(fellow.status).toBe(421)
    // Pages, an unknown path, the fast path's heartbeat and the signal socket's handshake alike.
    for (const path of ['/login', '/', '/no/such/page', '/api/v1/health']) expect([path, (await raw(port, { path, host: evil, headers: { accept: 'text/html' } })).status]).toEqual([path, 421])
    expect((await raw(port, { method: 'POST', path: '/api/v1/workers/heartbeat', host: evil, headers: { ...json, authorization: 'Bearer svc_node_x' }, body: '{"status":"idle"}' })).status).toBe(421)
    const ws = await raw(port, { path: '/ws/signals/01a2b3c4-0000-7000-8000-00000000abcd', host: evil, headers: { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' } })
    expect(ws.status).toBe(421)
  })

  test("behind a proxy that sets its own Host (nginx's default: an IP address), a change or a socket from a page of another site is refused 403 by its Origin: no first admin", async () => {
    const { h, port } = serve({ SVC_BASE_URL: 'http://192.0.2.2:46615', SVC_ALLOW_TOKENLESS_JOIN: '1' })
    const proxied = `127.0.0.1:${port}`
    const register = (origin: string) => raw(port, { method: 'POST', path: '/api/v1/auth/register', host: proxied, headers: { ...json, origin }, body: JSON.stringify({ email: 'mallory@example.com', password: 'correct horse battery' }) })
    for (const origin of ['http://evil.example:46615', 'null', 'chrome-extension://abc', 'not a url']) {
      const r = await register(origin)
      expect([origin, r.status, JSON.parse(r.body).code]).toEqual([origin, 403, 'forbidden'])
    }
    expect(JSON.parse((await register('http://evil.example:46615')).body).detail).toContain('Origin "http://evil.example:46615"')
    expect(h.ctx.sqlite.query('SELECT count(*) AS n FROM users').get()).toEqual({ n: 0 })
    expect((await raw(port, { method: 'POST', path: '/api/v1/workers/register', host: proxied, headers: { ...json, origin: 'http://evil.example:46615' }, body: JSON.stringify({ hostname: 'x' }) })).status).toBe(403)
    const ws = await raw(port, { path: '/ws/signals/01a2b3c4-0000-7000-8000-00000000abcd', host: proxied, headers: { origin: 'http://evil.example:46615', upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' } })
    expect(ws.status).toBe(403)
    // A read from anywhere is answered as before (no Origin check on GET); the leader's own pages,
    // and clients that send no Origin (the CLI, agents), change things.
    expect((await raw(port, { path: '/api/v1/health', host: proxied, headers: { origin: 'http://evil.example:46615' } })).status).toBe(200)
    expect((await register('http://192.0.2.2:46615')).status).toBe(201)
    const other = await raw(port, { method: 'POST', path: '/api/v1/auth/register', host: proxied, headers: json, body: JSON.stringify({ email: 'bob@example.com', password: 'correct horse battery' }) })
    expect(other.status).toBe(201)
  })

  test('answers to its SVC_BASE_URL, localhost, IP addresses and SVC_ALLOWED_HOSTS (a name, or a domain with its subdomains)', async () => {
    const { port } = serve({ SVC_BASE_URL: 'https://leader.example.org', SVC_ALLOWED_HOSTS: 'gpu-box, .corp.example' })
    const status = async (host: string) => (await raw(port, { path: '/api/v1/health', host })).status
    for (const host of ['leader.example.org', 'LEADER.example.org.', `127.0.0.1:${port}`, `localhost:${port}`, 'app.localhost', `[::1]:${port}`, '10.1.2.3', 'gpu-box:8080', 'corp.example', 'a.b.corp.example']) {
      expect([host, await status(host)]).toEqual([host, 200])
    }
    for (const host of ['leader.example.org.evil.example', 'xcorp.example', 'gpu-box.evil.example', 'example.org']) expect([host, await status(host)]).toEqual([host, 421])
    // Not a host name at all: 400.
    for (const host of ['a b', '', '[::1', `127.0.0.1:99999`]) expect([host, await status(host)]).toEqual([host, 400])
  })

  test('an Origin refused is logged once, with what to set when it is the leader\'s own public name behind a proxy', () => {
    const lines: unknown[][] = []
    const log = { ...silentLogger, warn: (...a: unknown[]) => void lines.push(a) }
    const check = originCheck({ baseUrl: 'http://127.0.0.1:8080', host: '127.0.0.1', allowedHosts: [] }, log)
    expect(check('https://gpu.lab.example')?.code).toBe('forbidden')
    expect(check('https://gpu.lab.example')?.code).toBe('forbidden')
    expect(check('http://127.0.0.1:8080')).toBeNull()
    expect(lines).toHaveLength(1)
    expect(String(lines[0]![0])).toContain('SVC_ALLOWED_HOSTS')
    expect(lines[0]![1]).toEqual({ origin: 'https://gpu.lab.example' })
  })

  test("answers to the name it listens on (SVC_HOST: svc health asks by it) and to SVC_BASE_URL's written with a trailing dot; logs a refused name once", () => {
    const warned: unknown[] = []
    const log = { ...silentLogger, warn: (_msg: string, fields?: unknown) => void warned.push(fields) }
    const check = hostCheck({ baseUrl: 'https://Leader.Example.org./', host: 'vm-7', allowedHosts: [] }, log)
    for (const host of ['vm-7:8080', 'leader.example.org', 'leader.example.org.:443']) expect([host, check(host)]).toEqual([host, null])
    expect(check('svc:8080')?.code).toBe('misdirected_request')
    expect(check('svc:8080')?.code).toBe('misdirected_request')
    expect(warned).toEqual([{ host: 'svc' }])
  })

  test('SVC_ALLOWED_HOSTS=* answers to any name', async () => {
    const { port } = serve({ SVC_ALLOWED_HOSTS: '*' })
    expect((await raw(port, { path: '/api/v1/health', host: 'anything.example' })).status).toBe(200)
  })

  test('a request without Host (HTTP/1.0, a health checker) is answered, pages and unknown paths included (they were a bare 500)', async () => {
    const { h, port } = serve()
    await seedUser(h, 'admin@example.com', { role: 'admin' })
    for (const path of ['/api/v1/health', '/login', '/register', '/', '/no/such/page']) {
      const r = await raw(port, { path, host: null, version: '1.0', headers: { accept: 'text/html' } })
      expect(r.body).not.toContain('Something went wrong!')
      expect([path, r.status < 500]).toEqual([path, true])
    }
    expect((await raw(port, { method: 'OPTIONS', path: '/', host: null, version: '1.0' })).status).toBeLessThan(500)
  })
})
