// Real engines behind the inference transport (issue 20), end to end: the built dist/svc as
// leader and as two fellows, each with an OpenAI-compatible engine. The engine is the stand-in of
// test/fixtures/engine-standin.ts, a separate process speaking llama-server's and vLLM's wire
// format chunk for chunk (no real engine can be installed from the registries this project
// reaches; docs/operations.md says so). One fellow is given a running engine (--engine), the
// other starts and supervises its own (--engine-cmd) and has a second one from a config file
// (--config). The official `openai` client talks to the leader.
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import OpenAI from 'openai'
import { killAll, poll, processAlive, startCluster, startFellow, stopCluster, waitOnline, type Cluster, type Fellow } from '../helpers/cluster'
import { STANDIN, startStandin } from '../helpers/standin'
import { until } from '../helpers/until'

const MODEL = 'standin'
const external: { proc: ReturnType<typeof Bun.spawn> | null; url: string } = { proc: null, url: '' }

afterAll(async () => {
  external.proc?.kill('SIGKILL')
  await killAll()
})


type Stats = { requests: number; active: number; aborted: number; completed: number; last_request: Record<string, unknown> | null }
const stats = async (base: string): Promise<Stats> => (await (await fetch(`${base}/_standin/stats`)).json()) as Stats

/** What the supervised engine's fellow logged about starting it: its pid and URL. */
function started(f: Fellow): { pid: number; url: string }[] {
  return f.logs.flatMap((l) => {
    try {
      const j = JSON.parse(l) as { msg?: string; pid?: number; url?: string }
      return j.msg === 'engine started' && j.pid && j.url ? [{ pid: j.pid, url: j.url.replace(/\/v1$/, '') }] : []
    } catch {
      return []
    }
  })
}

const answered = (f: Fellow) => f.logs.filter((l) => l.includes('"inference answered"')).length

describe('OpenAI-compatible engines behind the leader', () => {
  let c: Cluster
  let openai: OpenAI
  let viaFlag: Fellow
  let supervised: Fellow
  const modelFellows = async () => (await openai.models.list()).data.find((m) => m.id === MODEL) as unknown as { fellows: number } | undefined

  test('two fellows, one --engine and one --engine-cmd (plus a --config engine), serve the model; /api/v1/models counts both', async () => {
    const ext = await startStandin(['--flavor', 'llama', '--model', MODEL, '--token-ms', '2'])
    external.proc = ext.proc
    external.url = ext.url
    c = await startCluster('tunnel', { SVC_INFER_DISPATCH_TIMEOUT_S: '4' })
    const token = await c.api<{ token: string }>('POST', '/api/v1/api-tokens', { name: 'engines e2e' })
    expect(token.status).toBe(201)
    openai = new OpenAI({ baseURL: `${c.leader.url}/api/v1`, apiKey: token.body.token, maxRetries: 0, timeout: 30_000 })
    viaFlag = startFellow(c, 'flag', ['--engine', `${MODEL}=${ext.url}/v1`])
    const toml = join(c.leader.dir, 'fellow.toml')
    // The second model is the external engine under another name, with its own limits.
    writeFileSync(toml, ['[engines.extra]', `url = "${ext.url}/v1"`, 'model = "standin-extra"', `upstream_model = "${MODEL}"`, 'max_concurrent = 2', 'request_timeout_s = 2'].join('\n'))
    const cmd = `${MODEL}=${process.execPath} '${STANDIN}' --port {port} --flavor vllm --model ${MODEL} --token-ms 2`
    supervised = startFellow(c, 'supervised', ['--engine-cmd', cmd, '--config', toml])
    await waitOnline(c, 2)
    await until(async () => ((await modelFellows())?.fellows === 2 ? true : null), 'both fellows serving the model', poll(20_000))
    // Who serves what, with each engine's max_concurrent as the capacity.
    const serving = await c.api<{ items: { model: string; fellows: { hostname: string; capacity: number; in_flight: number }[] }[] }>('GET', '/api/v1/inference/serving')
    expect(serving.body.items.map((m) => [m.model, m.fellows.map((f) => `${f.hostname}:${f.capacity}`).sort()])).toEqual([
      [MODEL, ['flag:4', 'supervised:4']],
      ['standin-extra', ['supervised:2']],
    ])
  }, 30_000)

  test('a model from the config file is served through its engine, with the upstream model name the engine knows', async () => {
    const r = await openai.chat.completions.create({ model: 'standin-extra', messages: [{ role: 'user', content: 'from the file' }], max_tokens: 5 })
    expect(r.choices[0]!.message.content).toBe('echo: from the file w0 ')
    expect(r.model).toBe('standin-extra')
    expect((await stats(external.url)).last_request).toMatchObject({ model: MODEL, max_tokens: 5, stream: true, stream_options: { include_usage: true } })
  }, 30_000)

  test('the openai client streams a chat completion through the leader, with usage as the engine counted it', async () => {
    const stream = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello there' }], stream: true, stream_options: { include_usage: true }, max_tokens: 6 })
    let text = ''
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
      usage = chunk.usage ?? usage
    }
    expect(text).toBe('echo: hello there w0 w1 w2 ')
    expect(finish).toBe('length')
    expect(usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 6, total_tokens: 8 })
  }, 30_000)

  test('8 concurrent requests spread over both fellows', async () => {
    const before = [answered(viaFlag), answered(supervised)]
    const texts = await Promise.all(
      Array.from({ length: 8 }, (_, i) => openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `n${i}` }], max_tokens: 20 }).then((r) => r.choices[0]!.message.content)),
    )
    expect(texts.map((t, i) => t?.startsWith(`echo: n${i} `))).toEqual(Array(8).fill(true))
    await until(() => (answered(viaFlag) + answered(supervised) - before[0]! - before[1]! >= 8 ? true : null), 'the fellows logged 8 answers', poll(5000))
    expect(answered(viaFlag) - before[0]!).toBeGreaterThan(0)
    expect(answered(supervised) - before[1]!).toBeGreaterThan(0)
  }, 30_000)

  test('tool calls pass both ways: tools reach the engine, the deltas come back merged (non-streamed) and as deltas (streamed)', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]
    const r = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'weather? [[tools]]' }], tools, tool_choice: 'auto', seed: 7, stop: ['zzz'] })
    expect(r.choices[0]!.finish_reason).toBe('tool_calls')
    expect(r.choices[0]!.message.tool_calls).toEqual([{ id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }])
    const stream = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'weather? [[tools]]' }], tools, stream: true })
    let args = ''
    for await (const chunk of stream) for (const t of chunk.choices[0]?.delta.tool_calls ?? []) args += t.function?.arguments ?? ''
    expect(args).toBe('{"city":"Paris"}')
    // What reached an engine: the passed fields, and a stream with usage whatever the caller asked.
    const seen = [await stats(external.url), ...(await Promise.all(started(supervised).slice(-1).map((s) => stats(s.url))))].map((s) => s.last_request).filter((x) => x !== null)
    expect(seen.some((b) => JSON.stringify(b!.tools) === JSON.stringify(tools) && b!.seed === 7 && b!.stream === true)).toBe(true)
  }, 30_000)

  test('embeddings are routed the same way', async () => {
    const r = await openai.embeddings.create({ model: MODEL, input: ['alpha', 'beta'] })
    expect(r.data.map((d) => [d.index, d.embedding.length])).toEqual([
      [0, 8],
      [1, 8],
    ])
    expect(r.model).toBe(MODEL)
    // A result far larger than one post of the transport (1 MiB bodies): sent in pieces.
    const big = await openai.embeddings.create({ model: MODEL, input: Array.from({ length: 200 }, (_, i) => `text ${i}`), dimensions: 1024, encoding_format: 'float' })
    expect(big.data).toHaveLength(200)
    expect(big.data.every((d, i) => d.index === i && d.embedding.length === 1024)).toBe(true)
  }, 30_000)

  test('a client that disconnects mid-stream makes the engine abort its request', async () => {
    const engines = [external.url, started(supervised).at(-1)!.url]
    const before = await Promise.all(engines.map(stats))
    const ctl = new AbortController()
    const stream = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'go on [[slow]]' }], stream: true }, { signal: ctl.signal })
    let chunks = 0
    await (async () => {
      for await (const _ of stream) if (++chunks === 3) ctl.abort()
    })().catch(() => undefined)
    await until(async () => {
      const now = await Promise.all(engines.map(stats))
      return now.some((s, i) => s.aborted > before[i]!.aborted) ? true : null
    }, 'the engine saw its request aborted', poll(10_000))
  }, 30_000)

  test('bad engine answers (HTML, a malformed chunk, a mid-stream error, silence) reach the caller as OpenAI errors, and the fellows stay healthy', async () => {
    for (const [magic, words] of [
      ['[[html]]', 'not an event stream'],
      ['[[malformed]]', 'malformed chunk'],
      ['[[error-mid]]', 'failed mid-answer'],
      ['[[400]]', 'refused the request'],
      ['[[hang]]', 'sent nothing for'],
    ] as const) {
      const err = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `x ${magic}` }] }).then(
        () => null,
        (e: unknown) => e,
      )
      expect([magic, err instanceof OpenAI.APIError]).toEqual([magic, true])
      expect([magic, (err as Error).message]).toEqual([magic, expect.stringContaining(words)])
      if (magic === '[[400]]') expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400)
    }
    expect((await modelFellows())?.fellows).toBe(2)
    const ok = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'still fine' }], max_tokens: 4 })
    expect(ok.choices[0]!.message.content).toBe('echo: still fine w0 ')
  }, 30_000)

  test('killing the supervised engine withdraws its model at once; the supervisor brings it back', async () => {
    const before = started(supervised)
    process.kill(before.at(-1)!.pid, 'SIGKILL')
    await until(async () => ((await modelFellows())?.fellows === 1 ? true : null), 'the model withdrawn from the killed engine\'s fellow', poll(3000))
    // The machine view still lists the engine, as not healthy; the fellow's other engine is untouched.
    const engines = async () => (await c.api<{ engines: { name: string; model: string; healthy: boolean }[] }>('GET', `/api/v1/workers/${supervised.id()}`)).body.engines
    expect(await engines()).toEqual([
      { name: 'extra', model: 'standin-extra', healthy: true },
      { name: MODEL, model: MODEL, healthy: false },
    ])
    // Requests go to the other fellow meanwhile.
    const r = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'meanwhile' }], max_tokens: 2 })
    expect(r.choices[0]!.message.content).toBe('echo: meanwhile ')
    await until(() => (started(supervised).length > before.length ? true : null), 'the engine restarted', poll(10_000))
    await until(async () => ((await modelFellows())?.fellows === 2 ? true : null), 'the model announced again', poll(10_000))
    expect((await engines()).map((e) => [e.name, e.healthy])).toEqual([['extra', true], [MODEL, true]])
    expect(supervised.logs.some((l) => l.includes('"engine exited; restarting"'))).toBe(true)
    // Its output reached the fellow's log (and so the leader's log shipping).
    expect(supervised.logs.some((l) => l.includes('"engine output"'))).toBe(true)
  }, 30_000)

  test('an engine whose model file is in the artifact store: the fellow downloads it (hash checked) and starts the engine with {model_file}', async () => {
    // A fellow uploads the file with its node token (artifacts belong to its pool).
    const nodeToken = (JSON.parse(readFileSync(join(viaFlag.dir, 'state', 'fellow.json'), 'utf8')) as { node_token: string }).node_token
    const weights = new TextEncoder().encode('tiny weights for the test')
    const sha256 = new Bun.CryptoHasher('sha256').update(weights).digest('hex')
    const node = (method: string, path: string, body: string | Uint8Array<ArrayBuffer>, type = 'application/json') =>
      fetch(`${c.leader.url}${path}`, { method, headers: { authorization: `Bearer ${nodeToken}`, 'content-type': type }, body })
    const begun = (await (await node('POST', '/api/v1/artifacts/uploads', JSON.stringify({ kind: 'model', name: 'weights.bin', size_bytes: weights.length, sha256 }))).json()) as { upload_id: string }
    const put = await node('PUT', `/api/v1/artifacts/uploads/${begun.upload_id}?offset=0`, weights, 'application/octet-stream')
    expect(put.status).toBe(201)
    const artifact = ((await put.json()) as { artifact: { id: string } }).artifact
    // The engine starts only if the file it is given holds those bytes.
    const toml = join(c.leader.dir, 'model-file.toml')
    const check = `test "$(cat "$1")" = 'tiny weights for the test' && exec '${process.execPath}' '${STANDIN}' --port "$0" --model file-model`
    writeFileSync(toml, ['[engines.filed]', `command = ["sh", "-c", ${JSON.stringify(check)}, "{port}", "{model_file}"]`, 'model = "file-model"', `model_artifact = "${artifact.id}"`].join('\n'))
    const filed = startFellow(c, 'filed', ['--config', toml])
    await until(async () => ((await openai.models.list()).data.find((m) => m.id === 'file-model') as unknown as { fellows: number } | undefined)?.fellows === 1 ? true : null, 'the engine with the downloaded file serving', poll(20_000))
    expect(readFileSync(join(filed.dir, 'state', 'models', sha256), 'utf8')).toBe('tiny weights for the test')
    // The catalog names the file the model was served from.
    const catalog = await c.api<{ items: { name: string; artifact_id: string | null; size_bytes: number }[] }>('GET', '/api/v1/servables')
    expect(catalog.body.items.find((m) => m.name === 'file-model')).toMatchObject({ artifact_id: artifact.id, size_bytes: weights.length })
    const r = await openai.chat.completions.create({ model: 'file-model', messages: [{ role: 'user', content: 'loaded' }], max_tokens: 2 })
    expect(r.choices[0]!.message.content).toBe('echo: loaded ')
    // An agent killed outright does not leave its engine behind (setpriv's parent-death signal).
    const enginePid = started(filed).at(-1)!.pid
    expect(processAlive(enginePid)).toBe(true)
    filed.proc.kill('SIGKILL')
    await filed.proc.exited
    await until(() => (processAlive(enginePid) ? null : true), 'the killed agent\'s engine gone', poll(10_000))
  }, 30_000)

  test('a stopping fellow withdraws its models at once: no request is routed to it while its engine takes its stop grace', async () => {
    const slow = startFellow(c, 'slow-stop', ['--engine-cmd', `graceful=bun ${STANDIN} --port {port} --model graceful --ignore-sigterm`])
    await until(async () => ((await c.api<{ items: { fellow_id: string; servables: string[] }[] }>('GET', `/api/v1/cluster/nodes?pool_id=${c.poolId}`)).body.items.find((n) => n.servables.includes('graceful')) ? true : null), 'the model served', poll(20_000))
    slow.proc.kill('SIGTERM')
    // Its engine ignores SIGTERM, so the agent waits out the engine's stop grace (10 s): the model
    // must be gone from the leader's view well before that.
    await until(async () => ((await c.api<{ items: { servables: string[] }[] }>('GET', `/api/v1/cluster/nodes?pool_id=${c.poolId}`)).body.items.some((n) => n.servables.includes('graceful')) ? null : true), 'the model withdrawn', poll(3000))
    expect(processAlive(slow.proc.pid)).toBe(true)
    expect(await slow.proc.exited).toBe(0)
  }, 40_000)

  test('stopping the agent stops its engine (SIGTERM) and the cluster stops cleanly', async () => {
    const pid = started(supervised).at(-1)!.pid
    await stopCluster(c)
    await until(() => {
      try {
        process.kill(pid, 0)
        return null
      } catch {
        return true
      }
    }, 'the supervised engine gone', poll(5000))
  }, 30_000)
})
