// The temp files of uploads under way, `<state>/artifacts/uploads/<upload id>`, and the running
// SHA-256 of each. Always local, whatever the blob store: an upload is resumed against the leader
// that holds its bytes so far. Memory holds a read buffer per upload, never the artifact: Bun copies
// a body of declared length into the file itself, and the hash reads what landed from the page cache.
import { fstatSync, readSync } from 'node:fs'
import { mkdir, open, readdir, rm, stat, truncate, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { AppError } from '../errors'

const errno = (e: unknown) => (e as NodeJS.ErrnoException).code

async function writeAll(handle: FileHandle, chunk: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < chunk.byteLength; ) {
    const { bytesWritten } = await handle.write(chunk, done, chunk.byteLength - done, position + done)
    done += bytesWritten
  }
}

/** What append reads: a request body (src/http/body.ts BodyStream) or, in tests, any such source. */
export interface UploadBody {
  readonly declaredBytes: number | null
  /** True when toFile can copy the body (declared length, a real connection). */
  readonly copyable: boolean
  toFile(fd: number): Promise<number>
  chunks(): AsyncIterable<Uint8Array>
}

/** How often a copy under way hashes and flushes what has landed, and the least it flushes. */
const SWEEP_MS = 10
const FLUSH_EVERY_BYTES = 32 * 1024 * 1024
const HASH_READ_BYTES = 1024 * 1024
/** Hashing from the page cache runs at 1.5 GB/s here: 4 MiB is under 3 ms of the event loop. */
const TURN_BYTES = 4 * 1024 * 1024

const tooMuch = (room: number) => new AppError('payload_too_large', `The body carries more than the ${room} byte(s) this upload still expects.`)

/** An upload's running hash: what it has taken in so far, and a buffer to read the file through. */
interface Tail {
  hasher: Bun.CryptoHasher
  hashed: number
  buffer: Uint8Array | null
}

/**
 * Feeds bytes [tail.hashed, to) of the file to the hash, from the page cache (they were just
 * written). Synchronous reads, cheaper than the thread pool's; the event loop gets a turn every
 * few MiB, so a large stretch does not hold up other requests.
 */
async function hashTo(fd: number, tail: Tail, to: number): Promise<void> {
  let sinceTurn = 0
  while (tail.hashed < to) {
    const buffer = (tail.buffer ??= new Uint8Array(HASH_READ_BYTES))
    const got = readSync(fd, buffer, 0, Math.min(buffer.byteLength, to - tail.hashed), tail.hashed)
    if (got === 0) throw new Error(`upload file ended at ${tail.hashed}, before ${to}`)
    tail.hasher.update(buffer.subarray(0, got))
    tail.hashed += got
    if ((sinceTurn += got) >= TURN_BYTES && tail.hashed < to) {
      sinceTurn = 0
      await new Promise((r) => setImmediate(r))
    }
  }
}

export class UploadFiles {
  /** The hash of each upload's first `offset` bytes, kept between its PUTs: hashing as the bytes
   * arrive spares reading a 10 GiB file again at the end. After a restart it is rebuilt from the file. */
  private hashers = new Map<string, { offset: number; hasher: Bun.CryptoHasher }>()

  constructor(readonly dir: string) {}

  pathOf(id: string): string {
    // Ids are UUIDs the service minted and the route checked; this guards the join all the same.
    if (!/^[0-9a-f-]{36}$/.test(id)) throw new Error(`not an upload id: ${JSON.stringify(id).slice(0, 60)}`)
    return join(this.dir, id)
  }

  /** Bytes on disk (0 when nothing arrived yet). */
  async size(id: string): Promise<number> {
    try {
      return (await stat(this.pathOf(id))).size
    } catch (e) {
      if (errno(e) === 'ENOENT') return 0
      throw e
    }
  }

  /**
   * Writes the body at `at` (the bytes before it already confirmed), at most `room` bytes. Resolves
   * with the count written; `progress` is told of it so a failure still knows how far it got. A
   * body that would cross `room` is refused (413) and nothing lands past the declared size.
   *
   * A body of declared length is copied into the file by Bun itself (BodyStream.toFile) while what
   * has landed is hashed from the page cache and flushed to the disk, a sweep every few ms; a
   * chunked body is written and hashed chunk by chunk. Either way the file is synced before the
   * count is recorded: a resumed upload never trusts bytes a crash lost.
   */
  async append(id: string, at: number, body: UploadBody, room: number, progress: (written: number) => void): Promise<number> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const handle = await open(this.pathOf(id), at === 0 ? 'w+' : 'r+', 0o600)
    const tail: Tail = { hasher: await this.hasherAt(id, at), hashed: at, buffer: null }
    let written = 0
    try {
      // Bytes past the confirmed offset (a request cut off before its count was recorded) go.
      await handle.truncate(at)
      if (body.declaredBytes !== null && body.declaredBytes > room) throw tooMuch(room)
      // Bun's copy writes from the start of a fresh file; a resumed upload (a rarity) goes by chunks.
      if (body.copyable && at === 0) {
        try {
          await this.copyIn(body, handle, tail)
        } finally {
          written = (await handle.stat()).size - at
          progress(written)
        }
        if (written > room) {
          // Only an in-process Request carries more than it declared; what passed the room goes.
          await handle.truncate(at + room)
          written = room
          throw tooMuch(room)
        }
        return written
      }
      for await (const chunk of body.chunks()) {
        if (written + chunk.byteLength > room) throw tooMuch(room)
        await writeAll(handle, chunk, at + written)
        tail.hasher.update(chunk)
        tail.hashed += chunk.byteLength
        written += chunk.byteLength
        progress(written)
      }
      return written
    } finally {
      // Synced before the offset is recorded: a resumed upload never trusts bytes a crash lost. The
      // sync waits on the disk and the last stretch of hashing on the CPU, so they run side by side.
      const synced = handle.datasync().catch(() => {})
      try {
        // The hash covers exactly the bytes kept, whatever the copy had hashed when it stopped.
        if (tail.hashed > at + written) this.hashers.delete(id)
        else {
          await hashTo(handle.fd, tail, at + written)
          this.hashers.set(id, { offset: at + written, hasher: tail.hasher })
        }
      } finally {
        await synced
        await handle.close()
      }
    }
  }

  /**
   * Bun's copy of the body into the (empty) file, with what has landed hashed and flushed to the
   * disk while the copy runs (so the sync at the end waits for the last stretch only). Not through
   * an O_APPEND descriptor: Bun 1.4.5 writes a body of some 50 kB to 3 MB twice through one.
   */
  private async copyIn(body: UploadBody, handle: FileHandle, tail: Tail): Promise<void> {
    // Two sweeps, each one at a time: hashing what landed, and flushing it (which waits on the
    // disk, so it must not hold the hashing up).
    let flushed = tail.hashed
    let hashing: Promise<void> | null = null
    let flushing: Promise<void> | null = null
    const timer = setInterval(() => {
      const size = fstatSync(handle.fd).size
      if (flushing === null && size - flushed >= FLUSH_EVERY_BYTES) {
        flushing = handle
          .datasync()
          .then(() => void (flushed = size))
          .catch(() => {})
          .finally(() => (flushing = null))
      }
      if (hashing !== null) return
      hashing = hashTo(handle.fd, tail, size)
        .catch(() => {})
        .finally(() => (hashing = null))
    }, SWEEP_MS)
    try {
      await body.toFile(handle.fd)
    } finally {
      clearInterval(timer)
      await Promise.all([hashing, flushing])
    }
  }

  /** The SHA-256 (hex) of the whole file of `size` bytes. */
  async digest(id: string, size: number): Promise<string> {
    return (await this.hasherAt(id, size)).digest('hex')
  }

  private async hasherAt(id: string, offset: number): Promise<Bun.CryptoHasher> {
    const kept = this.hashers.get(id)
    this.hashers.delete(id)
    if (kept && kept.offset === offset) return kept.hasher
    const hasher = new Bun.CryptoHasher('sha256')
    if (offset > 0) for await (const c of Bun.file(this.pathOf(id)).slice(0, offset).stream()) hasher.update(c)
    return hasher
  }

  /** Cuts the temp file back to `size` bytes (the recorded offset), when it is longer. */
  async trim(id: string, size: number): Promise<void> {
    this.hashers.delete(id)
    try {
      if ((await stat(this.pathOf(id))).size > size) await truncate(this.pathOf(id), size)
    } catch (e) {
      if (errno(e) !== 'ENOENT') throw e
    }
  }

  async remove(id: string): Promise<void> {
    this.hashers.delete(id)
    await rm(this.pathOf(id), { force: true })
  }

  /** Ids of the temp files on disk. */
  async ids(): Promise<string[]> {
    try {
      return (await readdir(this.dir)).filter((n) => /^[0-9a-f-]{36}$/.test(n))
    } catch (e) {
      if (errno(e) === 'ENOENT') return []
      throw e
    }
  }

  /** Forgets running hashes of uploads that are gone (completed, dropped, their job deleted). */
  forgetExcept(live: Set<string>): void {
    for (const id of this.hashers.keys()) if (!live.has(id)) this.hashers.delete(id)
  }
}
