// What one fellow or one member may hold of the leader's inference transport: sockets per fellow,
// waits for requests per fellow, the answer a non-streamed request collects, the prompts and unread
// output each pool may keep in memory. Real sockets and HTTP on a port of the harness app.
import { afterAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { makeHarness, seedUser, sessionClient, tokenClient, type Harness } from '../helpers/harness'
import { until } from '../helpers/until'
import { INFER_CLOSE, type LeaderMessage } from '../../src/wire/infer-socket'
import type { InferRequest } from '../../src/wire/inference'
import { MAX_SOCKETS_PER_FELLOW } from '../../src/inference/socket'

const stops: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const s of stops) await s()
})

/** On a port the system picks (fixed ones met other programs' servers). */
function listenOn(h: Harness): string {
  h.app.listen({ hostname: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${h.app.server!.port}`
}

/** A fellow's end of the inference socket that records what it receives. */
class Channel {
  requests: InferRequest[] = []
  acks: { seq: number; result: string }[] = []
  closed: { code: number; reason: string } | null = null
  private ws: WebSocket
  private seq = 0

  constructor(url: string, token: string) {
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } } as unknown as string[])
    this.ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data as string) as LeaderMessage
      if (m.t === 'request') this.requests.push(m.request)
      else this.acks.push({ seq: m.seq, result: m.result })
    }
    this.ws.onclose = (ev) => (this.closed = { code: ev.code, reason: ev.reason })
  }

  opened(): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.ws.readyState === WebSocket.OPEN) return resolve(true)
      this.ws.onopen = () => resolve(true)
      this.ws.onerror = () => resolve(false)
    })
  }

  send(m: unknown): void {
    this.ws.send(JSON.stringify(m))
  }

  credit(n: number): void {
    this.send({ t: 'credit', n })
  }

  /** Sends frames and waits for their ack. */
  async frames(id: string, frames: unknown[]): Promise<string> {
    const seq = this.seq++
    this.send({ t: 'frames', id, seq, frames })
    return (await until(() => this.acks.find((a) => a.seq === seq) ?? null, `the ack of ${seq}`)).result
  }

  close(): void {
    this.ws.close()
  }
}

async function setup(env: Record<string, string> = {}) {
  const h = makeHarness(env)
  const url = listenOn(h)
  stops.push(async () => {
    await h.app.server?.stop(true)
    h.close()
  })
  const alice = await seedUser(h, 'alice@example.com')
  const a = sessionClient(h, alice.id)
  const pool = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
  const fellow = async (client = a, poolId: string = pool.id, model = 'tiny-llm') => {
    const join = (await client.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
    const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu' })).body as { fellow_id: string; node_token: string }
    await h.client({ bearer: reg.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', servables: [model] })
    return { id: reg.fellow_id, token: reg.node_token, socket: `${url.replace(/^http/, 'ws')}/ws/infer/${reg.fellow_id}` }
  }
  const openai = new OpenAI({ baseURL: `${url}/api/v1`, apiKey: tokenClient(h, alice.id).opts.bearer!, maxRetries: 0 })
  return { h, url, a, pool, fellow, openai }
}

const ask = (content: string) => [{ role: 'user' as const, content }]

describe('inference sockets and waits per fellow', () => {
  test(`a fellow's inference socket past ${MAX_SOCKETS_PER_FELLOW} is closed 1008 with the reason; one closed makes room again`, async () => {
    const { fellow, openai } = await setup()
    const f = await fellow()
    const held: Channel[] = []
    for (let i = 0; i < MAX_SOCKETS_PER_FELLOW; i++) {
      const ch = new Channel(f.socket, f.token)
      expect(await ch.opened()).toBe(true)
      held.push(ch)
    }
    const extra = new Channel(f.socket, f.token)
    await extra.opened()
    const closed = await until(() => extra.closed, 'the extra socket closed')
    expect(closed.code).toBe(INFER_CLOSE.policy)
    expect(closed.reason).toContain(`holds ${MAX_SOCKETS_PER_FELLOW} inference sockets`)
    // The sockets it holds still serve.
    held[0]!.credit(1)
    const answer = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('still there?') })
    const req = await until(() => held[0]!.requests[0] ?? null, 'the request on the first socket')
    expect(await held[0]!.frames(req.request_id, [{ delta: 'yes' }, { done: true }])).toBe('ok')
    expect((await answer).choices[0]!.message.content).toBe('yes')
    // One closed: a new one is taken.
    held[1]!.close()
    await until(() => held[1]!.closed, 'the second socket closed')
    const again = new Channel(f.socket, f.token)
    expect(await again.opened()).toBe(true)
    again.credit(1)
    const next = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('and now?') })
    const r2 = await until(() => again.requests[0] ?? null, 'the request on the new socket')
    expect(await again.frames(r2.request_id, [{ delta: 'here' }, { done: true }])).toBe('ok')
    expect((await next).choices[0]!.message.content).toBe('here')
    expect(again.closed).toBeNull()
    for (const ch of [...held, again]) ch.close()
  })

  test('a socket whose wait for requests is ended by 64 newer long-polls of its fellow is closed 1008, not made to wait again at once', async () => {
    const { h, url, fellow } = await setup()
    const f = await fellow()
    const ch = new Channel(f.socket, f.token)
    expect(await ch.opened()).toBe(true)
    ch.credit(1)
    await until(() => h.services.inference.hub.stats().waiters === 1, "the socket's wait")
    const stop = new AbortController()
    const polls = Array.from({ length: 64 }, () =>
      fetch(`${url}/api/v1/infer/requests/${f.id}?wait_ms=30000`, { headers: { authorization: `Bearer ${f.token}` }, signal: stop.signal }).then(
        (r) => r.status,
        () => 'aborted',
      ),
    )
    const closed = await until(() => ch.closed, 'the socket closed')
    expect(closed.code).toBe(INFER_CLOSE.policy)
    expect(closed.reason).toContain('than the leader keeps (64)')
    // The 64 long-polls still wait: none was ended to make room for the socket again.
    expect(h.services.inference.hub.stats().waiters).toBe(64)
    stop.abort()
    expect(new Set(await Promise.all(polls))).toEqual(new Set(['aborted']))
  })
})

/** Sends frames until the leader takes them (a 'full' ack: the client has not read yet); the ack. */
async function deliver(ch: Channel, id: string, frames: unknown[]): Promise<string> {
  for (;;) {
    const result = await ch.frames(id, frames)
    if (result !== 'full') return result
    await Bun.sleep(10)
  }
}

describe('a non-streamed answer', () => {
  test('past 1 Mi characters ends with 502 fellow_failed for the client, and the fellow is told to stop (gone)', async () => {
    const { fellow, openai } = await setup()
    const f = await fellow()
    const ch = new Channel(f.socket, f.token)
    expect(await ch.opened()).toBe(true)
    ch.credit(1)
    const answer = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('talk forever') }).then(
      () => null,
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    )
    const req = await until(() => ch.requests[0] ?? null, 'the request on the socket')
    // 17 posts of 64 Ki characters: one more than 1 Mi. The fellow keeps going until told.
    const results: string[] = []
    for (let i = 0; i < 24 && results.at(-1) !== 'gone'; i++) results.push(await deliver(ch, req.request_id, [{ delta: 'x'.repeat(65536) }]))
    expect(results.at(-1)).toBe('gone')
    expect(results.length).toBeLessThanOrEqual(18)
    const err = await answer
    expect(err?.status).toBe(502)
    expect(err?.code).toBe('fellow_failed')
    expect(err?.message).toContain('longer than 1048576 characters')
    ch.close()
  })

  test('of tool calls past 1 Mi characters of arguments ends the same way', async () => {
    const { fellow, openai } = await setup()
    const f = await fellow()
    const ch = new Channel(f.socket, f.token)
    expect(await ch.opened()).toBe(true)
    ch.credit(1)
    const answer = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('call forever') }).then(
      () => null,
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    )
    const req = await until(() => ch.requests[0] ?? null, 'the request on the socket')
    const call = { index: 0, function: { arguments: 'y'.repeat(60_000) } }
    const results: string[] = []
    for (let i = 0; i < 24 && results.at(-1) !== 'gone'; i++) results.push(await deliver(ch, req.request_id, [{ tool_calls: [call] }]))
    expect(results.at(-1)).toBe('gone')
    const err = await answer
    expect([err?.status, err?.code]).toEqual([502, 'fellow_failed'])
    ch.close()
  })
})

describe("the leader's inference memory, per pool", () => {
  test("one pool's held prompts (tool calls counted) stop at its quarter with 503 naming the share; another pool's chat is still taken", async () => {
    const { h, url, fellow, openai } = await setup({ SVC_MAX_BODY_BYTES: String(16 << 20) })
    const bob = await seedUser(h, 'bob@example.com')
    const b = sessionClient(h, bob.id)
    const bobPool = (await b.post('/api/v1/pools', { name: 'Bob GPUs' })).body
    const alices = await fellow()
    const bobs = await fellow(b, bobPool.id, 'bob-model')
    const holder = new Channel(alices.socket, alices.token)
    const server = new Channel(bobs.socket, bobs.token)
    expect([await holder.opened(), await server.opened()]).toEqual([true, true])
    holder.credit(10)
    server.credit(1)
    // Alice's fellow takes her requests and never answers: each holds 12 Mi characters of tool-call
    // arguments (with empty content) until it ends. Three are past a quarter of 128 Mi.
    const toolTurn = (i: number) => [
      { role: 'assistant' as const, content: null, tool_calls: [{ id: `c${i}`, type: 'function' as const, function: { name: 'f', arguments: String(i).repeat(12 << 20) } }] },
      { role: 'user' as const, content: '' },
    ]
    const status = (i: number) => {
      let s: number | string | null = null
      void openai.chat.completions.create({ model: 'tiny-llm', messages: toolTurn(i) }).then(
        () => (s = 200),
        (e: InstanceType<typeof OpenAI.APIError>) => (s = `${e.status} ${e.message}`),
      )
      return () => s
    }
    status(1)
    await until(() => holder.requests.length === 1, "alice's first request taken")
    status(2)
    await until(() => holder.requests.length === 2, "alice's second request taken")
    const third = status(3)
    // Refused (503), or, without a share per pool, taken by her fellow like the others.
    const outcome = await until(() => third() ?? (holder.requests.length === 3 ? 'taken' : null), "alice's third request answered or taken", { timeoutMs: 15_000 })
    expect(outcome).toContain('503')
    expect(outcome).toContain("its share (a quarter) of the leader's inference memory")
    const bobAsks = new OpenAI({ baseURL: `${url}/api/v1`, apiKey: tokenClient(h, bob.id).opts.bearer!, maxRetries: 0 })
    const answer = bobAsks.chat.completions.create({ model: 'bob-model', messages: ask('mine?') })
    const req = await until(() => server.requests[0] ?? null, "bob's request on his fellow")
    expect(await server.frames(req.request_id, [{ delta: 'yours' }, { done: true }])).toBe('ok')
    expect((await answer).choices[0]!.message.content).toBe('yours')
    holder.close()
    server.close()
  }, 60_000)
})
