// What jobs look like to callers: a job whole, a job as lists show it, and the list itself.
import { and, desc, eq, getTableColumns, inArray, sql, type SQL } from 'drizzle-orm'
import { jobs } from '../db/schema'
import { invalid } from '../errors'
import { iso } from '../time'
import { cursorOf, parseCursor } from '../db/keyset'
import { READ_ONLY, type Db } from '../db/client'
import { JOB_PAGE_MAX, type Job, type JobList, type JobStatus, type JobSummary } from './model'

type JobRow = typeof jobs.$inferSelect

/** Jobs a list counts at most: past it its total says "at least" (total_exact false). */
const JOB_TOTAL_CAP = 10_000

export interface JobListFilter {
  pool_id?: string
  status?: JobStatus
  page?: number
  page_size?: number
  cursor?: string
}

export function toJob(r: JobRow): Job {
  return { ...toSummary(r), config: r.config }
}

export function toSummary(r: Omit<JobRow, 'config'>): JobSummary {
  return {
    id: r.id,
    name: r.name,
    pool_id: r.poolId,
    status: r.status,
    reason: r.reason,
    stages: r.stages,
    min_free_vram_mb: r.minFreeVramMb,
    transport: r.transport,
    assignments: r.assignments,
    step: r.step,
    loss: r.loss,
    runner: r.runner,
    resumed_from_step: r.resumedFromStep,
    created_by: r.createdBy,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
  }
}

/**
 * Jobs of `scope` (pool ids; null: every pool), newest first, a page at a time: by `page` (from 1),
 * or by the `cursor` of the page before (keyset: jobs submitted meanwhile neither shift nor repeat
 * a page), as the audit list.
 */
export function listJobs(db: Db, scope: Set<string> | null, filter: JobListFilter): JobList {
  if (filter.cursor !== undefined && filter.page !== undefined) throw invalid('use cursor or page, not both', { errors: [{ path: '/page', message: 'not with cursor' }] })
  const after = filter.cursor === undefined ? null : parseCursor(filter.cursor)
  const page = filter.page ?? 1
  const size = filter.page_size ?? JOB_PAGE_MAX
  const conds: SQL[] = []
  if (scope !== null) conds.push(inArray(jobs.poolId, [...scope]))
  if (filter.pool_id) conds.push(eq(jobs.poolId, filter.pool_id))
  if (filter.status) conds.push(eq(jobs.status, filter.status))
  const where = conds.length > 0 ? and(...conds) : undefined
  return db.transaction((tx) => {
    // Counted up to a cap, like the audit log's: "10,000 or more" is all a reader of that takes in.
    const counted = tx.values<[number]>(sql`SELECT count(*) FROM (SELECT 1 FROM ${jobs} ${where ? sql`WHERE ${where}` : sql``} LIMIT ${JOB_TOTAL_CAP + 1})`)[0]![0]
    if (after) conds.push(sql`(${jobs.createdAt}, ${jobs.id}) < (${after.ts}, ${after.id})`)
    const { config: _config, ...summary } = getTableColumns(jobs)
    const rows = tx
      .select(summary)
      .from(jobs)
      .where(conds.length > 0 ? and(...conds) : undefined)
      .orderBy(desc(jobs.createdAt), desc(jobs.id))
      .limit(size + 1)
      .offset(after ? 0 : (page - 1) * size)
      .all()
    const more = rows.length > size
    if (more) rows.pop()
    const last = rows.at(-1)
    return {
      items: rows.map((r) => toSummary(r)),
      total: Math.min(counted, JOB_TOTAL_CAP),
      total_exact: counted <= JOB_TOTAL_CAP,
      page: after ? null : page,
      page_size: size,
      next_cursor: more && last ? cursorOf({ ts: last.createdAt, id: last.id }) : null,
    }
  }, READ_ONLY)
}
