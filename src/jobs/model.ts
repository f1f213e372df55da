// Wire shapes of jobs: submission, records, status reports from fellows, metrics.
import { t, type Static } from 'elysia'
import { CursorList, Label, Page, Timestamp, Int, UnionEnum } from '../model'
import * as W from '../wire/jobs'

export const JOB_STATUSES = ['queued', 'scheduled', 'running', 'paused', 'completed', 'failed', 'cancelled'] as const
export type JobStatus = (typeof JOB_STATUSES)[number]
export const TERMINAL: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled'])
export const ACTIVE: ReadonlySet<JobStatus> = new Set(['scheduled', 'running', 'paused'])

export const SubmitBody = t.Object(
  {
    name: Label(100),
    pool_id: t.Optional(t.String({ format: 'uuid' })),
    stages: t.Optional(Int({ minimum: 1, maximum: 64 })),
    min_free_vram_mb: t.Optional(Int({ minimum: 0, maximum: 10_000_000 })),
    config: t.Optional(t.Record(t.String({ maxLength: 100 }), t.Unknown(), { maxProperties: 200 })),
    /** The runner the fellows start, by the name their operators declared it; default the built-in `mlp`. */
    runner: t.Optional(t.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$', 'x-rule': "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit" })),
  },
  { additionalProperties: false },
)
export type SubmitInput = Static<typeof SubmitBody>

export const Assignment = t.Object({ stage: Int(), fellow_id: t.String() })
export type Assignment = Static<typeof Assignment>

export const Job = t.Object({
  id: t.String(),
  name: t.String(),
  pool_id: t.String(),
  status: UnionEnum(JOB_STATUSES),
  reason: t.Nullable(t.String()),
  stages: Int(),
  min_free_vram_mb: Int(),
  transport: t.Nullable(t.String()),
  config: t.Record(t.String(), t.Unknown()),
  assignments: t.Array(Assignment),
  step: Int(),
  loss: t.Nullable(t.Number()),
  runner: t.String(),
  /** The step the last re-placement resumed from (a stored checkpoint); null: never resumed. */
  resumed_from_step: t.Nullable(Int()),
  created_by: t.Nullable(t.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type Job = Static<typeof Job>
/**
 * A job as lists show it: without its config (up to 64 KiB each, GET /jobs/{id} has it), since a
 * pool page polls the list and 500 fat configs made every poll 30 MB.
 */
export const JobSummary = t.Omit(Job, ['config'])
export type JobSummary = Static<typeof JobSummary>
/** Newest first; jobs that match are counted up to 10,000 (views.ts). */
export const JobList = CursorList(JobSummary)
export type JobList = Static<typeof JobList>
export const JOB_PAGE_MAX = 500
export const JobListQuery = t.Object(
  {
    pool_id: t.Optional(t.String({ format: 'uuid' })),
    status: t.Optional(UnionEnum(JOB_STATUSES)),
    page: t.Optional(Page),
    page_size: t.Optional(t.Integer({ minimum: 1, maximum: JOB_PAGE_MAX })),
    cursor: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
)
export const JobParams = t.Object({ job_id: t.String({ format: 'uuid' }) })

/**
 * What a fellow reports about its part of a job: the wire shape of src/wire/jobs.ts, except that
 * the leader takes `step` as Elysia's t.Integer, which also accepts a numeric string ("5"), as it
 * always has. The agent sends numbers.
 */
export const StatusReport = t.Object(
  { ...W.StatusReport.properties, step: t.Optional(t.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })) },
  { additionalProperties: false },
)
export type StatusReport = Static<typeof StatusReport>
