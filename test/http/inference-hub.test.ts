// The in-memory inference hub and the served ledger on their own, with a fake clock: bounds,
// hand-over to waiting long-polls, timeouts and the roll-up windows. (The HTTP behaviour is in
// inference.test.ts and inference-catalog.test.ts.)
import { describe, expect, test } from 'bun:test'
import { FakeClock } from '../helpers/clock'
import { MemoryInferenceHub, type MemoryInferenceHubOptions } from '../../src/inference/memory-hub'
import type { InferJob } from '../../src/inference/hub'
import { AppError } from '../../src/errors'

/** The AppError `f` throws, or null when it throws none. */
function refusal(f: () => unknown): AppError | null {
  try {
    f()
    return null
  } catch (e) {
    if (e instanceof AppError) return e
    throw e
  }
}

const job = (content = 'hello', max_tokens: number | null = null): InferJob => ({ kind: 'chat', model: 'm', messages: [{ role: 'user', content }], max_tokens, stream: true })

function hub(over: Partial<MemoryInferenceHubOptions> = {}) {
  const clock = new FakeClock()
  const served: [string, number, number][] = []
  const h = new MemoryInferenceHub({ now: () => clock.now(), timeoutMs: 1000, onServed: (f, u) => served.push([f, u.prompt_tokens, u.completion_tokens]), ...over })
  return { h, clock, served }
}

describe('inference hub', () => {
  test('a waiting long-poll gets the request at once; a client read wakes on the post', async () => {
    const { h, served } = hub()
    const poll = h.next('f1', 10_000)
    const t = h.submit('f1', job('hello', 2))
    const req = await poll
    expect(req).toMatchObject({ request_id: t.id, model: 'm', max_tokens: 2, stream: true })
    expect(await t.pickedUp).toBeNull()
    const read = t.read(10_000)
    expect(h.post(t.id, 'f1', [{ delta: 'a' }, { delta: 'b' }])).toBe('ok')
    expect(await read).toEqual({ deltas: ['a', 'b'], end: null })
    expect(h.post(t.id, 'f1', [{ done: true }])).toBe('ok')
    expect(await t.read(0)).toEqual({ deltas: [], end: { ok: true, usage: { prompt_tokens: 2, completion_tokens: 2 }, finish: 'length' } })
    expect(served).toEqual([['f1', 2, 2]])
    expect(h.post(t.id, 'f1', [{ delta: 'c' }])).toBe('gone')
    expect(h.inFlight('f1')).toBe(0)
  })

  test('only the dispatched fellow may post, and not before it picked the request up', async () => {
    const { h } = hub()
    const t = h.submit('f1', job())
    expect(h.post(t.id, 'f1', [])).toBe('not_yours') // queued, not dispatched yet
    await h.next('f1', 0)
    expect(h.post(t.id, 'f2', [{ delta: 'x' }])).toBe('not_yours')
    expect(h.post(t.id, null, [{ delta: 'x' }])).toBe('ok') // node auth off, no token
  })

  test('bounds: open requests and held characters answer 503; unread output per request answers "full"', () => {
    const { h } = hub({ maxOpen: 2, maxBufferedChars: 4, maxHeldChars: 100, maxShareChars: 100 })
    expect(() => h.submit('f1', job('x'.repeat(100)))).toThrow('limit of open inference requests')
    const t = h.submit('f1', job())
    h.submit('f1', job())
    expect(() => h.submit('f1', job())).toThrow('limit of open inference requests')
    expect(refusal(() => h.submit('f1', job()))?.extra.retryAfterS).toBe(1)
    void h.next('f1', 0)
    expect(h.post(t.id, 'f1', [{ delta: 'abc' }, { delta: 'de' }])).toBe('full')
    expect(h.stats().bufferedChars).toBe(0) // refused whole
    expect(h.post(t.id, 'f1', [{ delta: 'abcd' }])).toBe('ok')
  })

  test('a prompt counts for all it holds (tool calls, tools in params), a tool-call delta for its size', async () => {
    const { h } = hub({ maxBufferedChars: 5000, maxHeldChars: 10_000, maxShareChars: 10_000 })
    const call = { id: 'c1', type: 'function', function: { name: 'f', arguments: 'a'.repeat(6000) } }
    const toolTurn: InferJob = { kind: 'chat', model: 'm', messages: [{ role: 'assistant', content: null, tool_calls: [call] }, { role: 'user', content: 'go on' }], max_tokens: null, stream: true }
    const t = h.submit('f1', toolTurn)
    // 6,000 characters of arguments held: a second such prompt is past the 10,000.
    expect(() => h.submit('f1', toolTurn)).toThrow('limit of open inference requests')
    expect(() => h.submit('f1', { ...job(), params: { tools: [{ type: 'function', function: { name: 'g', parameters: { description: 'd'.repeat(6000) } } }] } })).toThrow('limit of open inference requests')
    await h.next('f1', 0)
    // A tool-call delta of 6,000 characters is past the 5,000 a request may hold unread.
    expect(h.post(t.id, 'f1', [{ tool_calls: [{ index: 0, function: { arguments: 'b'.repeat(6000) } }] }])).toBe('full')
    expect(h.post(t.id, 'f1', [{ tool_calls: [{ index: 0, function: { arguments: 'b'.repeat(3000) } }] }])).toBe('ok')
    expect(h.stats().bufferedChars).toBeGreaterThan(3000)
    t.cancel()
    // All released: the prompt fits again.
    expect(h.stats()).toMatchObject({ open: 0, bufferedChars: 0 })
    h.submit('f1', toolTurn)
  })

  test('one share (a pool) holds at most its part of the budget: past it 503 for its prompts and full for its output; other shares go on', async () => {
    const { h } = hub({ maxBufferedChars: 1000, maxHeldChars: 400, maxShareChars: 100 })
    const a1 = h.submit('f1', job('a'.repeat(40)), 'pool-a') // 70 characters of JSON
    expect(() => h.submit('f2', job('a'.repeat(40)), 'pool-a')).toThrow("its share (a quarter) of the leader's inference memory")
    // Retry-After: 1 with the 503.
    expect(refusal(() => h.submit('f2', job('a'.repeat(40)), 'pool-a'))?.extra.retryAfterS).toBe(1)
    // Another pool still gets its requests taken, up to its own part.
    const b1 = h.submit('f3', job('b'.repeat(40)), 'pool-b')
    await h.next('f1', 0)
    await h.next('f3', 0)
    // Output counts too: pool-a's request may add 30 more characters, not 31.
    expect(h.post(a1.id, 'f1', [{ delta: 'x'.repeat(31) }])).toBe('full')
    expect(h.post(a1.id, 'f1', [{ delta: 'x'.repeat(30) }])).toBe('ok')
    expect(h.post(b1.id, 'f3', [{ delta: 'y'.repeat(30) }])).toBe('ok')
    // A result larger than a share fails at once instead of waiting as full.
    const e = h.submit('f4', { kind: 'embeddings', model: 'm', messages: [], max_tokens: null, stream: false, params: { input: 'c' } }, 'pool-c')
    await h.next('f4', 0)
    expect(h.post(e.id, 'f4', [{ result_chunk: 'z'.repeat(101) }])).toBe('ok')
    expect((await e.read(0)).end).toMatchObject({ ok: false, code: 'fellow_failed', message: expect.stringContaining('larger than 100 characters') })
    // Read and ended: the share is free again.
    await a1.read(0)
    a1.cancel()
    h.submit('f2', job('a'.repeat(40)), 'pool-a')
  })

  test('a fellow holding too many long-polls gets its oldest answered empty; an aborted poll leaves the list', async () => {
    const { h } = hub({ maxWaitersPerFellow: 2 })
    const first = h.next('f1', 10_000)
    const ac = new AbortController()
    const second = h.next('f1', 10_000, ac.signal)
    const third = h.next('f1', 10_000)
    expect(await first).toBeNull()
    ac.abort()
    expect(await second).toBeNull()
    expect(h.stats().waiters).toBe(1)
    const t = h.submit('f1', job())
    expect((await third)?.request_id).toBe(t.id)
  })

  test('timeouts by the clock: no pick-up, then no frame, each ends the request with its own code', async () => {
    const { h, clock } = hub()
    const queued = h.submit('f1', job())
    const picked = h.submit('f2', job())
    await h.next('f2', 0)
    clock.advance(600)
    h.post(picked.id, 'f2', []) // an empty post keeps the request alive
    clock.advance(400)
    expect(h.expire(clock.now())).toBe(1)
    expect(await queued.pickedUp).toMatchObject({ ok: false, code: 'dispatch_timeout' })
    clock.advance(600)
    expect(h.expire(clock.now())).toBe(1)
    expect((await picked.read(0)).end).toMatchObject({ ok: false, code: 'fellow_timeout' })
    expect(h.stats()).toEqual({ open: 0, queued: 0, waiters: 0, bufferedChars: 0 })
  })

  test('a request whose client stopped reading times out naming the client, not the fellow that kept sending', async () => {
    const { h, clock } = hub({ maxBufferedChars: 4, maxHeldChars: 100, maxShareChars: 100 })
    const t = h.submit('f1', job())
    await h.next('f1', 0)
    expect(h.post(t.id, 'f1', [{ delta: 'abcd' }])).toBe('ok')
    for (let i = 0; i < 11; i++) {
      clock.advance(100)
      expect(h.post(t.id, 'f1', [{ delta: 'efgh' }])).toBe('full')
    }
    expect(h.expire(clock.now())).toBe(1)
    expect((await t.read(0)).end).toMatchObject({ ok: false, code: 'fellow_timeout', message: 'The client did not read the answer of m for 1 s.' })
  })

  test('a cancelled request frees its buffered output and is not counted as served', async () => {
    const { h, served } = hub()
    const t = h.submit('f1', job())
    await h.next('f1', 0)
    h.post(t.id, 'f1', [{ delta: 'abc' }])
    t.cancel()
    expect(h.stats().bufferedChars).toBe(0)
    expect(h.post(t.id, 'f1', [{ done: true }])).toBe('gone')
    expect(served).toEqual([])
  })

  test('a request that timed out or whose client left counts in its fellow\'s load until the fellow posts for it (410) or goes away (a wedged fellow showed in_flight 0 and was sent more)', async () => {
    const { h, clock } = hub()
    const silent = h.submit('f1', job())
    const left = h.submit('f1', job())
    const queued = h.submit('f1', job())
    await h.next('f1', 0)
    await h.next('f1', 0)
    left.cancel()
    clock.advance(1000)
    expect(h.expire(clock.now())).toBe(2) // the silent one, and the one never picked up
    expect(await queued.pickedUp).toMatchObject({ code: 'dispatch_timeout' })
    // The fellow's engine may still be busy with both it took: they count until it hears.
    expect(h.inFlight('f1')).toBe(2)
    expect(h.post(left.id, 'f2', [])).toBe('gone') // another fellow's word changes nothing
    expect(h.inFlight('f1')).toBe(2)
    expect(h.post(left.id, 'f1', [])).toBe('gone')
    expect(h.inFlight('f1')).toBe(1)
    // A fellow that never posts again stops counting when it goes away, or after 10 frame timeouts.
    const other = h.submit('f2', job())
    await h.next('f2', 0)
    clock.advance(1000)
    h.expire(clock.now())
    expect([h.inFlight('f1'), h.inFlight('f2')]).toEqual([1, 1])
    h.abandon('f2', 'went offline')
    expect(h.inFlight('f2')).toBe(0)
    clock.advance(8999)
    h.expire(clock.now())
    expect(h.inFlight('f1')).toBe(1)
    clock.advance(1)
    h.expire(clock.now())
    expect(h.inFlight('f1')).toBe(0)
    expect(h.post(silent.id, 'f1', [])).toBe('gone')
    expect(h.post(other.id, 'f2', [])).toBe('gone')
  })

  test('a result in pieces is joined and parsed at done; pieces that are not JSON fail the request; held characters are released', async () => {
    const { h } = hub()
    const t = h.submit('f1', { kind: 'embeddings', model: 'm', messages: [], max_tokens: null, stream: false, params: { input: 'abc' } })
    await h.next('f1', 0)
    const text = JSON.stringify({ data: [{ embedding: [1, 2, 3] }] })
    expect(h.post(t.id, 'f1', [{ result_chunk: text.slice(0, 7) }, { result_chunk: text.slice(7) }])).toBe('ok')
    expect(h.post(t.id, 'f1', [{ done: true, usage: { prompt_tokens: 1, completion_tokens: 0 } }])).toBe('ok')
    expect((await t.read(0)).end).toEqual({ ok: true, usage: { prompt_tokens: 1, completion_tokens: 0 }, finish: 'stop', result: { data: [{ embedding: [1, 2, 3] }] } })
    const bad = h.submit('f1', { kind: 'embeddings', model: 'm', messages: [], max_tokens: null, stream: false, params: { input: 'abc' } })
    await h.next('f1', 0)
    h.post(bad.id, 'f1', [{ result_chunk: '{"data": [' }, { done: true }])
    expect((await bad.read(0)).end).toMatchObject({ ok: false, code: 'fellow_failed', message: expect.stringContaining('not JSON') })
    expect(h.stats()).toMatchObject({ open: 0, bufferedChars: 0 })
  })
})
