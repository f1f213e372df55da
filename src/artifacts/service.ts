// The artifact store: fellows upload checkpoints and model files, and people model files for
// their pools' engines (resumable, checked against the SHA-256 they declared); operators of the
// pool and its fellows read them, and a loop drops idle uploads and blobs no artifact names. Rows
// live in the state database; bytes in the blob store (store.ts) and, while an upload is under
// way, in its temp file (upload-files.ts).
import { and, desc, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm'
import { join } from 'node:path'
import { artifactBlobCandidates, artifacts, artifactUploads, jobs, poolNodes } from '../db/schema'
import { AppError, invalid, isStorageFull, notFound, storageFull } from '../errors'
import { newId } from '../crypto'
import { recordAudit } from '../audit/service'
import { iso } from '../time'
import { memberRole } from '../pools/service'
import { ACTIVE } from '../jobs/model'
import { inScope, poolExists, scopeOf } from '../pools/scope'
import { UploadFiles, type UploadBody } from './upload-files'
import { ArtifactCollector, type CollectReport } from './collector'
import { describeStoreFailure } from './store-errors'
import { claimOf } from './claim'
import type { BlobStore, ByteRange } from './store'
import type { Ctx } from '../context'
import type { Db } from '../db/client'
import type { Actor, Caller, NodeCaller, UserCaller } from '../caller'
import type { LoopSpec } from '../loops'
import type { Artifact, ArtifactFilter, UploadInput, UploadState } from './model'

type Row = typeof artifacts.$inferSelect
type UploadRow = typeof artifactUploads.$inferSelect

export const COLLECT_INTERVAL_MS = 5 * 60_000
/** The most artifacts one listing holds (newest first). */
export const MAX_LIST = 1000

const toArtifact = (r: Row): Artifact => ({
  id: r.id,
  pool_id: r.poolId,
  job_id: r.jobId,
  stage: r.stage,
  kind: r.kind,
  name: r.name,
  size_bytes: r.sizeBytes,
  sha256: r.sha256,
  step: r.step,
  fellow_id: r.fellowId,
  user_id: r.userId,
  created_at: iso(r.createdAt),
})

const gib = (n: number) => `${(n / 1024 ** 3).toFixed(2)} GiB`

/** Who may open an upload: a fellow (to its own pool) or a person (to a pool of theirs). */
export type Uploader = NodeCaller | UserCaller

export type WriteResult = { done: false; state: UploadState } | { done: true; artifact: Artifact }

/** Uploads one person (or fellow) may have open in a pool at once. */
export const MAX_OPEN_UPLOADS = 100

export class ArtifactService {
  readonly uploads: UploadFiles
  /** Uploads a request is writing now: one writer each (an upload lives on one leader, see UploadFiles). */
  private writing = new Set<string>()
  /** The tail of each blob's turns (inTurn). */
  private turns = new Map<string, Promise<unknown>>()
  private collector: ArtifactCollector

  constructor(
    private ctx: Ctx,
    readonly store: BlobStore,
  ) {
    this.uploads = new UploadFiles(join(ctx.cfg.stateDir, 'artifacts', 'uploads'))
    this.collector = new ArtifactCollector(ctx, store, this.uploads, { writing: (id) => this.writing.has(id), inTurn: (sha, fn) => this.inTurn(sha, fn), ownsStore: () => this.ownsStore() })
  }

  /**
   * The collection loop; asking for it (the leader starting) also checks a bucket once. Local
   * files need no check: the start has made and checked their directories (server.ts), and the
   * check's read and log line at every start cost a local leader idle memory for nothing.
   */
  loops(): LoopSpec[] {
    if (!this.store.exclusive) void this.checkStore()
    return [{ name: 'artifacts-collect', intervalMs: COLLECT_INTERVAL_MS, run: async () => void (await this.collect()) }]
  }

  // ---- uploads (fellows, people) ---------------------------------------------------------------

  /**
   * Opens an upload. A fellow's pool is its own, read in the writing transaction (never from the
   * body); a person names one of their pools (any member may add to it; an admin, any pool). The
   * quota check runs in the same transaction as the insert it guards.
   */
  beginUpload(by: Uploader, input: UploadInput): UploadState & { resumed: boolean } {
    const { cfg, clock } = this.ctx
    if (input.stage !== undefined && input.job_id === undefined) throw invalid('body /stage: a stage belongs to a job; send job_id too.', { errors: [{ path: '/stage', message: 'needs job_id' }] })
    if (input.kind === 'checkpoint' && (input.job_id === undefined || input.stage === undefined)) {
      throw invalid('body: a checkpoint names its job_id and stage, so a fellow taking the stage over can find it.', { errors: [{ path: '/job_id', message: 'required for a checkpoint' }] })
    }
    // A name is saved as a file's name by whoever downloads it: "." and ".." name directories.
    if (input.name === '.' || input.name === '..') throw invalid(`body /name: "${input.name}" names a directory, not a file.`, { errors: [{ path: '/name', message: 'must not be "." or ".."' }] })
    if (input.size_bytes > cfg.artifactMaxBytes) {
      throw new AppError('payload_too_large', `An artifact may hold at most ${cfg.artifactMaxBytes} bytes (SVC_ARTIFACT_MAX_BYTES); this one declares ${input.size_bytes}.`, { max_bytes: cfg.artifactMaxBytes })
    }
    if (by.kind === 'node' && input.pool_id !== undefined) {
      throw invalid("body /pool_id: a fellow's artifacts go to its own pool; send no pool_id.", { errors: [{ path: '/pool_id', message: 'not for a fellow' }] })
    }
    if (by.kind === 'user' && input.pool_id === undefined) {
      throw invalid('body /pool_id: name the pool the artifact is for.', { errors: [{ path: '/pool_id', message: 'required' }] })
    }
    return this.ctx.db.transaction((tx) => {
      let poolId: string
      let tokenless = false
      if (by.kind === 'node') {
        const binding = tx.select({ poolId: poolNodes.poolId, owner: poolNodes.ownerUserId }).from(poolNodes).where(eq(poolNodes.fellowId, by.fellowId)).get()
        if (!binding) throw new AppError('forbidden', 'This fellow belongs to no pool, so it cannot store artifacts.')
        // A fellow nobody added (it registered without a join token, into the default pool) stores
        // only the files of the job stages it runs: anyone who can reach the leader can register
        // one, and it was free storage for anyone, up to the pool's quota.
        tokenless = binding.owner === null
        if (tokenless && (input.kind !== 'checkpoint' || input.job_id === undefined)) {
          throw new AppError('forbidden', "A fellow that joined without a join token stores only the checkpoints of the job stages it runs; a pool member's join token lets it store other files.")
        }
        poolId = binding.poolId
      } else {
        poolId = input.pool_id!
        if (!inScope(scopeOf(tx, by), poolId) || !poolExists(tx, poolId)) throw notFound('Pool')
      }
      if (input.job_id !== undefined) {
        const job = tx.select({ poolId: jobs.poolId, createdBy: jobs.createdBy, assignments: jobs.assignments, status: jobs.status }).from(jobs).where(eq(jobs.id, input.job_id)).get()
        if (!job || job.poolId !== poolId) throw notFound('Job')
        // A job's files decide what its stages resume from (a checkpoint is unpacked and handed to
        // the runner of whichever fellow takes the stage over): only its own fellows, for the stage
        // they hold, and the people who may steer the job store them. Any member used to.
        if (by.kind === 'node') {
          // A job's stages stay assigned once it ended: a fellow nobody added stores files only for
          // a job under way (or one that ended was storage for it for good).
          if (tokenless && !ACTIVE.has(job.status)) throw new AppError('forbidden', `The job is ${job.status}: a fellow that joined without a join token stores files only for a job under way.`)
          if (!job.assignments.some((a) => a.fellow_id === by.fellowId && (input.stage === undefined || a.stage === input.stage))) {
            throw new AppError('forbidden', input.stage === undefined ? 'This fellow has no stage of that job.' : `This fellow does not hold stage ${input.stage} of that job; only the fellow running a stage stores its checkpoints.`)
          }
        } else if (by.role !== 'admin' && job.createdBy !== by.userId && memberRole(tx, poolId, by.userId) !== 'owner') {
          throw new AppError('forbidden', "Only the job's creator, the pool owner or an admin can store files for a job.")
        }
      }
      // The same file opened again by the same uploader (a CLI run again after it was killed, a
      // browser tab reloaded): the upload under way is resumed where it stands. A second one took
      // the file's size from the quota again, for a day, and started from byte 0.
      const same = tx
        .select()
        .from(artifactUploads)
        .where(
          and(
            eq(artifactUploads.poolId, poolId),
            by.kind === 'node' ? eq(artifactUploads.fellowId, by.fellowId) : eq(artifactUploads.userId, by.userId),
            eq(artifactUploads.kind, input.kind),
            eq(artifactUploads.name, input.name),
            eq(artifactUploads.sizeBytes, input.size_bytes),
            eq(artifactUploads.sha256, input.sha256),
            input.job_id === undefined ? isNull(artifactUploads.jobId) : eq(artifactUploads.jobId, input.job_id),
            input.stage === undefined ? isNull(artifactUploads.stage) : eq(artifactUploads.stage, input.stage),
            input.step === undefined ? isNull(artifactUploads.step) : eq(artifactUploads.step, input.step),
          ),
        )
        .all()
        .find((u) => !this.writing.has(u.id))
      if (same) {
        tx.update(artifactUploads).set({ updatedAt: clock.now() }).where(eq(artifactUploads.id, same.id)).run()
        return { upload_id: same.id, offset: same.receivedBytes, size_bytes: same.sizeBytes, resumed: true }
      }
      // Declarations cost a row and a temp file for a day, and each new one looks at every open
      // one of the pool: the quota counts bytes, so empty ones were bounded only by request rate.
      const mine = by.kind === 'node' ? eq(artifactUploads.fellowId, by.fellowId) : eq(artifactUploads.userId, by.userId)
      const open = tx.select({ n: sql<number>`count(*)` }).from(artifactUploads).where(and(eq(artifactUploads.poolId, poolId), mine)).get()?.n ?? 0
      if (open >= MAX_OPEN_UPLOADS) {
        throw new AppError('conflict', `${open} uploads of yours are under way in this pool, the most at once; finish them, or wait: an idle one is dropped after a day.`, { limit: MAX_OPEN_UPLOADS })
      }
      const stored = tx.select({ n: sql<number>`coalesce(sum(${artifacts.sizeBytes}), 0)` }).from(artifacts).where(eq(artifacts.poolId, poolId)).get()?.n ?? 0
      const pending = tx.select({ n: sql<number>`coalesce(sum(${artifactUploads.sizeBytes}), 0)` }).from(artifactUploads).where(eq(artifactUploads.poolId, poolId)).get()?.n ?? 0
      const used = stored + pending
      const quota = cfg.artifactPoolQuotaBytes
      if (used + input.size_bytes > quota) {
        throw new AppError(
          'artifact_quota_exceeded',
          `This pool uses ${used} of its ${quota} artifact bytes (${gib(used)} of ${gib(quota)}, stored and being uploaded); ${input.size_bytes} more do not fit. Delete artifacts, or wait for uploads under way.`,
          { used_bytes: used, quota_bytes: quota },
        )
      }
      const now = clock.now()
      const row: UploadRow = {
        id: newId(),
        poolId,
        jobId: input.job_id ?? null,
        stage: input.stage ?? null,
        kind: input.kind,
        name: input.name,
        sizeBytes: input.size_bytes,
        sha256: input.sha256,
        step: input.step ?? null,
        fellowId: by.kind === 'node' ? by.fellowId : null,
        userId: by.kind === 'user' ? by.userId : null,
        receivedBytes: 0,
        createdAt: now,
        updatedAt: now,
      }
      tx.insert(artifactUploads).values(row).run()
      return { upload_id: row.id, offset: 0, size_bytes: row.sizeBytes, resumed: false }
    })
  }

  /**
   * An upload the caller began; any other (someone else's, finished, dropped) is "not found", as
   * is a person's upload to a pool they have left since.
   */
  private ownUpload(by: Uploader, id: string, db: Db = this.ctx.db): UploadRow {
    const row = db.select().from(artifactUploads).where(eq(artifactUploads.id, id)).get()
    if (!row || (by.kind === 'node' ? row.fellowId !== by.fellowId : row.userId !== by.userId || !inScope(scopeOf(db, by), row.poolId))) throw notFound('Upload')
    return row
  }

  /** Where the upload stands: the recorded count, unless the temp file holds fewer (a crash lost them). */
  private async offsetOf(row: UploadRow): Promise<number> {
    const onDisk = await this.uploads.size(row.id)
    if (onDisk >= row.receivedBytes) return row.receivedBytes
    this.ctx.db.update(artifactUploads).set({ receivedBytes: onDisk }).where(eq(artifactUploads.id, row.id)).run()
    return onDisk
  }

  async uploadState(by: Uploader, id: string): Promise<UploadState> {
    const row = this.ownUpload(by, id)
    return { upload_id: row.id, offset: this.writing.has(id) ? row.receivedBytes : await this.offsetOf(row), size_bytes: row.sizeBytes }
  }

  /**
   * Drops an upload of the caller's, row and temp file (the uploader gives up on it, or must free the
   * space a partial file holds on a full disk); not while a request writes it (409). The file goes
   * first: it frees the room the row's deletion may need.
   */
  async cancelUpload(by: Uploader, id: string): Promise<void> {
    const row = this.ownUpload(by, id)
    if (this.writing.has(id)) throw new AppError('conflict', 'Another request is writing this upload now; cancel it once that request has ended.', { offset: row.receivedBytes })
    // Held as if written, so no PUT starts between the file's removal and the row's.
    this.writing.add(id)
    try {
      await this.uploads.remove(id)
      this.ctx.db.delete(artifactUploads).where(eq(artifactUploads.id, id)).run()
    } finally {
      this.writing.delete(id)
    }
  }

  /** Checks the caller may write the upload, before the route looks at the body. */
  checkUpload(by: Uploader, id: string): void {
    this.ownUpload(by, id)
  }

  /**
   * Appends a PUT's body at `offset`, which must be where the upload stands (else 409 with the
   * offset to resume from). The bytes received are recorded even when the body breaks off, so the
   * fellow resumes where it got to. The last byte completes the upload (see complete).
   */
  async write(by: Uploader, id: string, offset: number, body: UploadBody, clientIp?: string): Promise<WriteResult> {
    const row = this.ownUpload(by, id)
    if (this.writing.has(id)) throw new AppError('conflict', 'Another request is writing this upload now.', { offset: row.receivedBytes })
    this.writing.add(id)
    try {
      const at = await this.offsetOf(row)
      if (offset !== at) throw new AppError('conflict', `The upload stands at byte ${at}, not ${offset}: resume from there.`, { offset: at })
      const room = row.sizeBytes - at
      if (body.declaredBytes !== null && body.declaredBytes > room) {
        throw new AppError('payload_too_large', `The body declares ${body.declaredBytes} byte(s); this upload expects ${room} more.`, { offset: at })
      }
      let written = 0
      let failure: unknown = null
      try {
        written = await this.uploads.append(id, at, body, room, (n) => (written = n))
      } catch (e) {
        failure = e
      }
      // A request that brought nothing changes nothing (a refusal leaves the state as it was).
      if (written > 0) {
        try {
          this.ctx.db.update(artifactUploads).set({ receivedBytes: at + written, updatedAt: this.ctx.clock.now() }).where(eq(artifactUploads.id, id)).run()
        } catch (e) {
          // No room to record how far it got (SQLITE_FULL on a full disk): the bytes past the
          // recorded offset go at once, or the partial file held the disk full with nothing to
          // drop it; and the write's own failure is what the client hears, not this one.
          await this.uploads.trim(id, at).catch((te) => this.ctx.log.error('upload temp file not trimmed', { upload_id: id, error: String((te as Error)?.message ?? te) }))
          written = 0
          if (failure === null) failure = e
        }
      }
      if (failure !== null) {
        if (failure instanceof AppError) throw new AppError(failure.code, failure.message, { ...failure.extra, offset: at + written })
        if (isStorageFull(failure)) throw storageFull({ offset: at + written })
        throw failure
      }
      if (at + written < row.sizeBytes) return { done: false, state: { upload_id: id, offset: at + written, size_bytes: row.sizeBytes } }
      return { done: true, artifact: await this.complete(by, row, clientIp) }
    } finally {
      this.writing.delete(id)
    }
  }

  /**
   * All bytes are in: a wrong hash drops the upload whole (422); a right one moves the file into
   * the blob store (kept once: a blob already there is reused) and turns the upload into an
   * artifact in one transaction. An upload dropped meanwhile (its job purged), or one its person
   * may no longer write (removed from the pool while the bytes came), is "not found"; the blob it
   * left is garbage for the collector.
   */
  private async complete(by: Uploader, row: UploadRow, clientIp?: string): Promise<Artifact> {
    const digest = await this.uploads.digest(row.id, row.sizeBytes)
    if (digest !== row.sha256) {
      this.ctx.db.delete(artifactUploads).where(eq(artifactUploads.id, row.id)).run()
      await this.uploads.remove(row.id)
      throw new AppError('checksum_mismatch', `The bytes received hash to ${digest}, not the declared ${row.sha256}; the upload is dropped, start a new one.`, { sha256: digest })
    }
    // Checked before the store write too (and again with the insert): a person removed from the
    // pool meanwhile should not have gigabytes written to the store for nothing.
    this.ownUpload(by, row.id)
    return this.inTurn(row.sha256, async () => {
      // An intent before the store write: a write this leader does not finish (it dies, the store
      // fails, the upload is dropped meanwhile) leaves a blob only its collector knows to delete.
      this.ctx.db.insert(artifactBlobCandidates).values({ sha256: row.sha256, since: this.ctx.clock.now() }).onConflictDoNothing().run()
      await this.storeCall(() => this.store.putFile(row.sha256, this.uploads.pathOf(row.id)))
      const artifact = this.ctx.db.transaction((tx) => {
        this.ownUpload(by, row.id, tx)
        tx.delete(artifactBlobCandidates).where(eq(artifactBlobCandidates.sha256, row.sha256)).run()
        const a: Row = {
          id: newId(),
          poolId: row.poolId,
          jobId: row.jobId,
          stage: row.stage,
          kind: row.kind,
          name: row.name,
          sizeBytes: row.sizeBytes,
          sha256: row.sha256,
          step: row.step,
          fellowId: row.fellowId,
          userId: row.userId,
          createdAt: this.ctx.clock.now(),
        }
        tx.insert(artifacts).values(a).run()
        tx.delete(artifactUploads).where(eq(artifactUploads.id, row.id)).run()
        // A person's upload is theirs to answer for (a fellow's belongs to its job or engine).
        if (row.userId !== null) {
          recordAudit(tx, this.ctx.clock, {
            kind: 'artifact.upload',
            actorUserId: row.userId,
            clientIp,
            targetType: 'artifact',
            targetId: a.id,
            detail: { pool_id: a.poolId, kind: a.kind, name: a.name, size_bytes: a.sizeBytes, sha256: a.sha256 },
          })
        }
        return toArtifact(a)
      })
      await this.uploads.remove(row.id)
      return artifact
    })
  }

  // ---- reading (operators of the pool, its fellows) ------------------------------------------------

  private visible(caller: Caller, id: string): Row {
    const row = this.ctx.db.select().from(artifacts).where(eq(artifacts.id, id)).get()
    if (!row || !inScope(scopeOf(this.ctx.db, caller), row.poolId)) throw notFound('Artifact')
    return row
  }

  get(caller: Caller, id: string): Artifact {
    return toArtifact(this.visible(caller, id))
  }

  list(caller: Caller, filter: ArtifactFilter): Artifact[] {
    const scope = scopeOf(this.ctx.db, caller)
    if (filter.pool_id !== undefined && !inScope(scope, filter.pool_id)) return []
    const conds: (SQL | undefined)[] = [
      filter.pool_id !== undefined ? eq(artifacts.poolId, filter.pool_id) : scope === null ? undefined : inArray(artifacts.poolId, [...scope]),
      filter.job_id !== undefined ? eq(artifacts.jobId, filter.job_id) : undefined,
      filter.kind !== undefined ? eq(artifacts.kind, filter.kind) : undefined,
    ]
    return this.ctx.db.select().from(artifacts).where(and(...conds)).orderBy(desc(artifacts.createdAt), desc(artifacts.id)).limit(MAX_LIST).all().map(toArtifact)
  }

  /** The checkpoint a fellow taking over a stage resumes from: the highest step, then the newest. */
  latestCheckpoint(caller: Caller, jobId: string, stage: number): Artifact {
    const job = this.ctx.db.select({ poolId: jobs.poolId }).from(jobs).where(eq(jobs.id, jobId)).get()
    if (!job || !inScope(scopeOf(this.ctx.db, caller), job.poolId)) throw notFound('Job')
    const row = this.ctx.db
      .select()
      .from(artifacts)
      .where(and(eq(artifacts.jobId, jobId), eq(artifacts.stage, stage), eq(artifacts.kind, 'checkpoint')))
      // SQLite sorts NULL lowest: a checkpoint without a step comes after every numbered one.
      .orderBy(desc(artifacts.step), desc(artifacts.createdAt), desc(artifacts.id))
      .limit(1)
      .get()
    if (!row) throw notFound(`Checkpoint of stage ${stage}`)
    return toArtifact(row)
  }

  /** The artifact and a stream of its bytes (the range, when given). A row whose blob is missing is 410. */
  async open(caller: Caller, id: string, range: ByteRange | null): Promise<{ artifact: Artifact; body: ReadableStream<Uint8Array> }> {
    const row = this.visible(caller, id)
    const blob = await this.storeCall(() => this.store.stat(row.sha256))
    if (blob === null) {
      this.ctx.log.warn('artifact without its blob', { artifact_id: row.id, sha256: row.sha256, store: this.store.location })
      throw new AppError('gone', "The artifact's bytes are missing from the store (restored without its blobs?).")
    }
    if (blob.size !== row.sizeBytes) {
      // Cut short by an interrupted copy or restore (or grown): never served as if whole. The same
      // file uploaded again replaces it (putFile).
      this.ctx.log.error('artifact blob has the wrong size', { artifact_id: row.id, sha256: row.sha256, size_bytes: row.sizeBytes, blob_bytes: blob.size, store: this.store.location })
      throw new AppError('gone', `The artifact's bytes in the store are damaged (${blob.size} of ${row.sizeBytes} bytes: an interrupted copy or restore?); uploading the same file again repairs them.`)
    }
    // Opened before anything is answered: a store that fails now is a 503 with Retry-After, not
    // 200 headers and a body that breaks off (a fellow took that for a bad checkpoint).
    const expected = range ? range.end - range.start : row.sizeBytes
    const body = await this.storeCall(() => this.store.open(row.sha256, expected, range ?? undefined))
    return { artifact: toArtifact(row), body }
  }

  /**
   * The pool's owner or an admin deletes; other members get 403, outsiders 404. The blob stays for
   * the collector: another artifact may share it, or an upload of the same bytes be completing.
   */
  delete(actor: Actor, id: string): void {
    this.ctx.db.transaction((tx) => {
      const row = tx.select().from(artifacts).where(eq(artifacts.id, id)).get()
      const role = row && actor.role !== 'admin' ? memberRole(tx, row.poolId, actor.userId) : null
      if (!row || (actor.role !== 'admin' && role === null)) throw notFound('Artifact')
      if (actor.role !== 'admin' && role !== 'owner') throw new AppError('forbidden', 'Only the pool owner or an admin can delete artifacts.')
      tx.delete(artifacts).where(eq(artifacts.id, id)).run()
      recordAudit(tx, this.ctx.clock, {
        kind: 'artifact.delete',
        actorUserId: actor.userId,
        clientIp: actor.clientIp,
        targetType: 'artifact',
        targetId: id,
        detail: { pool_id: row.poolId, job_id: row.jobId, name: row.name, size_bytes: row.sizeBytes, sha256: row.sha256 },
      })
    })
  }

  // ---- collection (the loop) -------------------------------------------------------------------

  collect(): Promise<CollectReport> {
    return this.collector.collect()
  }

  /**
   * Whether this leader may delete blobs in its store: not when another leader claimed the prefix
   * first (claim.ts), which is logged as an error each time it is asked (at start, each collection).
   */
  private async ownsStore(): Promise<boolean> {
    // Files under the state directory are this leader's alone: nothing to claim, no id to keep.
    if (this.store.exclusive) return true
    const mine = await claimOf(this.ctx.cfg.stateDir, this.ctx.clock.now())
    const standing = await this.store.claim(mine)
    if (standing.leader_id === mine.leader_id) return true
    this.ctx.log.error('another leader uses this artifact store prefix; this one deletes no blob there', {
      store: this.store.location,
      other_host: standing.host,
      other_state_dir: standing.state_dir,
      other_leader_id: standing.leader_id,
      claimed_at: standing.claimed_at,
    })
    return false
  }

  /**
   * Runs fn after any earlier turn of the same blob: publishing a blob (complete) and collecting it
   * never interleave on this leader. Across leaders sharing a bucket the grace age covers the race.
   */
  private inTurn<T>(sha256: string, fn: () => Promise<T>): Promise<T> {
    const before = this.turns.get(sha256) ?? Promise.resolve()
    const mine = before.catch(() => {}).then(fn)
    const tail = mine.catch(() => {})
    this.turns.set(sha256, tail)
    void tail.then(() => {
      if (this.turns.get(sha256) === tail) this.turns.delete(sha256)
    })
    return mine
  }

  /**
   * A store that fails (S3 down, a wrong key, disk error) answers 503: the fellow retries, nothing
   * is half-kept. The detail says why in the store's own words (a code, never a key or a message).
   */
  private async storeCall<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (e) {
      if (e instanceof AppError) throw e
      const ref = Bun.randomUUIDv7()
      const reason = describeStoreFailure(e)
      this.ctx.log.error('artifact store failed', { ref, store: this.store.location, reason, error: String((e as Error)?.message ?? e) })
      throw new AppError('service_unavailable', `The artifact store failed: ${reason} (reference ${ref}); retry shortly.`, { retryAfterS: 5 })
    }
  }

  /**
   * Asks the store once whether it answers (S3: a listing of one key under the prefix), when the
   * leader's loops are set up: a wrong key, a missing bucket or an endpoint that is down is an
   * error line at start, not news at the first upload. Start is not held up by it: the store may
   * come up after the leader, and everything but artifacts works without it.
   */
  async checkStore(): Promise<boolean> {
    try {
      await this.store.check()
      this.ctx.log.info('artifact store answers', { store: this.store.location })
      return await this.ownsStore()
    } catch (e) {
      this.ctx.log.error('artifact store check failed; uploads and downloads answer 503 until it answers', { store: this.store.location, reason: describeStoreFailure(e), error: String((e as Error)?.message ?? e) })
      return false
    }
  }
}
