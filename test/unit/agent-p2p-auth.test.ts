// The p2p listeners against strangers and peers over real loopback TCP (issue 26, item 10): only
// a peer that proves the running job's key gets a frame in, and nobody makes the agent hold more
// than a short hello before that, or more than its byte budget after.
import { afterEach, describe, expect, test } from 'bun:test'
import net from 'node:net'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeFrames, type Frame } from '../../src/wire/frames'
import { P2PListeners, P2PSender, sourceOf, type Channel, type JobKey, type P2PLimits } from '../../src/agent/p2p'
import { ACK, clientHello, readServerHello, SERVER_HELLO_BYTES } from '../../src/agent/p2p-auth'
import { parseAssignment } from '../../src/agent/job'
import { Work } from '../../src/agent/work'
import { silentLogger } from '../../src/log'
import type { LeaderClient } from '../../src/agent/client'
import type { Signal } from '../../src/wire/fellow'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

const KEY = new Uint8Array(32).fill(7)
const WRONG = new Uint8Array(32).fill(8)
const MiB = 1024 * 1024

/** Stage 1 of job-1 listening on loopback (free ports), recording what reaches the job. Its handshake deadline runs on a fake clock. */
async function listener(limits: Partial<P2PLimits> = {}, job: () => JobKey | null = () => ({ key: KEY, stage: 1 })) {
  const delivered: { channel: Channel; frame: Frame }[] = []
  const clock = new FakeClock()
  const l = new P2PListeners({
    host: '127.0.0.1',
    basePort: 0,
    onFrame: (channel, frame) => delivered.push({ channel, frame }),
    authorize: (jobId) => (jobId === 'job-1' ? job() : null),
    log: silentLogger,
    limits,
    clock,
  })
  await l.start()
  cleanups.push(() => l.stop())
  const [activations, gradients] = l.ports as [number, number]
  return { l, delivered, activations, gradients, clock }
}

interface Raw {
  sock: net.Socket
  closed: Promise<void>
  isClosed: () => boolean
  received: () => Buffer
}

function connect(port: number, localAddress?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ host: '127.0.0.1', port, localAddress })
    let got = Buffer.alloc(0)
    let closed = false
    const done = new Promise<void>((r) => sock.on('close', () => ((closed = true), r())))
    sock.on('data', (c: Buffer) => (got = Buffer.concat([got, c])))
    sock.on('error', () => undefined)
    sock.once('connect', () => resolve({ sock, closed: done, isClosed: () => closed, received: () => got }))
    sock.once('error', reject)
    cleanups.push(() => sock.destroy())
  })
}

/** A raw peer that does the handshake itself (so a test can then send exactly what it wants). */
async function handshake(port: number, key: Uint8Array, channel: Channel, stage = 1, jobId = 'job-1'): Promise<Raw> {
  const raw = await connect(port)
  await until(() => raw.received().length >= SERVER_HELLO_BYTES || raw.isClosed(), "the listener's hello")
  const nonce = readServerHello(raw.received().subarray(0, SERVER_HELLO_BYTES))
  expect(nonce).not.toBeNull()
  raw.sock.write(clientHello({ jobId, key }, channel, stage, nonce!))
  return raw
}

const acked = (raw: Raw) => raw.received().length === SERVER_HELLO_BYTES + 1 && raw.received()[SERVER_HELLO_BYTES] === ACK
const frame = (step: number, bytes = 16): Frame => ({ meta: { job_id: 'job-1', step, rows: 1 }, data: new Uint8Array(bytes).fill(step) })
/** The header of a frame of `dataLen` bytes, and nothing of its data. */
function header(dataLen: number): Buffer {
  const whole = Buffer.from(encodeFrames([{ meta: { job_id: 'job-1', step: 1 }, data: new Uint8Array(0) }]))
  whole.writeUInt32BE(Math.floor(dataLen / 2 ** 32), whole.length - 8)
  whole.writeUInt32BE(dataLen >>> 0, whole.length - 4)
  return whole
}

describe('p2p listeners and strangers', () => {
  test('a stranger sending a frame stream (or any garbage) without the handshake is closed at once; nothing is buffered or delivered', async () => {
    const { l, delivered, activations } = await listener()
    const raw = await connect(activations)
    // What any peer could send before: well-formed frames for the running job, 8 MiB of them.
    raw.sock.write(encodeFrames([frame(1), frame(2, 8 * MiB)]))
    await until(() => raw.isClosed(), 'the listener to close it')
    expect(delivered).toEqual([])
    expect(l.stats()).toEqual({ pending: 0, connections: 0, bufferedBytes: 0 })

    const junk = await connect(activations)
    junk.sock.write(Buffer.alloc(4 * MiB, 0x41))
    await until(() => junk.isClosed(), 'the listener to close it')
    expect(delivered).toEqual([])
  })

  test('a stranger that connects and says nothing is closed after the handshake timeout', async () => {
    const { l, gradients, clock } = await listener({ handshakeTimeoutMs: 5000 })
    const raw = await connect(gradients)
    await until(() => l.stats().pending === 1, 'the listener to be holding the socket')
    clock.advance(4999)
    expect(clock.pending).toBe(1) // its deadline, not yet passed
    clock.advance(1)
    await until(() => raw.isClosed(), 'the listener to close the silent socket')
    expect(l.stats().pending).toBe(0)
    expect(clock.pending).toBe(0)
  })

  test('sockets in the handshake stay bounded: past the limit the busiest address\'s oldest makes room, and a neighbour still gets through', async () => {
    const { l, delivered, activations } = await listener({ maxPendingHandshakes: 3, handshakeTimeoutMs: 5000 })
    // One stranger from 127.0.0.3, then a crowd from 127.0.0.2 that keeps every slot taken.
    const lone = await connect(activations, '127.0.0.3')
    const crowd = [] as Raw[]
    for (let i = 0; i < 4; i++) crowd.push(await connect(activations, '127.0.0.2'))
    await until(() => (crowd.slice(0, 2).every((r) => r.isClosed()) ? true : null), "the crowd's two oldest closed")
    expect([lone.isClosed(), ...crowd.slice(2).map((r) => r.isClosed())]).toEqual([false, false, false])
    expect(l.stats().pending).toBe(3)
    // The neighbour (from 127.0.0.1) takes the crowd's oldest slot, not the lone stranger's older one.
    const sender = new P2PSender('127.0.0.1', activations, { jobId: 'job-1', key: KEY, channel: 'activations', stage: 1 }, silentLogger)
    cleanups.push(() => sender.close())
    await sender.send([frame(1)], 1000)
    await until(() => (delivered.length === 1 ? true : null), 'the frame delivered')
    expect([lone.isClosed(), crowd[2]!.isClosed(), crowd[3]!.isClosed()]).toEqual([false, true, false])
  })

  test('an IPv6 source counts as its /64: one host cannot take every slot with addresses of its own', () => {
    expect(sourceOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64')
    expect(sourceOf('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64')
    expect(sourceOf('fe80::1')).toBe('fe80:0:0:0::/64')
    expect(sourceOf('::1')).toBe('0:0:0:0::/64')
    expect(sourceOf('::ffff:10.0.0.7')).toBe('::ffff:10.0.0.7')
    expect(sourceOf('10.0.0.7')).toBe('10.0.0.7')
    expect(sourceOf(undefined)).toBe('')
  })

  test('a peer with the wrong key is refused, and so is the right key for another stage, channel or job', async () => {
    const { l, delivered, activations } = await listener()
    const refused = [
      await handshake(activations, WRONG, 'activations'),
      await handshake(activations, KEY, 'activations', 2),
      await handshake(activations, KEY, 'gradients'),
      await handshake(activations, KEY, 'activations', 1, 'job-2'),
    ]
    for (const raw of refused) {
      raw.sock.write(encodeFrames([frame(1)]))
      await until(() => raw.isClosed(), 'the listener to close it')
      expect(acked(raw)).toBe(false)
    }
    const sender = new P2PSender('127.0.0.1', activations, { jobId: 'job-1', key: WRONG, channel: 'activations', stage: 1 }, silentLogger)
    cleanups.push(() => sender.close())
    await expect(sender.send([frame(3)], 1000)).rejects.toThrow(/handshake refused/)
    await until(() => l.stats().pending === 0 && l.stats().connections === 0, 'the listener to let go of every socket')
    expect(delivered).toEqual([])
  })

  test('the right peer gets through with frames intact, until the job (its key) changes', async () => {
    let job: JobKey | null = { key: KEY, stage: 1 }
    const { l, delivered, activations, gradients } = await listener({}, () => job)
    const sender = new P2PSender('127.0.0.1', activations, { jobId: 'job-1', key: KEY, channel: 'activations', stage: 1 }, silentLogger)
    cleanups.push(() => sender.close())
    await sender.send([frame(1), frame(2, MiB)], 1000)
    await until(() => delivered.length === 2, 'both frames')
    expect(delivered.map((d) => [d.channel, d.frame.meta.step, d.frame.data.byteLength])).toEqual([['activations', 1, 16], ['activations', 2, MiB]])
    expect(delivered[1]!.frame.data.every((b) => b === 2)).toBe(true)
    // The gradients port wants the stage's key for gradients: the same key works there too.
    const back = new P2PSender('127.0.0.1', gradients, { jobId: 'job-1', key: KEY, channel: 'gradients', stage: 1 }, silentLogger)
    cleanups.push(() => back.close())
    await back.send([frame(3)], 1000)
    await until(() => delivered.length === 3, 'the gradient')

    job = { key: WRONG, stage: 1 } // the job's fellows changed: a new key
    await sender.send([frame(4)], 1000).catch(() => 0) // reaches the socket, not the job
    await until(() => l.stats().connections === 1, 'the listener to drop the stream of the old key') // the gradients one stays
    await expect(sender.send([frame(5)], 1000)).rejects.toThrow(/handshake refused/)
    expect(delivered.map((d) => d.frame.meta.step)).toEqual([1, 2, 3])
  })

  test('a connection buffers at most one frame, and a listener at most its byte budget across connections', async () => {
    const { l, delivered, activations } = await listener({ maxFrameBytes: MiB, maxBufferedBytes: 1.5 * MiB })
    const tooBig = await handshake(activations, KEY, 'activations')
    await until(() => acked(tooBig), 'the ack')
    tooBig.sock.write(header(2 * MiB))
    await until(() => tooBig.isClosed(), 'the listener to close it')

    const a = await handshake(activations, KEY, 'activations')
    await until(() => acked(a), 'the ack')
    a.sock.write(Buffer.concat([header(MiB), Buffer.alloc(1000)]))
    await until(() => l.stats().bufferedBytes === MiB, 'A to hold its frame')
    const b = await handshake(activations, KEY, 'activations')
    await until(() => acked(b), 'the ack')
    b.sock.write(header(MiB)) // A already holds 1 MiB of the 1.5 MiB budget
    await until(() => b.isClosed(), 'the listener to close it')
    expect(a.isClosed()).toBe(false)
    a.sock.write(Buffer.alloc(MiB - 1000))
    await until(() => delivered.length === 1, 'A to finish its frame')
    expect(l.stats().bufferedBytes).toBe(0)
  })
})

describe('START payload', () => {
  const base = { stage: 0, stages: 2, relay_url: 'http://l/api/v1/relay/j' }
  test('p2p_key is read as 32 bytes; a malformed one, or p2p without one, fails at START', () => {
    const key = Buffer.from(KEY).toString('base64url')
    expect(parseAssignment({ ...base, transport: 'p2p', p2p_key: key }).p2pKey).toEqual(Buffer.from(KEY))
    expect(() => parseAssignment({ ...base, transport: 'auto', p2p_key: 'short' })).toThrow(/p2p_key/)
    expect(() => parseAssignment({ ...base, transport: 'p2p' })).toThrow(/p2p_key/)
    // An older leader: auto still runs (over the relay), tunnel does not need a key.
    expect(parseAssignment({ ...base, transport: 'auto' }).p2pKey).toBeNull()
  })
})

describe('the key a fellow checks peers against', () => {
  test("is the running job's, and follows a RECONFIGURE that changes only the key (the job's fellows changed elsewhere)", () => {
    const idle = (_u: string, _c: string, _w: number, signal?: AbortSignal) => new Promise((r) => signal?.addEventListener('abort', () => r([])))
    const client = { relaySocketUrl: () => null, relayPush: async () => undefined, relayPop: idle, jobStatus: async () => undefined } as unknown as LeaderClient
    const work = new Work({ client, log: silentLogger, stateDir: mkdtempSync(join(tmpdir(), 'p2p-auth-')), counters: { sent: 0, received: 0 }, clock: new FakeClock(), onReleased: () => undefined })
    cleanups.push(() => work.stopAll('test over'))
    const k1 = Buffer.alloc(32, 1)
    const k2 = Buffer.alloc(32, 2)
    const payload = (key: Buffer) => ({
      stage: 0,
      stages: 3,
      prev: null,
      next: { fellow_id: 'f1', address: '127.0.0.1:1' },
      transport: 'tunnel',
      relay_url: 'http://l/api/v1/relay/job-1',
      config: { steps: 5 },
      p2p_key: key.toString('base64url'),
    })
    const signal = (id: string, name: Signal['signal'], key: Buffer): Signal => ({ id, signal: name, job_id: 'job-1', payload: payload(key), ts: new Date().toISOString() })
    expect(work.p2pAuth('job-1')).toBeNull()
    work.handle(signal('s1', 'START', k1), 'socket')
    expect(work.p2pAuth('job-1')).toEqual({ key: k1, stage: 0 })
    expect(work.p2pAuth('job-2')).toBeNull()
    work.handle(signal('s2', 'RECONFIGURE', k2), 'socket') // stage 2 was re-placed: same neighbours here, a new key
    expect(work.p2pAuth('job-1')).toEqual({ key: k2, stage: 0 })
    work.stopAll('done')
    expect(work.p2pAuth('job-1')).toBeNull()
  })
})
