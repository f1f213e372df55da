// The inference channel (/ws/infer/{fellow_id}) over a real socket: requests pushed to the fellow
// against its credit (the same queue the HTTP long-poll reads), frames back with an ack each,
// refusal at the upgrade, and a clear close code for a message it cannot take.
import { afterAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { makeHarness, seedUser, sessionClient, tokenClient } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { until } from '../helpers/until'
import { INFER_CLOSE, type LeaderMessage } from '../../src/wire/infer-socket'
import type { InferRequest } from '../../src/wire/inference'
import { LeaderClient } from '../../src/agent/client'
import { InferenceServer } from '../../src/agent/inference'
import { loadEngines } from '../../src/agent/fellow-config'
import { createLogger } from '../../src/log'
import { systemClock } from '../../src/time'

const stops: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const s of stops) await s()
})

/** A fellow's end of the channel that records what it receives. */
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
    this.ws.send(typeof m === 'string' || m instanceof Uint8Array ? m : JSON.stringify(m))
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
  const server = listen(h)
  stops.push(async () => {
    await server.stop()
    h.close()
  })
  const alice = await seedUser(h, 'alice@example.com')
  const a = sessionClient(h, alice.id)
  const pool = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
  const fellow = async () => {
    const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu' })).body as { fellow_id: string; node_token: string }
    await h.client({ bearer: reg.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', servables: ['tiny-llm'] })
    return { id: reg.fellow_id, token: reg.node_token, url: `${server.url.replace(/^http/, 'ws')}/ws/infer/${reg.fellow_id}` }
  }
  const openai = new OpenAI({ baseURL: `${server.url}/api/v1`, apiKey: tokenClient(h, alice.id).opts.bearer!, maxRetries: 0 })
  return { h, server, a, pool, fellow, openai }
}

const ask = (content: string) => [{ role: 'user' as const, content }]

describe('the inference socket', () => {
  test('a request reaches the socket once it has credit; its frames stream to the client, each answered ok', async () => {
    const { fellow, openai } = await setup()
    const f = await fellow()
    const ch = new Channel(f.url, f.token)
    expect(await ch.opened()).toBe(true)
    ch.credit(1)
    const stream = await openai.chat.completions.create({ model: 'tiny-llm', messages: ask('hi'), stream: true })
    const req = await until(() => ch.requests[0] ?? null, 'the request on the socket')
    expect(req).toMatchObject({ model: 'tiny-llm', stream: true, messages: [{ role: 'user', content: 'hi' }] })
    expect(await ch.frames(req.request_id, [{ delta: 'Hel' }, { delta: 'lo' }])).toBe('ok')
    expect(await ch.frames(req.request_id, [{ done: true, finish_reason: 'stop', usage: { prompt_tokens: 1, completion_tokens: 2 } }])).toBe('ok')
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ''
    expect(text).toBe('Hello')
    // The request is over: more frames for it are refused as gone (the POST's 410).
    expect(await ch.frames(req.request_id, [{ delta: 'late' }])).toBe('gone')
    ch.close()
  })

  test('without credit the socket is sent nothing: the next request stays queued (an HTTP long-poll gets it) until credit comes', async () => {
    const { fellow, openai, server } = await setup()
    const f = await fellow()
    const ch = new Channel(f.url, f.token)
    expect(await ch.opened()).toBe(true)
    ch.credit(1)
    const first = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('one') })
    const r1 = await until(() => ch.requests[0] ?? null, 'the first request')
    // Credit used up: the second request waits in the queue, where the long-poll finds it.
    const second = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('two') })
    const polled = await fetch(`${server.url}/api/v1/infer/requests/${f.id}?wait_ms=5000`, { headers: { authorization: `Bearer ${f.token}` } })
    expect(polled.status).toBe(200)
    const r2 = (await polled.json()) as InferRequest
    expect(r2.messages[0]!.content).toBe('two')
    expect(ch.requests).toHaveLength(1)
    // Frames of a request the socket did not get are still this fellow's to send (it was dispatched to it).
    expect(await ch.frames(r2.request_id, [{ delta: 'b' }, { done: true }])).toBe('ok')
    expect(await ch.frames(r1.request_id, [{ delta: 'a' }, { done: true }])).toBe('ok')
    expect((await first).choices[0]!.message.content).toBe('a')
    expect((await second).choices[0]!.message.content).toBe('b')
    // A third request comes over the socket once credit does.
    const third = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('three') })
    ch.credit(1)
    const r3 = await until(() => ch.requests[1] ?? null, 'the third request')
    expect(r3.messages[0]!.content).toBe('three')
    expect(await ch.frames(r3.request_id, [{ delta: 'c' }, { done: true }])).toBe('ok')
    expect((await third).choices[0]!.message.content).toBe('c')
    ch.close()
  })

  test('frames for another fellow\'s request are refused (not_yours) and do not reach its client', async () => {
    const { fellow, openai } = await setup()
    const f1 = await fellow()
    const f2 = await fellow()
    const c1 = new Channel(f1.url, f1.token)
    const c2 = new Channel(f2.url, f2.token)
    expect([await c1.opened(), await c2.opened()]).toEqual([true, true])
    c1.credit(1)
    c2.credit(1)
    const answer = openai.chat.completions.create({ model: 'tiny-llm', messages: ask('whose') })
    const [owner, other] = await until(() => (c1.requests[0] ? [c1, c2] : c2.requests[0] ? [c2, c1] : null), 'the request on one socket')
    const req = owner!.requests[0]!
    expect(await other!.frames(req.request_id, [{ delta: 'forged' }, { done: true }])).toBe('not_yours')
    expect(await owner!.frames(req.request_id, [{ delta: 'real' }, { done: true }])).toBe('ok')
    expect((await answer).choices[0]!.message.content).toBe('real')
    c1.close()
    c2.close()
  })

  test('the upgrade is refused for another fellow\'s token, an unknown fellow and without a token', async () => {
    const { fellow, server } = await setup()
    const f1 = await fellow()
    const f2 = await fellow()
    const status = async (id: string, token: string | null) =>
      (await fetch(`${server.url}/ws/infer/${id}`, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...(token ? { authorization: `Bearer ${token}` } : {}) } })).status
    expect(await status(f2.id, f1.token)).toBe(403)
    expect(await status('01a20000-0000-7000-8000-000000000000', f1.token)).toBe(403)
    expect(await status(f1.id, null)).toBe(403)
    // A plain GET is not a socket.
    expect((await fetch(`${server.url}/ws/infer/${f1.id}`, { headers: { authorization: `Bearer ${f1.token}` } })).status).toBe(400)
    expect(await new Channel(f1.url, f2.token).opened()).toBe(false)
  })

  test('a binary message, one that is not JSON or not a known message closes 1003; one over the body limit 1009', async () => {
    const { fellow } = await setup({ SVC_MAX_BODY_BYTES: '4096' })
    const f = await fellow()
    for (const [bad, code] of [
      [new Uint8Array([1, 2, 3]), INFER_CLOSE.unsupported],
      ['not json', INFER_CLOSE.unsupported],
      [{ t: 'credit', n: 0 }, INFER_CLOSE.unsupported],
      [{ t: 'frames', id: 'x', seq: 0, frames: [{ delta: 1 }] }, INFER_CLOSE.unsupported],
      [{ t: 'shout' }, INFER_CLOSE.unsupported],
      [{ t: 'frames', id: 'x', seq: 0, frames: [{ delta: 'x'.repeat(5000) }] }, INFER_CLOSE.tooBig],
    ] as const) {
      const ch = new Channel(f.url, f.token)
      expect(await ch.opened()).toBe(true)
      ch.send(bad)
      const closed = await until(() => ch.closed, 'the socket closed')
      expect([bad, closed.code]).toEqual([bad, code])
      expect(closed.reason.length).toBeGreaterThan(0)
    }
  })

  test('a socket whose fellow is removed is closed 1008 at its next request', async () => {
    const { fellow, a, openai } = await setup()
    const f = await fellow()
    const ch = new Channel(f.url, f.token)
    expect(await ch.opened()).toBe(true)
    expect((await a.call('DELETE', `/api/v1/workers/${f.id}`)).status).toBe(204)
    ch.credit(1)
    const closed = await until(() => ch.closed, 'the socket closed')
    expect(closed.code).toBe(INFER_CLOSE.policy)
    // Nothing serves the model now: the client is told so.
    const err = await openai.chat.completions.create({ model: 'tiny-llm', messages: ask('anyone?') }).then(() => null, (e: unknown) => e)
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(404)
  })
})

describe('the agent on the inference socket', () => {
  /** The agent's inference server (the built-in model) for a registered fellow, with its log. */
  function agent(url: string, f: { id: string; token: string }, socketPath: string) {
    const lines: string[] = []
    const stopper = new AbortController()
    const client = new LeaderClient(url, () => f.token)
    const server = new InferenceServer(
      { client, log: createLogger('debug', (l) => lines.push(l)), fellowId: () => f.id, signal: stopper.signal, clock: systemClock, socketUrl: () => `${url.replace(/^http/, 'ws')}${socketPath}` },
      loadEngines({}),
    )
    server.start()
    stops.push(async () => {
      stopper.abort()
      await server.stop()
    })
    return { lines, stop: () => stopper.abort() }
  }

  test('serves over the socket: requests come without polls, the answer streams back', async () => {
    const { fellow, openai, server } = await setup()
    const f = await fellow()
    const a = agent(server.url, f, `/ws/infer/${f.id}`)
    await until(() => (a.lines.some((l) => l.includes('"inference socket open"')) ? true : null), 'the socket open')
    const answers = await Promise.all(['one', 'two', 'three'].map((w) => openai.chat.completions.create({ model: 'tiny-llm', messages: ask(`It was the best of ${w}`), max_tokens: 8 })))
    for (const r of answers) expect(r.choices[0]!.message.content!.split(' ')).toHaveLength(8)
    expect(a.lines.some((l) => l.includes('long-polling'))).toBe(false)
    a.stop()
  })

  test('a leader without the socket (the upgrade refused): the agent long-polls and still serves', async () => {
    const { fellow, openai, server } = await setup()
    const f = await fellow()
    const a = agent(server.url, f, `/ws/nothing-here/${f.id}`)
    await until(() => (a.lines.some((l) => l.includes('"inference socket unavailable; long-polling"')) ? true : null), 'the fallback to long-polls')
    const r = await openai.chat.completions.create({ model: 'tiny-llm', messages: ask('It was the best of'), max_tokens: 5 })
    expect(r.choices[0]!.message.content!.split(' ')).toHaveLength(5)
    a.stop()
  })
})
