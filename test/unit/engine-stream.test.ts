// What the agent's client of an OpenAI-compatible engine makes of what the engine streams, against
// an engine played by a local HTTP server whose answer each test writes byte for byte: chunks with
// nothing in them, reasoning, malformed framing, an engine that never closes its stream. The
// request timeout runs on a fake clock.
import { afterEach, describe, expect, test } from 'bun:test'
import { OpenAiEngine, type EngineEvent } from '../../src/agent/engines'
import { loadEngines } from '../../src/agent/fellow-config'
import { silentLogger } from '../../src/log'
import type { InferRequest } from '../../src/wire/inference'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'

const servers: ReturnType<typeof Bun.serve>[] = []
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true)
})

/** A stream the test writes to: the engine's answer body. */
function writable() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>
  const enc = new TextEncoder()
  let sent = 0
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) })
  return {
    body,
    /** Writes, unless the agent has gone (it closed the connection). */
    write: (text: string) => {
      try {
        ctl.enqueue(enc.encode(text))
        sent++
      } catch {
        // cancelled by the reader
      }
    },
    close: () => ctl.close(),
    get sent() {
      return sent
    },
  }
}

/** An engine at a local URL whose /chat/completions answers what `answer` returns; `seen` holds the request URLs. */
function engineAt(answer: (req: Request) => Response | Promise<Response>, settings: string[] = [], path = '/v1') {
  const seen: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: (req) => {
      seen.push(req.url)
      return answer(req)
    },
  })
  servers.push(server)
  const clock = new FakeClock()
  const toml = ['[engines.e]', `url = "http://127.0.0.1:${server.port}${path}"`, ...settings].join('\n')
  const spec = loadEngines({ config: 'fellow.toml' }, () => toml)[0]!
  const engine = new OpenAiEngine(spec, { log: silentLogger, clock, onHealth: () => {} })
  return { engine, clock, seen }
}

const sse = (s: ReturnType<typeof writable>) => new Response(s.body, { headers: { 'content-type': 'text/event-stream' } })
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
const request: InferRequest = { request_id: 'r1', model: 'e', messages: [{ role: 'user', content: 'hi' }], max_tokens: null, stream: true }

/** Runs a chat in the background: its events as they come, and how it ended. */
function run(engine: OpenAiEngine, signal = new AbortController().signal) {
  const events: EngineEvent[] = []
  const end: { error: Error | null; done: boolean } = { error: null, done: false }
  void (async () => {
    try {
      for await (const e of engine.chat(request, signal)) events.push(e)
    } catch (e) {
      end.error = e as Error
    }
    end.done = true
  })()
  return { events, end }
}

describe('chunks without text', () => {
  test('reasoning comes as reasoning events and keeps the request going past request_timeout_s', async () => {
    const s = writable()
    const { engine, clock } = engineAt(() => sse(s))
    const r = run(engine)
    s.write(chunk({ role: 'assistant', content: null }))
    for (let i = 0; i < 3; i++) {
      // llama-server names it reasoning_content, vLLM 0.10 reasoning; the content is null meanwhile.
      s.write(chunk({ reasoning_content: 'let me think ', content: null }))
      await until(() => r.events.length === 2 * i + 1, 'a thought')
      clock.advance(40_000)
      s.write(chunk({ reasoning: 'more ' }))
      await until(() => r.events.length === 2 * i + 2, 'another thought')
      clock.advance(40_000)
    }
    s.write(chunk({ content: 'Answer.' }))
    s.write(chunk({}, 'stop'))
    s.write('data: [DONE]\n\n')
    s.close()
    await until(() => r.end.done, 'the end')
    expect(r.end.error).toBeNull()
    expect(r.events.filter((e) => 'reasoning' in e)).toHaveLength(6)
    expect(r.events.slice(-2)).toEqual([{ content: 'Answer.' }, { finish: 'stop' }])
  })

  test('chunks with nothing in them (empty deltas) do not: past request_timeout_s of only those the request fails, saying so', async () => {
    const s = writable()
    const { engine, clock } = engineAt(() => sse(s))
    const r = run(engine)
    s.write(chunk({ role: 'assistant', content: '' }))
    s.write(chunk({ content: 'Hm' }))
    await until(() => r.events.length === 1, 'the first word')
    clock.advance(30_000)
    // The engine goes on sending empty deltas: a wedged one did so for good, holding its slot.
    const pump = setInterval(() => s.write(chunk({ content: '' })), 2)
    try {
      await until(() => s.sent > 20, 'empty chunks sent')
      clock.advance(30_000)
      await until(() => r.end.done, 'the request failed')
    } finally {
      clearInterval(pump)
    }
    expect(r.events).toEqual([{ content: 'Hm' }])
    expect(r.end.error?.message).toBe('the engine sent only empty chunks for 60 s')
  })
})

describe('malformed framing', () => {
  test('data lines never ended by a blank line are bounded like a line: past 16 MiB of one event the request fails (the agent grew by gigabytes)', async () => {
    const s = writable()
    const { engine } = engineAt(() => sse(s))
    const r = run(engine)
    const line = `data: ${'x'.repeat(1 << 20)}\n`
    for (let i = 0; i < 17; i++) s.write(line)
    await until(() => r.end.done, 'the request failed')
    expect(r.end.error?.message).toBe('the engine sent an event larger than 16 MiB (data lines without the blank line that ends an event)')
  })
})

describe('an engine URL with a query', () => {
  test('keeps the query (?api_key=) on every request, after the path (it was put before /chat/completions)', async () => {
    const s = writable()
    const answer = (req: Request) => {
      const path = new URL(req.url).pathname
      if (path.endsWith('/chat/completions')) return sse(s)
      if (path.endsWith('/embeddings')) return Response.json({ data: [{ embedding: [1] }] })
      return Response.json({ data: [] })
    }
    const { engine, clock, seen } = engineAt(answer, ['health_path = "models"'], '/v1?api_key=k%261')
    engine.start()
    clock.advance(0)
    await until(() => engine.healthy, 'healthy')
    const r = run(engine)
    s.write(chunk({ content: 'ok' }, 'stop'))
    s.write('data: [DONE]\n\n')
    s.close()
    await until(() => r.end.done, 'answered')
    expect(r.end.error).toBeNull()
    await engine.embeddings({ ...request, kind: 'embeddings', messages: [], params: { input: 'x' } }, new AbortController().signal)
    await engine.stop()
    const paths = seen.map((u) => u.slice(u.indexOf('/', 'http://'.length)))
    expect(paths).toEqual(['/v1/models?api_key=k%261', '/v1/chat/completions?api_key=k%261', '/v1/embeddings?api_key=k%261'])
  })

  test('a health path from the origin keeps it too, unless it has a query of its own', async () => {
    for (const [health, want] of [['/health', '/health?key=1'], ['/api/version?x=2', '/api/version?x=2']] as const) {
      const { engine, clock, seen } = engineAt(() => Response.json({}), [`health_path = "${health}"`], '/v1/?key=1')
      engine.start()
      clock.advance(0)
      await until(() => engine.healthy, 'healthy')
      await engine.stop()
      expect(seen[0]!.slice(seen[0]!.indexOf('/', 'http://'.length))).toBe(want)
    }
  })
})

describe('what the error says', () => {
  /** An engine that sends `head` raw over TCP and then closes the connection (a crash, the OOM killer). */
  function crashing(head: string) {
    const server = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        data(sock) {
          sock.write(head)
          sock.flush()
          setTimeout(() => sock.terminate(), 20)
        },
      },
    })
    const spec = loadEngines({ engine: [`e=http://127.0.0.1:${server.port}/v1`] })[0]!
    return { engine: new OpenAiEngine(spec, { log: silentLogger, clock: new FakeClock(), onHealth: () => {} }), stop: () => server.stop(true) }
  }

  test('an engine that closes the connection mid-answer is not called unreachable, and Bun\'s hint for programmers is left out', async () => {
    const first = chunk({ content: 'Hel' })
    const c = crashing(`HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${first.length.toString(16)}\r\n${first}\r\n`)
    try {
      const r = run(c.engine)
      await until(() => r.end.done, 'the request failed')
      expect(r.events).toEqual([{ content: 'Hel' }])
      expect(r.end.error?.message).toStartWith('the engine closed the connection mid-answer (')
      expect(r.end.error?.message).not.toContain('verbose')
    } finally {
      c.stop()
    }
  })

  test('an engine that answers JSON that does not parse says so', async () => {
    const { engine } = engineAt(() => new Response('{"choices": [', { headers: { 'content-type': 'application/json' } }))
    const r = run(engine)
    await until(() => r.end.done, 'the request failed')
    expect(r.end.error?.message).toBe('the engine answered application/json that is not JSON: {"choices": [')
  })

  test('an engine that is not there is not reachable, without the hint', async () => {
    const { engine } = engineAt(() => new Response())
    servers.pop()!.stop(true)
    const r = run(engine)
    await until(() => r.end.done, 'the request failed')
    expect(r.end.error?.message).toStartWith('the engine is not reachable')
    expect(r.end.error?.message).not.toContain('verbose')
  })
})

describe('how a stream may end', () => {
  test('lines ended by CR alone (valid Server-Sent Events) are read as lines', async () => {
    const s = writable()
    const { engine } = engineAt(() => sse(s))
    const r = run(engine)
    const cr = (x: string) => x.replaceAll('\n', '\r')
    s.write(cr(chunk({ content: 'a' })))
    s.write(cr(chunk({ content: 'b' })).slice(0, -1)) // a CR at the end of a read: the next may start with LF
    s.write('\r')
    s.write(cr(chunk({}, 'stop')) + cr('data: [DONE]\n\n'))
    s.close()
    await until(() => r.end.done, 'the end')
    expect(r.end.error).toBeNull()
    expect(r.events).toEqual([{ content: 'a' }, { content: 'b' }, { finish: 'stop' }])
  })

  test('an engine that sent finish_reason and usage but never closes its stream (a complete answer became a 30 s timeout): the answer ends within 2 s, complete', async () => {
    const s = writable()
    const { engine, clock } = engineAt(() => sse(s))
    const r = run(engine)
    s.write(chunk({ content: 'Done.' }))
    s.write(chunk({}, 'stop'))
    s.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } })}\n\n`)
    await until(() => r.events.length === 3, 'the usage')
    clock.advance(2000)
    await until(() => r.end.done, 'the answer ended')
    expect(r.end.error).toBeNull()
    expect(r.events).toEqual([{ content: 'Done.' }, { finish: 'stop' }, { usage: { prompt_tokens: 3, completion_tokens: 1 } }])
  })

  test('one that sent finish_reason alone and then nothing: the answer ends 2 s later, complete, without usage', async () => {
    const s = writable()
    const { engine, clock } = engineAt(() => sse(s))
    const r = run(engine)
    s.write(chunk({ content: 'Done.' }, 'stop'))
    await until(() => r.events.length === 2, 'the finish')
    clock.advance(1999)
    expect(r.end.done).toBe(false)
    clock.advance(1)
    await until(() => r.end.done, 'the answer ended')
    expect(r.end.error).toBeNull()
    expect(r.events).toEqual([{ content: 'Done.' }, { finish: 'stop' }])
  })
})
