// The relay's WebSocket data channel (/ws/relay/{job_id}) over a real socket: frames both ways
// with an answer per push, the same queues as the HTTP routes, refusal at the upgrade, a frame
// over the limit closing the socket with nothing queued, and a reader that does not read making
// the sender wait at the queue's cap instead of the leader's memory growing.
import { afterAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import type { Client, Harness } from '../helpers/harness'
import { rawUpgrade, servedPool } from '../helpers/listen'
import { until } from '../helpers/until'
import { decodeFrames, encodeFrames, type Frame } from '../../src/wire/frames'
import { CHANNEL_TAG, RELAY_CLOSE, type PushAck } from '../../src/wire/relay-socket'
import { LeaderClient } from '../../src/agent/client'
import { Link } from '../../src/agent/transport'
import { silentLogger } from '../../src/log'
import { systemClock } from '../../src/time'

const all: { h: Harness; stop(): Promise<void> }[] = []
afterAll(async () => {
  for (const x of all) {
    await x.stop()
    x.h.close()
  }
})

interface Fellow {
  fellow_id: string
  node_token: string
  c: Client
}

/** A pool of three fellows and a 2-stage job on two of them, served on a real port. */
async function pipeline(env: Record<string, string> = {}) {
  const { h, server, A, pool, join } = await servedPool(env)
  all.push({ h, stop: server.stop })
  const fellows: Fellow[] = []
  for (let i = 0; i < 3; i++) {
    const r = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: `gpu-${i}` })).body
    const c = h.client({ bearer: r.node_token })
    await c.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 40_960, utilization_pct: 0 }] } })
    h.clock.advance(1)
    fellows.push({ ...r, c })
  }
  const job = (await A.post('/api/v1/jobs', { name: 'relay', pool_id: pool.id, stages: 2 })).body
  const byId = (id: string) => fellows.find((f) => f.fellow_id === id)!
  const s0 = byId(job.assignments[0].fellow_id)
  const s1 = byId(job.assignments[1].fellow_id)
  const outsider = fellows.find((f) => f !== s0 && f !== s1)!
  return { h, server, A, job, s0, s1, outsider }
}

/** A client socket that collects what it receives: acks (text) and frame messages (binary). */
class RelayClient {
  acks: PushAck[] = []
  received: { tag: number; frames: Frame[] }[] = []
  closed: { code: number; reason: string } | null = null
  private ws: WebSocket

  constructor(url: string, token: string) {
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } } as unknown as string[])
    this.ws.binaryType = 'arraybuffer'
    this.ws.onmessage = (ev) => {
      if (typeof ev.data === 'string') this.acks.push(JSON.parse(ev.data) as PushAck)
      else {
        const bytes = new Uint8Array(ev.data as ArrayBuffer)
        this.received.push({ tag: bytes[0]!, frames: decodeFrames(bytes.subarray(1), { maxFrameBytes: 1 << 30 }) })
      }
    }
    this.ws.onclose = (ev) => (this.closed = { code: ev.code, reason: ev.reason })
  }

  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.ws.readyState === WebSocket.OPEN) return resolve()
      this.ws.onopen = () => resolve()
      this.ws.onerror = () => reject(new Error('the relay socket did not open'))
    })
  }

  push(channel: keyof typeof CHANNEL_TAG, frames: Frame[]): void {
    const body = encodeFrames(frames)
    const msg = new Uint8Array(body.byteLength + 1)
    msg[0] = CHANNEL_TAG[channel]
    msg.set(body, 1)
    this.ws.send(msg)
  }

  close(): void {
    this.ws.close()
  }
}

const wsUrl = (base: string, jobId: string) => `${base.replace(/^http/, 'ws')}/ws/relay/${jobId}`
const bin = { 'content-type': 'application/octet-stream' }

describe('the relay socket', () => {
  test('carries activations forward and gradients back, answering each push in order, and shares the queues with push/pop', async () => {
    const { server, job, s0, s1 } = await pipeline()
    // Queued over HTTP before the reader's socket exists: it gets them when it connects.
    expect((await s0.c.call('POST', `/api/v1/relay/${job.id}/activations/push`, encodeFrames([{ meta: { step: 0 }, data: new Uint8Array([1, 2, 3]) }]), bin)).status).toBe(202)
    const a = new RelayClient(wsUrl(server.url, job.id), s0.node_token)
    const b = new RelayClient(wsUrl(server.url, job.id), s1.node_token)
    await Promise.all([a.opened(), b.opened()])
    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 7) & 0xff)
    a.push('activations', [
      { meta: { step: 1, micro_batch: 0 }, data: big },
      { meta: { step: 1, micro_batch: 1 }, data: new Uint8Array(0) },
    ])
    a.push('activations', [{ meta: { step: 2 }, data: new Uint8Array([9]) }])
    await until(() => (b.received.flatMap((m) => m.frames).length >= 4 ? true : null), 'four frames at stage 1')
    expect(a.acks).toEqual([
      { ok: true, queued_frames: 2, depth_bytes: expect.any(Number) },
      { ok: true, queued_frames: 1, depth_bytes: expect.any(Number) },
    ])
    const got = b.received.flatMap((m) => m.frames.map((f) => ({ tag: m.tag, meta: f.meta, len: f.data.byteLength })))
    expect(got).toEqual([
      { tag: 0, meta: { step: 0 }, len: 3 },
      { tag: 0, meta: { step: 1, micro_batch: 0 }, len: big.byteLength },
      { tag: 0, meta: { step: 1, micro_batch: 1 }, len: 0 },
      { tag: 0, meta: { step: 2 }, len: 1 },
    ])
    expect(b.received.flatMap((m) => m.frames)[1]!.data).toEqual(big)

    // Gradients back over the socket; the last one is left for an HTTP pop (the queues are shared).
    b.close()
    await until(() => (b.closed ? true : null), 'the reader socket closed')
    const g = await s1.c.call('POST', `/api/v1/relay/${job.id}/gradients/push`, encodeFrames([{ meta: { step: 1 }, data: new Uint8Array([5]) }]), bin)
    expect(g.status).toBe(202)
    await until(() => (a.received.length >= 1 ? true : null), 'the gradient at stage 0')
    expect(a.received.map((m) => [m.tag, m.frames[0]!.meta])).toEqual([[CHANNEL_TAG.gradients, { step: 1 }]])
    // Stage 0 has no previous stage: its gradients are refused in the answer, not queued.
    a.push('gradients', [{ meta: {}, data: new Uint8Array([1]) }])
    await until(() => (a.acks.length === 3 ? true : null), 'the third answer')
    expect(a.acks[2]).toMatchObject({ ok: false, code: 'conflict' })
    a.close()
  })

  test('one socket a fellow and job: a second one replaces the first (closed 4409) and gets every frame (two took turns at them, the agent waited for resends)', async () => {
    const { server, job, s0, s1 } = await pipeline()
    const first = new RelayClient(wsUrl(server.url, job.id), s1.node_token)
    await first.opened()
    const second = new RelayClient(wsUrl(server.url, job.id), s1.node_token)
    await second.opened()
    await until(() => (first.closed ? true : null), 'the first socket closed')
    expect(first.closed).toEqual({ code: 4409, reason: 'replaced by a newer relay socket of this fellow for this job' })
    const sender = new RelayClient(wsUrl(server.url, job.id), s0.node_token)
    await sender.opened()
    for (let step = 0; step < 6; step++) sender.push('activations', [{ meta: { step }, data: new Uint8Array([step]) }])
    await until(() => (second.received.flatMap((m) => m.frames).length === 6 ? true : null), 'all six frames at the newer socket')
    expect(second.received.flatMap((m) => m.frames.map((f) => f.meta.step))).toEqual([0, 1, 2, 3, 4, 5])
    expect(first.received).toEqual([])
    // The sender's own socket is not touched by the reader's.
    expect(sender.closed).toBeNull()
    second.close()
    sender.close()
  })

  test('is refused at the upgrade (403) to a fellow not assigned to the job and without a token, like the signal socket', async () => {
    const { server, job, outsider } = await pipeline()
    expect(await rawUpgrade(server.port, `/ws/relay/${job.id}`, { authorization: `Bearer ${outsider.node_token}` })).toBe(403)
    expect(await rawUpgrade(server.port, `/ws/relay/${job.id}`)).toBe(403)
    expect(await rawUpgrade(server.port, '/ws/relay/not-a-uuid', { authorization: `Bearer ${outsider.node_token}` })).toBe(422)
  })

  test('a frame over SVC_RELAY_MAX_FRAME_BYTES closes the socket with 1009 and queues nothing; a text message with 1003', async () => {
    const { server, job, s0, s1 } = await pipeline({ SVC_RELAY_MAX_FRAME_BYTES: '1024' })
    const a = new RelayClient(wsUrl(server.url, job.id), s0.node_token)
    await a.opened()
    a.push('activations', [
      { meta: { n: 1 }, data: new Uint8Array(10) },
      { meta: { n: 2 }, data: new Uint8Array(2000) },
    ])
    await until(() => (a.closed ? true : null), 'the socket closed')
    expect(a.closed!.code).toBe(RELAY_CLOSE.tooBig)
    expect(a.closed!.reason).toContain('frame limit')
    // Neither frame of the message was queued (all or nothing).
    expect((await s1.c.call('GET', `/api/v1/relay/${job.id}/activations/pop`)).status).toBe(204)

    const t = new WebSocket(wsUrl(server.url, job.id), { headers: { authorization: `Bearer ${s0.node_token}` } } as unknown as string[])
    const closed = new Promise<number>((resolve) => (t.onclose = (ev) => resolve(ev.code)))
    t.onopen = () => t.send('{"frames": []}')
    expect(await closed).toBe(RELAY_CLOSE.unsupported)
  })

  test('a reader that does not read makes the sender wait at the queue cap; the leader holds the cap and one socket buffer, not more', async () => {
    const cap = 2 * 1024 * 1024
    const { h, server, job, s0, s1 } = await pipeline({ SVC_RELAY_MAX_QUEUE_BYTES: String(cap), SVC_RELAY_MAX_FRAME_BYTES: String(1024 * 1024) })
    // Stage 1's socket, opened by hand and then never read from: the kernel's buffers fill, then Bun's.
    const reader = connect(server.port, '127.0.0.1')
    await new Promise<void>((resolve) => reader.once('connect', () => resolve()))
    reader.write(
      [`GET /ws/relay/${job.id} HTTP/1.1`, `Host: 127.0.0.1:${server.port}`, 'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13', `Authorization: Bearer ${s1.node_token}`, '', ''].join('\r\n'),
    )
    const head = await new Promise<string>((resolve) => reader.once('data', (d) => resolve(d.toString('latin1'))))
    expect(head).toStartWith('HTTP/1.1 101')
    reader.pause()

    const a = new RelayClient(wsUrl(server.url, job.id), s0.node_token)
    await a.opened()
    const frame = { meta: { step: 1 }, data: new Uint8Array(1024 * 1024 - 64) }
    // A sender that keeps two pushes unanswered, like the agent, until the leader says full.
    let sent = 0
    while (!a.acks.some((x) => !x.ok)) {
      while (sent - a.acks.length < 2) {
        a.push('activations', [frame])
        sent++
      }
      await until(() => (a.acks.length > sent - 2 ? true : null), `the answer to push ${sent - 1}`)
      expect(sent).toBeLessThan(200) // ~1 MiB each: the leader must say full long before 200 MiB
    }
    const refused = a.acks.find((x) => !x.ok)!
    expect(refused).toMatchObject({ ok: false, code: 'rate_limited', retry_after_s: expect.any(Number) })
    // What the leader holds for the reader: the queue at most its cap.
    expect(h.services.relay.stats().queuedBytes).toBeLessThanOrEqual(cap)
    // The frames accepted = delivered into the socket's buffers + still queued; none was dropped.
    const accepted = a.acks.filter((x) => x.ok).length
    expect(accepted).toBeGreaterThan(cap / frame.data.byteLength)
    reader.destroy()
    a.close()
  })

  test("the agent's tunnel link sends and receives over the socket, never the HTTP routes, while the socket is open", async () => {
    const { server, job, s0, s1 } = await pipeline()
    const httpOnly = () => {
      throw new Error('the HTTP relay was used')
    }
    const linkFor = (f: Fellow, stage: number) => {
      const client = new LeaderClient(server.url, () => f.node_token)
      Object.assign(client, { relayPush: httpOnly, relayPop: httpOnly })
      const other = stage === 0 ? s1 : s0
      const peer = { fellow_id: other.fellow_id, address: null }
      const counters = { sent: 0, received: 0 }
      return new Link({ jobId: job.id, stage, stages: 2, mode: 'tunnel', relayUrl: `${server.url}/api/v1/relay/${job.id}`, prev: stage === 1 ? peer : null, next: stage === 0 ? peer : null, client, log: silentLogger, counters, clock: systemClock })
    }
    const l0 = linkFor(s0, 0)
    const l1 = linkFor(s1, 1)
    l0.start()
    l1.start()
    const stop = new AbortController()
    try {
      await until(() => (socketOpen(l0) && socketOpen(l1) ? true : null), 'both relay sockets open')
      expect(await l0.send('activations', { meta: { job_id: job.id, step: 7 }, data: new Uint8Array([1, 2, 3]) })).toBe(true)
      const got = await l1.inbox.take(['activations'], stop.signal, 5000)
      expect(got?.frame.meta).toEqual({ job_id: job.id, step: 7 })
      expect(await l1.send('gradients', { meta: { job_id: job.id, step: 7 }, data: new Uint8Array([4]) })).toBe(true)
      const back = await l0.inbox.take(['gradients'], stop.signal, 5000)
      expect(back?.frame.data).toEqual(new Uint8Array([4]))
    } finally {
      stop.abort()
      l0.close()
      l1.close()
    }
  })
})

/** Whether a link's relay socket is open (a private field, read for the test). */
const socketOpen = (l: Link) => (l as unknown as { socket: { isOpen: boolean } | null }).socket?.isOpen === true

describe('a fellow that loses its stage while it waits for frames', () => {
  const frame = (n: number) => encodeFrames([{ meta: { step: n }, data: new Uint8Array(64).fill(n) }])
  /** Removes the stage-1 fellow; the job's stage 1 moves to the spare. */
  async function removeStage1(p: Awaited<ReturnType<typeof pipeline>>) {
    expect((await p.A.delete(`/api/v1/workers/${p.s1.fellow_id}`)).status).toBe(204)
    expect((await p.A.get(`/api/v1/jobs/${p.job.id}`)).body.assignments[1].fellow_id).toBe(p.outsider.fellow_id)
  }
  const waiters = (h: Harness, n: number) => until(() => (h.services.relay.stats().waiters === n ? true : null), `${n} waiting pop(s)`)

  test("a removed fellow's waiting HTTP pop is refused 403 and the frame goes to the stage's next holder", async () => {
    const p = await pipeline()
    const { h, server, job, s0, s1, outsider } = p
    const auth = (f: Fellow) => ({ authorization: `Bearer ${f.node_token}` })
    const waiting = fetch(`${server.url}/api/v1/relay/${job.id}/activations/pop?wait_ms=20000`, { headers: auth(s1) })
    await waiters(h, 1)
    await removeStage1(p)
    expect((await fetch(`${server.url}/api/v1/relay/${job.id}/activations/push`, { method: 'POST', headers: { ...auth(s0), ...bin }, body: frame(1) })).status).toBe(202)
    const stale = await waiting
    expect([stale.status, ((await stale.json()) as { code: string }).code]).toEqual([403, 'forbidden'])
    const next = await fetch(`${server.url}/api/v1/relay/${job.id}/activations/pop?wait_ms=0`, { headers: auth(outsider) })
    expect(next.status).toBe(200)
    expect(new Uint8Array(await next.arrayBuffer())).toEqual(new Uint8Array(frame(1)))
  })

  test("a removed fellow's relay socket is closed without the frame, which the next holder's socket gets", async () => {
    const p = await pipeline()
    const { h, server, job, s0, s1, outsider } = p
    const stale = new RelayClient(wsUrl(server.url, job.id), s1.node_token)
    await stale.opened()
    await waiters(h, 1)
    await removeStage1(p)
    const next = new RelayClient(wsUrl(server.url, job.id), outsider.node_token)
    await next.opened()
    await waiters(h, 2)
    expect((await fetch(`${server.url}/api/v1/relay/${job.id}/activations/push`, { method: 'POST', headers: { authorization: `Bearer ${s0.node_token}`, ...bin }, body: frame(2) })).status).toBe(202)
    await until(() => (next.received.length === 1 ? true : null), "the frame at the next holder's socket")
    expect(next.received[0]!.frames.map((f) => f.meta)).toEqual([{ step: 2 }])
    await until(() => (stale.closed ? true : null), 'the stale socket closed')
    expect(stale.received).toEqual([])
    expect(stale.closed!.code).toBe(RELAY_CLOSE.policy)
    next.close()
  })
})

describe('relay push and pop on a real port (Bun router fast path, src/http/native.ts)', () => {
  interface Answer {
    status: number
    type: string | null
    code: string | null
    json: unknown
    bytes: Uint8Array
    requestId: string | null
  }
  const read = async (res: Response): Promise<Answer> => {
    const bytes = new Uint8Array(await res.arrayBuffer())
    const type = res.headers.get('content-type')
    const json = type?.includes('json') ? JSON.parse(new TextDecoder().decode(bytes)) : null
    return { status: res.status, type, code: (json as { code?: string } | null)?.code ?? null, json, bytes, requestId: res.headers.get('x-request-id') }
  }
  /** The same request over the real port (the fast path) and through Elysia (app.handle). */
  const both = async (h: Harness, base: string, method: string, path: string, token: string, body?: Uint8Array | string, headers: Record<string, string> = {}) => {
    const init = () => ({ method, headers: { authorization: `Bearer ${token}`, ...headers }, body })
    const fast = await read(await fetch(base + path, init()))
    const elysia = await read(await h.app.handle(new Request(`http://localhost${path}`, init())))
    return { fast, elysia }
  }
  const without = ({ bytes: _b, requestId: _r, json, ...a }: Answer) => ({ ...a, detail: (json as { detail?: string } | null)?.detail ?? null })

  test('push and pop answer as the Elysia routes do, with a request id, counted as node requests', async () => {
    const { h, server, job, s0, s1 } = await pipeline()
    const frame = (n: number) => encodeFrames([{ meta: { step: n }, data: new Uint8Array(1000).fill(n) }])
    const accepted = () => h.services.counters.http.get('node 202') ?? 0
    const before = accepted()
    const pushed = await fetch(`${server.url}/api/v1/relay/${job.id}/activations/push`, { method: 'POST', headers: { authorization: `Bearer ${s0.node_token}`, 'x-request-id': 'trace-1', ...bin }, body: frame(1) })
    const p = await read(pushed)
    expect([p.status, p.json, p.requestId]).toEqual([202, { queued_frames: 1, depth_bytes: frame(1).byteLength }, 'trace-1'])
    expect(accepted()).toBe(before + 1)
    // Popped over Elysia what the fast path queued, and the other way round: one queue.
    const viaElysia = await read(await h.app.handle(new Request(`http://localhost/api/v1/relay/${job.id}/activations/pop?max=5`, { headers: { authorization: `Bearer ${s1.node_token}` } })))
    expect([viaElysia.status, viaElysia.type, viaElysia.bytes]).toEqual([200, 'application/octet-stream', frame(1)])
    await h.app.handle(new Request(`http://localhost/api/v1/relay/${job.id}/activations/push`, { method: 'POST', headers: { authorization: `Bearer ${s0.node_token}`, ...bin }, body: frame(2) }))
    const popped = await fetch(`${server.url}/api/v1/relay/${job.id}/activations/pop?max=5&wait_ms=0`, { headers: { authorization: `Bearer ${s1.node_token}` } })
    expect([popped.status, popped.headers.get('x-frame-count'), popped.headers.get('x-request-id')?.length]).toEqual([200, '1', 36])
    expect(new Uint8Array(await popped.arrayBuffer())).toEqual(new Uint8Array(frame(2)))
    // A waiting pop on the fast path is woken by a push.
    const waiting = fetch(`${server.url}/api/v1/relay/${job.id}/activations/pop?wait_ms=20000`, { headers: { authorization: `Bearer ${s1.node_token}` } })
    await Bun.sleep(20)
    await fetch(`${server.url}/api/v1/relay/${job.id}/activations/push`, { method: 'POST', headers: { authorization: `Bearer ${s0.node_token}`, ...bin }, body: frame(3) })
    expect(new Uint8Array(await (await waiting).arrayBuffer())).toEqual(new Uint8Array(frame(3)))
    const empty = await both(h, server.url, 'GET', `/api/v1/relay/${job.id}/activations/pop`, s1.node_token)
    expect([empty.fast.status, empty.elysia.status]).toEqual([204, 204])
  })

  test('every refusal is the same answer on both paths, and nothing refused is queued', async () => {
    const { h, server, job, s0, s1, outsider } = await pipeline({ SVC_RELAY_MAX_FRAME_BYTES: '65536' })
    const good = encodeFrames([{ meta: {}, data: new Uint8Array([1]) }])
    const cases: [string, string, string, Uint8Array | string | undefined, Record<string, string>, number, string][] = [
      // After the body is read (the fast path answers): the handler's and the body reader's refusals.
      ['POST', `/api/v1/relay/${job.id}/gradients/push`, s0.node_token, good, bin, 409, 'conflict'],
      ['POST', `/api/v1/relay/${job.id}/activations/push`, s0.node_token, new Uint8Array([0, 0, 0, 200, 1]), bin, 400, 'bad_request'],
      ['POST', `/api/v1/relay/${job.id}/activations/push`, s0.node_token, new Uint8Array(65536 + 1024 * 1024 + 1), bin, 413, 'payload_too_large'],
      ['POST', `/api/v1/relay/${job.id}/activations/push`, outsider.node_token, good, bin, 403, 'forbidden'],
      ['GET', `/api/v1/relay/${job.id}/activations/pop`, outsider.node_token, undefined, {}, 403, 'forbidden'],
      ['GET', `/api/v1/relay/${crypto.randomUUID()}/activations/pop`, s1.node_token, undefined, {}, 404, 'not_found'],
      // Before it (Elysia answers): the gate, the schemas, the content type.
      ['POST', `/api/v1/relay/${job.id}/activations/push`, 'svc_node_garbage', good, bin, 401, 'unauthorized'],
      ['POST', `/api/v1/relay/${job.id}/activations/push`, s0.node_token, '{"frames":[]}', { 'content-type': 'application/json' }, 415, 'unsupported_media_type'],
      ['POST', `/api/v1/relay/${job.id}/weights/push`, s0.node_token, good, bin, 422, 'validation_failed'],
      ['POST', `/api/v1/relay/not-a-uuid/activations/push`, s0.node_token, good, bin, 422, 'validation_failed'],
      ['POST', `/api/v1/relay/${job.id}/activations/push?extra=1`, s0.node_token, good, bin, 422, 'validation_failed'],
      ['GET', `/api/v1/relay/${job.id}/activations/pop?max=0`, s1.node_token, undefined, {}, 422, 'validation_failed'],
      ['GET', `/api/v1/relay/${job.id}/activations/pop?max=1.5`, s1.node_token, undefined, {}, 422, 'validation_failed'],
      ['GET', `/api/v1/relay/${job.id}/activations/pop?wait_ms=30001`, s1.node_token, undefined, {}, 422, 'validation_failed'],
    ]
    for (const [method, path, token, body, headers, status, code] of cases) {
      const { fast, elysia } = await both(h, server.url, method, path, token, body, headers)
      expect({ path, ...without(fast) }).toEqual({ path, ...without(elysia) })
      expect([path, fast.status, fast.code, fast.type]).toEqual([path, status, code, 'application/problem+json'])
      expect(fast.requestId).not.toBeNull()
    }
    expect(h.services.relay.stats().queuedBytes).toBe(0)
  })
})
