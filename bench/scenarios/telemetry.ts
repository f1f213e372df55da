// What the telemetry history (issue 25) costs the heartbeat path: the same leader binary on two
// copies of the same seeded state file, one keeping the history (the default) and one with
// SVC_TELEMETRY_RETENTION_DAYS=0 (no buckets: the leader as it was before the history), measured
// in alternating rounds so that other work on the machine lands on both alike. The heartbeats
// carry hardware, so every one feeds the open buckets, and rounds span minute boundaries often
// enough that closed buckets are written by the flush while the load runs.
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { heartbeatLoad } from '../lib/http-load'
import { startLeader, tempDir, type Server } from '../lib/proc'
import { median } from '../lib/report'
import type { Seed } from '../lib/seed'
import { BENCH_HEARTBEAT_INTERVAL_S } from './heartbeat'

export interface TelemetryCostResult {
  fellows: number
  /** Median heartbeats/s and server CPU per heartbeat (µs), with and without the history. */
  on: { rps: number; cpuUs: number }
  off: { rps: number; cpuUs: number }
  /** Bucket rows the history leader had written by the end. */
  rowsWritten: number | null
  rounds: number
  seconds: number
}

async function leaderOn(seed: Seed, tag: string, env: Record<string, string>): Promise<Server> {
  const dir = tempDir(tag)
  copyFileSync(seed.dbPath, join(dir, 'join_state.sqlite3'))
  return startLeader({ stateDir: dir, env: { SVC_HEARTBEAT_INTERVAL_S: BENCH_HEARTBEAT_INTERVAL_S, ...env } })
}

export async function telemetryCost(seed: Seed, o: { rounds: number; seconds: number; connections: number }): Promise<TelemetryCostResult> {
  const servers: Server[] = []
  try {
    const on = await leaderOn(seed, 'hb-history', {})
    servers.push(on)
    const off = await leaderOn(seed, 'hb-no-history', { SVC_TELEMETRY_RETENTION_DAYS: '0' })
    servers.push(off)
    const next = new Map<Server, number>([
      [on, 0],
      [off, 0],
    ])
    const runs = new Map<Server, { rps: number; cpuUs: number }[]>([
      [on, []],
      [off, []],
    ])
    const round = async (s: Server, seconds: number) => {
      const cpu0 = s.cpu()
      const r = await heartbeatLoad(s.url, seed.tokensFile, o.connections, seconds, next.get(s)!)
      if (r.errors > 0) throw new Error(`${r.errors} failed heartbeats (${s.name})`)
      next.set(s, (next.get(s)! + r.requests) % seed.fellows.length)
      return { rps: r.rps, cpuUs: ((s.cpu() - cpu0) / r.requests) * 1e6 }
    }
    // Warm-up: every fellow beats once on each (token cache, open buckets), not measured.
    const warm = Math.min(30, Math.max(2, Math.ceil(seed.fellows.length / 6000)))
    await round(on, warm)
    await round(off, warm)
    for (let i = 0; i < o.rounds; i++) {
      // Alternate which goes first, so neither always follows the other's flush backlog.
      for (const s of i % 2 === 0 ? [on, off] : [off, on]) runs.get(s)!.push(await round(s, o.seconds))
    }
    const side = (s: Server) => ({ rps: median(runs.get(s)!.map((r) => r.rps)), cpuUs: median(runs.get(s)!.map((r) => r.cpuUs)) })
    return { fellows: seed.fellows.length, on: side(on), off: side(off), rowsWritten: null, rounds: o.rounds, seconds: o.seconds }
  } finally {
    await Promise.all(servers.map((s) => s.stop()))
  }
}
