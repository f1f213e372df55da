// The model catalog. A manifest is stamped with the pool of the job that produced it (or, when the
// job is unknown, e.g. purged, the posting fellow's pool), so a pool's models stay as private as
// its nodes. Rows from before stamping (pool_id NULL) stay visible to every logged-in person.
import { and, asc, desc, eq, inArray, isNull, or, type SQL } from 'drizzle-orm'
import { artifacts, jobs, poolNodes, servables } from '../db/schema'
import { AppError, notFound } from '../errors'
import { newId } from '../crypto'
import { iso } from '../time'
import { inScope, scopeOf } from '../pools/scope'
import type { Ctx } from '../context'
import type { Db } from '../db/client'
import type { Caller } from '../caller'
import type { Servable, ServableInput } from './model'

type Row = typeof servables.$inferSelect

const toServable = (r: Row): Servable => ({
  id: r.id,
  name: r.name,
  version: r.version,
  format: r.format,
  size_bytes: r.sizeBytes,
  pool_id: r.poolId,
  job_id: r.jobId,
  fellow_id: r.fellowId,
  artifact_id: r.artifactId,
  created_at: iso(r.createdAt),
})

/** What a caller's scope lets it read: its pools plus unstamped rows; null scope (admins) all. */
function visibleWhere(scope: Set<string> | null): SQL | undefined {
  if (scope === null) return undefined
  const legacy = isNull(servables.poolId)
  return scope.size === 0 ? legacy : or(inArray(servables.poolId, [...scope]), legacy)
}

export class Servables {
  constructor(private ctx: Ctx) {}

  /**
   * Records a manifest, or refreshes the one with the same pool, name and version (fellows re-post
   * on every start). The pool comes from the database in the writing transaction, never from the
   * body, so a fellow cannot plant a model in another pool's catalog.
   */
  record(fellowId: string, input: ServableInput): { servable: Servable; created: boolean } {
    return this.ctx.db.transaction((tx) => {
      const poolId = this.stampFor(tx, fellowId, input.job_id)
      const now = this.ctx.clock.now()
      const existing = tx
        .select()
        .from(servables)
        .where(and(eq(servables.poolId, poolId), eq(servables.name, input.name), eq(servables.version, input.version)))
        .get()
      // A model file named by id must be one of this pool's artifacts (another pool's is not found).
      if (input.artifact_id !== undefined && !tx.select({ id: artifacts.id }).from(artifacts).where(and(eq(artifacts.id, input.artifact_id), eq(artifacts.poolId, poolId))).get()) {
        throw notFound('Artifact')
      }
      const fields = { format: input.format, sizeBytes: input.size_bytes, jobId: input.job_id ?? null, fellowId, artifactId: input.artifact_id ?? null }
      if (existing) {
        tx.update(servables).set(fields).where(eq(servables.id, existing.id)).run()
        return { servable: toServable({ ...existing, ...fields }), created: false }
      }
      const row: Row = { id: newId(), name: input.name, version: input.version, poolId, createdAt: now, ...fields }
      tx.insert(servables).values(row).run()
      return { servable: toServable(row), created: true }
    })
  }

  private stampFor(tx: Db, fellowId: string, jobId: string | undefined): string {
    const binding = tx.select({ poolId: poolNodes.poolId }).from(poolNodes).where(eq(poolNodes.fellowId, fellowId)).get()
    // A fellow detached by a forced pool delete has no pool: stamping NULL would publish the model.
    if (!binding) throw new AppError('forbidden', 'This fellow belongs to no pool, so it cannot publish models.')
    if (jobId === undefined) return binding.poolId
    const job = tx.select({ poolId: jobs.poolId }).from(jobs).where(eq(jobs.id, jobId)).get()
    // A job of another pool is "not found" (SPEC: cross-pool ids answer 404); an unknown job, e.g.
    // purged since training, leaves the fellow's own pool as the stamp.
    if (job && job.poolId !== binding.poolId) throw notFound('Job')
    return job?.poolId ?? binding.poolId
  }

  list(caller: Caller, poolId?: string): Servable[] {
    const scope = scopeOf(this.ctx.db, caller)
    if (poolId !== undefined && !inScope(scope, poolId)) return []
    const where = poolId !== undefined ? eq(servables.poolId, poolId) : visibleWhere(scope)
    return this.ctx.db.select().from(servables).where(where).orderBy(asc(servables.name), desc(servables.createdAt)).all().map(toServable)
  }

  /** Catalog names the caller may see, with the first time each was published (ms). */
  visibleNames(scope: Set<string> | null): Map<string, number> {
    const out = new Map<string, number>()
    const rows = this.ctx.db.select({ name: servables.name, createdAt: servables.createdAt }).from(servables).where(visibleWhere(scope)).all()
    for (const r of rows) out.set(r.name, Math.min(r.createdAt, out.get(r.name) ?? Infinity))
    return out
  }
}
