// The artifact store's housekeeping, run by the service's loop every few minutes: uploads nobody
// finishes, temp files whose upload is gone, and blobs no artifact names any more. Deleting an
// artifact, purging jobs or deleting a pool only removes rows (in their transactions, by foreign
// key cascade): the bytes go here, so a blob shared by several artifacts, or about to be named by an
// upload completing now, is never taken from under them.
import { eq, lt } from 'drizzle-orm'
import { artifacts, artifactUploads } from '../db/schema'
import { DAY_MS, HOUR_MS } from '../time'
import type { BlobStore } from './store'
import type { UploadFiles } from './upload-files'
import type { Ctx } from '../context'

/** An upload no byte has reached for this long is dropped, row and temp file. */
export const UPLOAD_IDLE_MS = DAY_MS
/** A blob younger than this is kept even if no row names it: its upload may be completing now. */
export const BLOB_GRACE_MS = HOUR_MS

export interface CollectReport {
  /** Uploads dropped for idling. */
  uploads: number
  /** Temp files of uploads that were gone. */
  tempFiles: number
  /** Blobs deleted. */
  blobs: number
  /** Artifacts whose blob the store does not have (a restore without the blobs, a lost bucket). */
  missing: number
}

/** What the collector must not step on: uploads being written, and blobs being published. */
export interface InFlight {
  writing(uploadId: string): boolean
  inTurn<T>(sha256: string, fn: () => Promise<T>): Promise<T>
}

export class ArtifactCollector {
  private running = false

  constructor(
    private ctx: Ctx,
    private store: BlobStore,
    private uploads: UploadFiles,
    private inFlight: InFlight,
  ) {}

  async collect(): Promise<CollectReport> {
    const out: CollectReport = { uploads: 0, tempFiles: 0, blobs: 0, missing: 0 }
    // A pass over a large bucket may outlast the interval: one at a time.
    if (this.running) return out
    this.running = true
    try {
      const now = this.ctx.clock.now()
      out.uploads = await this.dropIdleUploads(now)
      out.tempFiles = await this.dropStrayTempFiles()
      Object.assign(out, await this.dropUnnamedBlobs(now))
      const { log } = this.ctx
      if (out.missing > 0) log.warn('artifacts without their blobs', { count: out.missing, store: this.store.location })
      if (out.uploads + out.tempFiles + out.blobs > 0) log.info('artifacts collected', { idle_uploads: out.uploads, temp_files: out.tempFiles, blobs: out.blobs })
      return out
    } finally {
      this.running = false
    }
  }

  private async dropIdleUploads(now: number): Promise<number> {
    const { db } = this.ctx
    let n = 0
    for (const { id } of db.select({ id: artifactUploads.id }).from(artifactUploads).where(lt(artifactUploads.updatedAt, now - UPLOAD_IDLE_MS)).all()) {
      // Checked and deleted in one turn of the event loop: a PUT cannot start in between.
      if (this.inFlight.writing(id)) continue
      db.delete(artifactUploads).where(eq(artifactUploads.id, id)).run()
      await this.uploads.remove(id)
      n++
    }
    return n
  }

  /** Temp files whose row is gone: its job or pool was deleted (the cascade cannot reach a file). */
  private async dropStrayTempFiles(): Promise<number> {
    const { db } = this.ctx
    const hasRow = (id: string) => db.select({ id: artifactUploads.id }).from(artifactUploads).where(eq(artifactUploads.id, id)).get() !== undefined
    let n = 0
    for (const id of await this.uploads.ids()) {
      if (this.inFlight.writing(id) || hasRow(id)) continue
      await this.uploads.remove(id)
      n++
    }
    this.uploads.forgetExcept(new Set(db.select({ id: artifactUploads.id }).from(artifactUploads).all().map((r) => r.id)))
    return n
  }

  private async dropUnnamedBlobs(now: number): Promise<{ blobs: number; missing: number }> {
    const { db } = this.ctx
    const isNamed = (sha256: string) => db.select({ id: artifacts.id }).from(artifacts).where(eq(artifacts.sha256, sha256)).get() !== undefined
    const named = new Set(db.selectDistinct({ sha256: artifacts.sha256 }).from(artifacts).all().map((r) => r.sha256))
    const seen = new Set<string>()
    let blobs = 0
    for await (const blob of this.store.list()) {
      seen.add(blob.sha256)
      if (named.has(blob.sha256) || blob.modifiedAt > now - BLOB_GRACE_MS) continue
      const gone = await this.inFlight.inTurn(blob.sha256, async () => {
        // Asked again inside the blob's turn: an upload may have published it since the listing.
        if (isNamed(blob.sha256)) return false
        const fresh = await this.store.stat(blob.sha256)
        if (fresh === null || fresh.modifiedAt > now - BLOB_GRACE_MS) return false
        await this.store.delete(blob.sha256)
        return true
      })
      if (gone) blobs++
    }
    // Named before the listing began, and not listed: missing (one named since is listed or young).
    let missing = 0
    for (const sha of named) if (!seen.has(sha) && isNamed(sha)) missing++
    return { blobs, missing }
  }
}
