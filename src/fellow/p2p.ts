// Direct TCP between neighbouring fellows, with the relay's frame encoding. Each fellow listens
// on base (activations in) and base+1 (gradients in); a sender keeps one stream per neighbour
// port and reconnects on the next send after any error. The listeners are unauthenticated: the
// pipeline is meant to run on a private network or mesh, and frames name their job, so a
// stray or stale frame is dropped by the worker rather than trained on.
import net from 'node:net'
import { encodeFrames, FrameReader, type Frame } from '../relay/frames'
import type { Logger } from '../log'

export type Channel = 'activations' | 'gradients'
export const CHANNELS: readonly Channel[] = ['activations', 'gradients']
export const P2P_MAX_FRAME_BYTES = 64 * 1024 * 1024

/** "host:port", "[v6]:port"; null when it is neither. */
export function parseAddress(addr: string | null | undefined): { host: string; port: number } | null {
  if (!addr) return null
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(addr) ?? /^([^:]+):(\d+)$/.exec(addr)
  if (!m) return null
  const port = Number(m[2])
  return port > 0 && port < 65535 ? { host: m[1]!, port } : null
}

export class P2PListeners {
  private servers: net.Server[] = []
  private sockets = new Set<net.Socket>()

  constructor(
    private readonly host: string,
    private readonly basePort: number,
    private readonly onFrame: (channel: Channel, frame: Frame, wireBytes: number) => void,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    for (const [k, channel] of CHANNELS.entries()) {
      const server = net.createServer((sock) => this.accept(channel, sock))
      this.servers.push(server)
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(this.basePort + k, this.host, () => {
          server.off('error', reject)
          resolve()
        })
      })
    }
  }

  private accept(channel: Channel, sock: net.Socket): void {
    this.sockets.add(sock)
    sock.setNoDelay(true)
    const reader = new FrameReader({ maxFrameBytes: P2P_MAX_FRAME_BYTES })
    sock.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk)
      } catch (e) {
        // The stream is out of step after a bad frame: drop the connection, the peer reconnects.
        this.log.warn('p2p: bad frame stream; dropping the connection', { channel, peer: sock.remoteAddress, error: (e as Error).message })
        sock.destroy()
        return
      }
      for (let f = reader.next(); f; f = reader.next()) this.onFrame(channel, f, f.data.byteLength)
    })
    sock.on('error', () => sock.destroy())
    sock.on('close', () => this.sockets.delete(sock))
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
    await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
    this.servers = []
  }
}

/** One outbound stream to one neighbour port. */
export class P2PSender {
  private sock: net.Socket | null = null
  private connecting: Promise<net.Socket> | null = null
  private closed = false

  constructor(
    readonly host: string,
    readonly port: number,
    private readonly log: Logger,
  ) {}

  private connect(timeoutMs: number): Promise<net.Socket> {
    this.connecting ??= new Promise<net.Socket>((resolve, reject) => {
      const sock = net.createConnection({ host: this.host, port: this.port })
      const timer = setTimeout(() => {
        sock.destroy()
        reject(new Error(`connect to ${this.host}:${this.port} timed out after ${timeoutMs} ms`))
      }, timeoutMs)
      sock.once('connect', () => {
        clearTimeout(timer)
        sock.setNoDelay(true)
        sock.off('error', reject)
        sock.on('error', () => sock.destroy())
        sock.on('close', () => {
          if (this.sock === sock) this.sock = null
        })
        // Nothing flows back on a data stream; reading keeps the socket's close detectable.
        sock.on('data', () => undefined)
        this.log.info('p2p connected', { peer: `${this.host}:${this.port}` })
        resolve(sock)
      })
      sock.once('error', (e) => {
        clearTimeout(timer)
        reject(e)
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
      sock.write(bytes, (err) => (err ? reject(err) : resolve()))
    }).catch((e: Error) => {
      sock.destroy()
      if (this.sock === sock) this.sock = null
      throw e
    })
    return bytes.byteLength
  }

  close(): void {
    this.closed = true
    this.sock?.destroy()
    this.sock = null
  }
}
