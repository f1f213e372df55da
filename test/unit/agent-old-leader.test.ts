// A newer agent on an older leader. The leader's bodies are closed (additionalProperties: false),
// so a leader from before a heartbeat field refuses every heartbeat that carries it (422 "Property
// 'engines' should not be provided"): the machine showed stale for good, its jobs stayed queued,
// and nothing said the leader was older. The agent now leaves out, for that leader, what it names
// as unknown, and says once which features that turns off.
import { afterEach, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent } from '../../src/agent/agent'
import { LogBuffer, agentLogger } from '../../src/agent/logship'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'
import { freeBase } from '../helpers/listen'

/** A stand-in leader on a free port. */
const serveStandIn = (fetch: (req: Request) => Response | Promise<Response>, websocket?: Parameters<typeof Bun.serve>[0]['websocket']) =>
  Bun.serve({ hostname: '127.0.0.1', port: 0, fetch, ...(websocket ? { websocket } : {}) } as Parameters<typeof Bun.serve>[0])

const JOIN = 'svc_join_' + 'j'.repeat(43)
const FELLOW = '01a2b3c4-0000-7000-8000-00000000abcd'
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})



const BASE_FIELDS = ['fellow_id', 'status', 'job_id', 'step', 'loss', 'bytes_sent', 'bytes_received', 'hardware']

/**
 * A leader of an older release: it takes only the heartbeat fields in `takes` and refuses any other
 * as its validation did then (Elysia names the first unknown property, with TypeBox's words).
 */
function olderLeader(takes: string[], version: string | null = '0.1.0+0ldc0de') {
  const s = {
    takes: new Set([...BASE_FIELDS, ...takes]),
    token: '',
    registrations: 0,
    accepted: [] as Record<string, unknown>[],
    refused: 0,
    /** Refuse this field's value (a 422 naming a path inside it), not the field. */
    badValue: null as string | null,
    /** Registration fields it does not take (a leader from before agent_version). */
    registerRefuses: [] as string[],
    /** Heartbeats answered by a proxy's own 502 page (the leader restarting behind it). */
    proxyPages: 0,
    registered: [] as Record<string, unknown>[],
  }
  const server = serveStandIn(async (req) => {
    const path = new URL(req.url).pathname
    const bearer = req.headers.get('authorization')?.replace(/^Bearer /, '') ?? null
    if (path === '/api/v1/health') return Response.json(version ? { status: 'ok', version } : { status: 'ok' })
    if (path === '/api/v1/workers/register') {
      const body = (await req.json()) as Record<string, unknown>
      const unknown = s.registerRefuses.find((k) => k in body)
      if (unknown) {
        const message = `Property '${unknown}' should not be provided`
        return Response.json({ type: 'about:blank', title: 'Validation Failed', status: 422, detail: `body /${unknown}: ${message}`, code: 'validation_failed', errors: [{ path: `/${unknown}`, message }] }, { status: 422 })
      }
      s.registered.push(body)
      s.token = `svc_node_${++s.registrations}`
      return Response.json({ fellow_id: FELLOW, node_token: s.token, pool_id: 'p1', heartbeat_interval_s: 1, signals_url: `ws://leader.example/ws/signals/${FELLOW}` }, { status: 201 })
    }
    if (bearer !== s.token) return Response.json({ code: 'unauthorized' }, { status: 401 })
    if (path === '/api/v1/workers/heartbeat') {
      const body = (await req.json()) as Record<string, unknown>
      if (s.proxyPages > 0) {
        s.proxyPages--
        return new Response('<html><body><h1>502 Bad Gateway</h1>nginx</body></html>', { status: 502, headers: { 'content-type': 'text/html' } })
      }
      if (s.badValue) {
        s.refused++
        const at = `/${s.badValue}/0`
        return Response.json({ type: 'about:blank', title: 'Validation Failed', status: 422, detail: `body ${at}: must be a model name`, code: 'validation_failed', errors: [{ path: at, message: 'must be a model name' }] }, { status: 422 })
      }
      const unknown = Object.keys(body).find((k) => !s.takes.has(k))
      if (unknown) {
        s.refused++
        const message = `Property '${unknown}' should not be provided`
        return Response.json(
          { type: 'about:blank', title: 'Validation Failed', status: 422, detail: `body /${unknown}: ${message}`, code: 'validation_failed', errors: [{ path: `/${unknown}`, message }] },
          { status: 422, headers: { 'content-type': 'application/problem+json' } },
        )
      }
      s.accepted.push(body)
      return Response.json({ ok: true, next_heartbeat_s: 1 })
    }
    // No signal socket (its refusal is another test's), no inference transport.
    if (path.startsWith('/ws/')) return new Response(null, { status: 404 })
    return new Response(null, { status: 204 })
  })
  cleanups.push(() => server.stop(true))
  return { s, url: `http://127.0.0.1:${server.port}` }
}

function startAgent(leaderUrl: string) {
  const lines: string[] = []
  const logs = new LogBuffer()
  const clock = new FakeClock()
  const agent = new Agent({
    leaderUrl,
    joinToken: JOIN,
    stateDir: mkdtempSync(join(tmpdir(), 'agent-')),
    hostname: 'unit',
    advertiseHost: '127.0.0.1',
    listenHost: '127.0.0.1',
    p2pPortBase: freeBase(),
    once: false,
    log: agentLogger('info', logs, (l) => lines.push(l)),
    logs,
    clock,
    runners: [{ name: 'trainer', command: ['true'], env: {}, stopGraceS: 1 }],
  })
  const exited = agent.run()
  cleanups.push(async () => {
    agent.stop('test over')
    await exited
  })
  const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  return { lines, logged, clock, time: { tick: () => clock.advance(250) } }
}

const olderWarnings = (logged: Record<string, unknown>[]) => logged.filter((l) => String(l.msg).includes('older than this agent'))

describe('a newer agent on an older leader', () => {
  test('a leader from before engines in heartbeats: heartbeats go through without them, and one warning says the leader is older and what is off', async () => {
    const leader = olderLeader(['servables', 'capacity', 'runners'])
    const { logged, time } = startAgent(leader.url)
    await until(() => leader.s.accepted.length >= 4, 'heartbeats taken by the older leader', { ...time, timeoutMs: 15_000 })
    for (const hb of leader.s.accepted) {
      expect(hb.engines).toBeUndefined()
      expect(hb).toMatchObject({ status: 'idle', servables: ['tiny-llm'], runners: expect.arrayContaining(['mlp', 'trainer']) })
    }
    // Refused once, then remembered: not once per heartbeat.
    expect(leader.s.refused).toBe(1)
    const said = olderWarnings(logged())
    expect(said).toHaveLength(1)
    expect(said[0]).toMatchObject({ level: 'warn', leader_version: '0.1.0+0ldc0de', left_out: ['engines'] })
    expect(String(said[0]!.msg)).toContain('engines')
    expect(String(said[0]!.msg)).toContain('upgrade the leader')
    expect(logged().filter((l) => l.msg === 'heartbeat failed')).toEqual([])
  })

  test('an older leader still (servables only): engines, runners and capacity are all left out, named in one warning', async () => {
    const leader = olderLeader(['servables'], null)
    const { logged, time } = startAgent(leader.url)
    await until(() => leader.s.accepted.length >= 3, 'heartbeats taken by the older leader', { ...time, timeoutMs: 15_000 })
    for (const hb of leader.s.accepted) expect(Object.keys(hb).sort()).toEqual(['bytes_received', 'bytes_sent', 'hardware', 'job_id', 'servables', 'status'])
    const said = olderWarnings(logged())
    expect(said).toHaveLength(1)
    expect([...(said[0]!.left_out as string[])].sort()).toEqual(['capacity', 'engines', 'runners'])
    expect(said[0]!.leader_version).toBeNull()
    expect(String(said[0]!.features_off)).toContain('the runners declared here (--runner, [runners]) are not offered')
  })

  test('a leader from before agent_version in registrations: the agent registers without it (it stopped with "fix that setting") and says so once', async () => {
    const leader = olderLeader(['servables', 'capacity', 'runners', 'engines'])
    leader.s.registerRefuses = ['agent_version']
    const { logged, time } = startAgent(leader.url)
    await until(() => leader.s.accepted.length >= 1, 'a heartbeat after registering', { ...time, timeoutMs: 15_000 })
    expect(leader.s.registered[0]).toMatchObject({ hostname: 'unit' })
    expect(leader.s.registered[0]!.agent_version).toBeUndefined()
    const said = olderWarnings(logged())
    expect(said).toHaveLength(1)
    expect(said[0]).toMatchObject({ left_out: ['agent_version'] })
    expect(String(said[0]!.msg)).toContain('in registration')
  })

  test('remembered until it registers again: a leader upgraded meanwhile gets them again', async () => {
    const leader = olderLeader(['servables', 'capacity', 'runners'])
    const { time } = startAgent(leader.url)
    await until(() => leader.s.accepted.length >= 2, 'heartbeats without engines', { ...time, timeoutMs: 15_000 })
    // The upgrade: it takes engines now, and the agent's token is gone (it registers again).
    leader.s.takes.add('engines')
    leader.s.token = 'svc_node_revoked'
    await until(() => leader.s.accepted.some((hb) => hb.engines !== undefined), 'a heartbeat with engines after registering again', { ...time, timeoutMs: 15_000 })
    expect(leader.s.registrations).toBeGreaterThanOrEqual(2)
  })

  test('upgraded in place (the node token kept, the restart between two heartbeats): the fields are offered again within LEFT_OUT_RETRY_MS', async () => {
    const leader = olderLeader(['capacity', 'runners', 'engines'])
    const { clock } = startAgent(leader.url)
    await until(() => leader.s.accepted.length >= 2, 'heartbeats without servables', { tick: () => clock.advance(250), timeoutMs: 15_000 })
    expect(leader.s.accepted.every((hb) => hb.servables === undefined)).toBe(true)
    leader.s.takes.add('servables')
    await until(() => leader.s.accepted.some((hb) => hb.servables !== undefined), 'a heartbeat with servables', { tick: () => clock.advance(30_000), timeoutMs: 15_000 })
    expect(leader.s.registrations).toBe(1)
  })

  test("behind a proxy: its 502 pages while the leader restarts count as losing it, and the fields are offered again at once", async () => {
    const leader = olderLeader(['servables', 'capacity', 'runners'])
    const { clock } = startAgent(leader.url)
    const time = { tick: () => clock.advance(250), timeoutMs: 15_000 }
    await until(() => leader.s.accepted.length >= 2, 'heartbeats without engines', time)
    leader.s.takes.add('engines')
    leader.s.proxyPages = 2
    await until(() => leader.s.accepted.some((hb) => hb.engines !== undefined), 'a heartbeat with engines after the restart', time)
    expect(leader.s.registrations).toBe(1)
  })

  test('a 422 for a value (not an unknown field) leaves nothing out and says nothing of an older leader: the heartbeat failed, as before', async () => {
    const leader = olderLeader(['servables', 'capacity', 'runners', 'engines'])
    leader.s.badValue = 'servables'
    const { logged, time } = startAgent(leader.url)
    await until(() => leader.s.refused >= 3, 'refused heartbeats', time)
    leader.s.badValue = null
    await until(() => leader.s.accepted.length >= 1, 'a heartbeat taken', time)
    expect(leader.s.accepted[0]).toMatchObject({ servables: ['tiny-llm'], engines: [{ name: 'builtin', model: 'tiny-llm', healthy: true }] })
    expect(olderWarnings(logged())).toEqual([])
    expect(logged().filter((l) => l.msg === 'heartbeat failed')).toHaveLength(1)
  })
})
