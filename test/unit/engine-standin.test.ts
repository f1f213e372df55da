// The engine stand-in (test/fixtures/engine-standin.ts) as the real subprocess other tests use:
// llama-server's and vLLM's streamed chunks, tool-call deltas, an aborted request seen at the
// engine, embeddings, and a loading engine's 503 before its health check answers 200.
import { afterAll, describe, expect, test } from 'bun:test'
import { resolve } from 'node:path'
import { until } from '../helpers/until'

const STANDIN = resolve(import.meta.dir, '../fixtures/engine-standin.ts')
const procs: ReturnType<typeof Bun.spawn>[] = []

afterAll(() => {
  for (const p of procs) p.kill('SIGKILL')
})

/** The stand-in on a free port; resolves with its base URL once it says where it listens. */
async function start(args: string[]): Promise<string> {
  const proc = Bun.spawn([process.execPath, STANDIN, '--port', '0', ...args], { stdout: 'pipe', stderr: 'ignore', stdin: 'ignore' })
  procs.push(proc)
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const dec = new TextDecoder()
  let text = ''
  while (!text.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the stand-in exited before listening: ${text}`)
    text += dec.decode(value, { stream: true })
  }
  const first = text.slice(0, text.indexOf('\n'))
  expect(first).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/)
  // Keep draining its output so that it never blocks on a full pipe.
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  return first.slice('listening on '.length)
}

type Chunk = {
  id?: string
  object?: string
  model?: string
  system_fingerprint?: string
  choices: { index: number; delta: { role?: string; content?: string | null; tool_calls?: { index: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }[] }; finish_reason: string | null }[]
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
  timings?: Record<string, number>
}

/** The `data:` payloads of a whole SSE body, in order. */
async function sse(res: Response): Promise<string[]> {
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toStartWith('text/event-stream')
  const text = await res.text()
  return text
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => {
      expect(e).toStartWith('data: ')
      return e.slice('data: '.length)
    })
}

const post = (url: string, body: unknown, init: RequestInit = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...init })

type Stats = { requests: number; active: number; aborted: number; completed: number; last_request: unknown }
const stats = async (base: string) => (await (await fetch(`${base}/_standin/stats`)).json()) as Stats

describe('the engine stand-in', () => {
  let llama = ''
  let vllm = ''

  test('starts as a subprocess on a free port (both flavors)', async () => {
    ;[llama, vllm] = await Promise.all([start(['--model', 'm1']), start(['--flavor', 'vllm', '--model', 'm2'])])
    expect(await (await fetch(`${llama}/health`)).json()).toEqual({ status: 'ok' })
    expect(await (await fetch(`${llama}/v1/models`)).json()).toMatchObject({ object: 'list', data: [{ id: 'm1', object: 'model', owned_by: 'llamacpp' }] })
    expect(await (await fetch(`${vllm}/v1/models`)).json()).toMatchObject({ object: 'list', data: [{ id: 'm2', object: 'model', owned_by: 'vllm' }] })
  })

  test("streams llama-server's chunks, with the usage chunk when include_usage is set, then [DONE]", async () => {
    const body = { model: 'm1', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello there' }], stream: true, stream_options: { include_usage: true }, max_tokens: 5 }
    const events = await sse(await post(`${llama}/v1/chat/completions`, body))
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk)
    for (const c of chunks) expect(c).toMatchObject({ object: 'chat.completion.chunk', model: 'm1', system_fingerprint: expect.any(String), id: chunks[0]!.id })
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('echo: hello there w0 w1 ')
    const finishes = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((f) => f !== null)
    expect(finishes).toEqual(['length'])
    const last = chunks.at(-1)!
    expect(last.choices).toEqual([])
    expect(last.usage).toEqual({ prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 })
    expect(last.timings).toMatchObject({ prompt_n: 4, predicted_n: 5 })
    // Without include_usage: no usage chunk.
    const plain = await sse(await post(`${llama}/v1/chat/completions`, { ...body, stream_options: undefined }))
    expect(plain.slice(0, -1).some((e) => 'usage' in (JSON.parse(e) as object))).toBe(false)
    expect(plain.at(-1)).toBe('[DONE]')
  })

  test('streams vLLM\'s chunks: a role chunk first; refuses another model with vLLM\'s 404', async () => {
    const events = await sse(await post(`${vllm}/v1/chat/completions`, { model: 'm2', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }))
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk)
    expect(chunks[0]!.choices[0]).toMatchObject({ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null })
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(`echo: hi ${Array.from({ length: 14 }, (_, i) => `w${i} `).join('')}`)
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
    expect(chunks.at(-1)!).toMatchObject({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 16, total_tokens: 17 } })
    const refused = await post(`${vllm}/v1/chat/completions`, { model: 'other', messages: [{ role: 'user', content: 'hi' }] })
    expect(refused.status).toBe(404)
    expect(await refused.json()).toEqual({ object: 'error', message: 'The model `other` does not exist.', type: 'NotFoundError', param: null, code: 404 })
  })

  test('[[tools]] answers with tool-call deltas whose arguments join to {"city":"Paris"}', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]
    for (const base of [llama, vllm]) {
      const model = base === llama ? 'm1' : 'm2'
      const events = await sse(await post(`${base}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'weather? [[tools]]' }], tools, stream: true }))
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk)
      const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
      expect(calls[0]).toMatchObject({ index: 0, id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '' } })
      expect(calls.map((t) => t.function?.arguments ?? '').join('')).toBe('{"city":"Paris"}')
      expect(calls.slice(1)).toHaveLength(3)
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('')
      expect(chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((f) => f !== null)).toEqual(['tool_calls'])
    }
  })

  test('a client that goes away mid-stream is counted as aborted at the engine', async () => {
    const before = await stats(llama)
    const ctl = new AbortController()
    const res = await post(`${llama}/v1/chat/completions`, { messages: [{ role: 'user', content: 'go on [[slow]]' }], stream: true }, { signal: ctl.signal })
    const reader = res.body!.getReader()
    let got = ''
    while ((got.match(/\n\n/g) ?? []).length < 3) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the stream ended early: ${got}`)
      got += new TextDecoder().decode(value)
    }
    ctl.abort()
    await reader.cancel().catch(() => undefined)
    const after = await until(async () => {
      const s = await stats(llama)
      return s.aborted > before.aborted && s.active === 0 ? s : null
    }, 'the engine saw the request aborted', { timeoutMs: 2000, everyMs: 10 })
    expect(after.aborted).toBe(before.aborted + 1)
    expect(after.requests).toBe(before.requests + 1)
    expect(after.last_request).toEqual({ messages: [{ role: 'user', content: 'go on [[slow]]' }], stream: true })
  })

  test('embeddings: 8 deterministic floats per input, or their Float32 bytes in base64', async () => {
    const res = await post(`${llama}/v1/embeddings`, { model: 'm1', input: ['alpha', 'beta gamma'] })
    const body = (await res.json()) as { object: string; model: string; data: { object: string; index: number; embedding: number[] }[]; usage: { prompt_tokens: number; total_tokens: number } }
    expect(body).toMatchObject({ object: 'list', model: 'm1', usage: { prompt_tokens: 3, total_tokens: 3 } })
    expect(body.data.map((d) => [d.object, d.index, d.embedding.length])).toEqual([
      ['embedding', 0, 8],
      ['embedding', 1, 8],
    ])
    expect(body.data[0]!.embedding.every((x) => typeof x === 'number' && Number.isFinite(x))).toBe(true)
    const again = (await (await post(`${llama}/v1/embeddings`, { model: 'm1', input: 'alpha' })).json()) as typeof body
    expect(again.data[0]!.embedding).toEqual(body.data[0]!.embedding)
    const b64 = (await (await post(`${llama}/v1/embeddings`, { model: 'm1', input: 'alpha', encoding_format: 'base64' })).json()) as { data: { embedding: string }[] }
    const bytes = Buffer.from(b64.data[0]!.embedding, 'base64')
    const floats = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4))
    expect(floats).toHaveLength(8)
    floats.forEach((f, i) => expect(f).toBeCloseTo(body.data[0]!.embedding[i]!, 5))
  })

  test('--startup-ms 1500: /health answers 503 (loading) first, then 200', async () => {
    // The loading time counts from the stand-in's start: long enough that the first call, made once
    // it listens, still finds it loading on a slow machine.
    const base = await start(['--startup-ms', '1500'])
    const first = await fetch(`${base}/health`)
    expect(first.status).toBe(503)
    expect(await first.json()).toEqual({ error: { code: 503, message: 'Loading model', type: 'unavailable_error' } })
    await until(async () => ((await fetch(`${base}/health`)).status === 200 ? true : null), 'healthy after loading', { timeoutMs: 10_000, everyMs: 20 })
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: 'ok' })
  })
})
