// Open signal WebSockets: the server's RSS with N sockets open, and the delivery time of a
// pool-wide signal to 1,000 of them (POST /api/v1/workers/update {pool_id}: one UPDATE to every
// fellow of the pool, the same hub path as STOP). Floor: bench/floor/signals.ts.
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

async function measure(server: Server, kind: 'leader' | 'floor', seed: Seed, sockets: number, rounds: number): Promise<SocketsSide> {
  await Bun.sleep(1000)
  const rssIdle = server.rss()
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
    await Bun.sleep(1000) // let the server settle (buffers, GC) before reading its RSS
    const rssOpen = server.rss()
    child.stdin.write('go\n')
    await child.stdin.flush()
    await readUntil((s) => /\{.*\}\s*$/.test(s))
    await child.exited
    const r = JSON.parse(out.slice(out.indexOf('{'))) as Omit<SocketsSide, 'rssIdle' | 'rssOpen'>
    if (r.lost > 0) throw new Error(`${kind}: ${r.lost} signals never arrived`)
    return { ...r, rssIdle, rssOpen }
  } finally {
    child.kill()
  }
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
