import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { listen, openSocket, rawUpgrade } from '../helpers/listen'
import { until } from '../helpers/until'
import { CLOSE_REPLACED, CLOSE_REVOKED } from '../../src/fellows/signals'

const h: Harness = makeHarness()
const server = listen(h)
afterAll(async () => {
  await server.stop()
  h.close()
})

const alice = await seedUser(h, 'alice@example.com')
const a = sessionClient(h, alice.id)
const pool = (await a.post('/api/v1/pools', { name: 'WS' })).body
async function registerFellow(hostname: string) {
  const token = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
  return (await h.client({ bearer: token }).post('/api/v1/workers/register', { hostname })).body as { fellow_id: string; node_token: string; signals_url: string }
}
const f1 = await registerFellow('one')
const f2 = await registerFellow('two')
const wsUrl = (id: string) => `ws://127.0.0.1:${server.port}/ws/signals/${id}`

describe('signal WebSocket handshake', () => {
  test('refused with HTTP 403 on the upgrade: no token, a garbage token, another fellow\'s token, a user token', async () => {
    expect(await rawUpgrade(server.port, `/ws/signals/${f1.fellow_id}`)).toBe(403)
    expect(await rawUpgrade(server.port, `/ws/signals/${f1.fellow_id}`, { Authorization: 'Bearer svc_node_garbage' })).toBe(403)
    expect(await rawUpgrade(server.port, `/ws/signals/${f1.fellow_id}`, { Authorization: `Bearer ${f2.node_token}` })).toBe(403)
    expect(await rawUpgrade(server.port, `/ws/signals/${f1.fellow_id}`, { Cookie: `svc_session=${a.cookies.get('svc_session')}` })).toBe(403)
    expect(await rawUpgrade(server.port, `/ws/signals/${f1.fellow_id}`, { Authorization: `Bearer ${f1.node_token}` })).toBe(101)
  })

  test('Bun\'s router takes the handshake (counted as a 101 of class node); what it leaves, Elysia answers as for any route', async () => {
    const upgrades = () => h.services.counters.http.get('node 101') ?? 0
    const before = upgrades()
    expect(await rawUpgrade(server.port, `/ws/signals/${f1.fellow_id}?token=${f1.node_token}`)).toBe(101)
    expect(upgrades()).toBe(before + 1)
    // Off the fast path: a fellow id the params schema refuses (422 problem), a plain GET (400),
    // a refused credential (403), and none of them counted as an upgrade.
    const asUpgrade = { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' }
    const bad = await fetch(`http://127.0.0.1:${server.port}/ws/signals/not-a-uuid`, { headers: { ...asUpgrade, authorization: `Bearer ${f1.node_token}` } })
    expect([bad.status, bad.headers.get('content-type')]).toEqual([422, 'application/problem+json'])
    expect(((await bad.json()) as { code: string }).code).toBe('validation_failed')
    const plain = await fetch(`http://127.0.0.1:${server.port}/ws/signals/${f1.fellow_id}`, { headers: { authorization: `Bearer ${f1.node_token}` } })
    expect([plain.status, ((await plain.json()) as { code: string }).code]).toEqual([400, 'bad_request'])
    expect(await rawUpgrade(server.port, `/ws/signals/${f1.fellow_id}`, { Authorization: `Bearer ${f2.node_token}` })).toBe(403)
    expect(upgrades()).toBe(before + 1)
    expect(h.services.counters.http.get('node 403')).toBeGreaterThan(0)
  })

  test('signals reach the connected fellow as JSON text frames; queued ones arrive on connect', async () => {
    await a.post('/api/v1/workers/update', { fellow_id: f2.fellow_id, version: '9' })
    const s = await openSocket(wsUrl(f2.fellow_id), { Authorization: `Bearer ${f2.node_token}` })
    await until(() => s.messages.length === 1, 'the queued UPDATE')
    expect(s.messages[0]).toMatchObject({ signal: 'UPDATE', payload: { version: '9' } })
    await a.post('/api/v1/workers/update', { fellow_id: f2.fellow_id })
    await until(() => s.messages.length === 2, 'a live UPDATE')
    const m = s.messages[1] as { id: string; ts: string }
    expect(typeof m.id).toBe('string')
    expect(Number.isNaN(Date.parse(m.ts))).toBe(false)
    s.ws.close()
  })

  test('a second connection with the fellow\'s own token replaces the first (closed with 4409); ?token= works too', async () => {
    const first = await openSocket(wsUrl(f1.fellow_id), { Authorization: `Bearer ${f1.node_token}` })
    const second = await openSocket(`${wsUrl(f1.fellow_id)}?token=${f1.node_token}`)
    const closed = await first.closed
    expect(closed.code).toBe(CLOSE_REPLACED)
    await a.post('/api/v1/workers/update', { fellow_id: f1.fellow_id })
    await until(() => second.messages.length === 1, 'signal on the newer socket')
    expect(first.messages).toHaveLength(0)
    second.ws.close()
  })
})

describe('signal WebSocket close', () => {
  test('a signal sent after the fellow\'s socket closed waits for its next connection instead of going to the dead socket', async () => {
    const s = await openSocket(wsUrl(f2.fellow_id), { Authorization: `Bearer ${f2.node_token}` })
    s.ws.close()
    await s.closed
    await until(() => !h.services.fellows.signals.connected(f2.fellow_id), 'the hub to drop the closed socket')
    await a.post('/api/v1/workers/update', { fellow_id: f2.fellow_id, version: 'after-close' })
    const again = await openSocket(wsUrl(f2.fellow_id), { Authorization: `Bearer ${f2.node_token}` })
    await until(() => again.messages.length === 1, 'the UPDATE queued while away')
    expect(again.messages[0]).toMatchObject({ signal: 'UPDATE', payload: { version: 'after-close' } })
    again.ws.close()
  })
})

describe('a message from the fellow', () => {
  test('closes its signal socket with 1003 (the socket carries signals one way); it connects again as before', async () => {
    const s = await openSocket(wsUrl(f1.fellow_id), { Authorization: `Bearer ${f1.node_token}` })
    s.ws.send(JSON.stringify({ hello: 'leader' }))
    const closed = await until(() => Promise.race([s.closed, Bun.sleep(100).then(() => null)]), 'the socket closed')
    expect(closed.code).toBe(1003)
    expect(closed.reason).toContain('takes no messages')
    const again = await openSocket(wsUrl(f1.fellow_id), { Authorization: `Bearer ${f1.node_token}` })
    await until(() => h.services.fellows.signals.connected(f1.fellow_id), 'the new socket attached')
    again.ws.close()
    await again.closed
  })
})

describe('a socket whose credential dies', () => {
  test('one rule on the socket path: a plain GET with a missing or bad token is 403 like the upgrade, with no stray close_code', async () => {
    for (const headers of [{}, { authorization: 'Bearer svc_node_garbage' }] as Record<string, string>[]) {
      const res = await fetch(`http://127.0.0.1:${server.port}/ws/signals/${f1.fellow_id}`, { headers })
      expect(res.status).toBe(403)
      const body = (await res.json()) as Record<string, unknown>
      expect(body.code).toBe('forbidden')
      expect('close_code' in body).toBe(false)
    }
  })

  test('is closed at once with 4401 after its STOP when the fellow is released, and when it is deleted', async () => {
    for (const [how, f, act] of [
      ['released', f2, (id: string) => a.post('/api/v1/workers/release', { fellow_id: id })],
      ['removed', f1, (id: string) => a.delete(`/api/v1/workers/${id}`)],
    ] as const) {
      const s = await openSocket(wsUrl(f.fellow_id), { Authorization: `Bearer ${f.node_token}` })
      expect((await act(f.fellow_id)).status).toBeLessThan(300)
      const closed = await s.closed
      expect([how, closed.code, closed.reason]).toEqual([how, CLOSE_REVOKED, how])
      expect(s.messages).toEqual([expect.objectContaining({ signal: 'STOP', payload: { reason: how } })])
      expect(h.services.fellows.signals.connected(f.fellow_id)).toBe(false)
      expect(await rawUpgrade(server.port, `/ws/signals/${f.fellow_id}`, { Authorization: `Bearer ${f.node_token}` })).toBe(403)
    }
  })
})
