import { afterEach, describe, expect, test } from 'bun:test'
import type { ServerWebSocket } from 'bun'
import { CLOSE_REPLACED, SignalChannel, handshakeStatus, parseSignal } from '../../src/agent/signals'
import { Backoff } from '../../src/agent/backoff'
import { silentLogger } from '../../src/log'
import type { Signal } from '../../src/wire/fellow'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'

const stops: (() => void)[] = []
afterEach(() => {
  for (const s of stops.splice(0)) s()
})

/** A leader stand-in: accepts `Bearer good`, refuses others with 403, and lets the test drive sockets. */
function fakeLeader() {
  const sockets: ServerWebSocket<unknown>[] = []
  let handshakes = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req, srv) {
      handshakes++
      if (req.headers.get('authorization') !== 'Bearer good') return new Response('forbidden', { status: 403 })
      return srv.upgrade(req) ? undefined : new Response('no', { status: 400 })
    },
    websocket: {
      open: (ws) => void sockets.push(ws),
      message() {},
    },
  })
  stops.push(() => server.stop(true))
  return { url: `ws://127.0.0.1:${server.port}/ws/signals/f1`, http: `http://127.0.0.1:${server.port}/`, sockets, handshakes: () => handshakes }
}

function channel(url: string, token: { v: string }) {
  const got: Signal[] = []
  const refused: (number | null)[] = []
  const evicted: string[] = []
  const clock = new FakeClock()
  const ch = new SignalChannel({
    url: () => url,
    token: () => token.v,
    onSignal: (s) => got.push(s),
    onRefused: (s) => refused.push(s),
    onEvicted: (r) => evicted.push(r),
    log: silentLogger,
    clock,
    // No jitter: the first reconnect waits exactly 500 ms.
    backoff: new Backoff({ baseMs: 500, maxMs: 30_000, random: () => 0 }),
  })
  stops.push(() => ch.close())
  return { ch, got, refused, evicted, clock }
}

const signal = (id: string, name = 'PAUSE') => JSON.stringify({ id, signal: name, job_id: 'j1', ts: new Date().toISOString() })

describe('signal channel', () => {
  test('a leader back (a heartbeat went through) ends the back-off wait: the socket connects now; one open or connecting is left be', async () => {
    const leader = fakeLeader()
    const { ch, clock } = channel(leader.url, { v: 'good' })
    ch.start()
    await until(() => leader.sockets.length === 1, 'the first connection')
    ch.leaderIsBack() // open: nothing to do
    leader.sockets[0]!.close(1001, 'leader restarting')
    await until(() => clock.pending === 1, 'the reconnect timer')
    // The clock does not move: without the word, the socket would wait its 500 ms (up to 30 s).
    ch.leaderIsBack()
    await until(() => leader.sockets.length === 2, 'connected again at once')
    expect(clock.pending).toBe(0)
    expect(leader.handshakes()).toBe(2)
  })

  test("behind a proxy, its 502 page for the handshake while the leader is down is no refusal: the leader back, the socket connects at once", async () => {
    let down = true
    const sockets: ServerWebSocket<unknown>[] = []
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (req, srv) => (down ? new Response('<html>502 Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } }) : srv.upgrade(req) ? undefined : new Response('no', { status: 400 })),
      websocket: { open: (ws) => void sockets.push(ws), message() {} },
    })
    stops.push(() => server.stop(true))
    const { ch, clock, refused } = channel(`ws://127.0.0.1:${server.port}/ws/signals/f1`, { v: 'good' })
    ch.start()
    await until(() => clock.pending === 1, 'the reconnect timer after the 502')
    down = false
    ch.leaderIsBack()
    await until(() => sockets.length === 1, 'connected at once, the back-off not waited out')
    expect(refused).toEqual([])
  })

  test('delivers signals, and reconnects with backoff when the leader drops the socket', async () => {
    const leader = fakeLeader()
    const { ch, got, clock } = channel(leader.url, { v: 'good' })
    ch.start()
    await until(() => leader.sockets.length === 1, 'the first connection')
    leader.sockets[0]!.send(signal('s1'))
    leader.sockets[0]!.send('not json')
    await until(() => got.length === 1, 'a signal')
    leader.sockets[0]!.close(1001, 'leader restarting')
    await until(() => clock.pending === 1, 'the reconnect timer')
    clock.advance(499)
    expect(clock.pending).toBe(1) // not yet: the backoff's 500 ms have not passed
    clock.advance(1)
    await until(() => leader.sockets.length === 2, 'a reconnection')
    leader.sockets[1]!.send(signal('s2', 'STOP'))
    await until(() => got.length === 2, 'a second signal')
    expect(got.map((s) => [s.id, s.signal])).toEqual([['s1', 'PAUSE'], ['s2', 'STOP']])
  })

  test('a refused handshake (403) is reported, so the agent can re-register', async () => {
    const leader = fakeLeader()
    const token = { v: 'revoked' }
    const { ch, refused } = channel(leader.url, token)
    ch.start()
    await until(() => refused.length >= 1, 'a refusal')
    expect(refused[0]).toBe(403)
    token.v = 'good' // what re-registration does
    ch.reconnectNow()
    await until(() => leader.sockets.length === 1, 'the socket with the new token')
    expect(ch.connected).toBe(true)
  })

  test('eviction (close 4409) stops the channel for good: no reconnect fights the newer agent', async () => {
    const leader = fakeLeader()
    const { ch, evicted, clock } = channel(leader.url, { v: 'good' })
    ch.start()
    await until(() => leader.sockets.length === 1, 'a connection')
    leader.sockets[0]!.close(CLOSE_REPLACED, 'replaced by a newer connection of this fellow')
    await until(() => evicted.length === 1, 'the eviction')
    expect(clock.pending).toBe(0) // no reconnect armed
    const before = leader.handshakes()
    clock.advance(60_000) // past any backoff
    await fetch(leader.http) // one round trip to the leader: a reconnect would have come first
    expect(leader.handshakes()).toBe(before + 1)
    expect(ch.connected).toBe(false)
  })
})

describe('signal parsing', () => {
  test('accepts the contract shape and refuses anything else', () => {
    expect(parseSignal(signal('a', 'RECONFIGURE'))?.signal).toBe('RECONFIGURE')
    expect(parseSignal(JSON.stringify({ id: 'a', signal: 'START', payload: { stage: 0 }, ts: 'x' }))?.payload).toEqual({ stage: 0 })
    for (const bad of ['', 'null', '[]', '{"id":"a","signal":"REBOOT"}', '{"signal":"STOP"}', '{"id":"a","signal":"STOP","payload":[1]}']) {
      expect(parseSignal(bad)).toBeNull()
    }
  })

  test('reads the HTTP status of a refused handshake from the error text', () => {
    expect(handshakeStatus("WebSocket connection to 'ws://x' failed: Expected 101 status code: 403")).toBe(403)
    expect(handshakeStatus('connection refused')).toBeNull()
  })
})
