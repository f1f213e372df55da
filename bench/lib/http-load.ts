// Heartbeat load: wrk with bench/load/heartbeat.lua when wrk is installed (a C client leaves
// more of the load core's time to sending), otherwise the Bun generator in bench/load/http.ts.
import { join } from 'node:path'
import { ROOT, runLoad } from './proc'

export interface LoadResult {
  tool: 'wrk' | 'bun'
  requests: number
  seconds: number
  rps: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  maxMs: number
  /** Non-2xx answers plus connect/read/write errors and timeouts: must be 0 for a valid figure. */
  errors: number
}

interface Raw {
  requests: number
  duration_us: number
  errors_connect: number
  errors_read: number
  errors_write: number
  errors_status: number
  errors_timeout: number
  p50_us: number
  p90_us: number
  p99_us: number
  max_us: number
}

/** wrk if installed (BENCH_NO_WRK=1 forces the Bun generator, to check it still works). */
export const WRK = process.env.BENCH_NO_WRK ? null : Bun.which('wrk')

/** `start`: the fellow (line of tokensFile) to begin with; pass where the last round stopped. */
export async function heartbeatLoad(url: string, tokensFile: string, connections: number, seconds: number, start = 0): Promise<LoadResult> {
  let raw: Raw
  if (WRK) {
    raw = await runLoad<Raw>([WRK, '-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', join(ROOT, 'bench/load/heartbeat.lua'), url, '--', tokensFile, String(start)])
  } else {
    raw = await runLoad<Raw>([process.execPath, join(ROOT, 'bench/load/http.ts')], { BENCH_HTTP: JSON.stringify({ url, tokensFile, connections, seconds, start }) })
  }
  const s = raw.duration_us / 1e6
  return {
    tool: WRK ? 'wrk' : 'bun',
    requests: raw.requests,
    seconds: s,
    rps: raw.requests / s,
    p50Ms: raw.p50_us / 1000,
    p90Ms: raw.p90_us / 1000,
    p99Ms: raw.p99_us / 1000,
    maxMs: raw.max_us / 1000,
    errors: raw.errors_connect + raw.errors_read + raw.errors_write + raw.errors_status + raw.errors_timeout,
  }
}
