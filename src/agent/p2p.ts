// Direct TCP between neighbouring fellows, with the relay's frame encoding. Each fellow listens
// on base (activations in) and base+1 (gradients in); a sender keeps one stream per neighbour
// port and reconnects on the next send after any error. Every stream opens with the handshake of
// p2p-auth.ts: only a peer that knows the key of the job this fellow runs now gets past it, and
// until then the listener holds at most one short hello per socket, for a few seconds (issue 26,
// item 10). Past it, what a listener buffers is bounded per connection (one frame) and across
// its connections (maxBufferedBytes): going over closes the connection that asked for more.
import net from 'node:net'
import { encodeFrames, FrameReader, type Frame } from '../wire/frames'
import { ACK, HelloReader, clientHello, helloValid, readServerHello, serverHello, SERVER_HELLO_BYTES, type PeerAuth } from './p2p-auth'
import { monotonicNow, systemClock, type TimerClock } from '../time'
import type { Logger } from '../log'

export type Channel = 'activations' | 'gradients'
export const CHANNELS: readonly Channel[] = ['activations', 'gradients']
export const P2P_MAX_FRAME_BYTES = 64 * 1024 * 1024
/**
 * What a listener sends back for each frame it read, past the handshake: senders of before it
 * read and drop whatever comes back then, so it needs no new handshake.
 */
export const RECEIPT = 0x06

/** "host:port", "[v6]:port"; null when it is neither. */
export function parseAddress(addr: string | null | undefined): { host: string; port: number } | null {
  if (!addr) return null
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(addr) ?? /^([^:]+):(\d+)$/.exec(addr)
  if (!m) return null
  const port = Number(m[2])
  return port > 0 && port < 65535 ? { host: m[1]!, port } : null
}

/**
 * Who holds handshake slots, for makeRoom: an IPv4 address, or an IPv6 /64 (one host usually has
 * a whole /64, and could otherwise take every slot with addresses of its own).
 */
export function sourceOf(address: string | undefined): string {
  if (!address) return ''
  if (!address.includes(':') || address.startsWith('::ffff:')) return address
  const [head = '', tail = ''] = address.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === '' ? [] : tail.split(':')
  const groups = address.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left
  return groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '').toLowerCase()).join(':') + '::/64'
}

export interface P2PLimits {
  /** A socket that has not completed the handshake by then is closed. */
  handshakeTimeoutMs: number
  /** Sockets still in the handshake, per listener; past it the busiest address's oldest is closed. */
  maxPendingHandshakes: number
  /** Authenticated streams per listener; a newer one closes the oldest (a neighbour reconnecting). */
  maxConnections: number
  /** The largest frame one connection may send: all it can make the listener buffer. */
  maxFrameBytes: number
  /** Bytes of frames being received, summed over one listener's connections. */
  maxBufferedBytes: number
}
export const DEFAULT_P2P_LIMITS: P2PLimits = {
  handshakeTimeoutMs: 5000,
  maxPendingHandshakes: 16,
  maxConnections: 4,
  maxFrameBytes: P2P_MAX_FRAME_BYTES,
  maxBufferedBytes: 2 * P2P_MAX_FRAME_BYTES,
}

/** The job this fellow runs now, as its listeners check peers against it. */
export interface JobKey {
  key: Uint8Array
  stage: number
}

export interface P2PListenerOptions {
  host: string
  basePort: number
  onFrame: (channel: Channel, frame: Frame, wireBytes: number) => void
  /** The key and stage of `jobId` when this fellow runs it now; null refuses its peers. */
  authorize: (jobId: string) => JobKey | null
  log: Logger
  limits?: Partial<P2PLimits>
  /** The handshake deadline runs on it; the system clock by default. */
  clock?: TimerClock
}

interface Conn {
  sock: net.Socket
  jobId: string
  key: Buffer
  stage: number
  reader: FrameReader
  held: number
}

interface Listener {
  channel: Channel
  server: net.Server
  pending: Set<net.Socket>
  conns: Set<Conn>
  held: number
}

export class P2PListeners {
  private listeners: Listener[] = []
  private readonly sockets = new Set<net.Socket>()
  readonly limits: P2PLimits
  private readonly clock: TimerClock
  private refusals = 0
  private lastRefusalLog = -Infinity

  constructor(private readonly o: P2PListenerOptions) {
    this.limits = { ...DEFAULT_P2P_LIMITS, ...o.limits }
    this.clock = o.clock ?? systemClock
  }

  /** The ports actually bound (base 0 picks free ones: tests). */
  get ports(): number[] {
    return this.listeners.map((l) => (l.server.address() as net.AddressInfo).port)
  }

  /** What the listeners hold now, for tests and telemetry. */
  stats(): { pending: number; connections: number; bufferedBytes: number } {
    let pending = 0
    let connections = 0
    let bufferedBytes = 0
    for (const l of this.listeners) {
      pending += l.pending.size
      connections += l.conns.size
      bufferedBytes += l.held
    }
    return { pending, connections, bufferedBytes }
  }

  async start(): Promise<void> {
    for (const [k, channel] of CHANNELS.entries()) {
      const l: Listener = { channel, server: net.createServer((sock) => this.accept(l, sock)), pending: new Set(), conns: new Set(), held: 0 }
      this.listeners.push(l)
      const port = this.o.basePort === 0 ? 0 : this.o.basePort + k
      await new Promise<void>((resolve, reject) => {
        l.server.once('error', reject)
        l.server.listen(port, this.o.host, () => {
          l.server.off('error', reject)
          resolve()
        })
      })
    }
  }

  private accept(l: Listener, sock: net.Socket): void {
    if (l.pending.size >= this.limits.maxPendingHandshakes) this.makeRoom(l)
    l.pending.add(sock)
    this.sockets.add(sock)
    sock.setNoDelay(true)
    const hello = serverHello()
    const helloReader = new HelloReader()
    let conn: Conn | null = null
    const refuse = (why: string) => {
      const peer = sock.remoteAddress ?? null // gone once destroyed
      sock.destroy()
      this.refused(l, sock, why, peer)
    }
    const cancelTimer = this.clock.setTimeout(() => refuse('no handshake in time'), this.limits.handshakeTimeoutMs)
    sock.on('data', (chunk: Buffer) => {
      if (sock.destroyed) return
      if (!conn) {
        let h
        try {
          h = helloReader.push(chunk)
        } catch (e) {
          return refuse((e as Error).message)
        }
        if (!h) return
        const job = this.o.authorize(h.jobId)
        if (!job || !helloValid(h, job.key, l.channel, job.stage, hello.nonce)) return refuse('wrong key, or a job or stage this fellow does not run')
        cancelTimer()
        l.pending.delete(sock)
        conn = this.admit(l, sock, h.jobId, job)
        sock.write(Buffer.of(ACK))
        if (h.rest.length === 0) return
        chunk = h.rest
      }
      this.read(l, conn, chunk)
    })
    sock.on('error', () => sock.destroy())
    sock.on('close', () => {
      cancelTimer()
      this.sockets.delete(sock)
      l.pending.delete(sock)
      if (conn && l.conns.delete(conn)) l.held -= conn.held
    })
    sock.write(hello.bytes)
  }

  /**
   * Every handshake slot is taken: the oldest socket of the address holding the most slots goes.
   * Refusing the newcomer instead let anyone who reaches the port hold the slots with silent
   * sockets, renewed every few seconds, and keep the real neighbour out for as long as they liked;
   * now strangers crowd out only each other, and a neighbour's hello, answered within a round
   * trip, gets through.
   */
  private makeRoom(l: Listener): void {
    const bySource = new Map<string, net.Socket[]>()
    for (const s of l.pending) {
      const key = sourceOf(s.remoteAddress)
      const from = bySource.get(key) ?? []
      if (from.push(s) === 1) bySource.set(key, from)
    }
    let busiest: net.Socket[] = []
    for (const from of bySource.values()) if (from.length > busiest.length) busiest = from
    const oldest = busiest[0]
    if (!oldest) return
    l.pending.delete(oldest)
    const peer = oldest.remoteAddress ?? null // gone once destroyed
    oldest.destroy()
    this.refused(l, oldest, 'handshake slots full: the oldest silent socket of the busiest address made room', peer)
  }

  private admit(l: Listener, sock: net.Socket, jobId: string, job: JobKey): Conn {
    if (l.conns.size >= this.limits.maxConnections) {
      const oldest = l.conns.values().next().value!
      l.conns.delete(oldest)
      l.held -= oldest.held
      oldest.sock.destroy()
    }
    const conn: Conn = { sock, jobId, key: Buffer.from(job.key), stage: job.stage, held: 0, reader: null as unknown as FrameReader }
    // Asked before each buffer of a frame is allocated: this connection's frame may take what
    // the listener's other connections leave of its budget, no more.
    conn.reader = new FrameReader({ maxFrameBytes: this.limits.maxFrameBytes }, (bytes) => {
      if (l.held - conn.held + bytes > this.limits.maxBufferedBytes) throw new Error(`the listener already buffers ${l.held - conn.held} bytes; a ${bytes}-byte frame would pass its ${this.limits.maxBufferedBytes}-byte limit`)
    })
    l.conns.add(conn)
    return conn
  }

  private read(l: Listener, conn: Conn, chunk: Buffer): void {
    const { log } = this.o
    // The job ended or its fellows changed (a new key): this peer's proof is no longer good.
    const job = this.o.authorize(conn.jobId)
    if (!job || job.stage !== conn.stage || !conn.key.equals(job.key)) {
      log.info('p2p: the job or its key changed; closing the stream', { channel: l.channel, job_id: conn.jobId })
      conn.sock.destroy()
      return
    }
    try {
      conn.reader.push(chunk)
    } catch (e) {
      // The stream is out of step after a bad frame: drop the connection, the peer reconnects.
      log.warn('p2p: bad frame stream; dropping the connection', { channel: l.channel, peer: conn.sock.remoteAddress, error: (e as Error).message })
      conn.sock.destroy()
      return
    }
    let read = 0
    for (let f = conn.reader.next(); f; f = conn.reader.next()) {
      read++
      if (f.meta.job_id === conn.jobId) this.o.onFrame(l.channel, f, f.data.byteLength)
    }
    // Receipts: the sender's only sign that frames get through (see P2PSender's watch). A peer
    // that does not read them (a sender from before them reads) must not make them pile up here.
    if (read > 0 && conn.sock.writableLength < 64 * 1024) conn.sock.write(Buffer.alloc(read, RECEIPT))
    const now = conn.reader.partialBytes
    l.held += now - conn.held
    conn.held = now
  }

  /** Logged at most every 10 s: a stranger's port scan must not flood the log. */
  private refused(l: Listener, sock: net.Socket, why: string, peer = sock.remoteAddress ?? null): void {
    this.refusals++
    const now = monotonicNow(this.clock)
    if (now - this.lastRefusalLog < 10_000) return
    this.o.log.warn('p2p: refused a connection', { channel: l.channel, peer, why, refused_since_last_log: this.refusals })
    this.lastRefusalLog = now
    this.refusals = 0
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
    await Promise.all(this.listeners.map((l) => new Promise<void>((resolve) => l.server.close(() => resolve()))))
    this.listeners = []
  }
}

/** The neighbour's listener answered but closed on our hello: it does not run this job with this key (yet). */
export class P2PRefused extends Error {}

/** What a sender proves to the listener it connects to: the job's key, and the stage it reaches. */
export interface SenderAuth extends PeerAuth {
  channel: Channel
  /** The receiving stage. */
  stage: number
}

/** The neighbour's stream took no bytes for this long while a write waited: it is dead. */
export const P2P_STALL_MS = 5000

/** The stream stopped taking bytes (a stalled peer or middlebox): closed, the neighbour counts as unreachable. */
export class P2PStalled extends Error {}

/** Frames written on one stream and the receipts its listener sent back for them. */
interface Watch {
  sock: net.Socket
  written: number
  receipted: number
  /** The listener sends receipts (one from before them sends none: then only writes are watched). */
  receipts: boolean
  cancel: (() => void) | null
}

/** One outbound stream to one neighbour port. */
export class P2PSender {
  private sock: net.Socket | null = null
  private watch: Watch | null = null
  private connecting: Promise<net.Socket> | null = null
  private closed = false

  constructor(
    readonly host: string,
    readonly port: number,
    private readonly auth: SenderAuth,
    private readonly log: Logger,
    /** The stall deadline runs on it; the system clock by default. */
    private readonly clock: TimerClock = systemClock,
    private readonly stallMs = P2P_STALL_MS,
  ) {}

  /** Connects and completes the handshake, all within timeoutMs; rejects when refused. */
  private connect(timeoutMs: number): Promise<net.Socket> {
    const peer = `${this.host}:${this.port}`
    this.connecting ??= new Promise<net.Socket>((resolve, reject) => {
      const sock = net.createConnection({ host: this.host, port: this.port })
      let settled = false
      let got = Buffer.alloc(0)
      let nonce: Buffer | null = null
      const fail = (e: Error) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        sock.destroy()
        reject(e)
      }
      // Real time, like the fetch timeouts of client.ts: it bounds one connection attempt.
      const timer = setTimeout(() => fail(new Error(`connect to ${peer} timed out after ${timeoutMs} ms`)), timeoutMs)
      sock.once('connect', () => sock.setNoDelay(true))
      sock.on('data', (chunk: Buffer) => {
        // Past the handshake only receipts flow back; reading keeps the socket's close detectable.
        if (settled) return this.receipted(sock, chunk)
        got = Buffer.concat([got, chunk])
        if (got.length > SERVER_HELLO_BYTES + 1) return fail(new Error(`${peer} is not a p2p listener`))
        if (!nonce) {
          if (got.length < SERVER_HELLO_BYTES) return
          nonce = readServerHello(got.subarray(0, SERVER_HELLO_BYTES))
          if (!nonce) return fail(new Error(`${peer} is not a p2p listener`))
          sock.write(clientHello(this.auth, this.auth.channel, this.auth.stage, nonce))
          got = got.subarray(SERVER_HELLO_BYTES)
        }
        if (got.length === 0) return
        if (got[0] !== ACK) return fail(new Error(`${peer} is not a p2p listener`))
        settled = true
        clearTimeout(timer)
        this.log.info('p2p connected', { peer })
        resolve(sock)
      })
      sock.on('error', (e) => (settled ? sock.destroy() : fail(e)))
      sock.on('close', () => {
        if (this.sock === sock) this.sock = null
        const why = `p2p handshake refused by ${peer}: it does not run stage ${this.auth.stage} of job ${this.auth.jobId} with this key`
        fail(nonce ? new P2PRefused(why) : new Error(`${peer} closed the connection before its p2p hello`))
      })
    }).finally(() => {
      this.connecting = null
    })
    return this.connecting
  }

  /** Writes the frames; throws when the neighbour cannot be reached or the stream breaks. */
  async send(frames: Frame[], connectTimeoutMs: number): Promise<number> {
    if (this.closed) throw new Error('sender closed')
    if (!this.sock || this.sock.destroyed) this.sock = await this.connect(connectTimeoutMs)
    if (this.closed) {
      this.sock.destroy()
      throw new Error('sender closed')
    }
    const sock = this.sock
    const bytes = encodeFrames(frames)
    await new Promise<void>((resolve, reject) => {
      // A peer (or a middlebox) that keeps the socket open and stops reading froze the job for
      // good: the kernel's buffers took the first frames, then this write waited forever. A
      // write that makes no progress for stallMs closes the stream: auto then uses the relay,
      // p2p reconnects. (Receipts, below, catch the frames that fit in the buffers.)
      let left = sock.writableLength + bytes.byteLength
      let cancel = () => {}
      const check = () => {
        const now = sock.writableLength
        if (now < left) {
          left = now
          cancel = this.clock.setTimeout(check, this.stallMs)
          return
        }
        this.log.warn('p2p: the stream to the neighbour stalled; closing it', { peer: `${this.host}:${this.port}`, unsent_bytes: now, stalled_ms: this.stallMs })
        reject(new P2PStalled(`the stream to ${this.host}:${this.port} took no bytes for ${this.stallMs} ms`))
      }
      cancel = this.clock.setTimeout(check, this.stallMs)
      this.written(sock, frames.length)
      sock.write(bytes, (err) => {
        cancel()
        if (err) reject(err)
        else resolve()
      })
    }).catch((e: Error) => {
      sock.destroy()
      if (this.sock === sock) this.sock = null
      throw e
    })
    return bytes.byteLength
  }

  /**
   * Small frames fit in the kernel's buffers, so a stalled stream took them without a write ever
   * waiting, for megabytes: the stage resent into it and the job stood still. Once the listener
   * has sent a receipt, frames that get none for stallMs (and no receipt in between) close the
   * stream; the next send connects again (auto: the relay when that fails).
   */
  private written(sock: net.Socket, frames: number): void {
    if (this.watch?.sock !== sock) {
      this.watch?.cancel?.()
      this.watch = { sock, written: 0, receipted: 0, receipts: false, cancel: null }
    }
    const w = this.watch
    if (w.receipted >= w.written) {
      // Nothing was outstanding: the deadline starts with these frames.
      w.cancel?.()
      w.cancel = null
    }
    w.written += frames
    if (w.cancel) return
    let seen = w.receipted
    const tick = () => {
      w.cancel = null
      if (this.watch !== w || sock.destroyed || !w.receipts || w.receipted >= w.written) return
      if (w.receipted > seen) {
        seen = w.receipted
        w.cancel = this.clock.setTimeout(tick, this.stallMs)
        return
      }
      this.log.warn('p2p: the stream to the neighbour stalled; closing it', { peer: `${this.host}:${this.port}`, frames_without_receipt: w.written - w.receipted, stalled_ms: this.stallMs })
      sock.destroy()
    }
    w.cancel = this.clock.setTimeout(tick, this.stallMs)
  }

  private receipted(sock: net.Socket, chunk: Buffer): void {
    const w = this.watch
    if (w?.sock !== sock) return
    w.receipts = true
    w.receipted += chunk.length
  }

  close(): void {
    this.closed = true
    this.watch?.cancel?.()
    this.watch = null
    this.sock?.destroy()
    this.sock = null
  }
}
