// Is the leader up? The check holds no credential on purpose (node auth rule 4): a leader that
// answers 401 or 403 is alive and enforcing auth, which is exactly what a healthy leader does,
// so those count as healthy. Only no answer, a timeout or a 5xx means the leader is down.
import { Backoff } from './backoff'
import { sleep, systemClock, type TimerClock } from '../time'

export interface HealthResult {
  healthy: boolean
  status: number | null
  reason: string
}

export async function checkLeaderHealth(leaderUrl: string, timeoutMs = 5000): Promise<HealthResult> {
  try {
    const res = await fetch(`${leaderUrl.replace(/\/+$/, '')}/api/v1/health`, { signal: AbortSignal.timeout(timeoutMs) })
    await res.arrayBuffer().catch(() => undefined)
    const healthy = res.ok || res.status === 401 || res.status === 403
    return { healthy, status: res.status, reason: healthy ? 'ok' : `answered ${res.status}` }
  } catch (e) {
    return { healthy: false, status: null, reason: (e as Error).message }
  }
}

/** The version the leader says in its health answer (null: it says none, or does not answer). */
export async function leaderVersion(leaderUrl: string, timeoutMs = 5000): Promise<string | null> {
  try {
    const res = await fetch(`${leaderUrl.replace(/\/+$/, '')}/api/v1/health`, { signal: AbortSignal.timeout(timeoutMs) })
    const v = ((await res.json()) as { version?: unknown }).version
    return typeof v === 'string' ? v.slice(0, 64) : null
  } catch {
    return null
  }
}

/** Waits until the leader is healthy; false when aborted first. Logs each miss with its delay. */
export async function waitForLeader(
  leaderUrl: string,
  signal: AbortSignal,
  onMiss: (r: HealthResult, retryMs: number) => void,
  clock: TimerClock = systemClock,
): Promise<boolean> {
  const backoff = new Backoff({ baseMs: 500, maxMs: 30_000 })
  while (!signal.aborted) {
    const r = await checkLeaderHealth(leaderUrl)
    if (r.healthy) return true
    const ms = backoff.next()
    onMiss(r, ms)
    if (!(await sleep(clock, ms, signal))) return false
  }
  return false
}
