// Heartbeats at fleet scale: the leader (policy, validation, registry, batched flush) beside the
// floor (one prepared UPDATE per heartbeat), on copies of the same seeded state file. Every fleet
// size has its leader and its floor running at once and the measured rounds go round-robin over
// all of them (leader 100, floor 100, leader 100k, floor 100k, again...), so a burst of other work
// on the machine lands on every figure alike: the leader/floor ratios and the flatness across
// fleet sizes are then comparisons within the same minutes, not across them.
import { heartbeatLoad, type LoadResult } from '../lib/http-load'
import { startFloor, startLeader, tempDir, type Server } from '../lib/proc'
import { copyState, type Seed } from '../lib/seed'
import { median } from '../lib/report'

export interface HeartbeatOptions {
  rounds: number
  seconds: number
  connections: number
}

export interface Round extends LoadResult {
  /** Server CPU time per heartbeat (user + system, all threads), in microseconds. */
  cpuUs: number
}

export interface Side {
  rps: number
  p50Ms: number
  p99Ms: number
  /** Median server CPU per heartbeat: the cost, much less moved by other work than throughput. */
  cpuUs: number
  rounds: Round[]
}

export interface HeartbeatResult {
  fellows: number
  leader: Side
  floor: Side
  /** Spawn to ready with this fleet in the state file (the registry loads every fellow). */
  leaderReadyMs: number
  leaderRssAfter: number
  warmupSeconds: number
}

const side = (rounds: Round[]): Side => ({
  rps: median(rounds.map((r) => r.rps)),
  p50Ms: median(rounds.map((r) => r.p50Ms)),
  p99Ms: median(rounds.map((r) => r.p99Ms)),
  cpuUs: median(rounds.map((r) => r.cpuUs)),
  rounds,
})

async function round(server: Server, seed: Seed, o: HeartbeatOptions): Promise<Round> {
  const cpu0 = server.cpu()
  const r = await heartbeatLoad(server.url, seed.tokensFile, o.connections, o.seconds)
  return { ...r, cpuUs: ((server.cpu() - cpu0) / r.requests) * 1e6 }
}

export async function heartbeats(seeds: Seed[], o: HeartbeatOptions): Promise<HeartbeatResult[]> {
  const servers: Server[] = []
  try {
    const fleets: { seed: Seed; leader: Server; floor: Server; warmupSeconds: number; l: Round[]; f: Round[] }[] = []
    // Largest fleet first, so no fleet sits idle for a minute before its rounds: its fellows would
    // go offline (SVC_HEARTBEAT_INTERVAL_S=10: offline after 60 s) and the liveness loop's work on
    // that would land in the figures. Between rounds a fleet idles about 25 s: stale, not offline.
    for (const seed of [...seeds].sort((a, b) => b.fellows.length - a.fellows.length)) {
      const leader = await startLeader({ stateDir: seed.stateDir })
      servers.push(leader)
      const floor = await startFloor('heartbeat.ts', { FLOOR_DB: copyState(seed, tempDir('floor-hb')) })
      servers.push(floor)
      // Warm-up long enough for every fellow to have sent once: in steady state each fellow's
      // token is in the leader's cache (they beat every 10 s), so first-sight lookups are not the figure.
      const warmupSeconds = Math.min(30, Math.max(2, Math.ceil(seed.fellows.length / 6000)))
      for (const s of [leader, floor]) {
        const w = await heartbeatLoad(s.url, seed.tokensFile, o.connections, warmupSeconds)
        if (w.errors > 0) throw new Error(`${s.name}: ${w.errors} failed heartbeats in the warm-up (${seed.fellows.length} fellows)`)
      }
      fleets.push({ seed, leader, floor, warmupSeconds, l: [], f: [] })
    }
    for (let r = 0; r < o.rounds; r++) {
      for (const x of fleets) {
        x.l.push(await round(x.leader, x.seed, o))
        x.f.push(await round(x.floor, x.seed, o))
      }
    }
    fleets.sort((a, b) => a.seed.fellows.length - b.seed.fellows.length)
    return fleets.map((x) => {
      const bad = [...x.l, ...x.f].find((r) => r.errors > 0)
      if (bad) throw new Error(`${bad.errors} failed heartbeats in a measured round (${x.seed.fellows.length} fellows)`)
      return { fellows: x.seed.fellows.length, leader: side(x.l), floor: side(x.f), leaderReadyMs: x.leader.readyMs, leaderRssAfter: x.leader.rss(), warmupSeconds: x.warmupSeconds }
    })
  } finally {
    await Promise.all(servers.map((s) => s.stop()))
  }
}
