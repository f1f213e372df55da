// A stage's status reports to the leader: sent in order, off the training path, each with a few
// retries for a flaky leader. Shared by the built-in MLP stage and external runners.
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

export class StatusReporter {
  private chain: Promise<void> = Promise.resolve()
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
    const { client, log, clock } = this.d
    this.chain = this.chain.then(async () => {
      if (this.gone) return
      const final = FINAL.has(r.status)
      for (let attempt = 1; ; attempt++) {
        try {
          const sent = await client.jobStatus(this.jobId, r)
          if (attempt > ATTEMPTS) log.info('job status report delivered', { job_id: this.jobId, status: r.status, attempts: attempt })
          return sent
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
    })
  }

  /** Resolves once every report so far was sent (or given up). */
  settled(): Promise<void> {
    return this.chain
  }
}
