// Relay throughput for 4 MiB frames, pushed and popped at the same time, beside a bare Bun.serve
// byte queue. Rounds alternate leader and floor.
import { join } from 'node:path'
import { ROOT, runLoad, startFloor, startLeader, tempDir, type Server } from '../lib/proc'
import { median } from '../lib/report'
import { seedState } from '../lib/seed'

export interface RelayRound {
  mbPerS: number
  framesPerS: number
  pushed: number
  popped: number
  full: number
  popP50Ms: number
  /** Frames popped in the whole round, warm-up included. */
  poppedTotal: number
  /** Server CPU seconds per GB popped (user + system, all threads). */
  cpuSPerGB: number
}

export interface RelayResult {
  frameBytes: number
  pushers: number
  poppers: number
  leaderMbPerS: number
  floorMbPerS: number
  leaderCpuSPerGB: number
  floorCpuSPerGB: number
  leader: RelayRound[]
  floor: RelayRound[]
  /** The same over the relay's WebSocket data channel, beside a bare Bun WebSocket relay. */
  ws: { leaderMbPerS: number; floorMbPerS: number; leaderCpuSPerGB: number; floorCpuSPerGB: number; leader: RelayRound[]; floor: RelayRound[] }
}

export async function relay(o: { rounds: number; seconds: number }): Promise<RelayResult> {
  const seed = seedState(tempDir('relay'), 2, { relayJob: true })
  const frameBytes = 4 * 1024 * 1024
  const base = { jobId: seed.jobId!, pushToken: seed.fellows[0]!.token, popToken: seed.fellows[1]!.token, frameBytes, pushers: 2, poppers: 2, warmupSeconds: 1, seconds: o.seconds }
  const run = async (server: Server, kind: 'leader' | 'floor', client = 'relay.ts'): Promise<RelayRound> => {
    const cpu0 = server.cpu()
    const r = await runLoad<Omit<RelayRound, 'cpuSPerGB'>>([process.execPath, join(ROOT, 'bench/load', client)], { BENCH_RELAY: JSON.stringify({ ...base, url: server.url, kind }) })
    // The whole round (warm-up included) against the bytes popped in it: pushed ones not yet popped
    // are not counted, which leans against the server that queues more; rounds are long enough.
    return { ...r, cpuSPerGB: (server.cpu() - cpu0) / ((r.poppedTotal * frameBytes) / 1e9) }
  }
  const leader = await startLeader({ stateDir: seed.stateDir })
  let floor: Server | null = null
  let wsFloor: Server | null = null
  try {
    floor = await startFloor('relay.ts')
    wsFloor = await startFloor('relay-ws.ts')
    const l: RelayRound[] = []
    const f: RelayRound[] = []
    const wl: RelayRound[] = []
    const wf: RelayRound[] = []
    for (let r = 0; r < o.rounds; r++) {
      l.push(await run(leader, 'leader'))
      f.push(await run(floor, 'floor'))
      wl.push(await run(leader, 'leader', 'relay-ws.ts'))
      wf.push(await run(wsFloor, 'floor', 'relay-ws.ts'))
    }
    const med = (xs: RelayRound[], k: 'mbPerS' | 'cpuSPerGB') => median(xs.map((x) => x[k]))
    return {
      frameBytes,
      pushers: base.pushers,
      poppers: base.poppers,
      leaderMbPerS: med(l, 'mbPerS'),
      floorMbPerS: med(f, 'mbPerS'),
      leaderCpuSPerGB: med(l, 'cpuSPerGB'),
      floorCpuSPerGB: med(f, 'cpuSPerGB'),
      leader: l,
      floor: f,
      ws: { leaderMbPerS: med(wl, 'mbPerS'), floorMbPerS: med(wf, 'mbPerS'), leaderCpuSPerGB: med(wl, 'cpuSPerGB'), floorCpuSPerGB: med(wf, 'cpuSPerGB'), leader: wl, floor: wf },
    }
  } finally {
    await Promise.all([leader.stop(), floor?.stop(), wsFloor?.stop()])
  }
}
