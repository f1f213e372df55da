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

/** A server and where its next round starts in the fleet (rounds continue the rotation). */
interface Target {
  server: Server
  next: number
}

async function round(t: Target, seed: Seed, connections: number, seconds: number): Promise<Round> {
  const cpu0 = t.server.cpu()
  const r = await heartbeatLoad(t.server.url, seed.tokensFile, connections, seconds, t.next)
  t.next = (t.next + r.requests) % seed.fellows.length
  return { ...r, cpuUs: ((t.server.cpu() - cpu0) / r.requests) * 1e6 }
}

/**
 * The leader's heartbeat interval here. Rounds go round-robin over every fleet, so a fleet idles
 * about 25 s between its rounds, and a fellow of 100,000 beats once a minute or so (half the fleet
 * per round); with the default 10 s they would turn stale (after 20 s) and back to online every
 * round, and the liveness work on that churn (events for tens of thousands of fellows at once)
 * would land in the figures. 60 s keeps them online (120 s); the heartbeat path is the same.
 */
export const BENCH_HEARTBEAT_INTERVAL_S = '60'

export async function heartbeats(seeds: Seed[], o: HeartbeatOptions): Promise<HeartbeatResult[]> {
  const servers: Server[] = []
  try {
    const fleets: { seed: Seed; leader: Target; floor: Target; warmupSeconds: number; l: Round[]; f: Round[] }[] = []
    // Largest fleet first, so no fleet sits idle long before its rounds start (see
    // BENCH_HEARTBEAT_INTERVAL_S: its fellows must stay online).
    for (const seed of [...seeds].sort((a, b) => b.fellows.length - a.fellows.length)) {
      const leader = { server: await startLeader({ stateDir: seed.stateDir, env: { SVC_HEARTBEAT_INTERVAL_S: BENCH_HEARTBEAT_INTERVAL_S } }), next: 0 }
      servers.push(leader.server)
      const floor = { server: await startFloor('heartbeat.ts', { FLOOR_DB: copyState(seed, tempDir('floor-hb')) }), next: 0 }
      servers.push(floor.server)
      // Warm-up long enough for every fellow to have sent once: in steady state each fellow's
      // token is in the leader's cache (they beat every 10 s), so first-sight lookups are not the figure.
      const warmupSeconds = Math.min(30, Math.max(2, Math.ceil(seed.fellows.length / 6000)))
      for (const t of [leader, floor]) {
        const w = await round(t, seed, o.connections, warmupSeconds)
        if (w.errors > 0) throw new Error(`${t.server.name}: ${w.errors} failed heartbeats in the warm-up (${seed.fellows.length} fellows)`)
      }
      fleets.push({ seed, leader, floor, warmupSeconds, l: [], f: [] })
    }
    for (let r = 0; r < o.rounds; r++) {
      for (const x of fleets) {
        x.l.push(await round(x.leader, x.seed, o.connections, o.seconds))
        x.f.push(await round(x.floor, x.seed, o.connections, o.seconds))
      }
    }
    fleets.sort((a, b) => a.seed.fellows.length - b.seed.fellows.length)
    return fleets.map((x) => {
      const bad = [...x.l, ...x.f].find((r) => r.errors > 0)
      if (bad) throw new Error(`${bad.errors} failed heartbeats in a measured round (${x.seed.fellows.length} fellows)`)
      return { fellows: x.seed.fellows.length, leader: side(x.l), floor: side(x.f), leaderReadyMs: x.leader.server.readyMs, leaderRssAfter: x.leader.server.rss(), warmupSeconds: x.warmupSeconds }
    })
  } finally {
    await Promise.all(servers.map((s) => s.stop()))
  }
}
