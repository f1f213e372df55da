// The key a job's fellows prove to each other's p2p listeners (issue 26, item 10). Derived from
// SVC_SECRET_KEY, the job and the fellows it runs on, so nothing is stored, a leader restart or a
// resume sends the same key, and a re-placement sends a new one: a fellow that lost its stage
// can no longer reach the listeners of the fellows that kept theirs. Sent only in START and
// RECONFIGURE to those fellows (the signal channel is authenticated with their node tokens).
import { hmac } from '../crypto'

export function jobP2PKey(secretKey: Buffer, jobId: string, fellowIds: readonly string[]): string {
  return hmac(secretKey, `svc p2p key v1\n${jobId}\n${fellowIds.join('\n')}`)
}
