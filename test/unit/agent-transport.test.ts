import { afterEach, describe, expect, test } from 'bun:test'
import { decodeFrames, type Frame } from '../../src/wire/frames'
import { P2PListeners, parseAddress, type Channel } from '../../src/agent/p2p'
import { Inbox, Link, type TransportMode } from '../../src/agent/transport'
import { silentLogger } from '../../src/log'
import type { LeaderClient } from '../../src/agent/client'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'
import { freeBase } from '../helpers/listen'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

/** What `work` resolves to, moving `clock` while it waits: retries and graces run on the clock. */
async function withTime<T>(clock: FakeClock, work: Promise<T>, what: string, stepMs = 100): Promise<T> {
  let out: { v: T } | null = null
  void work.then((v) => (out = { v }))
  await until(() => out, what, { tick: () => clock.advance(stepMs) })
  return out!.v
}

/** A client whose relay records pushes and never has anything to pop. */
function recordingClient(pushed: { channel: string; frames: Frame[] }[]): LeaderClient {
  return {
    // A leader with the HTTP relay only (no WebSocket data channel).
    relaySocketUrl: () => null,
    relayPush: async (_url: string, channel: string, bytes: Uint8Array) => void pushed.push({ channel, frames: decodeFrames(bytes, { maxFrameBytes: 1 << 30 }) }),
    relayPop: (_url: string, _channel: string, _wait: number, signal?: AbortSignal) => new Promise((resolve) => signal?.addEventListener('abort', () => resolve([]))),
  } as unknown as LeaderClient
}

const KEY = new Uint8Array(32).fill(7)

/** A fellow's transport: its listeners feed its link, as the agent wires them. */
async function fellow(
  stage: number,
  stages: number,
  mode: TransportMode,
  peers: { prev?: string; next?: string },
  client: LeaderClient,
  { key = KEY, refusedGraceMs = 200, running = () => true }: { key?: Uint8Array; refusedGraceMs?: number; running?: () => boolean } = {},
) {
  const base = freeBase()
  const counters = { sent: 0, received: 0 }
  // Each fellow its own clock: a test moves the sender's time (its retries) on its own.
  const clock = new FakeClock()
  const link = new Link({
    jobId: 'job-1',
    stage,
    stages,
    mode,
    relayUrl: 'http://leader/api/v1/relay/job-1',
    prev: peers.prev ? { fellow_id: 'prev', address: peers.prev } : null,
    next: peers.next ? { fellow_id: 'next', address: peers.next } : null,
    client,
    log: silentLogger,
    counters,
    clock,
    key,
    connectTimeoutMs: 300,
    refusedGraceMs,
  })
  const listeners = new P2PListeners({
    host: '127.0.0.1',
    basePort: base,
    onFrame: (channel: Channel, frame: Frame) => link.deliver(channel, frame),
    authorize: (jobId) => (jobId === 'job-1' && running() ? { key, stage } : null),
    log: silentLogger,
    clock,
  })
  await listeners.start()
  link.start()
  cleanups.push(() => link.close(), () => listeners.stop())
  return { link, counters, clock, address: `127.0.0.1:${base}` }
}

const floats = (n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i))
const bytes = (a: Float32Array) => new Uint8Array(a.buffer)

describe('p2p transport over loopback TCP', () => {
  test('activations flow to the next stage on base, gradients back to the previous one on base+1, frames intact', async () => {
    const none = recordingClient([])
    const b = await fellow(1, 2, 'p2p', {}, none)
    const a = await fellow(0, 2, 'p2p', { next: b.address }, none)
    b.link.setNeighbours({ fellow_id: 'prev', address: a.address }, null)
    const big = floats(300_000) // > 1 MB: arrives in many TCP chunks
    for (let step = 1; step <= 3; step++) {
      expect(await a.link.send('activations', { meta: { job_id: 'job-1', step, rows: 1 }, data: bytes(big) })).toBe(true)
    }
    const stop = new AbortController()
    for (let step = 1; step <= 3; step++) {
      const got = (await b.link.inbox.take(['activations'], stop.signal, 5000))!
      expect(got.frame.meta).toEqual({ job_id: 'job-1', step, rows: 1 })
      expect(new Float32Array(got.frame.data.slice().buffer)).toEqual(big)
    }
    expect(await b.link.send('gradients', { meta: { job_id: 'job-1', step: 3, rows: 1 }, data: bytes(floats(4)) })).toBe(true)
    const back = (await a.link.inbox.take(['gradients'], stop.signal, 5000))!
    expect(back.frame.meta.step).toBe(3)
    expect(new Float32Array(back.frame.data.slice().buffer)).toEqual(floats(4))
    expect(a.counters.sent).toBeGreaterThan(3 * big.byteLength)
    expect(b.counters.received).toBe(3 * big.byteLength)
  })

  test('frames of another job are dropped by the receiver', async () => {
    const b = await fellow(1, 2, 'p2p', {}, recordingClient([]))
    const a = await fellow(0, 2, 'p2p', { next: b.address }, recordingClient([]))
    await a.link.send('activations', { meta: { job_id: 'job-OLD', step: 1, rows: 1 }, data: new Uint8Array(4) })
    await a.link.send('activations', { meta: { job_id: 'job-1', step: 2, rows: 1 }, data: new Uint8Array(4) })
    const got = (await b.link.inbox.take(['activations'], new AbortController().signal, 5000))!
    expect(got.frame.meta.step).toBe(2)
    expect(b.link.inbox.size('activations')).toBe(0)
  })

  test('auto falls back to the relay when the neighbour cannot be reached, and p2p keeps retrying instead', async () => {
    const pushed: { channel: string; frames: Frame[] }[] = []
    const dead = `127.0.0.1:${freeBase()}`
    const auto = await fellow(0, 2, 'auto', { next: dead }, recordingClient(pushed))
    expect(await auto.link.send('activations', { meta: { job_id: 'job-1', step: 1, rows: 1 }, data: new Uint8Array(8) })).toBe(true)
    expect(pushed.map((p) => [p.channel, p.frames[0]!.meta.step])).toEqual([['activations', 1]])
    // Once unreachable, the neighbour stays on the relay until the pipeline changes.
    await auto.link.send('activations', { meta: { job_id: 'job-1', step: 2, rows: 1 }, data: new Uint8Array(8) })
    expect(pushed).toHaveLength(2)

    const p2p = await fellow(0, 2, 'p2p', { next: dead }, recordingClient(pushed))
    const sending = p2p.link.send('activations', { meta: { job_id: 'job-1', step: 1, rows: 1 }, data: new Uint8Array(8) })
    // A minute of retries (the backoff's cap is 5 s): each one fails again, none goes to the relay.
    for (let t = 0; t < 60_000; t += 5000) {
      await until(() => p2p.clock.pending === 1, 'the sender waiting to retry')
      p2p.clock.advance(5000)
    }
    expect(pushed).toHaveLength(2) // never the relay in p2p mode
    // A RECONFIGURE (new neighbours) releases a send stuck on a dead one.
    p2p.link.setNeighbours(null, { fellow_id: 'other', address: dead })
    expect(await sending).toBe(false)
  })

  test('a neighbour that refuses our key: auto uses the relay for it, p2p delivers nothing', async () => {
    const pushed: { channel: string; frames: Frame[] }[] = []
    const b = await fellow(1, 2, 'auto', {}, recordingClient([]), { key: new Uint8Array(32).fill(9) })
    const auto = await fellow(0, 2, 'auto', { next: b.address }, recordingClient(pushed))
    // Refused, it tries again for its 200 ms grace (the neighbour may not have the key yet), then relays.
    expect(await withTime(auto.clock, auto.link.send('activations', { meta: { job_id: 'job-1', step: 1, rows: 1 }, data: new Uint8Array(8) }), 'the fallback to the relay')).toBe(true)
    expect(auto.clock.now() - Date.UTC(2026, 0, 1)).toBeGreaterThanOrEqual(200)
    expect(pushed.map((p) => [p.channel, p.frames[0]!.meta.step])).toEqual([['activations', 1]])
    const p2p = await fellow(0, 2, 'p2p', { next: b.address }, recordingClient(pushed))
    const sending = p2p.link.send('activations', { meta: { job_id: 'job-1', step: 2, rows: 1 }, data: new Uint8Array(8) })
    for (let t = 0; t < 30_000; t += 5000) {
      await until(() => p2p.clock.pending === 1, 'the sender waiting to retry')
      p2p.clock.advance(5000)
    }
    p2p.link.setNeighbours(null, null)
    expect(await sending).toBe(false)
    expect(b.link.inbox.size('activations')).toBe(0)
    expect(pushed).toHaveLength(1)
  })

  test('auto waits a moment for a neighbour that has not taken its START yet, instead of giving up on p2p', async () => {
    const pushed: { channel: string; frames: Frame[] }[] = []
    let hellos = 0
    // b's START arrives a little after a's: b refuses a's first two hellos (authorize is asked per hello).
    const b = await fellow(1, 2, 'auto', {}, recordingClient([]), { running: () => ++hellos > 2 })
    const a = await fellow(0, 2, 'auto', { next: b.address }, recordingClient(pushed), { refusedGraceMs: 3000 })
    expect(await withTime(a.clock, a.link.send('activations', { meta: { job_id: 'job-1', step: 1, rows: 1 }, data: new Uint8Array(8) }), 'the send')).toBe(true)
    expect(hellos).toBeGreaterThanOrEqual(3) // two refused hellos, then the one let in (and the frame's own check)
    expect(pushed).toEqual([])
    expect((await b.link.inbox.take(['activations'], new AbortController().signal))?.frame.meta.step).toBe(1)
  })

  test('a tunnel link sends only through the relay', async () => {
    const pushed: { channel: string; frames: Frame[] }[] = []
    const b = await fellow(1, 2, 'tunnel', {}, recordingClient([]))
    const a = await fellow(0, 2, 'tunnel', { next: b.address }, recordingClient(pushed))
    await a.link.send('activations', { meta: { job_id: 'job-1', step: 1, rows: 1 }, data: new Uint8Array(8) })
    expect(pushed).toHaveLength(1)
    expect(b.link.inbox.size('activations')).toBe(0)
  })
})

describe('the relay loop of a 1-stage job', () => {
  test('with nothing to hear from, it neither holds the event loop nor dials the relay socket again and again', async () => {
    const dials: number[] = []
    const leader = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (dials.push(1), new Response('no', { status: 503 })) })
    cleanups.push(() => leader.stop(true))
    for (const socketUrl of [null, `ws://127.0.0.1:${leader.port}/ws/relay/job-1`]) {
      const client = { ...recordingClient([]), relaySocketUrl: () => socketUrl, bearer: () => 'svc_node_x' } as unknown as LeaderClient
      const link = new Link({ jobId: 'job-1', stage: 0, stages: 1, mode: 'tunnel', relayUrl: 'http://leader/api/v1/relay/job-1', prev: null, next: null, client, log: silentLogger, counters: { sent: 0, received: 0 }, clock: new FakeClock(), key: KEY })
      cleanups.push(() => link.close())
      link.start()
      // A timer still fires: the loop let go of the event loop.
      await Bun.sleep(200)
    }
    expect(dials).toEqual([])
  })
})

describe('inbox', () => {
  test('is bounded: a flood drops the oldest frames', () => {
    const inbox = new Inbox({ max: 3 })
    for (let step = 1; step <= 5; step++) inbox.push('gradients', { meta: { step }, data: new Uint8Array(0) })
    expect(inbox.size('gradients')).toBe(3)
    expect(inbox.dropped).toBe(2)
  })

  test('is bounded in bytes too: a flood of big frames from a peer drops the oldest, keeping the newest', async () => {
    const inbox = new Inbox({ max: 100, maxBytes: 1000 })
    for (let step = 1; step <= 5; step++) inbox.push('activations', { meta: { step }, data: new Uint8Array(400) })
    expect(inbox.size('activations')).toBe(2)
    expect(inbox.heldBytes('activations')).toBe(800)
    inbox.push('activations', { meta: { step: 6 }, data: new Uint8Array(5000) }) // alone over the limit: kept
    expect(inbox.size('activations')).toBe(1)
    expect((await inbox.take(['activations'], new AbortController().signal))?.frame.meta.step).toBe(6)
    expect(inbox.heldBytes('activations')).toBe(0)
  })

  test('take waits for a frame, prefers earlier channels, and gives null on timeout', async () => {
    const clock = new FakeClock()
    const inbox = new Inbox({ clock })
    const signal = new AbortController().signal
    const empty = inbox.take(['activations'], signal, 30)
    clock.advance(30)
    expect(await empty).toBeNull()
    const waiting = inbox.take(['activations'], signal, 2000)
    clock.advance(1999)
    inbox.push('activations', { meta: { step: 1 }, data: new Uint8Array(0) })
    expect((await waiting)?.frame.meta.step).toBe(1)
    expect(clock.pending).toBe(0) // its deadline went with it
    inbox.push('activations', { meta: { step: 2 }, data: new Uint8Array(0) })
    inbox.push('gradients', { meta: { step: 3 }, data: new Uint8Array(0) })
    expect((await inbox.take(['gradients', 'activations'], signal))?.channel).toBe('gradients')
  })
})

test('neighbour addresses parse as host:port and [v6]:port', () => {
  expect(parseAddress('10.0.0.5:5557')).toEqual({ host: '10.0.0.5', port: 5557 })
  expect(parseAddress('[fd00::1]:6000')).toEqual({ host: 'fd00::1', port: 6000 })
  for (const bad of [null, '', 'host', 'host:0', 'host:65535', 'a:b:c']) expect(parseAddress(bad)).toBeNull()
})
