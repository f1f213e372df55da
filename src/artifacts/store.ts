// Where artifact bytes live, behind one small interface (like the hubs): files under the state
// directory, or an S3 bucket. Blobs are content-addressed (the SHA-256 of their bytes is their
// name), so a blob never changes once written, two artifacts with the same bytes share one, and a
// plain copy of the store at any moment is consistent. The store knows nothing of rows: which blobs
// are still named is the service's question (src/artifacts/service.ts collects the others).
import { mkdir, open, readdir, rename, rm, stat, utimes, copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readAhead, withDeadline } from './read-ahead'
import { parseClaim, type LeaderClaim } from './claim'
import type { ArtifactStoreConfig } from '../config'

export interface BlobInfo {
  sha256: string
  size: number
  /** When the blob was last written (ms): a young blob may belong to an upload completing right now. */
  modifiedAt: number
}

/** Bytes [start, end) of a blob. */
export interface ByteRange {
  start: number
  end: number
}

export interface BlobStore {
  /** Where the blobs are, for logs and the operator (a directory or an s3:// URL). */
  readonly location: string
  /**
   * True when the store is this leader's alone (files under its state directory): any blob in it no
   * artifact names is its garbage. False for a bucket, which another leader may write to as well:
   * only blobs this leader let go of are deleted (collector.ts).
   */
  readonly exclusive: boolean
  /**
   * Takes the verified file at `path` into the store under its hash; the file is gone afterwards.
   * A blob already there is kept and its age renewed, so the collector does not take it from
   * under the artifact about to name it; one of another size than the file (cut short by an
   * interrupted copy or restore) is replaced by it.
   */
  putFile(sha256: string, path: string): Promise<void>
  stat(sha256: string): Promise<BlobInfo | null>
  read(sha256: string, range?: ByteRange): ReadableStream<Uint8Array>
  /**
   * The bytes (`size` of them: the range's, or the blob's), opened for an answer: resolves once the
   * store serves them, so a store that cannot is an error before any header is sent, never a 200
   * whose body breaks off; the stream errors rather than ending short of `size`.
   */
  open(sha256: string, size: number, range?: ByteRange): Promise<ReadableStream<Uint8Array>>
  delete(sha256: string): Promise<void>
  list(): AsyncIterable<BlobInfo>
  /** Throws when the store cannot be used (a wrong key, a missing bucket, an endpoint down). */
  check(): Promise<void>
  /**
   * Claims the store for this leader (claim.ts): writes `mine` when no claim stands, and answers
   * the claim that stands then (another leader's when the store is shared). A store that is this
   * leader's alone answers `mine`.
   */
  claim(mine: LeaderClaim): Promise<LeaderClaim>
}

const HEX = /^[0-9a-f]{64}$/

/** Every path and key is built from a checked hash: nothing a caller sent can walk out of the store. */
function checked(sha256: string): string {
  if (!HEX.test(sha256)) throw new Error(`not a SHA-256 hex digest: ${JSON.stringify(sha256).slice(0, 80)}`)
  return sha256
}

const errno = (e: unknown) => (e as NodeJS.ErrnoException).code

/** `<root>/sha256/<first 2 hex>/<hex>`: 256 directories, none with millions of entries. */
export class LocalBlobStore implements BlobStore {
  readonly exclusive = true

  constructor(readonly root: string) {}

  get location(): string {
    return this.root
  }

  private pathOf(sha256: string): string {
    const hex = checked(sha256)
    return join(this.root, 'sha256', hex.slice(0, 2), hex)
  }

  async putFile(sha256: string, path: string): Promise<void> {
    const dest = this.pathOf(sha256)
    const dir = join(dest, '..')
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const there = await this.stat(sha256)
    // A blob of the same hash but another size is damaged (the file was verified against the hash).
    if (there !== null && there.size === (await stat(path)).size) {
      const now = new Date()
      await utimes(dest, now, now)
      await rm(path, { force: true })
      return
    }
    try {
      // The upload's temp file is complete, synced and verified: a rename publishes it whole or not at all.
      await rename(path, dest)
    } catch (e) {
      if (errno(e) !== 'EXDEV') throw e
      // The uploads directory sits on another file system: copy beside the blob, then rename.
      const tmp = join(dir, `.${sha256}.${process.pid}.${Date.now()}.partial`)
      try {
        await copyFile(path, tmp)
        const h = await open(tmp, 'r+')
        await h.sync().finally(() => h.close())
        await rename(tmp, dest)
      } finally {
        await rm(tmp, { force: true })
      }
      await rm(path, { force: true })
    }
  }

  async stat(sha256: string): Promise<BlobInfo | null> {
    try {
      const s = await stat(this.pathOf(sha256))
      return { sha256, size: s.size, modifiedAt: s.mtimeMs }
    } catch (e) {
      if (errno(e) === 'ENOENT') return null
      throw e
    }
  }

  read(sha256: string, range?: ByteRange): ReadableStream<Uint8Array> {
    const file = Bun.file(this.pathOf(sha256))
    return (range ? file.slice(range.start, range.end) : file).stream()
  }

  async open(sha256: string, _size: number, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    // A file's own stream: Bun sends it with its Content-Length (a wrapped stream goes chunked).
    // The caller checked the file's size just now; a local read that fails later is a disk fault.
    return this.read(sha256, range)
  }

  async delete(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { force: true })
  }

  async claim(mine: LeaderClaim): Promise<LeaderClaim> {
    return mine
  }

  async check(): Promise<void> {
    // Created on the first upload; until then a missing directory is no fault.
    await readdir(this.root).catch((e) => {
      if (errno(e) !== 'ENOENT') throw e
    })
  }

  async *list(): AsyncIterable<BlobInfo> {
    const top = join(this.root, 'sha256')
    let dirs: string[]
    try {
      dirs = await readdir(top)
    } catch (e) {
      if (errno(e) === 'ENOENT') return
      throw e
    }
    for (const d of dirs.sort()) {
      if (!/^[0-9a-f]{2}$/.test(d)) continue
      for (const name of await readdir(join(top, d)).catch(() => [] as string[])) {
        if (!HEX.test(name) || !name.startsWith(d)) continue // partial copies, strays
        const info = await this.stat(name)
        if (info !== null) yield info
      }
    }
  }
}

export interface S3Settings {
  bucket: string
  prefix: string
  endpoint: string | null
  region: string
  accessKeyId: string
  secretAccessKey: string
  sessionToken: string | null
}

/**
 * How long an S3 call may go without an answer: Bun's client waits minutes for a bucket that
 * stopped answering, holding the request (and the fellow) that long; past the deadline the
 * caller gets an error, answered 503 with Retry-After. A blob write gets a second more per MiB
 * (it may carry gigabytes: 1 MiB/s at the least), a download as long between two chunks.
 */
export interface S3Deadlines {
  callMs: number
  writeMsPerMiB: number
}
export const S3_DEADLINES: S3Deadlines = { callMs: 30_000, writeMsPerMiB: 1_000 }

/** `<prefix>/sha256/<first 2 hex>/<hex>` in one bucket, through Bun's built-in S3 client. */
export class S3BlobStore implements BlobStore {
  readonly exclusive = false
  private client: Bun.S3Client
  private base: string
  /** The prefix with its slash: where the claim object lives, beside `sha256/`. */
  private root: string

  constructor(
    private s: S3Settings,
    private deadlines: S3Deadlines = S3_DEADLINES,
  ) {
    // Every setting given explicitly: Bun's client would otherwise read S3_* and AWS_* itself,
    // and src/config.ts is the one place that reads the environment.
    this.client = new Bun.S3Client({
      bucket: s.bucket,
      region: s.region,
      accessKeyId: s.accessKeyId,
      secretAccessKey: s.secretAccessKey,
      ...(s.sessionToken !== null ? { sessionToken: s.sessionToken } : {}),
      ...(s.endpoint !== null ? { endpoint: s.endpoint } : {}),
    })
    this.base = keyBase(s.prefix)
    this.root = s.prefix === '' ? '' : `${s.prefix}/`
  }

  get location(): string {
    return s3BlobsLocation(this.s)
  }

  private keyOf(sha256: string): string {
    const hex = checked(sha256)
    return `${this.base}${hex.slice(0, 2)}/${hex}`
  }

  async putFile(sha256: string, path: string): Promise<void> {
    // Written even when the object exists: S3 has no cheap "touch", and rewriting the same bytes
    // renews LastModified, which is the age the collector reads.
    const { size } = await stat(path)
    const ms = this.deadlines.callMs + Math.ceil(size / 1024 ** 2) * this.deadlines.writeMsPerMiB
    await withDeadline(this.client.write(this.keyOf(sha256), Bun.file(path), { type: 'application/octet-stream' }), ms, 'writing the object')
    await rm(path, { force: true })
  }

  async stat(sha256: string): Promise<BlobInfo | null> {
    try {
      const s = await withDeadline(this.client.file(this.keyOf(sha256)).stat(), this.deadlines.callMs, 'asking for the object')
      return { sha256, size: s.size, modifiedAt: s.lastModified.getTime() }
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code === 'NoSuchKey' || code === 'NotFound' || code === 'ERR_S3_FILE_NOT_FOUND') return null
      throw e
    }
  }

  read(sha256: string, range?: ByteRange): ReadableStream<Uint8Array> {
    const file = this.client.file(this.keyOf(sha256))
    return (range ? file.slice(range.start, range.end) : file).stream()
  }

  open(sha256: string, size: number, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    return readAhead(this.read(sha256, range), size, this.deadlines.callMs)
  }

  async delete(sha256: string): Promise<void> {
    await withDeadline(this.client.delete(this.keyOf(sha256)), this.deadlines.callMs, 'deleting the object')
  }

  async claim(mine: LeaderClaim): Promise<LeaderClaim> {
    const file = this.client.file(`${this.root}leader.json`)
    let text: string | null = null
    try {
      text = await withDeadline(file.text(), this.deadlines.callMs, 'reading the claim')
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code !== 'NoSuchKey' && code !== 'NotFound' && code !== 'ERR_S3_FILE_NOT_FOUND') throw e
    }
    const standing = text === null ? null : parseClaim(text)
    if (standing !== null) return standing
    await withDeadline(file.write(JSON.stringify(mine), { type: 'application/json' }), this.deadlines.callMs, 'writing the claim')
    return mine
  }

  async check(): Promise<void> {
    await withDeadline(this.client.list({ prefix: this.base, maxKeys: 1 }), this.deadlines.callMs, 'listing the objects')
  }

  async *list(): AsyncIterable<BlobInfo> {
    let continuationToken: string | undefined
    do {
      const page = await withDeadline(this.client.list({ prefix: this.base, ...(continuationToken ? { continuationToken } : {}) }), this.deadlines.callMs, 'listing the objects')
      for (const o of page.contents ?? []) {
        const name = o.key.slice(o.key.lastIndexOf('/') + 1)
        if (!HEX.test(name) || o.key !== this.keyOf(name)) continue
        yield { sha256: name, size: o.size ?? 0, modifiedAt: o.lastModified ? Date.parse(o.lastModified) : 0 }
      }
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined
    } while (continuationToken)
  }
}

const keyBase = (prefix: string) => `${prefix === '' ? '' : `${prefix}/`}sha256/`

/** Where an S3 store's blobs are, `s3://bucket/prefix/sha256/` (also for `svc admin backup`). */
export const s3BlobsLocation = (where: { bucket: string; prefix: string }) => `s3://${where.bucket}/${keyBase(where.prefix)}`

/** Where a local store's blobs are: `<state>/artifacts/blobs`. */
export const localBlobsDir = (stateDir: string) => join(stateDir, 'artifacts', 'blobs')

/** The store SVC_ARTIFACTS_URL names: unset, files under `<state>/artifacts/blobs`. */
export function blobStoreFor(cfg: ArtifactStoreConfig, stateDir: string): BlobStore {
  if (cfg.kind === 's3') return new S3BlobStore(cfg)
  return new LocalBlobStore(localBlobsDir(stateDir))
}
