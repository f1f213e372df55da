// Open signal WebSockets: the server's RSS with N sockets open, and the delivery time of a
// pool-wide signal to 1,000 of them (POST /api/v1/workers/update {pool_id}: one UPDATE to every
// fellow of the pool, the same hub path as STOP). Floor: bench/floor/signals.ts. And the leader's RSS
// with as many sockets as one leader should hold (manySockets, below).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pinned, ROOT, startFloor, startLeader, tempDir, type Server } from '../lib/proc'
import { copyState, POOL_SIZE, type Seed } from '../lib/seed'

export interface SocketsSide {
  sockets: number
  rssIdle: number
  rssOpen: number
  openSeconds: number
  deliveries: number
  lost: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** The first (cold) signal: until the last socket of the pool had it. Not in the percentiles. */
  coldMs: number
  meanMsByTenth: number[]
}

export interface SignalsResult {
  sockets: number
  poolSize: number
  rounds: number
  leader: SocketsSide
  floor: SocketsSide
}

/**
 * What a server holds, not the garbage it has yet to collect: the lowest RSS over 10 s, read each
 * second; before the first handshake (the start's garbage) and after the last one. Read after 1 s, the leader still held the
 * garbage of 10,000 handshakes (+2.9 to +5.1 KiB a socket from run to run); on a state with
 * 10,000 heartbeated fellows it read +3.7 KiB after 3 s, +1.7 after 5-9 s and +0.4 after 11 s,
 * as the collector got to it. The floor's reading does not move.
 */
async function settledRss(server: Server): Promise<number> {
  let low = Infinity
  for (let i = 0; i < 10; i++) {
    await Bun.sleep(1000)
    low = Math.min(low, server.rss())
  }
  return low
}

async function measure(server: Server, kind: 'leader' | 'floor', seed: Seed, sockets: number, rounds: number): Promise<SocketsSide> {
  const rssIdle = await settledRss(server) // the start's garbage too (loading 10,000 fellows)
  const poolSize = Math.min(POOL_SIZE, sockets)
  const spec = { url: server.url, kind, tokensFile: seed.tokensFile, idsFile: seed.idsFile, sockets, poolSize, poolId: seed.poolIds[0]!, adminToken: seed.adminToken, rounds }
  const child = Bun.spawn(pinned('load', [process.execPath, join(ROOT, 'bench/load/sockets.ts')]), {
    env: { ...process.env, BENCH_SOCKETS: JSON.stringify(spec) },
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  try {
    const reader = child.stdout.getReader()
    const dec = new TextDecoder()
    let out = ''
    const readUntil = async (done: (s: string) => boolean) => {
      while (!done(out)) {
        const r = await reader.read()
        if (r.done) throw new Error(`socket client exited: ${out}\n${await new Response(child.stderr).text()}`)
        out += dec.decode(r.value)
      }
    }
    await readUntil((s) => s.includes('open '))
    const rssOpen = await settledRss(server)
    child.stdin.write('go\n')
    await child.stdin.flush()
    await readUntil((s) => /\{.*\}\s*$/.test(s))
    const r = JSON.parse(out.slice(out.indexOf('{'))) as Omit<SocketsSide, 'rssIdle' | 'rssOpen'>
    if (r.lost > 0) throw new Error(`${kind}: ${r.lost} signals never arrived`)
    return { ...r, rssIdle, rssOpen }
  } finally {
    await closeServerFirst(server, child)
  }
}

/**
 * Stops the server, then the client: the side that closes a connection first keeps its TIME_WAIT
 * for a minute, and on the client's side 10,000 of them held the ephemeral ports of 127.0.0.1, so
 * that the next run's sockets could not connect.
 */
async function closeServerFirst(server: Server, client: { stdin: { end(): unknown }; kill(): void; exited: Promise<number> }): Promise<void> {
  await server.stop()
  client.stdin.end()
  const killer = setTimeout(() => client.kill(), 5_000)
  await client.exited
  clearTimeout(killer)
}

export async function signals(seed: Seed, sockets: number, rounds: number): Promise<SignalsResult> {
  if (seed.fellows.length < sockets) throw new Error(`the seed has ${seed.fellows.length} fellows, fewer than ${sockets} sockets`)
  const leader = await startLeader({ stateDir: seed.stateDir })
  let l: SocketsSide
  try {
    l = await measure(leader, 'leader', seed, sockets, rounds)
  } finally {
    await leader.stop()
  }
  const floor = await startFloor('signals.ts', { FLOOR_DB: copyState(seed, tempDir('floor-ws')) })
  let f: SocketsSide
  try {
    f = await measure(floor, 'floor', seed, sockets, rounds)
  } finally {
    await floor.stop()
  }
  return { sockets, poolSize: Math.min(POOL_SIZE, sockets), rounds, leader: l, floor: f }
}

// ---- many sockets on one leader ------------------------------------------------------------------

export interface ManySocketsResult {
  /** Sockets the row asks for. */
  wanted: number
  /** Sockets opened: `wanted`, or fewer when the open-file limit does not allow as many. */
  sockets: number
  /** This process's open-file limit (soft), which the leader and the client inherit. */
  openFileLimit: number
  rssIdle: number
  rssOpen: number
  openSeconds: number
}

/** The soft RLIMIT_NOFILE of this process (children inherit it). */
export function openFileLimit(): number {
  const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
  return line === null || line[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(line[1])
}

/** Descriptors the leader needs besides its sockets (state file, WAL, listener, pipes), with room. */
const SPARE_FDS = 256

/** How many sockets a run can open towards `wanted` under the open-file limit. */
export function socketsAllowed(wanted: number): number {
  return Math.min(wanted, openFileLimit() - SPARE_FDS)
}

/**
 * The leader's RSS with `sockets` signal sockets open at once (raw handshakes from
 * bench/load/many-sockets.ts, spread over several loopback source addresses). Leader only: the
 * question is whether one leader holds a large fleet, not how it compares.
 */
export async function manySockets(seed: Seed, wanted: number, sockets: number): Promise<ManySocketsResult> {
  if (seed.fellows.length < sockets) throw new Error(`the seed has ${seed.fellows.length} fellows, fewer than ${sockets} sockets`)
  const leader = await startLeader({ stateDir: seed.stateDir })
  try {
    const rssIdle = await settledRss(leader)
    const spec = { port: leader.port, tokensFile: seed.tokensFile, idsFile: seed.idsFile, sockets }
    const child = Bun.spawn(pinned('load', [process.execPath, join(ROOT, 'bench/load/many-sockets.ts')]), {
      env: { ...process.env, BENCH_MANY_SOCKETS: JSON.stringify(spec) },
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      let out = ''
      const dec = new TextDecoder()
      const reader = child.stdout.getReader()
      while (!/open \d+ [\d.]+\n/.test(out)) {
        const r = await reader.read()
        if (r.done) throw new Error(`many-sockets client exited: ${out}\n${await new Response(child.stderr).text()}`)
        out += dec.decode(r.value)
      }
      const [, opened, seconds] = /open (\d+) ([\d.]+)/.exec(out)!
      const rssOpen = await settledRss(leader) // as in measure()
      return { wanted, sockets: Number(opened), openFileLimit: openFileLimit(), rssIdle, rssOpen, openSeconds: Number(seconds) }
    } finally {
      await closeServerFirst(leader, child)
    }
  } finally {
    await leader.stop()
  }
}
