// Binary frames of the data plane, shared by the relay HTTP routes and direct p2p TCP between
// fellows. A body is a sequence of frames, each
//   u32 meta_len (BE) | meta_len bytes of UTF-8 JSON object | u64 data_len (BE) | data_len bytes.
// Every length comes from the peer, so each one is checked against what remains and against the
// limits before anything is allocated or sliced: a lying prefix must cost a 400, not memory.
import { AppError } from '../errors'

export interface Frame {
  meta: Record<string, unknown>
  data: Uint8Array
  /**
   * The frame's encoding as it arrived (a view into the pushed body), set by decodeFrames. The
   * relay answers pops with these bytes as they are: re-encoding a 4 MiB frame meant a zeroed
   * allocation and a copy per pop, and was half of the relay's CPU (docs/benchmarks.md).
   */
  wire?: Uint8Array
}

export interface FrameLimits {
  maxFrameBytes: number
  /** Default 64 KiB: metadata is a small header, never a side channel for bulk bytes. */
  maxMetaBytes?: number
  /** Default 10 000: bounds per-frame object overhead from floods of tiny frames. */
  maxFrames?: number
}

/**
 * FrameReader only: asked before each meta or data buffer is allocated, with its size; throwing
 * refuses it (the reader fails). Lets a p2p listener share one byte budget among its connections.
 */
export type AdmitBytes = (bytes: number) => void

export const DEFAULT_MAX_META_BYTES = 64 * 1024
export const DEFAULT_MAX_FRAMES = 10_000
const META_LEN_BYTES = 4
const DATA_LEN_BYTES = 8
const TWO_32 = 2 ** 32
// Largest high word that keeps hi * 2^32 + lo within Number.MAX_SAFE_INTEGER (2^53 - 1).
const MAX_SAFE_HI = 0x1f_ffff

const encoder = new TextEncoder()
// fatal: a malformed sequence must be refused, not silently replaced with U+FFFD.
const decoder = new TextDecoder('utf-8', { fatal: true })

const bad = (message: string) => new AppError('bad_request', message)

/** Bytes one frame takes on the wire; the relay hub charges queues by this. */
export function frameWireBytes(frame: Frame): number {
  if (frame.wire) return frame.wire.byteLength
  return META_LEN_BYTES + utf8Length(JSON.stringify(frame.meta)) + DATA_LEN_BYTES + frame.data.byteLength
}

/**
 * The encoding of `frames` as a list of byte views, without copying what arrived encoded: a
 * run of frames that were adjacent in one pushed body is one view. Concatenated, the parts equal
 * encodeFrames(frames).
 */
export function wireParts(frames: Frame[]): Uint8Array[] {
  const parts: Uint8Array[] = []
  for (const f of frames) {
    const w = f.wire ?? encodeFrames([f])
    const last = parts[parts.length - 1]
    if (last && last.buffer === w.buffer && last.byteOffset + last.byteLength === w.byteOffset) {
      parts[parts.length - 1] = new Uint8Array(last.buffer, last.byteOffset, last.byteLength + w.byteLength)
    } else parts.push(w)
  }
  return parts
}

export function encodeFrames(frames: Frame[]): Uint8Array {
  const metas = frames.map((f) => encodeMeta(f.meta))
  let total = 0
  frames.forEach((f, i) => (total += META_LEN_BYTES + metas[i]!.byteLength + DATA_LEN_BYTES + f.data.byteLength))
  const out = new Uint8Array(total)
  const view = new DataView(out.buffer)
  let off = 0
  frames.forEach((f, i) => {
    const meta = metas[i]!
    view.setUint32(off, meta.byteLength)
    out.set(meta, off + META_LEN_BYTES)
    off += META_LEN_BYTES + meta.byteLength
    view.setUint32(off, Math.floor(f.data.byteLength / TWO_32))
    view.setUint32(off + 4, f.data.byteLength >>> 0)
    out.set(f.data, off + DATA_LEN_BYTES)
    off += DATA_LEN_BYTES + f.data.byteLength
  })
  return out
}

/**
 * Decodes a whole body. All-or-nothing: every frame is validated before any is returned, so a
 * caller never enqueues half a push. Data and wire bytes are views into `body` (no copy of tensor
 * bytes).
 */
export function decodeFrames(body: Uint8Array, limits: FrameLimits): Frame[] {
  const lim = resolveLimits(limits)
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  const frames: Frame[] = []
  let off = 0
  while (off < body.byteLength) {
    const start = off
    const i = frames.length
    if (i >= lim.maxFrames) throw bad(`body holds more than ${lim.maxFrames} frames`)
    if (body.byteLength - off < META_LEN_BYTES) throw bad(`frame ${i}: truncated header (meta_len)`)
    const metaLen = checkMetaLen(view.getUint32(off), lim, i)
    off += META_LEN_BYTES
    if (metaLen > body.byteLength - off) {
      throw bad(`frame ${i}: truncated meta (meta_len ${metaLen}, ${body.byteLength - off} bytes remain)`)
    }
    const meta = parseMeta(body.subarray(off, off + metaLen), i)
    off += metaLen
    if (body.byteLength - off < DATA_LEN_BYTES) throw bad(`frame ${i}: truncated header (data_len)`)
    const dataLen = checkDataLen(view.getUint32(off), view.getUint32(off + 4), lim, i)
    off += DATA_LEN_BYTES
    if (dataLen > body.byteLength - off) {
      throw bad(`frame ${i}: truncated data (data_len ${dataLen}, ${body.byteLength - off} bytes remain)`)
    }
    frames.push({ meta, data: body.subarray(off, off + dataLen), wire: body.subarray(start, off + dataLen) })
    off += dataLen
  }
  return frames
}

type Stage = 'metaLen' | 'meta' | 'dataLen' | 'data'

/**
 * Incremental decoder for a p2p TCP stream: push chunks as they arrive, take frames with next().
 * Bytes are copied out of each chunk during push (sockets may reuse their buffers), each frame's
 * data exactly once into a buffer sized from its validated data_len. maxFrames bounds frames
 * decoded but not yet taken, so a peer flooding tiny frames meets backpressure, not growth.
 * After any error the stream is out of step, so the reader refuses every later push.
 */
export class FrameReader {
  private readonly lim: Required<FrameLimits>
  private stage: Stage = 'metaLen'
  private target: Uint8Array
  private filled = 0
  private meta: Record<string, unknown> = {}
  private readonly ready: Frame[] = []
  private head = 0
  private failure: AppError | null = null
  private index = 0
  private readonly lenBuf = new Uint8Array(DATA_LEN_BYTES)
  private readonly lenView = new DataView(this.lenBuf.buffer)

  constructor(
    limits: FrameLimits,
    private readonly admit?: AdmitBytes,
  ) {
    this.lim = resolveLimits(limits)
    this.target = this.lenBuf.subarray(0, META_LEN_BYTES)
  }

  /** Bytes allocated for the frame being read (its meta, then its data); 0 between frames. */
  get partialBytes(): number {
    return this.stage === 'meta' || this.stage === 'data' ? this.target.byteLength : 0
  }

  /** Consumes a chunk; throws AppError (and stays failed) on the first bad frame. */
  push(chunk: Uint8Array): void {
    if (this.failure) throw this.failure
    try {
      let off = 0
      while (off < chunk.byteLength) {
        const n = Math.min(this.target.byteLength - this.filled, chunk.byteLength - off)
        this.target.set(chunk.subarray(off, off + n), this.filled)
        this.filled += n
        off += n
        if (this.filled === this.target.byteLength) this.advance()
      }
      // A zero-length field completes without consuming bytes (e.g. empty data at chunk end).
      while (this.filled === this.target.byteLength && this.stage !== 'metaLen') this.advance()
    } catch (e) {
      this.failure = e instanceof AppError ? e : bad(`frame stream: ${String(e)}`)
      throw this.failure
    }
  }

  /** The next complete frame, or null until more bytes arrive. */
  next(): Frame | null {
    if (this.head >= this.ready.length) return null
    const frame = this.ready[this.head]!
    this.ready[this.head++] = undefined as unknown as Frame
    if (this.head === this.ready.length) {
      this.ready.length = 0
      this.head = 0
    }
    return frame
  }

  /** Frames decoded and not yet taken. */
  get pending(): number {
    return this.ready.length - this.head
  }

  /** Call when the stream ends: a frame cut off mid-way is an error, not silently dropped. */
  end(): void {
    if (this.failure) throw this.failure
    if (this.stage !== 'metaLen' || this.filled !== 0) {
      this.failure = bad(`frame ${this.index}: stream ended inside the frame (${this.stage})`)
      throw this.failure
    }
  }

  private advance(): void {
    const i = this.index
    const view = this.lenView
    switch (this.stage) {
      case 'metaLen':
        if (this.pending >= this.lim.maxFrames) throw bad(`more than ${this.lim.maxFrames} frames unread`)
        this.expect('meta', this.allocate(checkMetaLen(view.getUint32(0), this.lim, i)))
        return
      case 'meta':
        this.meta = parseMeta(this.target, i)
        this.expect('dataLen', this.lenBuf)
        return
      case 'dataLen':
        this.expect('data', this.allocate(checkDataLen(view.getUint32(0), view.getUint32(4), this.lim, i)))
        return
      case 'data':
        this.ready.push({ meta: this.meta, data: this.target })
        this.meta = {}
        this.index++
        this.expect('metaLen', this.lenBuf.subarray(0, META_LEN_BYTES))
    }
  }

  private allocate(bytes: number): Uint8Array {
    this.admit?.(bytes)
    return new Uint8Array(bytes)
  }

  private expect(stage: Stage, target: Uint8Array): void {
    this.stage = stage
    this.target = target
    this.filled = 0
  }
}

function resolveLimits(l: FrameLimits): Required<FrameLimits> {
  return {
    maxFrameBytes: l.maxFrameBytes,
    maxMetaBytes: l.maxMetaBytes ?? DEFAULT_MAX_META_BYTES,
    maxFrames: l.maxFrames ?? DEFAULT_MAX_FRAMES,
  }
}

function checkMetaLen(len: number, lim: Required<FrameLimits>, i: number): number {
  if (len > lim.maxMetaBytes) throw bad(`frame ${i}: meta_len ${len} exceeds the ${lim.maxMetaBytes}-byte limit`)
  return len
}

function checkDataLen(hi: number, lo: number, lim: Required<FrameLimits>, i: number): number {
  if (hi > MAX_SAFE_HI) throw bad(`frame ${i}: data_len exceeds the largest safe integer`)
  const len = hi * TWO_32 + lo
  if (len > lim.maxFrameBytes) {
    throw new AppError('payload_too_large', `frame ${i}: data_len ${len} exceeds the ${lim.maxFrameBytes}-byte frame limit`)
  }
  return len
}

function parseMeta(bytes: Uint8Array, i: number): Record<string, unknown> {
  let text: string
  try {
    text = decoder.decode(bytes)
  } catch {
    throw bad(`frame ${i}: meta is not valid UTF-8`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw bad(`frame ${i}: meta is not valid JSON`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw bad(`frame ${i}: meta must be a JSON object`)
  }
  return value as Record<string, unknown>
}

function encodeMeta(meta: Record<string, unknown>): Uint8Array {
  // Refuse on the way out too, so a local bug cannot emit a frame every peer would reject.
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) throw new TypeError('frame meta must be an object')
  return encoder.encode(JSON.stringify(meta))
}

function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8')
}
