// A stage's status reports to the leader: sent in order, off the training path, each with a few
// retries for a flaky leader. Shared by the built-in MLP stage and external runners. Reports that
// come faster than the leader takes them wait in a bounded queue where the latest figures win: a
// runner printing a status line in a loop queued a POST per line, without bound (agent memory grew
// by the minute, and real progress waited behind minutes of stale ones).
import { isRetryable, LeaderError, type LeaderClient } from './client'
import type { StatusReport } from '../wire/jobs'
import { sleep, type TimerClock } from '../time'
import type { Logger } from '../log'

/**
 * The reports that end a stage's part in the job. Given up after a few tries, like progress, one
 * sent while the leader restarted (or the network was down a few seconds) was lost: the job
 * stayed "running" for good and the fellow counted as busy. These are retried until the leader
 * takes them (or says the fellow is off the job), as long as the agent runs.
 */
const FINAL: ReadonlySet<StatusReport['status']> = new Set(['completed', 'failed'])
const ATTEMPTS = 5
const MAX_BACKOFF_MS = 30_000
/** Reports waiting at most; past it the oldest that does not end the stage is dropped. */
const MAX_WAITING = 16

export class StatusReporter {
  private readonly waiting: StatusReport[] = []
  /** Sends what waits, one report at a time; null when nothing does. */
  private draining: Promise<void> | null = null
  private gone = false

  /**
   * `onGone` hears, once, that the leader no longer has this fellow on the job (403: not assigned,
   * or the job ended; 404: deleted). A fellow that was away when its job failed or its stage moved
   * learns it here, and stops the stage instead of training on for no one.
   */
  constructor(
    private readonly d: { client: LeaderClient; log: Logger; clock: TimerClock; onGone?: (reason: string) => void },
    private readonly jobId: string,
  ) {}

  report(r: StatusReport): void {
    const w = this.waiting
    const last = w.at(-1)
    // Like the last one waiting (progress after progress): one report with the latest figures,
    // keeping what only the earlier said (resumed_from_step). Only the last: an earlier one
    // replaced would move it before what came between (running, paused, running).
    if (last && last.status === r.status && !FINAL.has(r.status)) w[w.length - 1] = { ...last, ...r }
    else w.push(r)
    if (w.length > MAX_WAITING) {
      const stale = w.findIndex((x) => !FINAL.has(x.status))
      if (stale >= 0) w.splice(stale, 1)
    }
    this.draining ??= this.drain()
  }

  /** Resolves once every report so far was sent (or given up). */
  settled(): Promise<void> {
    return this.draining ?? Promise.resolve()
  }

  private async drain(): Promise<void> {
    for (let r = this.waiting.shift(); r; r = this.waiting.shift()) await this.send(r)
    // In the same turn as the check above: a report that comes next starts a new drain.
    this.draining = null
  }

  private async send(r: StatusReport): Promise<void> {
    const { client, log, clock } = this.d
    if (this.gone) return
    const final = FINAL.has(r.status)
    for (let attempt = 1; ; attempt++) {
      try {
        await client.jobStatus(this.jobId, r)
        if (attempt > ATTEMPTS) log.info('job status report delivered', { job_id: this.jobId, status: r.status, attempts: attempt })
        return
      } catch (e) {
        if (e instanceof LeaderError && (e.status === 403 || e.status === 404)) {
          this.gone = true
          return this.d.onGone?.(`the leader no longer has this fellow on the job (${e.message})`)
        }
        const error = (e as Error).message
        if (!isRetryable(e) || (!final && attempt >= ATTEMPTS)) return log.warn('job status report failed', { job_id: this.jobId, status: r.status, error })
        if (attempt === ATTEMPTS) log.warn('job status report not delivered yet: retrying until the leader takes it', { job_id: this.jobId, status: r.status, error, retry_ms: MAX_BACKOFF_MS })
        await sleep(clock, Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempt))
      }
    }
  }
}
