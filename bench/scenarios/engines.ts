// Tokens through leader + agent against the same engine called directly (issue 20). The engine is
// test/fixtures/engine-standin.ts (llama-server's wire format), pacing its tokens like a fast real
// engine (TOKEN_MS per token per stream); a fellow (dist/svc fellow) serves it with
// max_concurrent 32, and the leader (dist/svc serve) routes chat requests to it. Both paths are
// read by the same SSE client here: tokens/s over all streams, and the time to the first token.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, leaderBinary, startLeader, tempDir } from '../lib/proc'

const STANDIN = join(ROOT, 'test/fixtures/engine-standin.ts')
const TOKEN_MS = 2
const TOKENS = 256

export interface EnginePath {
  tokensPerS: number
  firstTokenMs: number[]
}
export interface EnginesResult {
  tokenMs: number
  tokens: number
  byStreams: { streams: number; direct: EnginePath; leader: EnginePath }[]
}

/** One streamed chat completion: when its first token came, and how many tokens. */
async function stream(url: string, headers: Record<string, string>, body: unknown): Promise<{ firstMs: number; tokens: number }> {
  const t0 = performance.now()
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`)
  const dec = new TextDecoder()
  let buf = ''
  let firstMs = -1
  let text = ''
  for await (const chunk of res.body!) {
    buf += dec.decode(chunk, { stream: true })
    let at: number
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, at)
      buf = buf.slice(at + 2)
      const data = event.split('\n').find((l) => l.startsWith('data: '))?.slice(6)
      if (!data || data === '[DONE]') continue
      const content = (JSON.parse(data) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content
      if (content) {
        if (firstMs < 0) firstMs = performance.now() - t0
        text += content
      }
    }
  }
  return { firstMs, tokens: text.split(' ').length - 1 }
}

async function measure(streams: number, rounds: number, url: string, headers: Record<string, string>, model: string): Promise<EnginePath> {
  const firstTokenMs: number[] = []
  let tokens = 0
  const t0 = performance.now()
  for (let r = 0; r < rounds; r++) {
    const done = await Promise.all(Array.from({ length: streams }, (_, i) => stream(url, headers, { model, messages: [{ role: 'user', content: `bench ${r} ${i}` }], stream: true, max_tokens: TOKENS })))
    for (const d of done) {
      firstTokenMs.push(d.firstMs)
      tokens += d.tokens
    }
  }
  return { tokensPerS: tokens / ((performance.now() - t0) / 1000), firstTokenMs }
}

async function until<T>(what: string, f: () => Promise<T | null>, ms = 30_000): Promise<T> {
  const end = performance.now() + ms
  while (performance.now() < end) {
    const v = await f().catch(() => null)
    if (v !== null) return v
    await Bun.sleep(100)
  }
  throw new Error(`timed out waiting for ${what}`)
}

export async function engines(opts: { rounds: number }): Promise<EnginesResult> {
  const engine = Bun.spawn([process.execPath, STANDIN, '--port', '0', '--model', 'bench', '--token-ms', String(TOKEN_MS)], { stdout: 'pipe', stderr: 'ignore', stdin: 'ignore' })
  const reader = (engine.stdout as ReadableStream<Uint8Array>).getReader()
  let said = ''
  while (!/listening on (\S+)/.test(said)) {
    const { value, done } = await reader.read()
    if (done) throw new Error('the engine stand-in exited before listening')
    said += new TextDecoder().decode(value)
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  const engineUrl = /listening on (\S+)/.exec(said)![1]!
  const leader = await startLeader({ stateDir: tempDir('engines'), env: { SVC_HEARTBEAT_INTERVAL_S: '1' } })
  let fellow: ReturnType<typeof Bun.spawn> | null = null
  try {
    const reg = await fetch(`${leader.url}/api/v1/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.com', password: 'bench engines password' }) })
    const cookie = reg.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
    const csrf = /svc_csrf=([^;]+)/.exec(cookie)![1]!
    const api = async (path: string, body: unknown) =>
      (await (await fetch(`${leader.url}${path}`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as Record<string, string>
    const pool = await api('/api/v1/admin/pools', { name: 'engines bench', description: 'bench', visibility: 'private' })
    const join_ = await api('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })
    const token = (await api('/api/v1/api-tokens', { name: 'bench' })).token!
    const dir = mkdtempSync(join(tmpdir(), 'bench-fellow-'))
    writeFileSync(join(dir, 'fellow.toml'), `[engines.bench]\nurl = "${engineUrl}/v1"\nmax_concurrent = 32\n`)
    fellow = Bun.spawn(
      [leaderBinary(), 'fellow', '--leader', leader.url, '--join-token', join_.join_token!, '--state-dir', join(dir, 'state'), '--config', join(dir, 'fellow.toml'), '--advertise-host', '127.0.0.1', '--p2p-port-base', String(21_000 + 2 * Math.floor(Math.random() * 4000))],
      { env: { PATH: process.env.PATH ?? '', SVC_LOG_LEVEL: 'warn' }, stdout: 'ignore', stderr: 'ignore', stdin: 'ignore' },
    )
    const auth = { authorization: `Bearer ${token}` }
    await until('the fellow serving the model', async () => {
      const m = (await (await fetch(`${leader.url}/api/v1/models/bench`, { headers: auth })).json()) as { fellows?: number }
      return m.fellows === 1 ? true : null
    })
    const r: EnginesResult = { tokenMs: TOKEN_MS, tokens: TOKENS, byStreams: [] }
    for (const streams of [1, 32]) {
      const rounds = streams === 1 ? opts.rounds * 3 : opts.rounds
      // Warm both paths once, then alternate direct and leader so a slow moment is shared.
      await measure(streams, 1, `${engineUrl}/v1/chat/completions`, {}, 'bench')
      await measure(streams, 1, `${leader.url}/api/v1/chat/completions`, auth, 'bench')
      const direct = await measure(streams, rounds, `${engineUrl}/v1/chat/completions`, {}, 'bench')
      const viaLeader = await measure(streams, rounds, `${leader.url}/api/v1/chat/completions`, auth, 'bench')
      r.byStreams.push({ streams, direct, leader: viaLeader })
    }
    return r
  } finally {
    fellow?.kill('SIGTERM')
    await fellow?.exited
    await leader.stop()
    engine.kill('SIGKILL')
  }
}
