// The agent in-process against a stand-in leader (Bun.serve), for the flows that are hard to
// provoke through a real leader: a token revoked while running, a restart, signals that arrive
// in a heartbeat response, eviction.
import { afterEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ServerWebSocket } from 'bun'
import { Agent } from '../../src/fellow/agent'
import { LogBuffer, agentLogger } from '../../src/fellow/logship'
import { writeCheckpoint } from '../../src/fellow/state'

const JOIN = 'svc_join_' + 'j'.repeat(43)
const FELLOW = '01a2b3c4-0000-7000-8000-00000000abcd'
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

function fakeLeader() {
  const s = {
    registrations: [] as { bearer: string | null; fellow_id?: string; address?: string }[],
    heartbeats: [] as { bearer: string | null; body: Record<string, unknown> }[],
    token: null as string | null,
    pending: [] as unknown[],
    sockets: [] as ServerWebSocket<unknown>[],
    logLines: [] as string[],
  }
  let minted = 0
  const bearer = (req: Request) => req.headers.get('authorization')?.replace(/^Bearer /, '') ?? null
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req, srv) {
      const path = new URL(req.url).pathname
      const b = bearer(req)
      if (path === '/api/v1/health') return Response.json({ status: 'ok' })
      if (path === '/api/v1/workers/register') {
        const body = (await req.json()) as { fellow_id?: string; address?: string }
        s.registrations.push({ bearer: b, fellow_id: body.fellow_id, address: body.address })
        // Like the leader: a join token, or the fellow's current node token.
        if (b !== JOIN && (b === null || b !== s.token)) return Response.json({ code: 'unauthorized' }, { status: 401 })
        s.token = `svc_node_${++minted}`
        // A public base URL this machine cannot reach: the agent must use its --leader origin.
        const id = body.fellow_id ?? FELLOW
        return Response.json({ fellow_id: id, node_token: s.token, pool_id: 'p1', heartbeat_interval_s: 1, signals_url: `wss://leader.public.example/ws/signals/${id}` }, { status: 201 })
      }
      if (b !== s.token) return Response.json({ code: 'unauthorized' }, { status: 401 })
      if (path.startsWith('/ws/signals/')) return srv.upgrade(req) ? undefined : new Response(null, { status: 400 })
      if (path === '/api/v1/workers/heartbeat') {
        s.heartbeats.push({ bearer: b, body: (await req.json()) as Record<string, unknown> })
        const pending = s.pending.splice(0)
        return Response.json({ ok: true, next_heartbeat_s: 1, ...(pending.length ? { pending_signals: pending } : {}) })
      }
      if (path.endsWith('/logs')) {
        s.logLines.push(...((await req.json()) as { lines: string[] }).lines)
        return new Response(null, { status: 204 })
      }
      if (path === '/api/v1/servables') return Response.json({}, { status: 201 })
      if (path.startsWith('/api/v1/infer/requests/')) {
        await Bun.sleep(200)
        return new Response(null, { status: 204 })
      }
      return new Response(null, { status: 404 })
    },
    websocket: { open: (ws) => void s.sockets.push(ws), message() {} },
  })
  cleanups.push(() => server.stop(true))
  return { ...s, state: s, url: `http://127.0.0.1:${server.port}` }
}

/** A free (base, base+1) pair below the ephemeral range (32768+), where client sockets do not land. */
function freeBase(): number {
  for (;;) {
    const base = 20_000 + 2 * Math.floor(Math.random() * 6000)
    try {
      Bun.listen({ hostname: '127.0.0.1', port: base, socket: { data() {} } }).stop(true)
      Bun.listen({ hostname: '127.0.0.1', port: base + 1, socket: { data() {} } }).stop(true)
      return base
    } catch {
      // taken: try another
    }
  }
}

function startAgent(leaderUrl: string, stateDir: string) {
  const lines: string[] = []
  const logs = new LogBuffer()
  const base = freeBase()
  const agent = new Agent({
    leaderUrl,
    joinToken: JOIN,
    stateDir,
    hostname: 'unit',
    advertiseHost: '127.0.0.1',
    listenHost: '127.0.0.1',
    p2pPortBase: base,
    once: false,
    log: agentLogger('info', logs, (l) => lines.push(l)),
    logs,
  })
  const exited = agent.run()
  cleanups.push(async () => {
    agent.stop('test over')
    await exited
  })
  return { agent, exited, lines, base }
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(20)
  }
}

const saved = (dir: string) => JSON.parse(readFileSync(join(dir, 'fellow.json'), 'utf8')) as { fellow_id: string; node_token: string }

describe('fellow agent against a stand-in leader', () => {
  test('registers, connects its signal socket on the --leader origin and heartbeats with telemetry', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const { base } = startAgent(leader.url, dir)
    await until('the signal socket', () => leader.state.sockets.length === 1)
    await until('a heartbeat', () => leader.state.heartbeats.length >= 1)
    expect(leader.state.registrations[0]).toEqual({ bearer: JOIN, fellow_id: undefined, address: `127.0.0.1:${base}` })
    const hb = leader.state.heartbeats[0]!.body
    expect(hb.status).toBe('idle')
    expect(hb.servables).toEqual(['tiny-llm'])
    expect(hb.hardware).toMatchObject({ gpus: [] })
    expect(typeof (hb.hardware as { mem_free_mb: unknown }).mem_free_mb).toBe('number')
    expect(saved(dir)).toMatchObject({ fellow_id: FELLOW, node_token: leader.state.token })
    await until('shipped log lines', () => leader.state.logLines.some((l) => l.includes('"registered"')))
  }, 15_000)

  test('a token revoked while running: heartbeat 401 -> re-register with the join token, keeping the fellow_id', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    startAgent(leader.url, dir)
    await until('a heartbeat', () => leader.state.heartbeats.length >= 1)
    const old = leader.state.token
    leader.state.token = 'svc_node_revoked-by-someone-else'
    await until('re-registration', () => leader.state.registrations.length === 3)
    // First its (revoked) node token, then the join token with the same fellow_id.
    expect(leader.state.registrations.slice(1).map((r) => [r.bearer, r.fellow_id])).toEqual([[old, FELLOW], [JOIN, FELLOW]])
    await until('the new token saved', () => saved(dir).node_token === leader.state.token)
    expect(saved(dir).fellow_id).toBe(FELLOW)
    // ...and the signal socket is reopened with the new token.
    await until('a new socket', () => leader.state.sockets.length === 2)
    const n = leader.state.heartbeats.length
    await until('heartbeats with the new token', () => leader.state.heartbeats.length > n)
    expect(leader.state.heartbeats.at(-1)!.bearer).toBe(leader.state.token)
  }, 15_000)

  test('a restart re-uses the saved identity: it re-registers with its node token and the same fellow_id', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const first = startAgent(leader.url, dir)
    await until('registration', () => existsSync(join(dir, 'fellow.json')))
    const token = saved(dir).node_token
    first.agent.stop('SIGTERM')
    expect(await first.exited).toBe(0)
    startAgent(leader.url, dir)
    await until('the second registration', () => leader.state.registrations.length === 2)
    expect(leader.state.registrations[1]).toMatchObject({ bearer: token, fellow_id: FELLOW })
  }, 15_000)

  test('signals in a heartbeat response are handled: PURGE drops checkpoints, UPDATE says there is no self-update', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    writeCheckpoint(dir, { job_id: 'old-job', stage: 0, stages: 1, step: 5, ts: '' }, Uint8Array.of(1))
    const { lines } = startAgent(leader.url, dir)
    await until('a heartbeat', () => leader.state.heartbeats.length >= 1)
    const ts = new Date().toISOString()
    leader.state.pending.push({ id: 'u1', signal: 'UPDATE', payload: { version: '9.9.9' }, ts }, { id: 'p1', signal: 'PURGE', ts })
    await until('the purge', () => !existsSync(join(dir, 'checkpoints')))
    expect(lines.some((l) => l.includes('cannot update itself') && l.includes('9.9.9'))).toBe(true)
  }, 15_000)

  test('eviction by a newer agent with the same fellow_id ends run() cleanly, without reconnecting', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const { exited, lines } = startAgent(leader.url, dir)
    await until('the signal socket', () => leader.state.sockets.length === 1)
    leader.state.sockets[0]!.close(4409, 'replaced by a newer connection of this fellow')
    expect(await exited).toBe(0)
    expect(lines.some((l) => l.includes('evicted'))).toBe(true)
    expect(leader.state.sockets).toHaveLength(1)
  }, 15_000)
})
