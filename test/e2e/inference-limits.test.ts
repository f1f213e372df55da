// The built leader under what one fellow may throw at its inference transport: a failure here used
// to hang the leader for good (no answer, no SIGTERM), so each test asks the leader for its health
// with a deadline instead of waiting on it, and the leader is killed at the end whatever happened.
import { afterAll, expect, test } from 'bun:test'
import { startLeader, type Leader } from '../helpers/leader'
import { until } from '../helpers/until'

const leaders: Leader[] = []
afterAll(async () => {
  for (const l of leaders) await l.stop('SIGKILL')
})

/** The health answer's status within 5 s, or what came instead. */
async function health(url: string): Promise<number | string> {
  try {
    return (await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(5000) })).status
  } catch (e) {
    return `no answer: ${(e as Error).name}`
  }
}

test('65 inference sockets of one token-less fellow, each with credit: the leader still answers, the sockets past four are closed 1008, and SIGTERM stops it', async () => {
  const leader = await startLeader({ SVC_ALLOW_TOKENLESS_JOIN: '1' })
  leaders.push(leader)
  const reg = await fetch(`${leader.url}/api/v1/workers/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hostname: 'anon', gpus: [] }) })
  expect(reg.status).toBe(201)
  const f = (await reg.json()) as { fellow_id: string; node_token: string }
  const closes: { code: number; reason: string }[] = []
  let opened = 0
  const sockets = Array.from({ length: 65 }, () => {
    const ws = new WebSocket(`${leader.url.replace(/^http/, 'ws')}/ws/infer/${f.fellow_id}`, { headers: { authorization: `Bearer ${f.node_token}` } } as unknown as string[])
    ws.onopen = () => {
      opened++
      ws.send('{"t":"credit","n":1}')
    }
    ws.onclose = (e) => closes.push({ code: e.code, reason: e.reason })
    return ws
  })
  await until(() => opened + closes.length >= 65, 'every socket opened or closed', { timeoutMs: 10_000 })
  expect(await health(leader.url)).toBe(200)
  await until(() => closes.length >= 61, 'the sockets past four closed', { timeoutMs: 10_000 })
  expect(closes.length).toBe(61)
  expect(new Set(closes.map((c) => c.code))).toEqual(new Set([1008]))
  expect(closes[0]!.reason).toContain('holds 4 inference sockets')
  expect(await health(leader.url)).toBe(200)
  for (const ws of sockets) ws.close()
  expect(await Promise.race([leader.stop('SIGTERM'), Bun.sleep(10_000).then(() => 'still running after SIGTERM')])).toBe(0)
}, 60_000)
