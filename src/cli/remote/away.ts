// How the following commands (jobs watch, jobs logs --follow) wait out a leader that is away: a
// restart, an upgrade, a proxy answering 502 for it. They keep trying for as long as it takes
// (Ctrl-C ends them), a little less often each time, and say so once on stderr; only a definite
// answer (401, 403, 404: the token or the job is gone) ends them.
import { LeaderRefused, LeaderUnreachable } from '../client'
import { note } from '../output'

/** Whether a failure is the leader being away for now rather than a refusal. */
export const isAway = (e: unknown): boolean => e instanceof LeaderUnreachable || (e instanceof LeaderRefused && e.status >= 500)

/** The wait before retry `n` (from 0) of a run of failures: 0.25 s, doubling, at most 5 s. */
export const backoffMs = (n: number): number => Math.min(5000, 250 * 2 ** Math.min(n, 10))

/** A wait that ends early when `signal` aborts (a follow that is over need not sleep on). */
export function waitFor(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done)
  })
}

/** Says on stderr when the leader went away, and when it answers again: once each, however many streams notice. */
export class AwayNotice {
  private away = false

  gone(e: Error): void {
    if (this.away) return
    this.away = true
    note(`svc: ${e.message.replace(/\.$/, '')}; waiting for the leader to come back (Ctrl-C to stop)`)
  }

  back(): void {
    if (!this.away) return
    this.away = false
    note('svc: the leader answers again; following')
  }
}
