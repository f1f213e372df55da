// Jobs: submission, the scheduler (queued -> scheduled), lifecycle signals, re-placement when a
// fellow goes offline, and the status reports fellows post.
import { and, asc, count, eq, inArray, sql, type SQL } from 'drizzle-orm'
import { jobs, pools } from '../db/schema'
import { AppError, invalid, notFound } from '../errors'
import { newId } from '../crypto'
import { recordAudit } from '../audit/service'
import { monotonicNow } from '../time'
import { ensureDefaultPool, memberRole } from '../pools/service'
import { scopeOf, inScope } from '../pools/scope'
import { BUILTIN_RUNNER, candidateOf, pendingReason, place, type Candidate } from './placement'
import { parseTrainConfig } from '../wire/mlp-config'
import { jobP2PKey } from './p2p-key'
import { ACTIVE, TERMINAL, type Assignment, type Job, type JobList, type JobStatus, type StatusReport, type SubmitInput } from './model'
import { listJobs, toJob, type JobListFilter } from './views'
import type { Statement } from 'bun:sqlite'
import type { Ctx } from '../context'
import type { Db } from '../db/client'
import type { Caller, NodeCaller } from '../caller'
import { BUSY_STATUSES, type FellowRegistry, type LiveFellow } from '../fellows/live'
import type { SignalHub } from '../fellows/signals'
import type { RelayHub } from '../relay/hub'
import type { JobMetrics } from './metrics'
import type { LoopSpec } from '../loops'

type JobRow = typeof jobs.$inferSelect

/** Why a job that named no pool waits: the default pool's fellows are anyone's machines. */
/** A job's pool, or undefined when there is no such job (the job page's visibility check). */
export function jobPoolOf(db: Db, id: string): string | undefined {
  return db.select({ poolId: jobs.poolId }).from(jobs).where(eq(jobs.id, id)).get()?.poolId
}

export const UNNAMED_POOL_REASON =
  'not placed: no pool_id was given, and the default pool (fellows that joined without a join token) only takes jobs that name it; resubmit with a pool_id'

/** Whether a fellow's last heartbeat said it runs a job (any: one the leader no longer gave it too). */
const stillBusy = (f: LiveFellow): boolean => f.jobId !== null && BUSY_STATUSES.has(f.status ?? '')

/** A job by id, prepared once: the relay and status reports read one per request (issue 22). */
function jobById(ctx: Ctx) {
  return ctx.db.select().from(jobs).where(eq(jobs.id, sql.placeholder('id'))).prepare()
}

/**
 * The job and the calling fellow's stage in it, when the job is live and the fellow assigned to
 * it; not found / forbidden otherwise (stageOf, placementOf).
 */
function stageIn<J extends { poolId: string; status: JobStatus; assignments: Assignment[] }>(job: J | undefined, caller: NodeCaller | null, claimedFellow?: string): { job: J; stage: number } {
  const fellowId = caller?.fellowId ?? claimedFellow
  if (!job || (caller && job.poolId !== caller.poolId)) throw notFound('Job')
  const mine = job.assignments.find((a) => a.fellow_id === fellowId)
  if (!mine || !ACTIVE.has(job.status)) throw new AppError('forbidden', 'This fellow is not assigned to the job.')
  return { job, stage: mine.stage }
}

/**
 * The built-in runner's settings are known here: a value it would refuse at START (`"steps":
 * "abc"`) is a 422 at submit instead of a job that fails once placed. Other keys are handed to the
 * fellows as they are (CONTRACT: the config is the submitter's object), as is any runner's config.
 */
function checkBuiltinConfig(config: Record<string, unknown>): void {
  try {
    parseTrainConfig(config)
  } catch (e) {
    const message = (e as Error).message
    const key = /^config\.(\w+)/.exec(message)?.[1]
    const path = key ? `/config/${key}` : '/config'
    const words = `${message.replace(/^config\.\w+ /, '')} (a setting of the built-in runner mlp)`
    throw invalid(`body ${path}: ${words}.`, { errors: [{ path, message: words }] })
  }
}

/**
 * A job's `config` as JSON, at most: a megabyte each made one pool page's job list 373 MB when the
 * list carried configs (it no longer does), and a job's own answer still does. Settings, not data:
 * data goes through the artifact store.
 */
export const MAX_CONFIG_BYTES = 64 * 1024

function checkConfigSize(config: Record<string, unknown>): void {
  const bytes = Buffer.byteLength(JSON.stringify(config))
  if (bytes <= MAX_CONFIG_BYTES) return
  const words = `must be at most ${MAX_CONFIG_BYTES / 1024} KiB as JSON (it is ${Math.ceil(bytes / 1024)} KiB); pass data as an artifact, not in the config`
  throw invalid(`body /config: ${words}.`, { errors: [{ path: '/config', message: words }] })
}

export class JobService {
  /** Pools the last scheduler pass looked into (null before the first pass); see schedulePass. */
  private visited: Set<string> | null = null
  private byId: ReturnType<typeof jobById>
  private byIdPlacement: Statement<{ pool_id: string; status: JobStatus; assignments: string }, [string]>
  /** Active jobs none of whose fellows runs them: since when (monotonic), and whether they were started again; see reapOrphans. */
  private orphans = new Map<string, { since: number; startedAgain: boolean }>()

  constructor(
    private ctx: Ctx,
    private registry: FellowRegistry,
    private signals: SignalHub,
    private relay: RelayHub,
    readonly metrics: JobMetrics,
  ) {
    this.byId = jobById(ctx)
    this.byIdPlacement = ctx.sqlite.prepare('SELECT pool_id, status, assignments FROM jobs WHERE id = ?')
    // A fellow holding a stage that is already past the offline window when the leader starts
    // (it died while the leader was down) never went offline in the liveness loop's eyes, so its
    // stage was never moved: the job hung. Those fellows get one offline window from now.
    registry.awaitBack(this.busyFellows())
  }

  /** The scheduler: places queued jobs on free fellows once a second. */
  loops(): LoopSpec[] {
    return [
      {
        name: 'scheduler',
        intervalMs: 1000,
        run: () => {
          this.sweepVanished()
          this.reapOrphans()
          this.metrics.forgetEnded()
          void this.schedulePass()
        },
      },
    ]
  }

  private row(id: string): JobRow | undefined {
    return this.byId.get({ id })
  }

  /**
   * Jobs that went without ending here: deleted with their pool (a forced delete, an account's
   * deletion; the foreign key takes them). Their relay queues would hold their bytes against the
   * relay's caps, and their metrics streams and fellows' "running" would go on. Only jobs with
   * such state are looked up, so an idle leader reads nothing.
   */
  private sweepVanished(): void {
    const keys = this.relay.queueKeys()
    const ids = new Set(this.metrics.open())
    for (const key of keys) ids.add(key.slice(0, key.lastIndexOf('/')))
    for (const id of ids) {
      if (this.exists(id)) continue
      for (const key of keys) if (key.startsWith(`${id}/`)) this.relay.dropJob(key)
      this.metrics.end(id)
      this.metrics.drop(id)
      this.registry.jobEnded(id, [...this.registry.all()].filter((f) => f.jobId === id).map((f) => f.id))
    }
  }

  /**
   * An active job none of whose fellows runs it any more: each is online and says, heartbeat after
   * heartbeat, that it runs no job. A leader restored from a backup taken while the job ran kept it
   * "running" for good, its fellows counted busy and no other job placed on them; a START lost on
   * its way (a socket that died unseen) left a job "scheduled" the same way. After the grace its
   * stages are started again (resuming from their checkpoints); if they still say no job after
   * another, the job fails. One fellow that still runs it (the last stage, while earlier ones
   * finished their part) keeps it going; so does one not heard from since this leader started.
   */
  private reapOrphans(): void {
    const now = monotonicNow(this.ctx.clock)
    const wall = this.ctx.clock.now()
    // At least as long as a fellow may be silent before it counts offline, and a minute: a final
    // report retried after a leader outage (every 30 s at most) lands within it.
    const grace = Math.max(6 * this.ctx.cfg.heartbeatIntervalS, 60) * 1000
    const seen = new Set<string>()
    for (const r of this.ctx.db.select({ id: jobs.id, assignments: jobs.assignments }).from(jobs).where(inArray(jobs.status, [...ACTIVE])).all()) {
      if (r.assignments.length === 0) continue
      const runsIt = r.assignments.some((a) => {
        const f = this.registry.get(a.fellow_id)
        // Idle says "no job", whatever job_id an older fellow's heartbeat left standing.
        return !f || BUSY_STATUSES.has(f.status ?? '') || (f.status !== 'idle' && f.jobId === r.id) || this.registry.stateOf(f, wall) !== 'online'
      })
      if (runsIt) continue
      seen.add(r.id)
      const orphan = this.orphans.get(r.id) ?? { since: now, startedAgain: false }
      this.orphans.set(r.id, orphan)
      if (now - orphan.since < grace) continue
      const row = this.row(r.id)
      if (!row || !ACTIVE.has(row.status)) continue
      if (!orphan.startedAgain) {
        this.startAll(row, row.assignments, 'START', { resume: true })
        if (row.status === 'paused') for (const a of row.assignments) this.signals.send(a.fellow_id, 'PAUSE', { jobId: row.id, payload: {} })
        this.orphans.set(r.id, { since: now, startedAgain: true })
        this.ctx.log.warn('job started again: none of its fellows ran it', { job_id: r.id, fellows: r.assignments.map((a) => a.fellow_id) })
        continue
      }
      const reason = `none of its fellows runs it: each said for ${Math.round(grace / 1000)} s that it runs no job, and again after it was started once more`
      this.signalAll(row, 'STOP', { reason })
      this.setStatus(r.id, 'failed', { reason }, row.status)
      this.ctx.log.warn('job failed: none of its fellows runs it', { job_id: r.id, fellows: r.assignments.map((a) => a.fellow_id) })
    }
    for (const id of this.orphans.keys()) if (!seen.has(id)) this.orphans.delete(id)
  }

  /** Whether the job is still there (a purge deletes every job). */
  exists(id: string): boolean {
    return this.row(id) !== undefined
  }

  /** Whether the job is gone or has ended (completed, failed, cancelled). */
  over(id: string): boolean {
    const r = this.row(id)
    return r === undefined || TERMINAL.has(r.status)
  }

  /** A job the caller may see (its pools; admins all); anything else is "not found". */
  visible(caller: Caller, id: string): JobRow {
    const r = this.row(id)
    if (!r || !inScope(scopeOf(this.ctx.db, caller), r.poolId)) throw notFound('Job')
    return r
  }

  /** Creator, pool owner or admin may steer a job; other members may only look. */
  private steerable(caller: Caller, id: string): JobRow {
    const r = this.visible(caller, id)
    if (caller.kind === 'user' && caller.role !== 'admin' && r.createdBy !== caller.userId && memberRole(this.ctx.db, r.poolId, caller.userId) !== 'owner') {
      throw new AppError('forbidden', 'Only the job creator, the pool owner or an admin can do this.')
    }
    return r
  }

  submit(caller: Caller, input: SubmitInput, clientIp: string): Job {
    const { ctx } = this
    checkConfigSize(input.config ?? {})
    if ((input.runner ?? BUILTIN_RUNNER) === BUILTIN_RUNNER) checkBuiltinConfig(input.config ?? {})
    const job = ctx.db.transaction((tx) => {
      const poolNamed = input.pool_id !== undefined
      const poolId = input.pool_id ?? ensureDefaultPool(tx, ctx.clock).id
      if (!inScope(scopeOf(tx, caller), poolId)) throw notFound('Pool')
      // An admin's scope is "every pool", so an unknown (or just deleted) pool id passed the check
      // above and failed the insert's foreign key: a 500 instead of a 404.
      if (!tx.select({ id: pools.id }).from(pools).where(eq(pools.id, poolId)).get()) throw notFound('Pool')
      const createdBy = caller.kind === 'user' ? caller.userId : null
      this.checkQueueCaps(tx, poolId, createdBy)
      const now = ctx.clock.now()
      const row: JobRow = {
        id: newId(),
        name: input.name.trim(),
        poolId,
        poolNamed,
        createdBy,
        status: 'queued',
        reason: poolNamed ? null : UNNAMED_POOL_REASON,
        stages: input.stages ?? 1,
        minFreeVramMb: input.min_free_vram_mb ?? 0,
        config: input.config ?? {},
        transport: null,
        assignments: [],
        step: 0,
        loss: null,
        runner: input.runner ?? BUILTIN_RUNNER,
        resumedFromStep: null,
        createdAt: now,
        updatedAt: now,
        finishedAt: null,
      }
      tx.insert(jobs).values(row).run()
      recordAudit(tx, ctx.clock, { kind: 'job.submit', actorUserId: row.createdBy, clientIp, targetType: 'job', targetId: row.id, detail: { pool_id: poolId, stages: row.stages } })
      return row
    })
    this.schedulePass()
    const r = this.row(job.id)!
    // Still queued without a reason: the pass skipped its pool, which has no free online fellow.
    if (r.status === 'queued' && r.reason === null) {
      const reason = pendingReason(r.stages, r.minFreeVramMb, 0, r.runner)
      this.ctx.db.update(jobs).set({ reason }).where(eq(jobs.id, r.id)).run()
      return toJob({ ...r, reason })
    }
    return toJob(r)
  }

  /**
   * Every queued job is work for every scheduler pass: 150 queued jobs of one plain user took the
   * idle leader from 1 % to 77 % CPU. Checked in the submit's transaction, so two racing submits
   * cannot both take the last place.
   */
  private checkQueueCaps(tx: Db, poolId: string, userId: string | null): void {
    const { maxQueuedJobsPerUser: perUser, maxQueuedJobsPerPool: perPool } = this.ctx.cfg
    const queued = (cond: SQL) => tx.select({ n: count() }).from(jobs).where(and(eq(jobs.status, 'queued'), cond)).get()?.n ?? 0
    if (userId !== null && queued(eq(jobs.createdBy, userId)) >= perUser) {
      throw new AppError('job_queue_full', `You already have ${perUser} queued job(s), the most one person may have waiting. Cancel one, or submit again once one is placed.`, { limit: perUser })
    }
    if (queued(eq(jobs.poolId, poolId)) >= perPool) {
      throw new AppError('job_queue_full', `This pool already has ${perPool} queued job(s), the most it may have waiting. Cancel one, or submit again once one is placed.`, { limit: perPool })
    }
  }

  /** Newest first, a page at a time (src/jobs/views.ts). */
  list(caller: Caller, filter: JobListFilter): JobList {
    return listJobs(this.ctx.db, scopeOf(this.ctx.db, caller), filter)
  }

  get(caller: Caller, id: string): Job {
    return toJob(this.visible(caller, id))
  }

  /** `from`: the status it had, when the caller may be setting the same again (a report while paused). */
  private setStatus(id: string, status: JobStatus, extra: Partial<JobRow> = {}, from?: JobStatus): void {
    const now = this.ctx.clock.now()
    this.ctx.db
      .update(jobs)
      .set({ status, updatedAt: now, ...(TERMINAL.has(status) ? { finishedAt: now } : {}), ...extra })
      .where(eq(jobs.id, id))
      .run()
    if (TERMINAL.has(status)) this.endJob(id, this.row(id)?.assignments ?? [])
    // An operator reading the leader's log sees a job end, and why, without the API.
    if (status !== from && (TERMINAL.has(status) || status === 'paused')) this.ctx.log[status === 'failed' ? 'warn' : 'info'](`job ${status}`, { job_id: id, ...(extra.reason ? { reason: extra.reason } : {}) })
  }

  private endJob(id: string, assignments: Assignment[]): void {
    for (let stage = 0; stage < Math.max(1, assignments.length); stage++) {
      this.relay.dropJob(`${id}/${stage}`)
    }
    this.metrics.end(id)
    this.registry.jobEnded(id, assignments.map((a) => a.fellow_id))
  }

  private signalAll(r: JobRow, signal: 'STOP' | 'PAUSE' | 'CHECKPOINT', payload: Record<string, unknown> = {}): void {
    for (const a of r.assignments) this.signals.send(a.fellow_id, signal, { jobId: r.id, payload })
  }

  cancel(caller: Caller, id: string, clientIp: string): Job {
    const r = this.steerable(caller, id)
    if (TERMINAL.has(r.status)) throw new AppError('conflict', `The job is already ${r.status}.`)
    this.signalAll(r, 'STOP', { reason: 'cancelled' })
    this.setStatus(id, 'cancelled', { reason: 'cancelled by a user' })
    recordAudit(this.ctx.db, this.ctx.clock, { kind: 'job.cancel', actorUserId: caller.kind === 'user' ? caller.userId : null, clientIp, targetType: 'job', targetId: id })
    return toJob(this.row(id)!)
  }

  pause(caller: Caller, id: string, pause: boolean): Job {
    const r = this.steerable(caller, id)
    if (pause && r.status !== 'running' && r.status !== 'scheduled') throw new AppError('conflict', `A ${r.status} job cannot be paused.`)
    if (!pause && r.status !== 'paused') throw new AppError('conflict', `A ${r.status} job cannot be resumed.`)
    if (pause) {
      this.signalAll(r, 'PAUSE')
      this.setStatus(id, 'paused')
    } else {
      this.startAll(r, r.assignments, 'START', { resume: true })
      this.setStatus(id, 'running')
    }
    return toJob(this.row(id)!)
  }

  checkpoint(caller: Caller, id: string): { job_id: string; signalled: number } {
    const r = this.steerable(caller, id)
    if (!ACTIVE.has(r.status)) throw new AppError('conflict', `A ${r.status} job cannot be checkpointed.`)
    this.signalAll(r, 'CHECKPOINT')
    return { job_id: id, signalled: r.assignments.length }
  }

  /** Admin only: every job goes, every fellow is told to PURGE. Pool boundaries do not apply. */
  purgeAll(actorUserId: string, clientIp: string): { purged: number; signalled: number } {
    const rows = this.ctx.db.select({ id: jobs.id, assignments: jobs.assignments }).from(jobs).all()
    this.ctx.db.transaction((tx) => {
      tx.delete(jobs).run()
      recordAudit(tx, this.ctx.clock, { kind: 'jobs.purge', actorUserId, clientIp, targetType: 'jobs', detail: { count: rows.length } })
    })
    for (const r of rows) {
      this.endJob(r.id, r.assignments)
      this.metrics.drop(r.id)
    }
    let signalled = 0
    for (const f of this.registry.all()) {
      if (f.released) continue
      this.signals.send(f.id, 'PURGE')
      signalled++
    }
    return { purged: rows.length, signalled }
  }

  /** The stage a node caller holds in a live job, or a refusal. */
  stageOf(caller: NodeCaller | null, jobId: string, claimedFellow?: string): { row: JobRow; stage: number; assignments: Assignment[] } {
    const { job, stage } = stageIn(this.row(jobId), caller, claimedFellow)
    return { row: job, stage, assignments: job.assignments }
  }

  /**
   * stageOf for the relay, which asks on every frame it moves: the three columns it needs from one
   * prepared statement instead of the job row, whose config drizzle parsed each time (an eighth of
   * the relay socket's CPU in a profile).
   */
  placementOf(caller: NodeCaller | null, jobId: string, claimedFellow?: string): { poolId: string; stage: number; assignments: Assignment[] } {
    const raw = this.byIdPlacement.get(jobId)
    const found = raw ? { poolId: raw.pool_id, status: raw.status, assignments: JSON.parse(raw.assignments) as Assignment[] } : undefined
    const { job, stage } = stageIn(found, caller, claimedFellow)
    return { poolId: job.poolId, stage, assignments: job.assignments }
  }

  /** Whether the job is live (scheduled, running or paused): its relay queues are kept. */
  isActive(jobId: string): boolean {
    const raw = this.byIdPlacement.get(jobId)
    return raw !== null && raw !== undefined && ACTIVE.has(raw.status)
  }

  report(caller: NodeCaller | null, jobId: string, rep: StatusReport, claimedFellow?: string): Job {
    const { row, stage } = this.stageOf(caller, jobId, claimedFellow)
    const fellowId = caller?.fellowId ?? claimedFellow!
    this.metrics.append(jobId, {
      ts: this.ctx.clock.now(),
      fellow_id: fellowId,
      stage,
      step: rep.step ?? null,
      loss: rep.loss ?? null,
      throughput: rep.throughput ?? null,
      status: rep.status,
    })
    const extra: Partial<JobRow> = {}
    if (rep.step !== undefined && rep.step >= row.step) extra.step = rep.step
    if (rep.loss !== undefined && rep.loss !== null) extra.loss = rep.loss
    if (rep.resumed_from_step !== undefined) extra.resumedFromStep = rep.resumed_from_step
    let next: JobStatus = row.status
    if (rep.status === 'completed') next = 'completed'
    else if (rep.status === 'failed') {
      next = 'failed'
      extra.reason = rep.reason ?? `stage ${stage} failed`
      this.signalAll(row, 'STOP', { reason: 'a stage failed' })
    } else if (rep.status === 'running' && row.status === 'scheduled') {
      // Not from paused: resuming is the leader's call (it sets running itself), and a progress
      // report sent just before a PAUSE must not undo the pause when it arrives.
      next = 'running'
    }
    else if (rep.status === 'paused' && row.status === 'running') next = 'paused'
    if (next === 'completed') this.signalAll(row, 'STOP', { reason: 'completed' })
    this.setStatus(jobId, next, extra, row.status)
    return toJob(this.row(jobId)!)
  }

  private busyFellows(): Set<string> {
    const busy = new Set<string>()
    for (const r of this.ctx.db.select({ a: jobs.assignments }).from(jobs).where(inArray(jobs.status, [...ACTIVE])).all()) {
      for (const a of r.a) busy.add(a.fellow_id)
    }
    return busy
  }

  private candidates(poolId: string, busy: Set<string>): Candidate[] {
    const now = this.ctx.clock.now()
    return this.registry
      .inPools(new Set([poolId]))
      // A fellow still busy with a job that ended (its runner in its stop grace: the agent says so
      // until the runner is gone) holds that job's memory: the next job waits for it to be idle,
      // and, once its job ended, for the heartbeat that says which.
      .filter((f) => !busy.has(f.id) && !stillBusy(f) && !this.registry.stoppingJob(f) && this.registry.stateOf(f, now) === 'online')
      .map(candidateOf)
  }

  private transportFor(fellows: Candidate[]): string {
    const mode = this.ctx.cfg.pipelineTransport
    if (mode !== 'auto') return mode
    return fellows.every((f) => f.address !== null) ? 'auto' : 'tunnel'
  }

  /** Tells `targets` (default: every stage) their stage and neighbours in `assignments`. */
  private startAll(r: JobRow, assignments: Assignment[], signal: 'START' | 'RECONFIGURE' = 'START', extra: Record<string, unknown> = {}, targets = assignments): void {
    const addr = (id: string | undefined) => (id ? { fellow_id: id, address: this.registry.get(id)?.address ?? null } : null)
    for (const a of targets) {
      this.signals.send(a.fellow_id, signal, {
        jobId: r.id,
        payload: {
          stage: a.stage,
          stages: assignments.length,
          prev: addr(assignments[a.stage - 1]?.fellow_id),
          next: addr(assignments[a.stage + 1]?.fellow_id),
          transport: r.transport ?? this.ctx.cfg.pipelineTransport,
          relay_url: `${this.ctx.cfg.baseUrl}/api/v1/relay/${r.id}`,
          p2p_key: jobP2PKey(this.ctx.cfg.secretKey, r.id, assignments.map((x) => x.fellow_id)),
          config: r.config,
          runner: r.runner,
          ...extra,
        },
      })
    }
  }

  /**
   * Places queued jobs, oldest first. Runs on submit and from the scheduler loop (every second),
   * so an idle pass must cost next to nothing: it reads which pools have queued jobs, looks only
   * into those with a free online fellow (memory), reads no job's config, and loads the config of
   * a job only when placing it. A pool that had a free fellow in the last pass but has none now is
   * looked into once more, so its jobs' reasons say "pool has 0"; then it is skipped. A job that
   * named no pool (pool_named false) is never placed: see UNNAMED_POOL_REASON.
   */
  schedulePass(): number {
    const waiting = this.ctx.db
      .selectDistinct({ poolId: jobs.poolId })
      .from(jobs)
      .where(and(eq(jobs.status, 'queued'), eq(jobs.poolNamed, true)))
      .all()
      .map((r) => r.poolId)
    if (waiting.length === 0) {
      this.visited = new Set()
      return 0
    }
    const now = this.ctx.clock.now()
    const live = waiting.filter((p) => this.registry.inPools(new Set([p])).some((f) => this.registry.stateOf(f, now) === 'online'))
    let busy = live.length > 0 ? this.busyFellows() : null
    const open = busy ? live.filter((p) => this.candidates(p, busy!).length > 0) : []
    const visit = new Set(open)
    for (const p of waiting) if (this.visited === null || this.visited.has(p)) visit.add(p)
    this.visited = new Set(open)
    if (visit.size === 0) return 0
    busy ??= this.busyFellows()
    const queued = this.ctx.db
      .select({ id: jobs.id, poolId: jobs.poolId, stages: jobs.stages, minFreeVramMb: jobs.minFreeVramMb, runner: jobs.runner, reason: jobs.reason })
      .from(jobs)
      .where(and(eq(jobs.status, 'queued'), eq(jobs.poolNamed, true), inArray(jobs.poolId, [...visit])))
      .orderBy(asc(jobs.createdAt))
      .all()
    let placed = 0
    for (const r of queued) {
      const p = place(this.candidates(r.poolId, busy), r.stages, r.minFreeVramMb, r.runner)
      if (!p.ok) {
        const reason = pendingReason(r.stages, r.minFreeVramMb, p.eligible, r.runner, p.lacking)
        if (reason !== r.reason) this.ctx.db.update(jobs).set({ reason, updatedAt: this.ctx.clock.now() }).where(eq(jobs.id, r.id)).run()
        continue
      }
      const full = this.row(r.id)
      if (!full || full.status !== 'queued') continue
      const assignments = p.fellows.map((f, stage) => ({ stage, fellow_id: f.id }))
      const transport = this.transportFor(p.fellows)
      this.ctx.db.update(jobs).set({ status: 'scheduled', reason: null, assignments, transport, updatedAt: this.ctx.clock.now() }).where(eq(jobs.id, r.id)).run()
      for (const f of p.fellows) busy.add(f.id)
      this.startAll({ ...full, transport }, assignments)
      placed++
    }
    return placed
  }

  /**
   * A fellow registered again (its agent started anew, often before its heartbeats were missed):
   * the stages it had are started there again (the runner resumes from the stage's latest
   * checkpoint), a paused job's stay paused, and the other stages hear its address, which may have
   * changed. An agent still running the stage takes the START as a resume and keeps going.
   */
  onFellowRestarted(fellowId: string): void {
    const active = this.ctx.db.select().from(jobs).where(inArray(jobs.status, [...ACTIVE])).all()
    for (const r of active) {
      const mine = r.assignments.filter((a) => a.fellow_id === fellowId)
      if (mine.length === 0) continue
      // resume: the fellow's own checkpoints count too, when the leader's store has none yet.
      this.startAll(r, r.assignments, 'START', { resume: true }, mine)
      if (r.status === 'paused') this.signals.send(fellowId, 'PAUSE', { jobId: r.id, payload: {} })
      this.startAll(r, r.assignments, 'RECONFIGURE', { reconfigured: true }, r.assignments.filter((a) => a.fellow_id !== fellowId))
      this.ctx.log.info('stage started again on a fellow that registered again', { job_id: r.id, fellow_id: fellowId, stages: mine.map((a) => a.stage) })
    }
  }

  /**
   * A fellow says it runs `jobId` (back from offline, or its check a minute): its stage may have
   * moved meanwhile, or the job ended (or was never this leader's: a restored state). Then it is
   * told to STOP that job: an agent that does not stop on a refused report, an older one, would
   * otherwise train on for no one, and placement passes over a fellow that says it is busy.
   */
  onFellowBack(fellowId: string, jobId: string): void {
    const r = this.row(jobId)
    if (r && ACTIVE.has(r.status) && r.assignments.some((a) => a.fellow_id === fellowId)) return
    this.signals.send(fellowId, 'STOP', { jobId, payload: { reason: 'this fellow no longer runs the job: its stage moved, or the job ended' } })
    this.ctx.log.info('told a fellow to stop a job it no longer runs', { fellow_id: fellowId, job_id: jobId, job_status: r?.status ?? 'deleted' })
  }

  /** A fellow went offline: re-place its stage if another fellow can take it, else fail the job. */
  onFellowOffline(fellowId: string, why = 'went offline'): void {
    const active = this.ctx.db.select().from(jobs).where(inArray(jobs.status, [...ACTIVE])).all()
    for (const r of active) {
      const assignments = r.assignments
      const lost = assignments.find((a) => a.fellow_id === fellowId)
      if (!lost) continue
      const busy = this.busyFellows()
      const p = place(this.candidates(r.poolId, busy), 1, r.minFreeVramMb, r.runner)
      if (!p.ok) {
        const offering = r.runner === 'mlp' ? '' : ` offering the runner '${r.runner}'`
        const reason = `fellow ${fellowId} ${why} and no other fellow${offering} with >= ${r.minFreeVramMb} MiB free is online to take stage ${lost.stage}`
        this.signalAll({ ...r, assignments: assignments.filter((a) => a.fellow_id !== fellowId) }, 'STOP', { reason })
        this.setStatus(r.id, 'failed', { reason })
        continue
      }
      const replacement = p.fellows[0]!.id
      const next = assignments.map((a) => (a.fellow_id === fellowId ? { stage: a.stage, fellow_id: replacement } : a))
      this.ctx.db.update(jobs).set({ assignments: next, reason: `stage ${lost.stage} moved from ${fellowId} to ${replacement}`, updatedAt: this.ctx.clock.now() }).where(eq(jobs.id, r.id)).run()
      this.ctx.log.info('stage moved to another fellow', { job_id: r.id, stage: lost.stage, from: fellowId, to: replacement, why })
      // The fellow that lost the stage runs it no more (listed "offline running <job>" otherwise).
      this.registry.jobEnded(r.id, [fellowId])
      const updated = { ...r, assignments: next }
      // The newcomer gets START for its stage; the rest get RECONFIGURE with their new neighbours.
      this.startAll(updated, next, 'START', {}, next.filter((a) => a.fellow_id === replacement))
      // A paused job's moved stage stays paused, as on a fellow that registered again (it ran).
      if (r.status === 'paused') this.signals.send(replacement, 'PAUSE', { jobId: r.id, payload: {} })
      this.startAll(updated, next, 'RECONFIGURE', { reconfigured: true }, next.filter((a) => a.fellow_id !== replacement))
    }
  }
}
