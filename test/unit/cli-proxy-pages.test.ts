// A reverse proxy in front of a leader answers some requests itself, with an HTML page of its own:
// a body larger than it takes, an auth proxy's refusal, a path it does not pass on, a timeout, its
// rate limit. The CLI says which, and what to change, instead of asking whether there is a leader.
import { afterAll, describe, expect, test } from 'bun:test'
import { Client, LeaderRefused, LeaderUnreachable } from '../../src/cli/client'
import { CliError } from '../../src/cli/usage'

const LIMIT = 1024 * 1024

/** nginx's own error page, as it sends it for `status`. */
function nginxPage(status: number, reason: string): Response {
  const html = `<html>\r\n<head><title>${status} ${reason}</title></head>\r\n<body>\r\n<center><h1>${status} ${reason}</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n`
  const headers: Record<string, string> = { 'content-type': 'text/html', server: 'nginx/1.22.1' }
  if (status === 429) headers['retry-after'] = '7'
  return new Response(html, { status, statusText: reason, headers })
}

// Bun.serve sends its own reason phrases (nginx's 413 is "Request Entity Too Large"): the CLI says whichever came.
const REASONS: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 408: 'Request Timeout', 413: 'Payload Too Large', 429: 'Too Many Requests', 504: 'Gateway Timeout' }

// The stand-in proxy: a body over 1 MiB is refused as nginx's default client_max_body_size does;
// /page?s=N answers nginx's page for N; /leader?s=N the leader's own problem+json.
const proxy = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: async (req) => {
    const url = new URL(req.url)
    const body = req.body ? await req.arrayBuffer() : new ArrayBuffer(0)
    if (body.byteLength > LIMIT) return nginxPage(413, REASONS[413]!)
    const s = Number(url.searchParams.get('s'))
    if (url.pathname === '/leader') return Response.json({ type: 'about:blank', status: s, title: 'Refused', detail: `The leader's own ${s}.`, code: 'leader_code' }, { status: s, headers: { 'content-type': 'application/problem+json' } })
    if (url.pathname === '/page') return nginxPage(s, REASONS[s]!)
    return Response.json({ offset: 0 })
  },
})
afterAll(() => proxy.stop(true))

const base = `http://127.0.0.1:${proxy.port}`
const client = new Client({ url: base, token: 'svc_pat_x', source: 'test' })
const refusal = (p: Promise<unknown>) => p.then(() => null, (e: Error) => e)

describe("a proxy's own page", () => {
  test('a 413 for an upload larger than the proxy takes names the proxy\'s body limit and where to raise it, not "is URL a leader?"', async () => {
    const bytes = new Uint8Array(2 * LIMIT)
    const stream = new Blob([bytes]).stream()
    const e = await refusal(client.fetch('PUT', '/api/v1/artifacts/uploads/u1', { query: { offset: 0 }, raw: stream, timeoutMs: null }))
    expect(e).toBeInstanceOf(CliError)
    expect(e instanceof LeaderUnreachable).toBe(false)
    expect(e!.message).toBe(
      `PUT /api/v1/artifacts/uploads/u1: a proxy in front of ${base} refused the request as too large (413 ${REASONS[413]}); the leader never saw it: raise the proxy's body limit (nginx: client_max_body_size 10g; proxy_request_buffering off; for artifacts, see docs/operations.md, Artifact storage)`,
    )
  })

  test('401 and 403 pages are an auth proxy or address rule in front of the leader, not the token being refused by the leader', async () => {
    for (const s of [401, 403]) {
      const e = await refusal(client.get('/page', { s }))
      expect([s, e instanceof LeaderUnreachable, e?.message]).toEqual([
        s,
        false,
        `GET /page: a proxy in front of ${base} refused the request (${s} ${REASONS[s]}); the leader never saw it: an auth proxy or an address rule, which svc's bearer token does not pass; let /api/ through to the leader (it checks the token itself), or use an address of the leader that does not go through it (or is ${base} no leader at all?)`,
      ])
    }
  })

  test('a 404 page asks whether the URL is the leader\'s base URL, with the path a proxy serves it under', async () => {
    const e = await refusal(client.get('/page', { s: 404 }))
    expect(e?.message).toBe(`GET /page: the answer (404 Not Found) is not a leader's: is ${base} a leader? (one served under a path by a proxy needs that path in the URL: https://HOST/PATH)`)
  })

  test('a 408 page is the proxy giving up on a slow request; a 504 page the leader not answering the proxy in time (waited out, as 502 and 503)', async () => {
    const slow = await refusal(client.get('/page', { s: 408 }))
    expect([slow instanceof LeaderUnreachable, slow?.message]).toEqual([false, `GET /page: a proxy in front of ${base} stopped waiting for the request (408 Request Timeout); the leader never saw all of it: try again, or give the proxy more time for a slow upload (nginx: client_body_timeout)`])
    const late = await refusal(client.get('/page', { s: 504 }))
    expect([late instanceof LeaderUnreachable, late?.message]).toEqual([true, 'GET /page: the leader did not answer its proxy in time (504 Gateway Timeout): it is away or busy, or the proxy waits less than the call takes (nginx: proxy_read_timeout)'])
  })

  test("a 429 page is the proxy's rate limit, with its Retry-After", async () => {
    const e = await refusal(client.get('/page', { s: 429 }))
    expect([e instanceof LeaderUnreachable, e?.message]).toEqual([false, `GET /page: a proxy in front of ${base} limits how often it is called (429 Too Many Requests, try again in 7 s); the leader never saw the request: wait, or raise the proxy's rate limit for /api/ (nginx: limit_req)`])
  })

  test("the leader's own refusals with these statuses are its words, as before", async () => {
    for (const s of [403, 404, 408, 413, 429]) {
      const e = await refusal(client.get('/leader', { s }))
      expect([s, e instanceof LeaderRefused, e?.message]).toEqual([s, true, `The leader's own ${s}.`])
    }
  })
})
