// The inference transport under 1,000 concurrent streams, beside a direct-SSE floor in the same run.
//
// Transport: clients POST /api/v1/chat/completions (stream: true) to a real leader; simulated
// fellows take the requests over their inference sockets (/ws/infer/{id}) and send frames back
// there (--via=http: long-polls and POSTs instead); each frame's text is the time it was made,
// so a client knows its age on arrival. Floor: a bare Bun.serve streams the same chunks straight
// from where they are made. Both are read by the same client code in a child process (its own
// core, and BUN_CONFIG_MAX_HTTP_REQUESTS raised above Bun's 256 concurrent fetches).
//   paced: every stream gets a frame every PACE_MS, streams out of step (a fellow generating
//          tokens); the fellow posts what it has whenever its previous post returned, so batching
//          appears only under load.
//   flood: frames are made as fast as they go through (up to 32 a post): the ceiling in frames/s.
//
//   bun run bench/inference.ts            (1,000 streams; 100 paced and 200 flood frames each)
//   bun run bench/inference.ts --quick    (1,000 streams; 20 paced and 50 flood frames each)
//   --pace-ms=N                           (a paced frame every N ms per stream; default 50)
//   --paced-frames=N                      (frames per stream in the paced run)
//   --flood-frames=N                      (frames per stream in the flood run)
//   --via=http                            (the fellows long-poll and POST: the agent's fallback)
import { mkdtempSync } from 'node:fs'
import { tmpdir, cpus } from 'node:os'
import { join } from 'node:path'

type Mode = 'transport' | 'floor'
type Pace = 'paced' | 'flood'
interface Spec { mode: Mode; pace: Pace; via: 'socket' | 'http'; paceMs: number; url: string; apiKey: string; poolId: string; fellows: { id: string; token: string }[]; streams: number; frames: number }
/** steady: the frames made after every stream had opened (its response began), without the opening storm. */
interface Result { frames: number; seconds: number; p50: number; p95: number; p99: number; steady: { frames: number; p50: number; p95: number; p99: number }; failed: number; posts: number; pickupMs: number; loadCpuS: number; serverCpuS?: number }

/** A frame every PACE_MS per stream in the paced run (default 50: 20 tokens a second); --pace-ms=N. */
const PACE_MS = Number(/^--pace-ms=(\d+)$/.exec(process.argv.find((a) => a.startsWith('--pace-ms=')) ?? '')?.[1] ?? 50)
const FLOOD_BATCH = 32
/** --via=http: the fellows long-poll and POST (the agent's fallback); default: the inference socket. */
const VIA: 'socket' | 'http' = process.argv.includes('--via=http') ? 'http' : 'socket'
const now = () => performance.timeOrigin + performance.now() // comparable across the two processes
/** Calls fn every ms, starting at a random phase: streams are not in lockstep, as real ones are not. */
function every(ms: number, fn: () => void): () => void {
  let timer: ReturnType<typeof setInterval> | undefined
  const first = setTimeout(() => (fn(), (timer = setInterval(fn, ms))), Math.random() * ms)
  return () => (clearTimeout(first), clearInterval(timer))
}
const chunk = (content: string | null, seq: number) =>
  `id: ${seq}\ndata: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench-llm', system_fingerprint: null, choices: [{ index: 0, delta: content === null ? {} : { content }, logprobs: null, finish_reason: content === null ? 'stop' : null }] })}\n\n`

// ---- the child: clients (and, for the transport, the fellows) ----

async function readStream(res: Response, onFrame: (madeAt: number) => void): Promise<void> {
  const reader = res.body!.getReader()
  const dec = new TextDecoder()
  let buf = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buf += dec.decode(value, { stream: true })
    let i: number
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const line = buf.slice(0, i).split('\n').find((l) => l.startsWith('data: '))
      buf = buf.slice(i + 2)
      if (!line) continue
      if (line === 'data: [DONE]') return
      const content = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content
      if (content) onFrame(Number(content))
    }
  }
}

/** One request being answered: frames made but not yet posted, and whether a post is in flight. */
interface Gen {
  id: string
  token: string
  pending: string[]
  made: number
  posting: boolean
  stop?: () => void
}

/**
 * How a simulated fellow talks to the leader: one inference socket each (credit for every stream
 * it may be given, frames as messages with an ack each: what the agent does), or, with --via=http,
 * 64 long-polls each and a POST per batch (the agent's fallback, and the transport before issue 22).
 */
function simulateFellows(spec: Spec, t0: number): { stop(): void; posts: () => number; pickupMs: () => number } {
  let stopped = false
  let posts = 0
  let picked = 0
  let pickupMs = 0
  const sockets: WebSocket[] = []
  type Send = (g: Gen, frames: unknown[]) => Promise<unknown>
  const pump = async (g: Gen, send: Send) => {
    if (g.posting) return
    g.posting = true
    while (g.pending.length > 0 || (spec.pace === 'flood' && g.made < spec.frames)) {
      if (spec.pace === 'flood') for (let n = 0; n < FLOOD_BATCH && g.made < spec.frames; n++, g.made++) g.pending.push(String(now()))
      const frames: { delta?: string; done?: boolean }[] = g.pending.splice(0).map((delta) => ({ delta }))
      const last = g.made >= spec.frames
      if (last) frames.push({ done: true })
      posts++
      await send(g, frames)
    }
    g.posting = false
  }
  const picking = (id: string, token: string, send: Send) => {
    const g: Gen = { id, token, pending: [], made: 0, posting: false }
    if (++picked === spec.streams) pickupMs = now() - t0
    const tick = () => {
      if (g.made >= spec.frames) return g.stop?.()
      g.pending.push(String(now()))
      g.made++
      void pump(g, send)
    }
    if (spec.pace === 'flood') void pump(g, send)
    else g.stop = every(spec.paceMs, tick)
  }
  for (const f of spec.fellows) {
    if (spec.via === 'socket') {
      const ws = new WebSocket(`${spec.url.replace(/^http/, 'ws')}/ws/infer/${f.id}`, { headers: { authorization: `Bearer ${f.token}` } } as unknown as string[])
      sockets.push(ws)
      let seq = 0
      const acks = new Map<number, () => void>()
      const send: Send = (g, frames) =>
        new Promise<void>((resolve) => {
          const s = seq++
          acks.set(s, resolve)
          ws.send(JSON.stringify({ t: 'frames', id: g.id, seq: s, frames }))
        })
      ws.onopen = () => ws.send(JSON.stringify({ t: 'credit', n: 1024 }))
      ws.onmessage = (ev) => {
        const m = JSON.parse(ev.data as string) as { t: 'request'; request: { request_id: string } } | { t: 'ack'; seq: number }
        if (m.t === 'request') picking(m.request.request_id, f.token, send)
        else {
          acks.get(m.seq)?.()
          acks.delete(m.seq)
        }
      }
      continue
    }
    const send: Send = (g, frames) =>
      fetch(`${spec.url}/api/v1/infer/responses/${g.id}`, { method: 'POST', headers: { authorization: `Bearer ${g.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ frames }) })
    // As many long-polls as the leader holds per fellow (64): pick-up is a round trip per request.
    for (let p = 0; p < 64; p++) {
      void (async () => {
        while (!stopped) {
          const r = await fetch(`${spec.url}/api/v1/infer/requests/${f.id}?wait_ms=1000`, { headers: { authorization: `Bearer ${f.token}` } })
          if (r.status !== 200) continue
          picking(((await r.json()) as { request_id: string }).request_id, f.token, send)
        }
      })()
    }
  }
  return { stop: () => void ((stopped = true), sockets.forEach((ws) => ws.close())), posts: () => posts, pickupMs: () => pickupMs }
}

async function runLoad(spec: Spec): Promise<Result> {
  const t0 = now()
  const cpu0 = process.cpuUsage()
  const fellows = spec.mode === 'transport' ? simulateFellows(spec, t0) : null
  const latencies = new Float64Array(spec.streams * spec.frames)
  const madeAts = new Float64Array(spec.streams * spec.frames)
  let allOpen = 0
  let n = 0
  let first = Infinity
  let last = 0
  let failed = 0
  await Promise.all(
    Array.from({ length: spec.streams }, async () => {
      const res =
        spec.mode === 'transport'
          ? await fetch(`${spec.url}/api/v1/chat/completions`, {
              method: 'POST',
              headers: { authorization: `Bearer ${spec.apiKey}`, 'content-type': 'application/json' },
              body: JSON.stringify({ model: 'bench-llm', messages: [{ role: 'user', content: 'go' }], stream: true, max_tokens: spec.frames, pool_id: spec.poolId }),
            })
          : await fetch(`${spec.url}/stream?pace=${spec.pace}&frames=${spec.frames}`)
      if (res.status !== 200) return void failed++
      allOpen = Math.max(allOpen, now())
      await readStream(res, (madeAt) => {
        const t = now()
        first = Math.min(first, t)
        last = t
        if (n < latencies.length) (madeAts[n] = madeAt), (latencies[n++] = t - madeAt)
      })
    }),
  )
  fellows?.stop()
  const pcts = (xs: Float64Array) => {
    const sorted = xs.sort()
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
    return { frames: sorted.length, p50: at(0.5), p95: at(0.95), p99: at(0.99) }
  }
  const all = pcts(latencies.slice(0, n))
  const steady = pcts(latencies.slice(0, n).filter((_, i) => madeAts[i]! > allOpen))
  const cpu = process.cpuUsage(cpu0)
  return {
    frames: n, seconds: (last - first) / 1000, p50: all.p50, p95: all.p95, p99: all.p99, steady, failed,
    posts: fellows?.posts() ?? 0, pickupMs: fellows?.pickupMs() ?? 0, loadCpuS: (cpu.user + cpu.system) / 1e6,
  }
}

// ---- the parent: the leader, the floor and the table ----

function floorServer(): { url: string; stop(): void } {
  const timers = new Set<() => void>()
  const finish = (s: { c: ReadableStreamDefaultController<string>; seq: number }) => {
    s.c.enqueue(chunk(null, ++s.seq) + 'data: [DONE]\n\n')
    s.c.close()
  }
  const paced = (c: ReadableStreamDefaultController<string>, left: number) => {
    const s = { c, left, seq: 0 }
    const stop = every(PACE_MS, () => {
      s.c.enqueue(chunk(String(now()), ++s.seq))
      if (--s.left === 0) stop(), timers.delete(stop), finish(s)
    })
    timers.add(stop)
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 120,
    fetch(req) {
      const q = new URL(req.url).searchParams
      const frames = Number(q.get('frames'))
      let seq = 0
      let left = frames
      const body =
        q.get('pace') === 'paced'
          ? new ReadableStream<string>({ start: (c) => paced(c, frames) })
          : new ReadableStream<string>({
              pull(c) {
                let out = ''
                for (let n = 0; n < FLOOD_BATCH && left > 0; n++, left--) out += chunk(String(now()), ++seq)
                c.enqueue(out)
                if (left === 0) finish({ c, seq })
              },
            })
      return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, stop: () => (timers.forEach((t) => t()), void server.stop(true)) }
}

async function startLeader() {
  const { loadConfig } = await import('../src/config')
  const { systemClock } = await import('../src/time')
  const { silentLogger } = await import('../src/log')
  const { createContext } = await import('../src/context')
  const { createApp, createServices } = await import('../src/app')
  const { mintApiToken } = await import('../src/accounts/api-tokens')
  const { users } = await import('../src/db/schema')
  const { newId } = await import('../src/crypto')
  const cfg = loadConfig({ SVC_STATE_DIR: mkdtempSync(join(tmpdir(), 'svc-bench-infer-')), SVC_COOKIE_SECURE: '0', SVC_INFER_DISPATCH_TIMEOUT_S: '120' })
  const ctx = createContext(cfg, silentLogger, systemClock, { mailEnabled: false })
  const services = createServices(ctx)
  const app = createApp(ctx, services)
  const userId = newId()
  const t = Date.now()
  ctx.db.insert(users).values({ id: userId, email: 'bench@example.com', passwordHash: 'x', displayName: null, role: 'admin', status: 'active', createdAt: t, updatedAt: t, lastLoginAt: null }).run()
  const apiKey = mintApiToken(ctx, userId, 'bench').token
  // Four fellows in the default pool; the admin's requests name that pool (an unscoped request
  // leaves the default pool out), so routing spreads over all four.
  const registered = Array.from({ length: 4 }, (_, i) => services.fellows.register(null, { hostname: `gpu-${i}` }, '127.0.0.1'))
  const fellows = registered.map((r) => ({ id: r.fellow_id, token: r.node_token }))
  const poolId = registered[0]!.pool_id
  const heartbeat = () =>
    Promise.all(fellows.map((f) => app.handle(new Request('http://leader/api/v1/workers/heartbeat', { method: 'POST', headers: { authorization: `Bearer ${f.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ status: 'idle', servables: ['bench-llm'] }) }))))
  await heartbeat()
  const beat = setInterval(() => void heartbeat(), 5000)
  app.listen({ hostname: '127.0.0.1', port: 0, idleTimeout: 120 })
  return { url: `http://127.0.0.1:${app.server!.port}`, apiKey, poolId, fellows, stop: async () => (clearInterval(beat), await app.server!.stop(true), await services.close()) }
}

async function runChild(spec: Spec): Promise<Result> {
  const child = Bun.spawn([process.execPath, import.meta.path, '--load'], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: '8192', BENCH_LOAD: JSON.stringify(spec) },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const cpu0 = process.cpuUsage()
  const out = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error(`load generator failed: ${out}`)
  const cpu = process.cpuUsage(cpu0)
  return { ...(JSON.parse(out) as Result), serverCpuS: (cpu.user + cpu.system) / 1e6 }
}

async function main() {
  const quick = process.argv.includes('--quick')
  const streams = 1000
  const frames: Record<Pace, number> = quick ? { paced: 20, flood: 50 } : { paced: 100, flood: 200 }
  const pacedFrames = /^--paced-frames=(\d+)$/.exec(process.argv.find((a) => a.startsWith('--paced-frames=')) ?? '')?.[1]
  if (pacedFrames) frames.paced = Math.max(1, Number(pacedFrames))
  const floodFrames = /^--flood-frames=(\d+)$/.exec(process.argv.find((a) => a.startsWith('--flood-frames=')) ?? '')?.[1]
  if (floodFrames) frames.flood = Math.max(1, Number(floodFrames))
  const leader = await startLeader()
  const floor = floorServer()
  const rows: [string, string, Result][] = []
  for (const pace of ['paced', 'flood'] as const) {
    for (const mode of ['floor', 'transport'] as const) {
      const url = mode === 'floor' ? floor.url : leader.url
      rows.push([mode === 'floor' ? 'direct SSE (floor)' : `leader transport (${VIA})`, pace, await runChild({ mode, pace, via: VIA, paceMs: PACE_MS, url, apiKey: leader.apiKey, poolId: leader.poolId, fellows: leader.fellows, streams, frames: frames[pace] })])
    }
  }
  await leader.stop()
  floor.stop()
  const f = (x: number) => x.toFixed(1)
  console.log(`\nInference transport: ${streams} concurrent streams, ${leader.fellows.length} fellows; bun ${Bun.version}, ${cpus().length} CPUs${quick ? ' (--quick)' : ''}`)
  console.log(`paced = a frame every ${PACE_MS} ms per stream; flood = as fast as it goes\n`)
  console.log('| path | load | frames | failed | posts | frames/s | p50 ms | p95 ms | p99 ms | server CPU s | client CPU s |')
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const [path, pace, r] of rows) {
    const fps = Math.round(r.frames / r.seconds).toLocaleString('en')
    console.log(`| ${path} | ${pace} | ${r.frames} | ${r.failed} | ${r.posts} | ${fps} | ${f(r.p50)} | ${f(r.p95)} | ${f(r.p99)} | ${f(r.serverCpuS!)} | ${f(r.loadCpuS)} |`)
  }
  for (const [, pace, r] of rows) if (r.pickupMs > 0) console.log(`transport ${pace}: all ${streams} requests picked up by the fellows after ${Math.round(r.pickupMs)} ms`)
  for (const pace of ['paced', 'flood'] as const) {
    const [base, t] = rows.filter((r) => r[1] === pace).map((r) => r[2])
    console.log(`\nadded latency per frame, ${pace}: p50 ${f(t!.p50 - base!.p50)} ms, p95 ${f(t!.p95 - base!.p95)} ms, p99 ${f(t!.p99 - base!.p99)} ms`)
    // Paced: the same for the frames made once every stream had opened (the opening storm over).
    if (pace === 'paced') {
      const [b, s] = [base!.steady, t!.steady]
      console.log(`added latency per frame, steady: p50 ${f(s.p50 - b.p50)} ms, p95 ${f(s.p95 - b.p95)} ms, p99 ${f(s.p99 - b.p99)} ms (${s.frames} and ${b.frames} frames made after all ${streams} streams opened)`)
    }
  }
  process.exit(0)
}

if (process.argv.includes('--load')) {
  process.stdout.write(JSON.stringify(await runLoad(JSON.parse(process.env.BENCH_LOAD!) as Spec)))
  process.exit(0)
} else await main()
