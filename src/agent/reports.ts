// A stage's status reports to the leader: sent in order, off the training path, each with a few
// retries for a flaky leader. Shared by the built-in MLP stage and external runners.
import { isRetryable, LeaderError, type LeaderClient } from './client'
import type { StatusReport } from '../wire/jobs'
import { sleep, type TimerClock } from '../time'
import type { Logger } from '../log'

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
      for (let attempt = 1; ; attempt++) {
        try {
          return await client.jobStatus(this.jobId, r)
        } catch (e) {
          if (e instanceof LeaderError && (e.status === 403 || e.status === 404)) {
            this.gone = true
            return this.d.onGone?.(`the leader no longer has this fellow on the job (${e.message})`)
          }
          if (!isRetryable(e) || attempt >= 5) return log.warn('job status report failed', { job_id: this.jobId, status: r.status, error: (e as Error).message })
          await sleep(clock, 250 * 2 ** attempt)
        }
      }
    })
  }

  /** Resolves once every report so far was sent (or given up). */
  settled(): Promise<void> {
    return this.chain
  }
}
