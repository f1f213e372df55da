import { afterAll, describe, expect, test } from 'bun:test'
import { LeaderClient, LeaderError, NetworkError, isAuthRefusal, isRetryable } from '../../src/agent/client'
import { checkLeaderHealth } from '../../src/agent/health'

// Answers with the status named in the path (/status/401), as problem+json.
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname
    if (path === '/slow/api/v1/health') return new Promise<Response>(() => {}) // never answers: the client's timeout must end the wait
    const code = Number(/\/(\d{3})\//.exec(path)?.[1] ?? 200)
    if (path.startsWith('/proxy/')) return new Response(`<html><body><h1>${code}</h1>nginx</body></html>`, { status: code, headers: { 'content-type': 'text/html' } })
    if (code === 200) return Response.json({ status: 'ok', auth: req.headers.get('authorization') })
    const headers = { 'content-type': 'application/problem+json', ...(code === 429 ? { 'retry-after': '3' } : {}) }
    return new Response(JSON.stringify({ type: 'about:blank', title: 'x', status: code, detail: `said ${code}`, code: `code_${code}` }), { status: code, headers })
  },
})
afterAll(() => server.stop(true))
const base = `http://127.0.0.1:${server.port}`

describe('leader health check', () => {
  test('401 and 403 mean a healthy leader that enforces auth; 5xx, silence and timeouts do not', async () => {
    expect((await checkLeaderHealth(base)).healthy).toBe(true)
    expect((await checkLeaderHealth(`${base}/401/x`)).healthy).toBe(true)
    expect((await checkLeaderHealth(`${base}/403/x`)).healthy).toBe(true)
    expect(await checkLeaderHealth(`${base}/503/x`)).toMatchObject({ healthy: false, status: 503 })
    expect((await checkLeaderHealth(`${base}/slow`, 200)).healthy).toBe(false)
    const closed = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const port = closed.port
    closed.stop(true)
    expect(await checkLeaderHealth(`http://127.0.0.1:${port}`)).toMatchObject({ healthy: false, status: null })
  })
})

describe('leader client', () => {
  const client = new LeaderClient(`${base}/`, () => 'svc_node_tok')

  test('sends the node token as a bearer, or the credential a call names', async () => {
    expect(await (await client.request('GET', '/')).json()).toMatchObject({ auth: 'Bearer svc_node_tok' })
    expect(await (await client.request('GET', '/', { bearer: 'svc_join_x' })).json()).toMatchObject({ auth: 'Bearer svc_join_x' })
    expect(await (await client.request('GET', '/', { bearer: null })).json()).toMatchObject({ auth: null })
  })

  test('failures are typed: status and problem code, Retry-After, or no answer at all', async () => {
    const err = (await client.request('GET', '/401/x').catch((e) => e)) as LeaderError
    expect(err).toBeInstanceOf(LeaderError)
    expect([err.status, err.code, err.detail]).toEqual([401, 'code_401', 'said 401'])
    expect(isAuthRefusal(err)).toBe(true)
    expect(isRetryable(err)).toBe(false)
    const busy = (await client.request('GET', '/429/x').catch((e) => e)) as LeaderError
    expect([busy.retryAfterS, isRetryable(busy)]).toEqual([3, true])
    expect(isRetryable(await client.request('GET', '/502/x').catch((e) => e))).toBe(true)
    const slow = await new LeaderClient(`${base}/slow`, () => null).request('GET', '/api/v1/health', { timeoutMs: 100 }).catch((e) => e)
    expect(slow).toBeInstanceOf(NetworkError)
    expect((slow as Error).message).toContain('timed out after 100 ms')
  })

  test("a proxy's own error page is named as such, and its 401 is not taken for a refused node token", async () => {
    const big = (await client.request('PUT', '/proxy/413/x').catch((e) => e)) as LeaderError
    expect([big.status, big.code, big.message]).toEqual([413, '', 'leader answered 413: not an answer of the leader (text/html): a proxy in front of it answered instead'])
    const gate = (await client.request('GET', '/proxy/401/x').catch((e) => e)) as LeaderError
    expect([gate.status, isAuthRefusal(gate)]).toEqual([401, false])
  })

  test('URLs the leader hands out are re-based onto --leader, keeping their path', () => {
    const c = new LeaderClient('https://leader.internal:8443/prefix', () => null)
    expect(c.rebase('http://public.example/api/v1/relay/job-1')).toBe('https://leader.internal:8443/prefix/api/v1/relay/job-1')
    expect(c.rebase('wss://public.example/ws/signals/f1', true)).toBe('wss://leader.internal:8443/prefix/ws/signals/f1')
    expect(new LeaderClient('http://l:1', () => null).rebase('ws://x:2/ws/signals/f1', true)).toBe('ws://l:1/ws/signals/f1')
  })
})
