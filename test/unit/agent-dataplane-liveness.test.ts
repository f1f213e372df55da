// The data plane against peers that stop answering without closing: a p2p neighbour (or a
// middlebox) that keeps the stream open and reads nothing, a relay WebSocket gone half-open; and
// frames the relay can never carry. Real sockets on loopback (ports 46600-46699), fake clocks.
import { afterEach, describe, expect, test } from 'bun:test'
import net from 'node:net'
import { createHash } from 'node:crypto'
import { decodeFrames, type Frame } from '../../src/wire/frames'
import { HelloReader, ACK, SERVER_HELLO_BYTES, serverHello } from '../../src/agent/p2p-auth'
import { P2PListeners } from '../../src/agent/p2p'
import { Link, type TransportMode } from '../../src/agent/transport'
import { RelaySocketClient } from '../../src/agent/relay-socket'
import { silentLogger, type Logger } from '../../src/log'
import { systemClock } from '../../src/time'
import { LeaderError, type LeaderClient } from '../../src/agent/client'
import { RunnerWorker } from '../../src/agent/runner'
import { parseAssignment } from '../../src/agent/job'
import { RELAY_CLOSE } from '../../src/wire/relay-socket'
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

let nextPort = 46600 + 2 * Math.floor(Math.random() * 10)
/** A (port, port+1) pair in this file's range that is free now. */
function freePair(): number {
  for (let tries = 0; tries < 50; tries++) {
    const base = nextPort
    nextPort = nextPort + 2 > 46698 ? 46600 : nextPort + 2
    try {
      Bun.listen({ hostname: '127.0.0.1', port: base, socket: { data() {} } }).stop(true)
      Bun.listen({ hostname: '127.0.0.1', port: base + 1, socket: { data() {} } }).stop(true)
      return base
    } catch {
      // taken: the next one
    }
  }
  throw new Error('no free port pair in 46600-46699')
}

/** What `work` resolves to, moving `clock` while it waits. */
async function withTime<T>(clock: FakeClock, work: Promise<T>, what: string, stepMs = 250): Promise<T> {
  let out: { v: T } | null = null
  void work.then((v) => (out = { v }))
  await until(() => out, what, { tick: () => clock.advance(stepMs) })
  return out!.v
}

function recordingLog(): { log: Logger; lines: { msg: string; fields?: Record<string, unknown> }[] } {
  const lines: { msg: string; fields?: Record<string, unknown> }[] = []
  const rec = (msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, fields })
  return { log: { debug: rec, info: rec, warn: rec, error: rec, enabled: () => true }, lines }
}

/** A client whose HTTP relay records pushes (or refuses them with `refuse`) and never has anything to pop. */
function recordingClient(pushed: Frame[], refuse?: () => Error): LeaderClient {
  return {
    relaySocketUrl: () => null,
    bearer: () => 'token',
    relayPush: async (_url: string, _channel: string, bytes: Uint8Array) => {
      if (refuse) throw refuse()
      pushed.push(...decodeFrames(bytes, { maxFrameBytes: 1 << 30 }))
    },
    relayPop: (_url: string, _channel: string, _wait: number, signal?: AbortSignal) => new Promise((resolve) => signal?.addEventListener('abort', () => resolve([]))),
  } as unknown as LeaderClient
}

/**
 * A p2p listener that completes any handshake and then reads nothing more: what a stalled
 * middlebox looks like from the sender (the socket stays open, no byte gets through).
 */
async function stalledListener(): Promise<{ address: string; connections: () => number }> {
  const port = freePair()
  let connections = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((sock) => {
    connections++
    sockets.add(sock)
    sock.on('error', () => {})
    const hello = serverHello()
    const reader = new HelloReader()
    const onData = (chunk: Buffer) => {
      if (!reader.push(chunk)) return
      sock.off('data', onData)
      sock.pause()
      sock.write(Buffer.of(ACK))
    }
    sock.on('data', onData)
    sock.write(hello.bytes)
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()))
  cleanups.push(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { address: `127.0.0.1:${port}`, connections: () => connections }
}

/**
 * A TCP middlebox in front of `target`: it passes bytes both ways until stall() is called, then
 * keeps every connection (old and new) open and passes nothing.
 */
async function middlebox(target: number): Promise<{ address: string; stall: () => void; passedBack: () => number }> {
  const port = freePair()
  let stalled = false
  let back = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.createConnection({ host: '127.0.0.1', port: target })
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => {})
    }
    client.on('data', (d) => void (stalled || upstream.write(d)))
    upstream.on('data', (d) => void (stalled || ((back += d.length), client.write(d))))
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()))
  cleanups.push(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { address: `127.0.0.1:${port}`, stall: () => void (stalled = true), passedBack: () => back }
}

function link(mode: TransportMode, next: string, client: LeaderClient, clock: FakeClock, log: Logger = silentLogger): Link {
  const l = new Link({
    jobId: 'job-1',
    stage: 0,
    stages: 2,
    mode,
    relayUrl: 'http://leader/api/v1/relay/job-1',
    prev: null,
    next: { fellow_id: 'next', address: next },
    client,
    log,
    counters: { sent: 0, received: 0 },
    clock,
    key: new Uint8Array(32).fill(7),
    connectTimeoutMs: 2000,
  })
  cleanups.push(() => l.close())
  return l
}

// Larger than what loopback's kernel buffers take: the write can only finish if the peer reads.
const big = () => ({ meta: { job_id: 'job-1', step: 1, rows: 1 }, data: new Uint8Array(32 * 1024 * 1024) })

describe('a p2p stream that stops taking bytes', () => {
  test('auto closes it after the stall deadline and sends the frame through the relay instead', async () => {
    const peer = await stalledListener()
    const pushed: Frame[] = []
    const clock = new FakeClock()
    const { log, lines } = recordingLog()
    const auto = link('auto', peer.address, recordingClient(pushed), clock, log)
    expect(await withTime(clock, auto.send('activations', big()), 'the fallback to the relay')).toBe(true)
    expect(pushed.map((f) => f.meta.step)).toEqual([1])
    expect(lines.filter((l) => l.msg.includes('stalled')).length).toBe(1)
    expect(lines.some((l) => l.msg === 'p2p: neighbour unreachable; using the relay for it')).toBe(true)
  })

  test('small frames that get no receipt close it too, though every write fit in the buffers: the next frame goes through the relay', async () => {
    const base = freePair()
    const received: number[] = []
    const listeners = new P2PListeners({ host: '127.0.0.1', basePort: base, onFrame: (_c, f) => void received.push(f.meta.step as number), authorize: () => ({ key: new Uint8Array(32).fill(7), stage: 1 }), log: silentLogger, clock: new FakeClock() })
    await listeners.start()
    cleanups.push(() => listeners.stop())
    const box = await middlebox(base)
    const pushed: Frame[] = []
    const clock = new FakeClock()
    const { log, lines } = recordingLog()
    const auto = link('auto', box.address, recordingClient(pushed), clock, log)
    const small = (step: number) => ({ meta: { job_id: 'job-1', step, rows: 1 }, data: new Uint8Array(64) })
    expect(await auto.send('activations', small(1))).toBe(true)
    await until(() => received.length === 1, 'the first frame through the middlebox')
    await until(() => box.passedBack() === SERVER_HELLO_BYTES + 2, 'the hello, the ACK and the first receipt back through the middlebox')
    box.stall()
    expect(await auto.send('activations', small(2))).toBe(true) // into the kernel's buffers: nothing says otherwise yet
    await until(() => lines.some((l) => l.msg.includes('stalled')), 'the stall noticed', { tick: () => clock.advance(1000) })
    expect(await withTime(clock, auto.send('activations', small(3)), 'the fallback to the relay')).toBe(true)
    expect(pushed.map((f) => f.meta.step)).toEqual([3])
    expect(received).toEqual([1])
  })

  test('p2p closes it and connects again instead of waiting on it forever', async () => {
    const peer = await stalledListener()
    const clock = new FakeClock()
    const p2p = link('p2p', peer.address, recordingClient([]), clock)
    const sending = p2p.send('activations', big())
    await until(() => peer.connections() >= 2, 'a second connection after the first stalled', { tick: () => clock.advance(250) })
    p2p.setNeighbours(null, null)
    expect(await sending).toBe(false)
  })
})

describe('p2p listener refusals', () => {
  test('the log names the refused peer', async () => {
    const base = freePair()
    const { log, lines } = recordingLog()
    const listeners = new P2PListeners({ host: '127.0.0.1', basePort: base, onFrame: () => {}, authorize: () => null, log, clock: new FakeClock() })
    await listeners.start()
    cleanups.push(() => listeners.stop())
    const sock = net.createConnection({ host: '127.0.0.1', port: base })
    sock.on('error', () => {})
    sock.write(Buffer.alloc(200, 0x41)) // not a hello
    await until(() => lines.find((l) => l.msg === 'p2p: refused a connection'), 'the refusal logged')
    sock.destroy()
    expect(lines.find((l) => l.msg === 'p2p: refused a connection')!.fields!.peer).toBe('127.0.0.1')
  })
})

/**
 * A WebSocket server that completes the upgrade and then neither reads nor answers: a connection
 * to the leader gone half-open (no FIN ever arrives, pings go unanswered).
 */
async function halfOpenLeader(): Promise<{ url: string; connections: () => number }> {
  const port = freePair()
  let connections = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((sock) => {
    connections++
    sockets.add(sock)
    sock.on('error', () => {})
    let head = ''
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1')
      if (!head.includes('\r\n\r\n')) return
      sock.off('data', onData)
      const key = /sec-websocket-key: *(\S+)/i.exec(head)![1]!
      const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
      sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
      sock.on('data', () => {}) // read and drop: pings, pushes, all unanswered
    }
    sock.on('data', onData)
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()))
  cleanups.push(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { url: `ws://127.0.0.1:${port}/ws/relay/job-1`, connections: () => connections }
}

describe('the relay WebSocket of a leader gone half-open', () => {
  test('a push the leader never answers is given up: the socket is closed, the push answered null, the silence logged', async () => {
    const leader = await halfOpenLeader()
    const clock = new FakeClock()
    const { log, lines } = recordingLog()
    const socket = new RelaySocketClient({ url: leader.url, token: () => 'token', deliver: () => {}, log, jobId: 'job-1', clock })
    cleanups.push(() => socket.close())
    expect(await socket.open()).toBe(true)
    const ack = socket.push('activations', new Uint8Array(16))
    expect(await withTime(clock, ack, 'the unanswered push given up', 5000)).toBeNull()
    await socket.closed()
    expect(lines.filter((l) => l.msg.startsWith('relay socket: the leader answered nothing')).length).toBe(1)
  })

  test('a tunnel link opens a new socket after closing the silent one', async () => {
    const leader = await halfOpenLeader()
    const clock = new FakeClock()
    const client = { ...recordingClient([]), relaySocketUrl: () => leader.url } as unknown as LeaderClient
    const tunnel = new Link({ jobId: 'job-1', stage: 1, stages: 2, mode: 'tunnel', relayUrl: 'http://leader/api/v1/relay/job-1', prev: null, next: null, client, log: silentLogger, counters: { sent: 0, received: 0 }, clock })
    cleanups.push(() => tunnel.close())
    tunnel.start()
    await until(() => leader.connections() >= 2, 'a second relay socket', { tick: () => clock.advance(5000) })
  })
})

describe('a frame larger than the relay carries', () => {
  const tooLarge = () => new LeaderError(413, 'payload_too_large', 'a frame is larger than SVC_RELAY_MAX_FRAME_BYTES', null)

  test('refused 413 over HTTP: the link says too_large, tries once and logs it once', async () => {
    let pushes = 0
    const client = { ...recordingClient([], () => (pushes++, tooLarge())) } as unknown as LeaderClient
    const { log, lines } = recordingLog()
    const clock = new FakeClock()
    const tunnel = new Link({ jobId: 'job-1', stage: 0, stages: 2, mode: 'tunnel', relayUrl: 'http://leader/api/v1/relay/job-1', prev: null, next: { fellow_id: 'next', address: null }, client, log, counters: { sent: 0, received: 0 }, clock })
    cleanups.push(() => tunnel.close())
    expect(await tunnel.sendFrame('activations', big())).toBe('too_large')
    expect(pushes).toBe(1)
    expect(lines.filter((l) => l.msg.startsWith('relay push refused')).length).toBe(1)
    // Unreachable is still "not now".
    const down = new Link({ jobId: 'job-1', stage: 0, stages: 2, mode: 'tunnel', relayUrl: 'http://leader/api/v1/relay/job-1', prev: null, next: { fellow_id: 'next', address: null }, client: recordingClient([], () => new LeaderError(409, 'conflict', 'not assigned', null)), log: silentLogger, counters: { sent: 0, received: 0 }, clock })
    cleanups.push(() => down.close())
    expect(await down.sendFrame('activations', big())).toBe('unreachable')
  })

  test('the relay socket closed 1009 on a push: that push is answered payload_too_large, not sent again over HTTP', async () => {
    const port = freePair()
    const leader = Bun.serve({
      hostname: '127.0.0.1',
      port,
      fetch: (req, server) => (server.upgrade(req) ? undefined : new Response('no', { status: 400 })),
      websocket: { message: (ws) => ws.close(RELAY_CLOSE.tooBig, 'a frame is larger than 16 bytes (SVC_RELAY_MAX_FRAME_BYTES)') },
    })
    cleanups.push(() => leader.stop(true))
    const socket = new RelaySocketClient({ url: `ws://127.0.0.1:${port}/ws/relay/job-1`, token: () => 'token', deliver: () => {}, log: silentLogger, jobId: 'job-1', clock: new FakeClock() })
    cleanups.push(() => socket.close())
    expect(await socket.open()).toBe(true)
    expect(await socket.push('activations', new Uint8Array(64))).toMatchObject({ ok: false, code: 'payload_too_large' })
  })

  test("the runner's data endpoint answers 413 (do not resend), not 503 (send again)", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'agent-dataplane-'))
    const out = join(stateDir, 'status')
    let pushes = 0
    const client = {
      leaderUrl: 'http://127.0.0.1:9',
      relaySocketUrl: () => null,
      relayPush: async () => {
        pushes++
        throw tooLarge()
      },
      relayPop: (_u: string, _c: string, _w: number, signal?: AbortSignal) => new Promise((r) => signal?.addEventListener('abort', () => r([]))),
      jobStatus: async () => undefined,
      latestCheckpoint: async () => null,
    } as unknown as LeaderClient
    const frames = resolve(import.meta.dir, '../../src/wire/frames.ts')
    const script = `import { encodeFrames } from ${JSON.stringify(frames)}
const body = encodeFrames([{ meta: { step: 1, rows: 1 }, data: new Uint8Array(8) }])
const res = await fetch(process.env.SVC_DATA_URL + '/activations', { method: 'POST', body })
await Bun.write(${JSON.stringify(out)}, String(res.status))
await Bun.sleep(60_000)`
    const a = parseAssignment({ stage: 0, stages: 2, transport: 'tunnel', relay_url: 'http://127.0.0.1:9/api/v1/relay/job-1', next: { fellow_id: 'next', address: null }, config: {}, resume: false })
    const w = new RunnerWorker(
      { jobId: 'job-1', client, log: silentLogger, stateDir, counters: { sent: 0, received: 0 }, clock: systemClock, leaderUrl: 'http://127.0.0.1:9', nodeToken: () => null },
      a,
      { name: 'toy', command: [process.execPath, '-e', script], env: {}, stopGraceS: 1 },
    )
    cleanups.push(() => {
      w.stop('test over')
      rmSync(stateDir, { recursive: true, force: true })
    })
    w.start()
    await until(() => existsSync(out) && readFileSync(out, 'utf8'), "the runner's POST answered", { timeoutMs: 15_000 })
    expect(readFileSync(out, 'utf8')).toBe('413')
    expect(pushes).toBe(1)
  })
})
