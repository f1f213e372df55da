// A leader behind a path of its own (SVC_BASE_URL=https://example.org/ws/gpu, a proxy stripping it):
// every URL the agent builds from the leader's answers must keep that path once. It was cut at the
// first /ws/ or /api/v1/, so a path holding such a segment was kept and added again
// (ws://.../ws/gpu/ws/gpu/ws/signals/<id>), the socket was refused 403, and the agent took that for
// a revoked node token: it re-registered, and so rotated its token, every 10 s for good.
import { afterEach, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent } from '../../src/agent/agent'
import { LeaderClient } from '../../src/agent/client'
import { LogBuffer, agentLogger } from '../../src/agent/logship'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'
import { freeBase } from '../helpers/listen'

/** A stand-in leader on a free port. */
const serveStandIn = (fetch: (req: Request) => Response | Promise<Response>, websocket?: Parameters<typeof Bun.serve>[0]['websocket']) =>
  Bun.serve({ hostname: '127.0.0.1', port: 0, fetch, ...(websocket ? { websocket } : {}) } as Parameters<typeof Bun.serve>[0])

const PREFIXES = ['', '/svc', '/ws/gpu', '/svc/ws', '/api/v1/x', '/ws', '/x/api/v1x']
const JOB = '01a2b3c4-0000-7000-8000-00000000j0b1'
const FELLOW = '01a2b3c4-0000-7000-8000-00000000abcd'

describe('URLs from the leader under a base path', () => {
  for (const prefix of PREFIXES) {
    test(`prefix "${prefix || '(none)'}": signals_url, relay_url's push and pop, and the relay and inference sockets keep the --leader path once`, () => {
      const leader = `http://127.0.0.1:46617${prefix}`
      const c = new LeaderClient(leader, () => null)
      // What the leader hands out: SVC_BASE_URL (a public name) plus its route.
      const pub = `https://leader.public.example${prefix}`
      expect(c.rebase(`${pub.replace(/^http/, 'ws')}/ws/signals/${FELLOW}`, true)).toBe(`ws://127.0.0.1:46617${prefix}/ws/signals/${FELLOW}`)
      const relay = `${pub}/api/v1/relay/${JOB}`
      expect(c.rebase(`${relay}/activations/push`)).toBe(`${leader}/api/v1/relay/${JOB}/activations/push`)
      expect(c.rebase(`${relay}/gradients/pop?wait_ms=25000&max=64`)).toBe(`${leader}/api/v1/relay/${JOB}/gradients/pop?wait_ms=25000&max=64`)
      expect(c.relaySocketUrl(JOB)).toBe(`ws://127.0.0.1:46617${prefix}/ws/relay/${JOB}`)
      expect(c.inferSocketUrl(FELLOW)).toBe(`ws://127.0.0.1:46617${prefix}/ws/infer/${FELLOW}`)
    })
  }

  test('relay push and pop reach the leader at the path it answers under (a real request)', async () => {
    const seen: string[] = []
    const server = serveStandIn((req) => {
      seen.push(new URL(req.url).pathname)
      return new Response(null, { status: 204 })
    })
    try {
      const c = new LeaderClient(`http://127.0.0.1:${server.port}/ws/gpu`, () => 'svc_node_t')
      const relay = `https://leader.public.example/ws/gpu/api/v1/relay/${JOB}`
      await c.relayPush(relay, 'activations', Uint8Array.of(1))
      expect(await c.relayPop(relay, 'gradients', 10)).toEqual([])
      expect(seen).toEqual([`/ws/gpu/api/v1/relay/${JOB}/activations/push`, `/ws/gpu/api/v1/relay/${JOB}/gradients/pop`])
    } finally {
      server.stop(true)
    }
  })
})

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})



describe('a signal socket refused while the node token works', () => {
  test('is not taken for a revoked token: no re-registration (no new token) however long it lasts, one warning naming the refused URL, heartbeats go on', async () => {
    const s = { registrations: 0, heartbeats: [] as (string | null)[], upgrades: [] as string[], token: '' }
    // Like a proxy that refuses the socket's path (403) in front of a leader that takes the token.
    const server = serveStandIn(async (req) => {
      const path = new URL(req.url).pathname
      const bearer = req.headers.get('authorization')?.replace(/^Bearer /, '') ?? null
      if (path === '/api/v1/health') return Response.json({ status: 'ok' })
      if (path === '/api/v1/workers/register') {
        s.token = `svc_node_${++s.registrations}`
        return Response.json({ fellow_id: FELLOW, node_token: s.token, pool_id: 'p1', heartbeat_interval_s: 1, signals_url: `ws://leader.public.example/ws/signals/${FELLOW}` }, { status: 201 })
      }
      if (bearer !== s.token) return Response.json({ code: 'unauthorized' }, { status: 401 })
      if (path.startsWith('/ws/')) {
        // The inference socket is refused too (the agent then polls over HTTP); only the signal socket's tries are counted.
        if (path.startsWith('/ws/signals/')) s.upgrades.push(path)
        return Response.json({ code: 'forbidden' }, { status: 403 })
      }
      if (path === '/api/v1/workers/heartbeat') {
        s.heartbeats.push(bearer)
        return Response.json({ ok: true, next_heartbeat_s: 1 })
      }
      if (path.startsWith('/api/v1/infer/requests/')) return new Response(null, { status: 204 })
      return new Response(null, { status: 204 })
    })
    cleanups.push(() => server.stop(true))
    const lines: string[] = []
    const logs = new LogBuffer()
    const clock = new FakeClock()
    const agent = new Agent({
      leaderUrl: `http://127.0.0.1:${server.port}`,
      joinToken: 'svc_join_' + 'j'.repeat(43),
      stateDir: mkdtempSync(join(tmpdir(), 'agent-')),
      hostname: 'unit',
      advertiseHost: '127.0.0.1',
      listenHost: '127.0.0.1',
      p2pPortBase: freeBase(),
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
    await until(() => s.upgrades.length >= 1 && s.heartbeats.length >= 1, 'a refused socket and a heartbeat')
    // Two minutes of the socket being refused: it tries again with its back-off, ever later.
    const start = clock.monotonic()
    await until(() => clock.monotonic() - start >= 120_000 && s.upgrades.length >= 5, 'two minutes of refused sockets', { tick: () => clock.advance(250), timeoutMs: 20_000, everyMs: 2 })
    expect(s.registrations).toBe(1)
    expect(lines.filter((l) => l.includes('node token refused'))).toEqual([])
    expect(new Set(s.heartbeats)).toEqual(new Set(['svc_node_1']))
    const said = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'signal socket refused although the node token works')
    expect(said).toHaveLength(1)
    expect(said[0]).toMatchObject({ level: 'warn', url: `ws://127.0.0.1:${server.port}/ws/signals/${FELLOW}`, status: 403 })
    // Backs off: not one handshake per quarter second.
    expect(s.upgrades.length).toBeLessThan(20)
  })
})
