// The temp files of uploads under way, `<state>/artifacts/uploads/<upload id>`, and the running
// SHA-256 of each. Always local, whatever the blob store: an upload is resumed against the leader
// that holds its bytes so far. Bytes are appended a chunk at a time, so memory holds one chunk per
// upload, never the artifact.
import { mkdir, open, readdir, rm, stat, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { AppError } from '../errors'

const errno = (e: unknown) => (e as NodeJS.ErrnoException).code

async function writeAll(handle: FileHandle, chunk: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < chunk.byteLength; ) {
    const { bytesWritten } = await handle.write(chunk, done, chunk.byteLength - done, position + done)
    done += bytesWritten
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
   * Writes `chunks` at `at` (the bytes before it already confirmed), at most `room` bytes. Resolves
   * with the count written; `written` is told of progress so a failure still knows how far it got.
   * A chunk that would cross `room` is not written: 413, and nothing lands past the declared size.
   */
  async append(id: string, at: number, chunks: AsyncIterable<Uint8Array>, room: number, progress: (written: number) => void): Promise<number> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const handle = await open(this.pathOf(id), at === 0 ? 'w' : 'r+', 0o600)
    const hasher = await this.hasherAt(id, at)
    let written = 0
    try {
      // Bytes past the confirmed offset (a request cut off before its count was recorded) go.
      await handle.truncate(at)
      for await (const chunk of chunks) {
        if (written + chunk.byteLength > room) throw new AppError('payload_too_large', `The body carries more than the ${room} byte(s) this upload still expects.`)
        await writeAll(handle, chunk, at + written)
        hasher.update(chunk)
        written += chunk.byteLength
        progress(written)
      }
      return written
    } finally {
      // Synced before the offset is recorded: a resumed upload never trusts bytes a crash lost.
      await handle.sync().catch(() => {})
      await handle.close()
      this.hashers.set(id, { offset: at + written, hasher })
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
