// The artifact store's housekeeping, run by the service's loop every few minutes: uploads nobody
// finishes, temp files whose upload is gone, and blobs no artifact names any more. Deleting an
// artifact, purging jobs or deleting a pool only removes rows (in their transactions, by foreign
// key cascade; a trigger records the blob the last row let go of as a candidate in the same
// transaction): the bytes go here, so a blob shared by several artifacts, or about to be named by
// an upload completing now, is never taken from under them. On a bucket only candidates are
// deleted: a blob this leader never named may be another leader's (a staging leader or a restore
// drill on the same prefix used to wipe production's blobs).
import { eq, lt } from 'drizzle-orm'
import { artifactBlobCandidates, artifacts, artifactUploads } from '../db/schema'
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
  /**
   * Blobs in a bucket no artifact here names and this leader never let go of: another leader's on
   * the same prefix, or unnamed before the upgrade that brought candidates. Left alone.
   */
  unclaimed: number
}

/** Candidates looked at in one pass (the rest wait for the next). */
const CANDIDATES_PER_PASS = 10_000

/** What the collector must not step on: uploads being written, and blobs being published. */
export interface InFlight {
  writing(uploadId: string): boolean
  inTurn<T>(sha256: string, fn: () => Promise<T>): Promise<T>
  /** False while another leader has claimed the store's prefix: no blob is deleted then. */
  ownsStore(): Promise<boolean>
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
    const out: CollectReport = { uploads: 0, tempFiles: 0, blobs: 0, missing: 0, unclaimed: 0 }
    // A pass over a large bucket may outlast the interval: one at a time.
    if (this.running) return out
    this.running = true
    try {
      const now = this.ctx.clock.now()
      out.uploads = await this.dropIdleUploads(now)
      out.tempFiles = await this.dropStrayTempFiles()
      const mayDelete = await this.inFlight.ownsStore()
      out.blobs = mayDelete ? await this.dropCandidates(now) : 0
      const listing = await this.sweepListing(now, mayDelete)
      out.blobs += listing.blobs
      out.missing = listing.missing
      out.unclaimed = listing.unclaimed
      const { log } = this.ctx
      if (out.missing > 0) log.warn('artifacts without their blobs', { count: out.missing, store: this.store.location })
      if (out.unclaimed > 0) log.info('blobs no artifact of this leader names, left alone (another leader on this prefix, or unnamed before the upgrade)', { count: out.unclaimed, store: this.store.location })
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

  /** Deletes a blob no artifact names, in its turn (an upload may publish it meanwhile); true when it went. */
  private deleteIfUnnamed(sha256: string, now: number): Promise<boolean> {
    const { db } = this.ctx
    return this.inFlight.inTurn(sha256, async () => {
      // Asked inside the blob's turn: an upload may have published it since it was listed.
      if (db.select({ id: artifacts.id }).from(artifacts).where(eq(artifacts.sha256, sha256)).get() !== undefined) return false
      const fresh = await this.store.stat(sha256)
      if (fresh === null || fresh.modifiedAt > now - BLOB_GRACE_MS) return false
      await this.store.delete(sha256)
      return true
    })
  }

  /**
   * The blobs this leader let go of (or left half-written): deleted once no artifact names them and
   * they are older than the grace; a candidate named again, or gone from the store, is forgotten.
   */
  private async dropCandidates(now: number): Promise<number> {
    const { db } = this.ctx
    let n = 0
    for (const { sha256 } of db.select({ sha256: artifactBlobCandidates.sha256 }).from(artifactBlobCandidates).limit(CANDIDATES_PER_PASS).all()) {
      await this.inFlight.inTurn(sha256, async () => {
        // Inside the blob's turn: no upload of this leader is writing it or naming it meanwhile.
        const forget = () => void db.delete(artifactBlobCandidates).where(eq(artifactBlobCandidates.sha256, sha256)).run()
        if (db.select({ id: artifacts.id }).from(artifacts).where(eq(artifacts.sha256, sha256)).get() !== undefined) return forget()
        const blob = await this.store.stat(sha256)
        if (blob === null) return forget()
        // Young: an upload of the same bytes may be naming it now (on another leader of the bucket).
        if (blob.modifiedAt > now - BLOB_GRACE_MS) return
        await this.store.delete(sha256)
        forget()
        n++
      })
    }
    return n
  }

  /**
   * One pass over the store's listing: artifacts whose blob is missing are counted; blobs no artifact
   * names are deleted when the store is this leader's alone (local files: strays of a crash, blobs
   * unnamed before candidates were recorded), and only counted on a bucket another leader may share.
   */
  private async sweepListing(now: number, mayDelete: boolean): Promise<{ blobs: number; missing: number; unclaimed: number }> {
    const { db } = this.ctx
    const isNamed = (sha256: string) => db.select({ id: artifacts.id }).from(artifacts).where(eq(artifacts.sha256, sha256)).get() !== undefined
    const isCandidate = (sha256: string) => db.select({ s: artifactBlobCandidates.sha256 }).from(artifactBlobCandidates).where(eq(artifactBlobCandidates.sha256, sha256)).get() !== undefined
    const named = new Set(db.selectDistinct({ sha256: artifacts.sha256 }).from(artifacts).all().map((r) => r.sha256))
    const seen = new Set<string>()
    let blobs = 0
    let unclaimed = 0
    for await (const blob of this.store.list()) {
      seen.add(blob.sha256)
      if (named.has(blob.sha256) || blob.modifiedAt > now - BLOB_GRACE_MS) continue
      if (!this.store.exclusive || !mayDelete) {
        if (!isNamed(blob.sha256) && !isCandidate(blob.sha256)) unclaimed++
        continue
      }
      if (await this.deleteIfUnnamed(blob.sha256, now)) blobs++
    }
    // Named before the listing began, and not listed: missing (one named since is listed or young).
    let missing = 0
    for (const sha of named) if (!seen.has(sha) && isNamed(sha)) missing++
    return { blobs, missing, unclaimed }
  }
}
