// Cold start (spawn to the first 200 from /api/v1/ready, on an empty state directory: the leader
// creates the file and applies every migration; the executable already in the page cache) and idle RSS (a few seconds after ready, loops
// running, no traffic). Floor: bench/floor/ready.ts compiled into an executable like dist/svc.
import { join } from 'node:path'
import { ROOT, rssSplitOf, startFloor, startLeader, tempDir } from '../lib/proc'
import { median } from '../lib/report'

export interface StartupResult {
  runs: number
  leaderReadyMs: number[]
  floorReadyMs: number[]
  leaderIdleRss: number[]
  floorIdleRss: number[]
  /** The last run's idle RSS split: anonymous (heap, JIT, malloc) and file-backed (the executable). */
  leaderRssSplit: { anon: number; file: number } | null
  floorRssSplit: { anon: number; file: number } | null
  idleSeconds: number
}

export async function startup(runs: number, idleSeconds: number): Promise<StartupResult> {
  const bin = join(tempDir('floor-bin'), 'floor-ready')
  const built = Bun.spawnSync([process.execPath, 'build', '--compile', join(ROOT, 'bench/floor/ready.ts'), '--outfile', bin], { stdout: 'pipe', stderr: 'pipe' })
  if (built.exitCode !== 0) throw new Error(`cannot compile the start-up floor: ${built.stderr.toString()}`)
  // One untimed start of each first: the figure is a start with the executable in the page cache
  // (a restart, a container re-run), not a read of 100 MiB from a cold disk.
  await (await startLeader({ stateDir: tempDir('cold') })).stop()
  await (await startFloor('ready.ts', { FLOOR_DB: join(tempDir('cold-floor'), 'floor.sqlite3') }, bin)).stop()
  const r: StartupResult = { runs, leaderReadyMs: [], floorReadyMs: [], leaderIdleRss: [], floorIdleRss: [], leaderRssSplit: null, floorRssSplit: null, idleSeconds }
  for (let i = 0; i < runs; i++) {
    // Alternate, so a slow moment of the machine is shared.
    const leader = await startLeader({ stateDir: tempDir('cold') })
    r.leaderReadyMs.push(leader.readyMs)
    await Bun.sleep(idleSeconds * 1000)
    r.leaderIdleRss.push(leader.rss())
    r.leaderRssSplit = rssSplitOf(leader.pid)
    await leader.stop()
    const floor = await startFloor('ready.ts', { FLOOR_DB: join(tempDir('cold-floor'), 'floor.sqlite3') }, bin)
    r.floorReadyMs.push(floor.readyMs)
    await Bun.sleep(idleSeconds * 1000)
    r.floorIdleRss.push(floor.rss())
    r.floorRssSplit = rssSplitOf(floor.pid)
    await floor.stop()
  }
  return r
}

export const startupFigures = (r: StartupResult) => ({
  leaderReadyMs: median(r.leaderReadyMs),
  floorReadyMs: median(r.floorReadyMs),
  leaderIdleRss: median(r.leaderIdleRss),
  floorIdleRss: median(r.floorIdleRss),
})
