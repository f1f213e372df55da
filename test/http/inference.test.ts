// The chat API through the official `openai` client against the leader on a real port, with a
// fellow simulated here: it registers with a join token, advertises its models in heartbeats,
// long-polls for work and posts frames, as the reference agent does.
import { afterAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { makeHarness, seedUser, sessionClient, tokenClient, type Client, type Harness } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { until } from '../helpers/until'

const stops: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const s of stops) await s()
})

class Fellow {
  constructor(
    readonly url: string,
    readonly id: string,
    readonly token: string,
  ) {}

  call(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    return fetch(this.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  }

  async heartbeat(servables: string[]): Promise<void> {
    expect((await this.call('POST', '/api/v1/workers/heartbeat', { status: 'idle', servables })).status).toBe(200)
  }

  async poll(waitMs = 5000, as: string = this.id): Promise<any | null> {
    const r = await this.call('GET', `/api/v1/infer/requests/${as}?wait_ms=${waitMs}`)
    if (r.status === 204) return null
    expect(r.status).toBe(200)
    return r.json()
  }

  frames(requestId: string, frames: unknown[]): Promise<Response> {
    return this.call('POST', `/api/v1/infer/responses/${requestId}`, { frames })
  }

  /** Picks up the next request and answers it a word a frame. */
  async serve(words: string[], usage = { prompt_tokens: 7, completion_tokens: words.length }): Promise<any> {
    const req = await this.poll()
    for (const w of words) expect((await this.frames(req.request_id, [{ delta: w }])).status).toBe(204)
    expect((await this.frames(req.request_id, [{ done: true, usage }])).status).toBe(204)
    return req
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
  const bob = await seedUser(h, 'bob@example.com')
  const a = sessionClient(h, alice.id)
  const b = sessionClient(h, bob.id)
  const poolA = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
  const poolB = (await b.post('/api/v1/pools', { name: 'Bob GPUs' })).body
  const openai = (userId: string) => new OpenAI({ baseURL: `${server.url}/api/v1`, apiKey: tokenClient(h, userId).opts.bearer!, maxRetries: 0 })
  const fellow = async (owner: Client, poolId: string, servables: string[]) => {
    const join = (await owner.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
    const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu' })).body
    const f = new Fellow(server.url, reg.fellow_id, reg.node_token)
    await f.heartbeat(servables)
    return f
  }
  return { h, server, alice, bob, a, b, poolA, poolB, openai, fellow }
}

const loopOf = (h: Harness, name: string) => h.services.loops.find((l) => l.name === name)!
const ask = (content: string) => [{ role: 'user' as const, content }]

describe('chat completions through the openai client', () => {
  test('non-streaming: the request reaches a fellow of the caller\'s pool and the answer carries usage', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup()
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    const served = f.serve(['Hello', ', ', 'world'])
    // temperature, top_p and seed are OpenAI fields the leader must accept; content parts are flattened.
    const res = await openai(alice.id).chat.completions.create({
      model: 'tiny-llm',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'Say hi' }] }],
      max_tokens: 16,
      temperature: 0.2,
      top_p: 0.9,
      seed: 1,
    })
    const req = await served
    expect(req).toMatchObject({ model: 'tiny-llm', max_tokens: 16, stream: false, temperature: 0.2, top_p: 0.9 })
    expect(req.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hi' }])
    expect(res.object).toBe('chat.completion')
    expect(res.model).toBe('tiny-llm')
    expect(res.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'Hello, world' })
    expect(res.choices[0]!.finish_reason).toBe('stop')
    expect(res.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 })
    expect(h.services.inference.counts).toMatchObject({ requestsServed: 1, tokensServed: 10 })
    // The fellow joined with Alice's join token: the roll-up credits her with what it served.
    h.clock.advance(1)
    h.services.rollup.tick()
    expect((await a.get('/api/v1/me/contribution')).body).toMatchObject({ tokens_served: 10, requests_served: 1 })
  })

  test('streaming: content chunks in order, a finish chunk, usage when asked for, then [DONE]', async () => {
    const { alice, a, poolA, openai, fellow } = await setup()
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    const served = f.serve(['one', ' two', ' three'])
    const stream = await openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('count'), stream: true, stream_options: { include_usage: true }, max_tokens: 3 })
    const deltas: string[] = []
    const finishes: (string | null)[] = []
    let usage: unknown = null
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk')
      for (const c of chunk.choices) {
        if (c.delta.content) deltas.push(c.delta.content)
        finishes.push(c.finish_reason)
      }
      if (chunk.usage) usage = chunk.usage
    }
    expect((await served).stream).toBe(true)
    expect(deltas).toEqual(['one', ' two', ' three'])
    expect(finishes.at(-1)).toBe('length') // 3 completion tokens of max_tokens 3
    expect(usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 })
  })

  test('a client that goes away mid-stream makes the fellow\'s next post answer 410 Gone', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup()
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    // Headers wait for the pick-up, so the fellow polls before the client gets its stream.
    const opening = openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('long story'), stream: true })
    const req = await f.poll()
    expect((await f.frames(req.request_id, [{ delta: 'Once' }])).status).toBe(204)
    const stream = await opening
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) break // leaving the loop aborts the stream
    // The leader learns of the disconnect from the socket, a moment later: keep generating until told.
    let last: Response | null = null
    for (let i = 0; i < 300 && last?.status !== 410; i++) {
      last = await f.frames(req.request_id, [{ delta: ' upon' }])
      if (last.status !== 410) await Bun.sleep(10)
    }
    expect(last!.status).toBe(410)
    expect(await last!.json()).toMatchObject({ code: 'gone' })
    expect(h.services.inference.hub.stats()).toMatchObject({ open: 0, bufferedChars: 0 })
    expect(h.services.inference.counts.requestsServed).toBe(0) // abandoned requests are not counted as served
  })

  test('a streaming answer whose token is revoked meanwhile stops with an error chunk at the next check (it streamed to its end), a step back of the wall clock or not', async () => {
    const { h, server, alice, a, poolA, fellow } = await setup()
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    const t = tokenClient(h, alice.id)
    const opening = fetch(`${server.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.opts.bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny-llm', messages: ask('long story'), stream: true }),
    })
    const req = await f.poll()
    expect((await f.frames(req.request_id, [{ delta: 'Once' }])).status).toBe(204)
    const res = await opening
    const reader = res.body!.getReader()
    const dec = new TextDecoder()
    let seen = ''
    while (!seen.includes('Once')) seen += dec.decode((await reader.read()).value)
    expect((await a.delete(`/api/v1/api-tokens/${t.tokenId}`)).status).toBe(200)
    // The wall clock steps an hour back (NTP): the next check is still five seconds away, not an hour.
    h.clock.set(h.clock.now() - 3_600_000)
    h.clock.advance(6000) // past the stream's next check
    expect((await f.frames(req.request_id, [{ delta: ' upon' }])).status).toBe(204)
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      seen += dec.decode(value)
    }
    expect(seen).not.toContain(' upon')
    expect(seen).toContain('"code":"unauthorized"')
    expect(seen).not.toContain('[DONE]')
    expect((await f.frames(req.request_id, [{ delta: ' a time' }])).status).toBe(410)
  })

  test('no online fellow serving a model the caller can see answers 503 with the reason', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup()
    const f = await fellow(a, poolA.id, [])
    // Published in the pool's catalog, but no fellow serves it right now.
    expect((await f.call('POST', '/api/v1/servables', { name: 'tiny-llm', version: '1', format: 'safetensors', size_bytes: 10 })).status).toBe(201)
    const client = openai(alice.id)
    const err = await client.chat.completions.create({ model: 'tiny-llm', messages: ask('hi') }).catch((e) => e)
    expect(err).toBeInstanceOf(OpenAI.APIError)
    expect(err.status).toBe(503)
    expect(err.error).toMatchObject({ type: 'server_error', code: 'service_unavailable' })
    expect(err.message).toContain("No online fellow in your pools serves the model 'tiny-llm'")
    // A 503 says when to come back (the OpenAPI document promises Retry-After on every 503).
    expect(err.headers.get('retry-after')).toBe('5')
    // A fellow that serves it but has gone stale (no heartbeat for 2 intervals) is no better.
    await f.heartbeat(['tiny-llm'])
    h.clock.advance(21_000)
    expect((await client.chat.completions.create({ model: 'tiny-llm', messages: ask('hi') }).catch((e) => e)).status).toBe(503)
  })

  test('requests go to the least busy fellow, not round the ring', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup()
    const fellows = [await fellow(a, poolA.id, ['tiny-llm']), await fellow(a, poolA.id, ['tiny-llm'])]
    const client = openai(alice.id)
    const pickedBy = async (content: string) => {
      const answer = client.chat.completions.create({ model: 'tiny-llm', messages: ask(content) })
      await until(() => h.services.inference.hub.stats().queued === 1, 'the request queued')
      const polls = await Promise.all(fellows.map((f) => f.poll(0)))
      const i = polls.findIndex((r) => r !== null)
      expect(polls.filter((r) => r !== null)).toHaveLength(1)
      return { f: fellows[i]!, req: polls[i], answer }
    }
    const first = await pickedBy('one') // stays open: its fellow is busy
    const second = await pickedBy('two')
    expect(second.f).not.toBe(first.f)
    await second.f.frames(second.req.request_id, [{ delta: 'B' }, { done: true }])
    expect((await second.answer).choices[0]!.message.content).toBe('B')
    // The second fellow is idle again and the first still busy: the third goes to the second too.
    const third = await pickedBy('three')
    expect(third.f).toBe(second.f)
    await first.f.frames(first.req.request_id, [{ delta: 'A' }, { done: true }])
    await third.f.frames(third.req.request_id, [{ delta: 'C' }, { done: true }])
    expect([(await first.answer).choices[0]!.message.content, (await third.answer).choices[0]!.message.content]).toEqual(['A', 'C'])
  })

  test("a fellow's claimed capacity only says when it is full: one that claims 10,000 gets its share of the requests, not nearly all", async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup()
    const honest = await fellow(a, poolA.id, [])
    const claimer = await fellow(a, poolA.id, [])
    const say = (f: typeof honest, capacity: number) => f.call('POST', '/api/v1/workers/heartbeat', { status: 'idle', servables: ['tiny-llm'], capacity: { 'tiny-llm': capacity } })
    expect((await say(honest, 2)).status).toBe(200)
    expect((await say(claimer, 10_000)).status).toBe(200)
    const client = openai(alice.id)
    const took: string[] = []
    const open: { f: typeof honest; id: string; answer: Promise<unknown> }[] = []
    for (let i = 0; i < 6; i++) {
      const answer = client.chat.completions.create({ model: 'tiny-llm', messages: ask(`q${i}`) })
      await until(() => h.services.inference.hub.stats().queued === 1, 'the request queued')
      const polls = await Promise.all([honest, claimer].map((f) => f.poll(0)))
      const i2 = polls.findIndex((r) => r !== null)
      took.push(i2 === 0 ? 'honest' : 'claimer')
      open.push({ f: i2 === 0 ? honest : claimer, id: polls[i2]!.request_id, answer })
    }
    // The honest fellow takes its 2 (it had room), the rest go to the other; weighed by the claim,
    // the claimer took all but the first.
    expect(took.filter((t) => t === 'honest')).toHaveLength(2)
    for (const o of open) await o.f.frames(o.id, [{ delta: 'x' }, { done: true }])
    await Promise.all(open.map((o) => o.answer))
  })
})

describe('the transport', () => {
  test('a long-poll wakes as soon as work arrives, and answers 204 when none came', async () => {
    const { alice, a, poolA, openai, fellow } = await setup()
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    expect(await f.poll(50)).toBeNull()
    const started = performance.now()
    const polled = f.poll(10_000)
    await Bun.sleep(20)
    const answer = openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('hi') })
    const req = await polled
    expect(performance.now() - started).toBeLessThan(2000)
    await f.frames(req.request_id, [{ delta: 'hey' }, { done: true }])
    const res = await answer
    expect(res.choices[0]!.message.content).toBe('hey')
    // Without usage from the fellow the leader estimates it: a frame a token, 4 prompt characters a token.
    expect(res.usage).toEqual({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })
  })

  test('only the fellow a request was dispatched to may post its frames or poll its queue (403, even with a valid node token)', async () => {
    const { alice, a, b, poolA, poolB, openai, fellow } = await setup()
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    const sibling = await fellow(a, poolA.id, [])
    const stranger = await fellow(b, poolB.id, [])
    const answer = openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('hi') })
    const req = await f.poll()
    for (const other of [sibling, stranger]) {
      const r = await other.frames(req.request_id, [{ delta: 'injected' }, { done: true }])
      expect(r.status).toBe(403)
      expect(((await r.json()) as { code: string }).code).toBe('forbidden')
      expect((await other.call('GET', `/api/v1/infer/requests/${f.id}?wait_ms=0`)).status).toBe(403)
    }
    expect((await f.frames(req.request_id, [{ delta: 'genuine' }, { done: true }])).status).toBe(204)
    expect((await answer).choices[0]!.message.content).toBe('genuine')
    // Finished or never existed: 410, and the fellow stops.
    expect((await f.frames(req.request_id, [{ delta: 'late' }])).status).toBe(410)
    expect((await f.frames('01a20184-99e9-7296-9fc7-75b6e5358e98', [])).status).toBe(410)
  })

  test('a request no fellow picks up within SVC_INFER_DISPATCH_TIMEOUT_S ends with a clear 504 (fake clock)', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup({ SVC_INFER_DISPATCH_TIMEOUT_S: '1' })
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    const answer = openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('hi') }).catch((e) => e)
    await until(() => h.services.inference.hub.stats().queued === 1, 'the request queued')
    h.clock.advance(999)
    loopOf(h, 'inference-timeouts').run()
    expect(h.services.inference.hub.stats().queued).toBe(1)
    h.clock.advance(1)
    loopOf(h, 'inference-timeouts').run()
    const err = await answer
    expect(err.status).toBe(504)
    expect(err.error).toMatchObject({ code: 'dispatch_timeout', message: 'No fellow picked the request up within 1 s.' })
    expect(await f.poll(0)).toBeNull() // the expired request is no longer handed out
  })

  test('a step of the wall clock neither ends a waiting request nor stretches its timeout (fake clock)', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup({ SVC_INFER_DISPATCH_TIMEOUT_S: '1' })
    await fellow(a, poolA.id, ['tiny-llm'])
    const answer = openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('hi') }).catch((e) => e)
    await until(() => h.services.inference.hub.stats().queued === 1, 'the request queued')
    // NTP steps the wall clock an hour forward: the request has waited no time at all.
    h.clock.set(h.clock.now() + 3_600_000)
    loopOf(h, 'inference-timeouts').run()
    expect(h.services.inference.hub.stats().queued).toBe(1)
    // And two hours back: its second still runs out after one second.
    h.clock.set(h.clock.now() - 7_200_000)
    h.clock.advance(1000)
    loopOf(h, 'inference-timeouts').run()
    expect((await answer).status).toBe(504)
  })

  test('a fellow marked offline ends the requests it was serving at once, not when the timeout runs out (fake clock)', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup({ SVC_HEARTBEAT_INTERVAL_S: '1' })
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    const answer = openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('hi') }).catch((e) => e)
    expect(await f.poll()).not.toBeNull()
    // Six heartbeat intervals without a word: offline, long before the request's own 30 s.
    h.clock.advance(6_001)
    loopOf(h, 'liveness').run()
    const err = await answer
    expect(err.status).toBe(504)
    expect(err.error).toMatchObject({ code: 'fellow_timeout', message: 'The fellow serving tiny-llm went offline before it answered.' })
    expect(h.services.inference.hub.stats().open).toBe(0)
  })

  test('a fellow that goes silent mid-stream ends the stream with an error event', async () => {
    const { h, alice, a, poolA, openai, fellow } = await setup({ SVC_INFER_DISPATCH_TIMEOUT_S: '1' })
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    // The stream's headers wait for the pick-up: start the call, pick up, then read.
    const opening = openai(alice.id).chat.completions.create({ model: 'tiny-llm', messages: ask('hi'), stream: true })
    const req = await f.poll()
    await f.frames(req.request_id, [{ delta: 'partial' }])
    const got: string[] = []
    const reading = (async () => {
      for await (const chunk of await opening) if (chunk.choices[0]?.delta.content) got.push(chunk.choices[0].delta.content)
    })().catch((e) => e)
    await until(() => got.length === 1, 'the first delta')
    h.clock.advance(1000)
    loopOf(h, 'inference-timeouts').run()
    const err = await reading
    expect(err).toBeInstanceOf(OpenAI.APIError)
    expect(err.message).toContain('sent nothing for 1 s')
    expect((await f.frames(req.request_id, [{ delta: 'too late' }])).status).toBe(410)
  })
})

// Issue 26, item 2a: an admin's (unscoped) chat request went to any online fellow claiming the
// model, also to the anonymous fellows anyone may register into the default pool without a token.
describe('the default pool', () => {
  test("an admin's chat request never reaches a token-less fellow of the default pool unless it names that pool", async () => {
    const { h, server, alice, a, poolA, fellow } = await setup()
    const admin = tokenClient(h, (await seedUser(h, 'admin@example.com', { role: 'admin' })).id)
    const reg = (await h.client().post('/api/v1/workers/register', { hostname: 'stranger' })).body
    const stranger = new Fellow(server.url, reg.fellow_id, reg.node_token)
    await stranger.heartbeat(['tiny-llm'])
    const chat = (c: Client, extra: Record<string, unknown> = {}) => c.post('/api/v1/chat/completions', { model: 'tiny-llm', messages: ask('the admin secret'), ...extra })

    // Only the stranger claims the model: it is handed nothing, and the admin is told how to reach it.
    let settled = false
    const refused = chat(admin).finally(() => (settled = true))
    await until(() => settled || h.services.inference.hub.stats().queued > 0, 'an answer or a queued request')
    expect(await stranger.poll(0)).toBeNull()
    expect((await refused).status).toBe(503)
    expect((await refused).body.error.message).toContain(reg.pool_id)
    expect((await admin.get('/api/v1/models')).body.data.map((m: { id: string }) => m.id)).not.toContain('tiny-llm')

    // A member's fellow serves the admin's unscoped request; the stranger still gets nothing.
    const f = await fellow(a, poolA.id, ['tiny-llm'])
    const [res, req] = await Promise.all([chat(admin), f.serve(['ok'])])
    expect(res.status).toBe(200)
    expect(req.messages).toEqual([{ role: 'user', content: 'the admin secret' }])
    expect(await stranger.poll(0)).toBeNull()

    // Naming the default pool is the admin's explicit choice: the request goes there.
    const [named, got] = await Promise.all([chat(admin, { pool_id: reg.pool_id }), stranger.serve(['hi'])])
    expect(named.status).toBe(200)
    expect(got.model).toBe('tiny-llm')
    // A member is held to their own pools: naming one that is not theirs is not found.
    expect((await chat(tokenClient(h, alice.id), { pool_id: reg.pool_id })).status).toBe(404)
  })
})
