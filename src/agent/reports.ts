// A stage's status reports to the leader: sent in order, off the training path, each with a few
// retries for a flaky leader. Shared by the built-in MLP stage and external runners.
import { isRetryable, type LeaderClient } from './client'
import type { StatusReport } from '../wire/jobs'
import { sleep, type TimerClock } from '../time'
import type { Logger } from '../log'

export class StatusReporter {
  private chain: Promise<void> = Promise.resolve()

  constructor(
    private readonly d: { client: LeaderClient; log: Logger; clock: TimerClock },
    private readonly jobId: string,
  ) {}

  report(r: StatusReport): void {
    const { client, log, clock } = this.d
    this.chain = this.chain.then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await client.jobStatus(this.jobId, r)
        } catch (e) {
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
