// Request bodies are read only for callers the route admits, and the bytes being read at once are
// bounded (issue 26, item 1: anonymous half-sent 65 MiB relay pushes held 120 s took the leader
// from 60 to 540 MiB with 8 connections).
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { encodeFrames } from '../../src/wire/frames'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

/** A body that never ends, counting how often the server asked it for bytes. */
function stalledBody(first: Uint8Array = new Uint8Array(0)) {
  const state = { pulls: 0, finish: (_rest: Uint8Array) => {} }
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        state.finish = (rest) => {
          controller.enqueue(rest)
          controller.close()
        }
      },
      pull(controller) {
        if (state.pulls++ === 0 && first.byteLength > 0) controller.enqueue(first)
        return new Promise(() => {}) // and then nothing more, until finish()
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, state }
}

function push(h: Harness, jobId: string, body: ReadableStream<Uint8Array> | Uint8Array, headers: Record<string, string>) {
  return h.app.handle(
    new Request(`http://leader.test/api/v1/relay/${jobId}/activations/push`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/octet-stream', ...headers },
      duplex: 'half',
    }),
  )
}

async function twoStageJob(env: Record<string, string> = {}) {
  const h = makeHarness(env)
  all.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const A = sessionClient(h, admin.id)
  const pool = (await A.post('/api/v1/admin/pools', { name: 'Lab', visibility: 'private' })).body
  const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
  const nodes: { fellow_id: string; node_token: string }[] = []
  for (let i = 0; i < 2; i++) {
    const r = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: `gpu-${i}` })).body
    await h.client({ bearer: r.node_token }).post('/api/v1/workers/heartbeat', {
      status: 'idle',
      hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 40_000, utilization_pct: 0 }] },
    })
    nodes.push(r)
  }
  const job = (await A.post('/api/v1/jobs', { name: 'relay', pool_id: pool.id, stages: 2 })).body
  const stage0 = nodes.find((n) => n.fellow_id === job.assignments[0].fellow_id)!
  return { h, job, stage0 }
}

describe('request bodies', () => {
  test('an anonymous 60 MiB relay push is refused with 401 before a byte of its body is read', async () => {
    const { h, job } = await twoStageJob()
    const { stream, state } = stalledBody(new Uint8Array(1024))
    const res = await push(h, job.id, stream, { 'content-length': String(60 * 1024 * 1024) })
    expect(res.status).toBe(401)
    expect(state.pulls).toBe(0)
  })

  test('a wrong node token is refused before the body is read, and so is a session without its CSRF header', async () => {
    const { h, job } = await twoStageJob()
    const wrong = stalledBody(new Uint8Array(1024))
    const res = await push(h, job.id, wrong.stream, { 'content-length': String(1024 * 1024), authorization: 'Bearer svc_node_wrong' })
    expect(res.status).toBe(401)
    expect(wrong.state.pulls).toBe(0)

    const user = await seedUser(h, 'carol@example.com')
    const cookie = [...sessionClient(h, user.id).cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    const json = stalledBody(new TextEncoder().encode('{"name":'))
    const noCsrf = await h.app.handle(
      new Request('http://leader.test/api/v1/pools', {
        method: 'POST',
        body: json.stream,
        headers: { 'content-type': 'application/json', 'content-length': '100000', cookie },
          duplex: 'half',
      }),
    )
    expect(noCsrf.status).toBe(403)
    expect(json.state.pulls).toBe(0)
  })

  test('past SVC_MAX_INFLIGHT_BODY_BYTES a push answers 503 with Retry-After at once; the budget comes back when the body is read', async () => {
    const frameCap = 1024
    const maxPush = frameCap + 1024 * 1024 // the binary body limit: one frame cap plus framing
    const { h, job, stage0 } = await twoStageJob({ SVC_RELAY_MAX_FRAME_BYTES: String(frameCap), SVC_MAX_INFLIGHT_BODY_BYTES: String(maxPush) })
    const auth = { authorization: `Bearer ${stage0.node_token}` }
    const good = encodeFrames([{ meta: { step: 1 }, data: new Uint8Array([1, 2, 3]) }])

    // A fellow's push that declares the whole budget and then stalls.
    const slow = stalledBody(good.subarray(0, 4))
    const pending = push(h, job.id, slow.stream, { ...auth, 'content-length': String(good.byteLength + maxPush - good.byteLength) })
    await Bun.sleep(0) // let the server take the budget and start reading
    expect(slow.state.pulls).toBeGreaterThan(0)

    const refused = await push(h, job.id, good, auth)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(((await refused.json()) as { code: string }).code).toBe('service_unavailable')

    // The stalled body ends (short of its declared length: this in-process request can lie); its reservation is released.
    slow.state.finish(good.subarray(4))
    await pending
    const accepted = await push(h, job.id, good, auth)
    expect(accepted.status).toBe(202)
  })
})
