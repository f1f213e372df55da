// The heartbeat on Bun's router (src/http/native.ts): the same request over a real port (the fast
// path) and through Elysia (app.handle) gets the same answer, refusals included, and a body the
// schema refuses is answered by Elysia's validation from the bytes the fast path read. The relay's
// push and pop have the same check in relay-socket.test.ts.
import { afterAll, describe, expect, test } from 'bun:test'
import type { Harness } from '../helpers/harness'
import { servedPool } from '../helpers/listen'

const all: { h: Harness; stop(): Promise<void> }[] = []
afterAll(async () => {
  for (const x of all) {
    await x.stop()
    x.h.close()
  }
})

async function fleet(env: Record<string, string> = {}) {
  const { h, server, join } = await servedPool({ SVC_MAX_BODY_BYTES: '4096', ...env })
  all.push({ h, stop: server.stop })
  const register = async (hostname: string) => (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname })).body as { fellow_id: string; node_token: string }
  return { h, server, a: await register('gpu-a'), b: await register('gpu-b') }
}

interface Answer {
  status: number
  type: string | null
  body: unknown
  requestId: string | null
}

async function read(res: Response): Promise<Answer> {
  const text = await res.text()
  const type = res.headers.get('content-type')
  return { status: res.status, type, body: type?.includes('json') ? JSON.parse(text) : text, requestId: res.headers.get('x-request-id') }
}

const HEARTBEAT = '/api/v1/workers/heartbeat'

/** One heartbeat over the real port and the same through app.handle. */
async function both(h: Harness, url: string, token: string | null, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const init = () => ({ method: 'POST', headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers }, body })
  // An empty body reaches a server's Elysia route as none (Content-Length: 0), not as ''.
  const asServed = () => ({ ...init(), body: body === '' ? null : body })
  return { fast: await read(await fetch(url + HEARTBEAT, init())), elysia: await read(await h.app.handle(new Request(`http://localhost${HEARTBEAT}`, asServed()))) }
}

describe('the heartbeat on the fast path', () => {
  test('answers as the Elysia route does, with a request id, counted like any node request', async () => {
    const { h, server, a } = await fleet()
    const ok = () => h.services.counters.http.get('node 200') ?? 0
    const beat = JSON.stringify({ status: 'idle', hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 40_960, utilization_pct: 0 }] } })
    // Counted as it is answered (Elysia's after-response hook counts its own a little later).
    const before = { requests: ok(), heartbeats: h.services.counters.heartbeats }
    expect((await fetch(server.url + HEARTBEAT, { method: 'POST', headers: { authorization: `Bearer ${a.node_token}`, 'content-type': 'application/json' }, body: beat })).status).toBe(200)
    expect([ok() - before.requests, h.services.counters.heartbeats - before.heartbeats]).toEqual([1, 1])
    const { fast, elysia } = await both(h, server.url, a.node_token, beat)
    expect(fast).toEqual({ ...elysia, requestId: fast.requestId })
    expect([fast.status, fast.body]).toEqual([200, { ok: true, next_heartbeat_s: h.cfg.heartbeatIntervalS }])
    expect(fast.requestId).toMatch(/^[0-9a-f-]{36}$/)
    // A media type with parameters is still JSON; a proxy's request id is kept.
    const withCharset = await fetch(server.url + HEARTBEAT, { method: 'POST', headers: { authorization: `Bearer ${a.node_token}`, 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'edge-7' }, body: beat })
    expect([withCharset.status, withCharset.headers.get('x-request-id')]).toEqual([200, 'edge-7'])
    // What it reported is what the operator sees.
    const seen = h.services.fellows.registry.get(a.fellow_id)
    expect(seen?.status).toBe('idle')
  })

  test('every refusal is the same answer on both paths', async () => {
    const { h, server, a, b } = await fleet()
    const cases: [string, string | null, string, Record<string, string> | undefined, number, string][] = [
      // The body read and parsed on the fast path: refusals of the reader, the parser and the handler.
      ['not JSON', a.node_token, '{"status": ', undefined, 400, 'bad_request'],
      ['too deep', a.node_token, '{"hardware":' + '['.repeat(100) + ']'.repeat(100) + '}', undefined, 400, 'bad_request'],
      ['over SVC_MAX_BODY_BYTES', a.node_token, JSON.stringify({ status: 'idle', job_id: 'x'.repeat(5000) }), undefined, 413, 'payload_too_large'],
      ['a __proto__ key', a.node_token, '{"status":"idle","__proto__":{"x":1}}', undefined, 422, 'validation_failed'],
      ["another fellow's id with a node token", a.node_token, JSON.stringify({ status: 'idle', fellow_id: b.fellow_id }), undefined, 403, 'forbidden'],
      // A body the schema refuses: Elysia's validation answers, from the bytes the fast path read.
      ['an unknown status', a.node_token, JSON.stringify({ status: 'dancing' }), undefined, 422, 'validation_failed'],
      ['no status', a.node_token, JSON.stringify({}), undefined, 422, 'validation_failed'],
      ['an unknown field', a.node_token, JSON.stringify({ status: 'idle', colour: 'blue' }), undefined, 422, 'validation_failed'],
      // As on every other JSON route (it was 400 "could not be parsed" here alone).
      ['an empty body', a.node_token, '', undefined, 422, 'validation_failed'],
      ['a negative step', a.node_token, JSON.stringify({ status: 'running', step: -1 }), undefined, 422, 'validation_failed'],
      // Before any body is read (Elysia answers): the credential and the content type.
      ['no credential', null, JSON.stringify({ status: 'idle' }), undefined, 401, 'unauthorized'],
      ['a made-up node token', 'svc_node_garbage', JSON.stringify({ status: 'idle' }), undefined, 401, 'unauthorized'],
      ['text/plain', a.node_token, JSON.stringify({ status: 'idle' }), { 'content-type': 'text/plain' }, 415, 'unsupported_media_type'],
      ['JSON in Latin-1', a.node_token, JSON.stringify({ status: 'idle' }), { 'content-type': 'application/json; charset=iso-8859-1' }, 415, 'unsupported_media_type'],
    ]
    for (const [what, token, body, headers, status, code] of cases) {
      const { fast, elysia } = await both(h, server.url, token, body, headers)
      expect({ what, ...fast, requestId: null }).toEqual({ what, ...elysia, requestId: null })
      expect([what, fast.status, (fast.body as { code?: string }).code, fast.type]).toEqual([what, status, code, 'application/problem+json'])
    }
  })

  test('with node auth off, a heartbeat names its fellow in the body, on both paths', async () => {
    const { h, server, a } = await fleet({ SVC_REQUIRE_NODE_AUTH: '0' })
    const { fast, elysia } = await both(h, server.url, null, JSON.stringify({ status: 'running', fellow_id: a.fellow_id, step: 3 }))
    expect([fast.status, elysia.status]).toEqual([200, 200])
    expect(h.services.fellows.registry.get(a.fellow_id)?.status).toBe('running')
    const unknown = await both(h, server.url, null, JSON.stringify({ status: 'idle', fellow_id: crypto.randomUUID() }))
    expect({ ...unknown.fast, requestId: null }).toEqual({ ...unknown.elysia, requestId: null })
    expect(unknown.fast.status).toBe(404)
  })
})
