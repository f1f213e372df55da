// The agent in-process against a stand-in leader (Bun.serve), for the flows that are hard to
// provoke through a real leader: a token revoked while running, a restart, signals that arrive
// in a heartbeat response, eviction. The agent's timers run on a fake clock: where a test waits for
// a heartbeat or a log shipment, it moves the clock while it waits, instead of sleeping.
import { afterEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ServerWebSocket } from 'bun'
import { Agent } from '../../src/agent/agent'
import { LogBuffer, agentLogger } from '../../src/agent/logship'
import { writeCheckpoint } from '../../src/agent/state'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'
import { freeBase } from '../helpers/listen'

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
    goodbyes: [] as (string | null)[],
    /** Like a leader that removed the fellow: a join token makes a new one, whatever fellow_id. */
    forgotten: false,
    /** Runs while a heartbeat is being answered (a test steps the agent's clock there). */
    duringHeartbeat: () => {},
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
        const id = s.forgotten && b === JOIN ? '01a2b3c4-0000-7000-8000-0000000f0e11' : (body.fellow_id ?? FELLOW)
        return Response.json({ fellow_id: id, node_token: s.token, pool_id: 'p1', heartbeat_interval_s: 1, signals_url: `wss://leader.public.example/ws/signals/${id}` }, { status: 201 })
      }
      if (b !== s.token) return Response.json({ code: 'unauthorized' }, { status: 401 })
      if (path.startsWith('/ws/signals/')) return srv.upgrade(req) ? undefined : new Response(null, { status: 400 })
      if (path === '/api/v1/workers/heartbeat') {
        s.heartbeats.push({ bearer: b, body: (await req.json()) as Record<string, unknown> })
        s.duringHeartbeat()
        const pending = s.pending.splice(0)
        return Response.json({ ok: true, next_heartbeat_s: 1, ...(pending.length ? { pending_signals: pending } : {}) })
      }
      if (path === '/api/v1/workers/goodbye') {
        s.goodbyes.push(b)
        return new Response(null, { status: 204 })
      }
      if (path.endsWith('/logs')) {
        s.logLines.push(...((await req.json()) as { lines: string[] }).lines)
        return new Response(null, { status: 204 })
      }
      if (path === '/api/v1/servables') return Response.json({}, { status: 201 })
      if (path.startsWith('/api/v1/infer/requests/')) return new Response(null, { status: 204 })
      return new Response(null, { status: 404 })
    },
    websocket: { open: (ws) => void s.sockets.push(ws), message() {} },
  })
  cleanups.push(() => server.stop(true))
  return { ...s, state: s, url: `http://127.0.0.1:${server.port}` }
}

function startAgent(leaderUrl: string, stateDir: string) {
  const lines: string[] = []
  const logs = new LogBuffer()
  const base = freeBase()
  const clock = new FakeClock()
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
    clock,
  })
  const exited = agent.run()
  cleanups.push(async () => {
    agent.stop('test over')
    await exited
  })
  // A quarter of the leader's 1 s heartbeat interval per poll: time passes while a test waits.
  const time = { tick: () => clock.advance(250) }
  return { agent, exited, lines, base, clock, time }
}

const saved = (dir: string) => JSON.parse(readFileSync(join(dir, 'fellow.json'), 'utf8')) as { fellow_id: string; node_token: string }

describe('fellow agent against a stand-in leader', () => {
  test('registers, connects its signal socket on the --leader origin and heartbeats with telemetry', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const { base, clock, time } = startAgent(leader.url, dir)
    await until(() => leader.state.sockets.length === 1, 'the signal socket')
    await until(() => leader.state.heartbeats.length >= 1, 'a heartbeat')
    expect(leader.state.registrations[0]).toEqual({ bearer: JOIN, fellow_id: undefined, address: `127.0.0.1:${base}` })
    const hb = leader.state.heartbeats[0]!.body
    expect(hb.status).toBe('idle')
    expect(hb.servables).toEqual(['tiny-llm'])
    // No engine declared: the built-in one, under the name the agent gives it.
    expect(hb.engines).toEqual([{ name: 'builtin', model: 'tiny-llm', healthy: true }])
    expect(hb.hardware).toMatchObject({ gpus: [] })
    expect(typeof (hb.hardware as { mem_free_mb: unknown }).mem_free_mb).toBe('number')
    expect(saved(dir)).toMatchObject({ fellow_id: FELLOW, node_token: leader.state.token })
    expect(leader.state.logLines).toEqual([]) // shipped every 2 s, and no time has passed
    const t0 = clock.now()
    await until(() => leader.state.logLines.some((l) => l.includes('"registered"')), 'shipped log lines', time)
    expect(clock.now() - t0).toBeGreaterThanOrEqual(2000)
  })

  test('a step back of its wall clock during a heartbeat does not put off the next one by the step (fake clock)', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const { clock, time } = startAgent(leader.url, dir)
    // NTP steps the fellow's clock an hour back while its first heartbeat is on the wire.
    leader.state.duringHeartbeat = () => {
      leader.state.duringHeartbeat = () => {}
      clock.set(clock.now() - 3_600_000)
    }
    await until(() => leader.state.heartbeats.length >= 1, 'a heartbeat')
    const t0 = clock.monotonic()
    await until(() => leader.state.heartbeats.length >= 2, 'the next heartbeat, one interval later', time)
    expect(clock.monotonic() - t0).toBeLessThanOrEqual(1250)
  })

  test('a token revoked while running: heartbeat 401 -> re-register with the join token, keeping the fellow_id', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const { time } = startAgent(leader.url, dir)
    await until(() => leader.state.heartbeats.length >= 1, 'a heartbeat')
    const old = leader.state.token
    leader.state.token = 'svc_node_revoked-by-someone-else'
    await until(() => leader.state.registrations.length === 3, 're-registration', time)
    // First its (revoked) node token, then the join token with the same fellow_id.
    expect(leader.state.registrations.slice(1).map((r) => [r.bearer, r.fellow_id])).toEqual([[old, FELLOW], [JOIN, FELLOW]])
    await until(() => saved(dir).node_token === leader.state.token, 'the new token saved')
    expect(saved(dir).fellow_id).toBe(FELLOW)
    // ...and the signal socket is reopened with the new token.
    await until(() => leader.state.sockets.length === 2, 'a new socket')
    const n = leader.state.heartbeats.length
    await until(() => leader.state.heartbeats.length > n, 'heartbeats with the new token', time)
    expect(leader.state.heartbeats.at(-1)!.bearer).toBe(leader.state.token)
  })

  test('removed meanwhile: the join token makes a new fellow, and the log says so (it said "join token, same fellow_id")', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const { time, lines } = startAgent(leader.url, dir)
    await until(() => leader.state.heartbeats.length >= 1, 'a heartbeat')
    leader.state.token = 'svc_node_removed'
    leader.state.forgotten = true
    await until(() => saved(dir).fellow_id !== FELLOW, 'the new identity saved', time)
    const registered = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'registered')
    expect(registered.at(-1)).toMatchObject({ fellow_id: '01a2b3c4-0000-7000-8000-0000000f0e11', how: `join token, as a new fellow (the leader no longer knew ${FELLOW})`, reused_identity: false })
  })

  test('a restart re-uses the saved identity: it re-registers with its node token and the same fellow_id', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const first = startAgent(leader.url, dir)
    await until(() => existsSync(join(dir, 'fellow.json')), 'registration')
    const token = saved(dir).node_token
    first.agent.stop('SIGTERM')
    expect(await first.exited).toBe(0)
    startAgent(leader.url, dir)
    await until(() => leader.state.registrations.length === 2, 'the second registration')
    expect(leader.state.registrations[1]).toMatchObject({ bearer: token, fellow_id: FELLOW })
  })

  test('signals in a heartbeat response are handled: PURGE drops checkpoints, UPDATE says there is no self-update', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    writeCheckpoint(dir, { job_id: 'old-job', stage: 0, stages: 1, step: 5, ts: '' }, Uint8Array.of(1))
    const { lines, time } = startAgent(leader.url, dir)
    await until(() => leader.state.heartbeats.length >= 1, 'a heartbeat')
    const ts = new Date().toISOString()
    leader.state.pending.push({ id: 'u1', signal: 'UPDATE', payload: { version: '9.9.9' }, ts }, { id: 'p1', signal: 'PURGE', ts })
    await until(() => !existsSync(join(dir, 'checkpoints')), 'the purge (in the next heartbeat response)', time)
    expect(lines.some((l) => l.includes('cannot update itself') && l.includes('9.9.9'))).toBe(true)
  })

  test('eviction by a newer agent with the same fellow_id ends run() cleanly, without reconnecting', async () => {
    const leader = fakeLeader()
    const dir = mkdtempSync(join(tmpdir(), 'agent-'))
    const { exited, lines } = startAgent(leader.url, dir)
    await until(() => leader.state.sockets.length === 1, 'the signal socket')
    leader.state.sockets[0]!.close(4409, 'replaced by a newer connection of this fellow')
    expect(await exited).toBe(0)
    expect(lines.some((l) => l.includes('evicted'))).toBe(true)
    expect(leader.state.sockets).toHaveLength(1)
    // The fellow_id is another agent's now: no goodbye on its behalf.
    expect(leader.state.goodbyes).toEqual([])
  })

  test('stopped by its operator (SIGTERM) it says goodbye with its node token; a plain stop does not', async () => {
    const leader = fakeLeader()
    const { agent, exited } = startAgent(leader.url, mkdtempSync(join(tmpdir(), 'agent-')))
    await until(() => leader.state.heartbeats.length >= 1, 'a heartbeat')
    agent.shutdown('SIGTERM')
    expect(await exited).toBe(0)
    expect(leader.state.goodbyes).toEqual([leader.state.token])

    const other = fakeLeader()
    const second = startAgent(other.url, mkdtempSync(join(tmpdir(), 'agent-')))
    await until(() => other.state.heartbeats.length >= 1, 'a heartbeat')
    second.agent.stop('test over')
    expect(await second.exited).toBe(0)
    expect(other.state.goodbyes).toEqual([])
  })

  /** What an agent whose registration a stand-in leader refuses with `problem` logs as its hint. */
  async function refusalHint(problem: { status: number; title: string; code: string; detail: string }): Promise<string | undefined> {
    const leader = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (req) =>
        new URL(req.url).pathname === '/api/v1/workers/register'
          ? Response.json({ type: 'about:blank', ...problem }, { status: problem.status, headers: { 'content-type': 'application/problem+json' } })
          : Response.json({ status: 'ok' }),
    })
    cleanups.push(() => leader.stop(true))
    const { exited, lines } = startAgent(`http://127.0.0.1:${leader.port}`, mkdtempSync(join(tmpdir(), 'agent-')))
    expect(await exited).toBe(1)
    return lines.map((l) => JSON.parse(l) as { msg: string; hint?: string }).find((l) => l.msg === 'registration refused')?.hint
  }

  test('a registration refused for what the agent sent (422) says so, not "check the join token"', async () => {
    const hint = await refusalHint({ status: 422, title: 'Unprocessable', code: 'validation_failed', detail: 'body /hostname: must be a host name' })
    expect(hint).toBe('the leader refused what this agent sent (see the error): fix that setting')
  })

  test('a registration refused 421 (a host name the leader does not answer to) says so, not "check the join token"', async () => {
    const hint = await refusalHint({ status: 421, title: 'Misdirected Request', code: 'misdirected_request', detail: 'This leader does not answer to the name "gpu-box"' })
    expect(hint).toContain('SVC_ALLOWED_HOSTS')
  })
})
