// Supervising an engine the agent starts (--engine-cmd), with a real subprocess: the engine
// stand-in (test/fixtures/engine-standin.ts). Healthy only once its health check answers; stopped
// with SIGTERM, or SIGKILL after the grace period; a command that cannot start is retried and
// never announced.
import { afterEach, describe, expect, test } from 'bun:test'
import { resolve } from 'node:path'
import { OpenAiEngine } from '../../src/agent/engines'
import { loadEngines } from '../../src/agent/fellow-config'
import { createLogger } from '../../src/log'
import { systemClock } from '../../src/time'
import { until } from '../helpers/until'

const STANDIN = resolve(import.meta.dir, '../fixtures/engine-standin.ts')
const running: OpenAiEngine[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((e) => e.stop()))
})

function supervised(args: string, settings: string[] = []) {
  const lines: Record<string, unknown>[] = []
  const log = createLogger('info', (l) => lines.push(JSON.parse(l)))
  const health: boolean[] = []
  const toml = ['[engines.s]', `command = "${process.execPath} ${STANDIN} --port {port} ${args}"`, ...settings].join('\n')
  const spec = loadEngines({ config: 'fellow.toml' }, () => toml)[0]!
  const engine = new OpenAiEngine(spec, { log, clock: systemClock, onHealth: (e) => health.push(e.healthy) })
  running.push(engine)
  return { engine, lines, health, said: (msg: string) => lines.filter((l) => l.msg === msg) }
}

describe('a supervised engine', () => {
  test('is healthy only once its health check answers (a loading engine answers 503 first)', async () => {
    const s = supervised('--startup-ms 600 --model s')
    s.engine.start()
    await until(() => (s.said('engine started').length === 1 ? true : null), 'started', { timeoutMs: 5000, everyMs: 20 })
    expect(s.engine.healthy).toBe(false)
    await until(() => (s.engine.healthy ? true : null), 'healthy', { timeoutMs: 10_000, everyMs: 50 })
    expect(s.health).toEqual([true])
    // Its output reached the agent's log, line by line, named by engine and stream.
    await until(() => (s.said('engine output').some((l) => String(l.line).startsWith('listening on')) ? true : null), 'its stdout in the log', { timeoutMs: 5000, everyMs: 20 })
    expect(s.said('engine output')[0]).toMatchObject({ engine: 's', stream: 'stdout' })
  })

  test('what it prints reaches the log without its api_key or secret env values (vLLM logs its --api-key; pool members read fellow logs)', async () => {
    const lines: Record<string, unknown>[] = []
    const toml = [
      '[engines.leaky]',
      `command = ["sh", "-c", "echo \\"args: --port $1 --api-key sk-engine-key-1234 --token $HF_TOKEN --threads $THREADS --model-id $MODEL_ID\\" >&2; exec sleep 30", "sh", "{port}"]`,
      'api_key = "sk-engine-key-1234"',
      'env = { HF_TOKEN = "hf_secret_abcdef", THREADS = "12345678", MODEL_ID = "meta-llama/Llama-3-8B" }',
    ].join('\n')
    const spec = loadEngines({ config: 'fellow.toml' }, () => toml)[0]!
    const engine = new OpenAiEngine(spec, { log: createLogger('info', (l) => lines.push(JSON.parse(l))), clock: systemClock, onHealth: () => {} })
    running.push(engine)
    engine.start()
    const said = await until(() => lines.find((l) => l.msg === 'engine output') ?? null, 'its output in the log', { timeoutMs: 5000, everyMs: 20 })
    // A value whose name says nothing of a secret stays readable.
    expect(String(said.line)).toMatch(/^args: --port \d+ --api-key \*\*\* --token \*\*\* --threads 12345678 --model-id meta-llama\/Llama-3-8B$/)
  })

  test('an engine that ignores SIGTERM is killed after the grace period', async () => {
    const s = supervised('--ignore-sigterm --model s', ['stop_grace_s = 1'])
    s.engine.start()
    await until(() => (s.engine.healthy ? true : null), 'healthy', { timeoutMs: 10_000, everyMs: 50 })
    const pid = Number(s.said('engine started')[0]!.pid)
    await s.engine.stop()
    expect(s.said('engine did not stop after SIGTERM; killing it')).toHaveLength(1)
    expect(() => process.kill(pid, 0)).toThrow()
    expect(s.health).toEqual([true, false])
  })

  test('a command that cannot start is retried with backoff and never healthy', async () => {
    const lines: Record<string, unknown>[] = []
    const spec = loadEngines({ engineCmd: ['gone=/nonexistent/engine --port {port}'] })[0]!
    const engine = new OpenAiEngine(spec, { log: createLogger('info', (l) => lines.push(JSON.parse(l))), clock: systemClock, onHealth: () => {} })
    running.push(engine)
    engine.start()
    await until(() => (lines.filter((l) => l.msg === 'engine command could not start').length >= 2 ? true : null), 'two attempts', { timeoutMs: 10_000, everyMs: 50 })
    expect(engine.healthy).toBe(false)
    expect(lines.find((l) => l.msg === 'engine command could not start')).toMatchObject({ engine: 'gone', command: '/nonexistent/engine' })
  })
})

describe('an engine that exits by itself', () => {
  test('leaves nothing of its process group behind when it is restarted (a crashed engine whose workers outlived it, one set per restart)', async () => {
    const lines: Record<string, unknown>[] = []
    // A launcher that starts a worker (as vLLM starts its engine core) and then crashes.
    const toml = ['[engines.crashy]', `command = ["sh", "-c", "sleep 10007 & echo worker $!; exit 3", "sh", "{port}"]`].join('\n')
    const spec = loadEngines({ config: 'fellow.toml' }, () => toml)[0]!
    const engine = new OpenAiEngine(spec, { log: createLogger('info', (l) => lines.push(JSON.parse(l))), clock: systemClock, onHealth: () => {} })
    running.push(engine)
    engine.start()
    const said = await until(() => lines.find((l) => l.msg === 'engine output' && String(l.line).startsWith('worker ')) ?? null, 'the worker started', { timeoutMs: 5000, everyMs: 20 })
    const worker = Number(String(said.line).slice('worker '.length))
    await until(() => lines.find((l) => l.msg === 'engine exited; restarting') ?? null, 'the crash noticed', { timeoutMs: 5000, everyMs: 20 })
    const alive = () => {
      try {
        process.kill(worker, 0)
        return true
      } catch {
        return false
      }
    }
    try {
      await until(() => !alive(), 'the worker killed with its crashed engine', { timeoutMs: 3000, everyMs: 20 })
    } finally {
      if (alive()) process.kill(worker, 'SIGKILL')
    }
  })
})
