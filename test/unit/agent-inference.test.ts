// The agent's side of serving: a request through the built-in engine, posted as frames. Posting is
// pipelined (one post at a time; what comes meanwhile goes in the next), and a 410 ends generation.
import { describe, expect, test } from 'bun:test'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LeaderError, type InferFrame, type LeaderClient } from '../../src/agent/client'
import { FramePoster, InferenceServer, serveWith } from '../../src/agent/inference'
import { BuiltinEngine } from '../../src/agent/engines'
import { loadEngines } from '../../src/agent/fellow-config'
import { silentLogger } from '../../src/log'
import { ToolCallMerger } from '../../src/inference/openai'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'

/** A leader whose frame posts take a macrotask each, as a real round trip does. */
function client(onPost: (frames: InferFrame[], calls: number) => void) {
  const posts: InferFrame[][] = []
  const c = {
    async inferRespond(_id: string, frames: InferFrame[]) {
      await new Promise((r) => setTimeout(r, 1))
      posts.push(frames)
      onPost(frames, posts.length)
    },
  } as unknown as LeaderClient
  return { c, posts }
}

const request = (max_tokens: number | null, params?: Record<string, unknown>) => ({
  request_id: 'r1', model: 'tiny-llm', messages: [{ role: 'user', content: 'It was the best of' }], max_tokens, stream: true, ...(params ? { params } : {}),
})
// A clock that stands still: nothing here waits on it unless a post is retried.
const deps = (c: LeaderClient) => ({ client: c, log: silentLogger, fellowId: () => 'f1', signal: new AbortController().signal, clock: new FakeClock() })
const builtin = () => new BuiltinEngine(loadEngines({})[0]!)

async function serve(c: LeaderClient, req: ReturnType<typeof request>) {
  const d = deps(c)
  await serveWith(d, builtin(), req, new FramePoster(d, req.request_id))
}

describe('serving the built-in model', () => {
  test('streams the reply, the first word posted alone and later words batched, and ends with done, finish reason and usage', async () => {
    const { c, posts } = client(() => {})
    await serve(c, request(40))
    const frames = posts.flat()
    const text = frames.map((f) => f.delta ?? '').join('')
    expect(text.split(' ')).toHaveLength(40)
    expect(text).toBe(text.trim())
    expect(posts[0]).toEqual([{ delta: text.split(' ')[0]! }]) // the first token does not wait for a batch
    expect(posts.length).toBeGreaterThan(1) // streamed, not one frame at the end
    expect(posts.length).toBeLessThan(40) // but batched while a post is on its way, not a request per token
    expect(posts.every((p) => p.filter((f) => f.delta !== undefined).length <= 1)).toBe(true) // content merged into one frame per post
    expect(frames.at(-1)).toMatchObject({ done: true, finish_reason: 'length', usage: { prompt_tokens: 5, completion_tokens: 40 } })
  })

  test('the finish reason is "length" whatever limit cut the words: the default (64) and the cap (4096) too (they said "stop")', async () => {
    for (const [max, words] of [[null, 64], [5000, 4096], [3, 3]] as const) {
      const { c, posts } = client(() => {})
      await serve(c, request(max))
      const last = posts.flat().at(-1)
      expect([max, last?.finish_reason, last?.usage?.completion_tokens]).toEqual([max, 'length', words])
    }
  })

  test('410 Gone (the client went away) stops generation at once', async () => {
    const { c, posts } = client((_, calls) => {
      if (calls === 2) throw new LeaderError(410, 'gone', 'client left', null)
    })
    await serve(c, request(4000))
    expect(posts).toHaveLength(2)
    expect(posts.flat().some((f) => f.done)).toBe(false)
  })

  test('tools and JSON mode are refused with a 400 error frame (the caller gets a clear error, not plain text)', async () => {
    for (const params of [{ tools: [{ type: 'function', function: { name: 'f' } }] }, { response_format: { type: 'json_object' } }]) {
      const { c, posts } = client(() => {})
      await serve(c, request(10, params))
      expect(posts.flat()).toEqual([{ error: expect.stringContaining('tiny-llm'), error_status: 400 }])
    }
  })
})

describe('a request with nothing to pass on for a while', () => {
  /** An engine that thinks (reasoning, not passed on) until its request is aborted. */
  function thinker() {
    const seen = { aborted: false, thoughts: 0 }
    const engine = {
      spec: builtin().spec,
      healthy: true,
      async *chat(_req: unknown, signal: AbortSignal) {
        while (!signal.aborted) {
          seen.thoughts++
          yield { reasoning: 'hmm' }
          await new Promise((r) => setTimeout(r, 1))
        }
        seen.aborted = true
      },
    } as unknown as BuiltinEngine
    return { engine, seen }
  }

  test('posts an empty batch every 5 s (the leader took it for silent: 504 while the engine went on), and a 410 to one stops the engine at once', async () => {
    let gone = false
    const posts: InferFrame[][] = []
    const c = {
      async inferRespond(_id: string, frames: InferFrame[]) {
        posts.push(frames)
        if (gone) throw new LeaderError(410, 'gone', 'client left', null)
      },
    } as unknown as LeaderClient
    const d = deps(c)
    const { engine, seen } = thinker()
    const served = serveWith(d, engine, request(null), new FramePoster(d, 'r1'))
    await until(() => seen.thoughts > 3, 'the engine thinking')
    d.clock.advance(4999)
    expect(posts).toEqual([]) // nothing to say yet: no post
    d.clock.advance(1)
    expect(posts).toEqual([[]]) // a sign of life; nothing of the thinking is passed on
    await new Promise((r) => setImmediate(r)) // its answer read
    gone = true // the client went away
    d.clock.advance(5000)
    await served
    expect(seen.aborted).toBe(true)
    expect(posts).toEqual([[], []])
  })
})

describe('posting frames', () => {
  test('one content delta over a frame (an engine answering in one piece) goes as several, cut between characters (70,000 were refused whole)', async () => {
    const { c, posts } = client(() => {})
    const poster = new FramePoster(deps(c), 'r1')
    // A pair (an emoji) sits across the first cut at 16,384.
    const text = 'a'.repeat(16_383) + '😀' + 'b'.repeat(70_000)
    poster.push({ delta: text })
    poster.push({ done: true, finish_reason: 'stop' })
    await poster.close()
    const deltas = posts.flat().filter((f) => f.delta !== undefined).map((f) => f.delta!)
    expect(deltas.join('')).toBe(text)
    expect(deltas.every((d) => d.length <= 16_384)).toBe(true)
    expect(deltas.every((d) => !/[\ud800-\udbff]$/.test(d))).toBe(true)
    expect(posts.flat().at(-1)).toEqual({ done: true, finish_reason: 'stop' })
  })

  test('one tool-call delta over a frame (a 2 MiB argument in one piece) goes as several, its arguments cut as OpenAI streams them (the leader refused it 413)', async () => {
    const posts: InferFrame[][] = []
    const c = {
      async inferRespond(_id: string, frames: InferFrame[]) {
        // The leader's body limit (SVC_MAX_BODY_BYTES, 1 MiB), and a frame's tool calls count against the 1 MiB a request buffers.
        if (JSON.stringify({ frames }).length > 1 << 20) throw new LeaderError(413, 'payload_too_large', 'too large', null)
        posts.push(frames)
      },
    } as unknown as LeaderClient
    const poster = new FramePoster(deps(c), 'r1')
    const big = JSON.stringify({ text: 'a"b\n'.repeat(400_000) + '😀' })
    poster.push({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'write', arguments: big } }, { index: 1, id: 'c2', type: 'function', function: { name: 'f', arguments: '{}' } }] } as InferFrame)
    poster.push({ done: true, finish_reason: 'tool_calls' })
    await poster.close()
    expect(poster.gone.aborted).toBe(false)
    const frames = posts.flat()
    expect(frames.at(-1)).toEqual({ done: true, finish_reason: 'tool_calls' })
    const deltas = frames.filter((f) => f.tool_calls)
    expect(deltas.length).toBeGreaterThan(100)
    expect(deltas.every((f) => JSON.stringify(f.tool_calls).length <= 65_536)).toBe(true)
    const merged = new ToolCallMerger()
    for (const f of deltas) merged.add(f.tool_calls!)
    expect(merged.result).toEqual([
      { id: 'c1', type: 'function', function: { name: 'write', arguments: big } },
      { id: 'c2', type: 'function', function: { name: 'f', arguments: '{}' } },
    ])
  })

  test('frames the leader refuses for what they hold (422) end the answer with an error frame at once, not a silent fellow', async () => {
    const posts: InferFrame[][] = []
    const c = {
      async inferRespond(_id: string, frames: InferFrame[]) {
        posts.push(frames)
        if (frames.some((f) => f.error === undefined)) throw new LeaderError(422, 'validation_failed', 'body /frames/0/tool_calls: too long', null)
      },
    } as unknown as LeaderClient
    const poster = new FramePoster(deps(c), 'r1')
    poster.push({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: 'x' } }] } as InferFrame)
    await poster.close()
    expect(poster.gone.aborted).toBe(true)
    expect(posts.at(-1)).toEqual([{ error: expect.stringContaining('the leader refused it (422'), error_status: 502 }])
  })
})

describe('what the heartbeat says about the engines', () => {
  test('every declared engine is listed with its model and health; servables names only the healthy ones', () => {
    const { c } = client(() => {})
    // Not started: the engine at a URL has not answered a health check, so it is not healthy yet.
    const specs = [...loadEngines({}), ...loadEngines({ engine: ['vllm=http://127.0.0.1:9/v1'] })]
    const server = new InferenceServer(deps(c), specs)
    expect(server.engineStates()).toEqual([
      { name: 'builtin', model: 'tiny-llm', healthy: true },
      { name: 'vllm', model: 'vllm', healthy: false },
    ])
    expect(server.servables()).toEqual(['tiny-llm'])
  })
})

describe('two models on one fellow', () => {
  test('a busy model does not block an idle one: a request waiting for its engine holds none of the fellow\'s slots, and asks the leader before its engine starts it', async () => {
    const toml = ['[engines.a]', 'url = "builtin"', 'model = "a"', 'max_concurrent = 1', '[engines.b]', 'url = "builtin"', 'model = "b"', 'max_concurrent = 1'].join('\n')
    const specs = loadEngines({ config: 'fellow.toml' }, () => toml)
    const req = (id: string, model: string) => ({ request_id: id, model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, stream: true })
    // The leader's queue for this fellow: two requests for the busy model, then one for the idle one.
    const queue = [req('a1', 'a'), req('a2', 'a'), req('a3', 'a'), req('b1', 'b')]
    const posts: [string, InferFrame[]][] = []
    const stop = new AbortController()
    const c = {
      async inferPoll() {
        await new Promise((r) => setTimeout(r, 1))
        return queue.shift() ?? null
      },
      async inferRespond(id: string, frames: InferFrame[]) {
        posts.push([id, frames])
        if (id === 'a3' && frames.length === 0) throw new LeaderError(410, 'gone', 'its client left while it waited', null)
      },
    } as unknown as LeaderClient
    const server = new InferenceServer({ ...deps(c), signal: stop.signal }, specs)
    let release!: () => void
    const busy = new Promise<void>((r) => (release = r))
    const started: string[] = []
    const a = server.engines[0]!
    const builtinChat = a.chat.bind(a)
    a.chat = async function* (r, signal) {
      started.push(r.request_id)
      if (r.request_id === 'a1') await busy // a long answer
      yield* builtinChat(r, signal)
    }
    server.start()
    try {
      const done = (id: string) => posts.some(([i, f]) => i === id && f.some((x) => x.done))
      await until(() => done('b1'), 'the idle model answered while the busy one still serves')
      expect(started).toEqual(['a1'])
      release()
      await until(() => done('a2'), 'the waiting request served once the engine is free')
      // Each waiter asked first (an empty post); the one whose client had left never reached the engine.
      expect(posts.find(([i]) => i === 'a2')).toEqual(['a2', []])
      expect(posts.filter(([i]) => i === 'a3')).toEqual([['a3', []]])
      expect(started).toEqual(['a1', 'a2'])
    } finally {
      stop.abort()
    }
  })
})

describe('model files kept for engines', () => {
  test('a kept file whose bytes changed (same size) is downloaded again, not started from, while the leader is reachable', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'agent-models-'))
    try {
      const bytes = new TextEncoder().encode('weights '.repeat(1000))
      const sha256 = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
      let downloads = 0
      const c = {
        artifact: async (id: string) => ({ id, kind: 'model', name: 'm.gguf', size_bytes: bytes.length, sha256, step: null, stage: null }),
        artifactContent: async () => {
          downloads++
          return new Response(bytes).body!
        },
      } as unknown as LeaderClient
      const fetchModel = (s: InferenceServer, id: string) => (s['fetchModel'] as (id: string) => Promise<string>).call(s, id)
      const file = await fetchModel(new InferenceServer({ ...deps(c), stateDir }, []), 'art-1')
      expect([file, downloads]).toEqual([join(stateDir, 'models', sha256), 1])
      // Kept and whole: a new run uses it as it is.
      expect(await fetchModel(new InferenceServer({ ...deps(c), stateDir }, []), 'art-1')).toBe(file)
      expect(downloads).toBe(1)
      // Seven bytes overwritten in place, the size unchanged (a disk error, a stray write).
      const fd = openSync(file, 'r+')
      writeSync(fd, 'CORRUPT', 1000)
      closeSync(fd)
      expect(await fetchModel(new InferenceServer({ ...deps(c), stateDir }, []), 'art-1')).toBe(file)
      expect(downloads).toBe(2)
      expect(new Uint8Array(readFileSync(file))).toEqual(bytes)
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  })
})
