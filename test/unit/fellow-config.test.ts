// The engines a fellow's operator declares: flags and the TOML file, and every way to get them
// wrong answered with one line naming the place.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FellowConfigError, checkPrograms, loadEngines, loadWorkloads, splitWords } from '../../src/agent/fellow-config'
import { eventsOfChunk, errorMessageOf, sseData } from '../../src/agent/engines'

const file = (text: string) => (path: string) => {
  if (path !== 'fellow.toml') throw Object.assign(new Error('no such file'), { code: 'ENOENT' })
  return text
}
const refused = (f: () => unknown): string => {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(FellowConfigError)
    return (e as Error).message
  }
  throw new Error('not refused')
}

describe('declaring engines', () => {
  test('nothing declared: the built-in tiny-llm', () => {
    expect(loadEngines({})).toEqual([expect.objectContaining({ name: 'builtin', model: 'tiny-llm', url: 'builtin', command: null, maxConcurrent: 4 })])
  })

  test('--engine NAME=URL and --engine-cmd NAME=COMMAND, with the defaults', () => {
    const [a, b] = loadEngines({ engine: ['llama=http://127.0.0.1:8081/v1/'], engineCmd: ["vllm=vllm serve 'my model' --port {port}"] })
    expect(a).toMatchObject({ name: 'llama', model: 'llama', upstreamModel: 'llama', url: 'http://127.0.0.1:8081/v1', command: null, healthPath: 'models', requestTimeoutS: 60 })
    expect(b).toMatchObject({ name: 'vllm', url: 'http://127.0.0.1:{port}/v1', command: ['vllm', 'serve', 'my model', '--port', '{port}'] })
  })

  test('the TOML file: every setting', () => {
    const toml = `
[engines.qwen]
command = "llama-server -m /models/q.gguf --port {port}"
model = "qwen2.5-0.5b"
upstream_model = "q"
max_concurrent = 8
health_path = "/health"
env = { CUDA_VISIBLE_DEVICES = "0" }
api_key = "k"
request_timeout_s = 30
start_timeout_s = 900
stop_grace_s = 5

[engines.ollama]
url = "http://127.0.0.1:11434/v1"
`
    const [q, o] = loadEngines({ config: 'fellow.toml' }, file(toml))
    expect(q).toEqual({
      name: 'qwen', model: 'qwen2.5-0.5b', upstreamModel: 'q', url: 'http://127.0.0.1:{port}/v1', command: ['llama-server', '-m', '/models/q.gguf', '--port', '{port}'],
      env: { CUDA_VISIBLE_DEVICES: '0' }, maxConcurrent: 8, healthPath: '/health', apiKey: 'k', requestTimeoutS: 30, startTimeoutS: 900, stopGraceS: 5, modelArtifact: null,
    })
    expect(o).toMatchObject({ name: 'ollama', model: 'ollama', url: 'http://127.0.0.1:11434/v1' })
  })

  test('mistakes are refused with one line that names where', () => {
    expect(refused(() => loadEngines({ engine: ['llama'] }))).toBe('--engine takes NAME=URL, got "llama"')
    expect(refused(() => loadEngines({ engine: ['llama=ftp://x/v1'] }))).toContain('--engine llama: the URL must be http or https')
    expect(refused(() => loadEngines({ engine: ['llama=not a url'] }))).toContain('not a URL')
    expect(refused(() => loadEngines({ engineCmd: ['x=server --listen 8080'] }))).toContain('the command must take {port}')
    expect(refused(() => loadEngines({ engineCmd: ["x=server 'unclosed {port}"] }))).toContain('unterminated single quote')
    expect(refused(() => loadEngines({ engine: ['a b=http://x/v1'] }))).toContain('the engine name must be')
    expect(refused(() => loadEngines({ engine: ['a=http://x/v1', 'a=http://y/v1'] }))).toBe('the engine a is declared twice')
    expect(refused(() => loadEngines({ config: 'missing.toml' }, file('')))).toBe('--config missing.toml: cannot read it: ENOENT')
    expect(refused(() => loadEngines({ config: 'fellow.toml' }, file('[engines.a\nurl=1')))).toContain('fellow.toml: not valid TOML')
    expect(refused(() => loadEngines({ config: 'fellow.toml' }, file('[engines.a]\nurl = "http://x/v1"\nmax_concurent = 3')))).toContain('fellow.toml: engines.a')
    expect(refused(() => loadEngines({ config: 'fellow.toml' }, file('[engines.a]\nurl = "http://x/v1"\nmax_concurrent = 0')))).toContain('engines.a.max_concurrent')
    expect(refused(() => loadEngines({ config: 'fellow.toml' }, file('[engines.a]\nmodel = "m"')))).toContain('give a url')
    expect(refused(() => loadEngines({ config: 'fellow.toml' }, file('[engines.a]\nurl = "http://x/v1"\nmodel_artifact = "0190a1b2-0000-7000-8000-000000000001"')))).toContain('model_artifact needs a command')
    expect(refused(() => loadEngines({ engineCmd: ['a=server -m {model_file} --port {port}'] }))).toContain('{model_file} in the command needs model_artifact')
    expect(refused(() => loadEngines({ config: 'fellow.toml' }, file('[engines.a]\nurl = "http://x/v1"\nmodel = "m"\n[engines.b]\nurl = "http://y/v1"\nmodel = "m"')))).toContain('the model m is served by two engines')
  })

  test("the file's mistakes in plain words, naming the setting", () => {
    const loaded = (toml: string) => refused(() => loadWorkloads({ config: 'fellow.toml' }, file(toml)))
    expect(loaded('[runners.torch]\ncommand = ""')).toBe('fellow.toml: runners.torch.command: must be a command line (a string) or its words (a list of strings), not empty')
    expect(loaded('[runners.torch]\ncommand = []')).toBe('fellow.toml: runners.torch.command: must be a command line (a string) or its words (a list of strings), not empty')
    expect(loaded('[engines.e]\ncommand = 5')).toBe('fellow.toml: engines.e.command: must be a command line (a string) or its words (a list of strings), not empty')
    expect(loaded('[runners.torch]\ncommand = "a"\nbogus = 1')).toBe('fellow.toml: runners.torch.bogus: unknown setting (the settings are command, env, stop_grace_s)')
    expect(loaded('[engines.a]\nurl = "http://x/v1"\nmax_concurent = 3')).toStartWith('fellow.toml: engines.a.max_concurent: unknown setting (the settings are url, command, model, ')
    expect(loaded('foo = 1')).toBe('fellow.toml: foo: unknown setting (the file holds [engines.NAME] and [runners.NAME] tables)')
    expect(loaded('[runners.torch]\ncommand = "a"\nstop_grace_s = -1')).toBe('fellow.toml: runners.torch.stop_grace_s: must be an integer from 0 to 3600')
    expect(loaded('[runners.torch]\ncommand = "a"\nenv = { "A-B" = "x" }')).toBe('fellow.toml: runners.torch.env.A-B: environment variable names are letters, digits and _, not starting with a digit')
    expect(loaded('[runners.torch]\ncommand = "a"\nenv = { A = 1 }')).toBe('fellow.toml: runners.torch.env.A: must be a string')
  })

  test('a declared program that is not there is refused at start, looked up as the child would be', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-programs-'))
    writeFileSync(join(dir, 'train'), '#!/bin/sh\n', { mode: 0o755 })
    writeFileSync(join(dir, 'notes.txt'), 'not a program\n', { mode: 0o644 })
    const check = (flags: Parameters<typeof loadWorkloads>[0], PATH = '/usr/bin:/bin') => checkPrograms(loadWorkloads(flags), { PATH })
    // Found: by path, on PATH, or on the PATH the runner's own env sets.
    check({ runner: [`a=${dir}/train --fast`, 'b=sh -c true'], engineCmd: [`e=${dir}/train --port {port}`] })
    expect(() => checkPrograms(loadWorkloads({ config: 'fellow.toml' }, file(`[runners.t]\ncommand = "train"\nenv = { PATH = "${dir}" }`)), { PATH: '/usr/bin' })).not.toThrow()
    // Missing or not executable: one line naming the runner or engine and the program.
    expect(refused(() => check({ runner: ['torch=/nonexistent/python stage.py'] }))).toBe('runner torch: /nonexistent/python: no such file, or not executable')
    expect(refused(() => check({ runner: [`notes=${dir}/notes.txt`] }))).toBe(`runner notes: ${dir}/notes.txt: no such file, or not executable`)
    expect(refused(() => check({ engineCmd: ['llama=llama-server-not-installed --port {port}'] }))).toBe('engine llama: llama-server-not-installed: not found on PATH, or not executable')
    expect(refused(() => check({ runner: ['t=train'] }))).toBe('runner t: train: not found on PATH, or not executable')
    // Engines already running (a URL) and the built-in start nothing: nothing to look up.
    check({ engine: ['ollama=http://127.0.0.1:11434/v1'] }, '')
    check({}, '')
    rmSync(dir, { recursive: true })
  })

  test('commands split like a shell splits a simple command, and nothing more', () => {
    expect(splitWords(`a "b c" 'd "e"' f\\ g "h\\"i" $HOME ;`)).toEqual(['a', 'b c', 'd "e"', 'f g', 'h"i', '$HOME', ';'])
    expect(splitWords('  ')).toEqual([])
    expect(() => splitWords('a "b')).toThrow('unterminated double quote')
  })
})

describe("reading an engine's answers", () => {
  test('SSE data lines, CRLF or LF, split across reads, comments skipped', async () => {
    const parts = [': ping\r\n\r\ndata: {"a"', ':1}\r\n\r\ndata:[DONE]\n', '\n']
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of parts) c.enqueue(new TextEncoder().encode(p))
        c.close()
      },
    })
    const out: string[] = []
    for await (const d of sseData(body)) out.push(d)
    expect(out).toEqual(['{"a":1}', '[DONE]'])
  })

  test('chunks become events; error chunks of llama.cpp and vLLM throw', () => {
    expect(eventsOfChunk({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })).toEqual([])
    expect(eventsOfChunk({ choices: [{ delta: { content: 'hi' }, finish_reason: null }] })).toEqual([{ content: 'hi' }])
    expect(eventsOfChunk({ choices: [{ delta: {}, finish_reason: 'stop' }] })).toEqual([{ finish: 'stop' }])
    expect(eventsOfChunk({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, prompt_tokens_details: null } })).toEqual([{ usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }])
    expect(eventsOfChunk({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{' } }] } }] })).toEqual([{ tool_calls: [{ index: 0, function: { arguments: '{' } }] }])
    expect(() => eventsOfChunk({ error: { code: 500, message: 'out of memory', type: 'server_error' } })).toThrow('the engine failed mid-answer: out of memory')
    expect(() => eventsOfChunk({ object: 'error', message: 'boom', type: 'InternalServerError', code: 500 })).toThrow('boom')
    expect(() => eventsOfChunk('text')).toThrow('not an object')
  })

  test("an engine's error body in plain words", () => {
    expect(errorMessageOf('{"error":{"message":"context too long"}}')).toBe('context too long')
    expect(errorMessageOf('{"object":"error","message":"The model `x` does not exist."}')).toBe('The model `x` does not exist.')
    expect(errorMessageOf('{"detail":"Not Found"}')).toBe('Not Found')
    expect(errorMessageOf('<html><body>Bad Gateway</body></html>')).toBe('Bad Gateway')
  })
})
