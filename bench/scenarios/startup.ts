// Cold start (spawn to the first 200 from /api/v1/ready, on an empty state directory: the leader
// creates the file and applies every migration; the executable already in the page cache) and idle RSS (a few seconds after ready, loops
// running, no traffic). Floor: bench/floor/ready.ts compiled into an executable like dist/svc.
// A second floor, bench/floor/stack.ts, is the stack itself (Elysia, TypeBox, drizzle) with as many
// schema'd routes as the leader and nothing behind them: what the leader costs above it is its own.
import { join } from 'node:path'
import { ROOT, rssSplitOf, startFloor, startLeader, tempDir, type Server } from '../lib/proc'
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
  /** bench/floor/stack.ts with the leader's number of routes. */
  stackRoutes: number
  stackReadyMs: number[]
  stackIdleRss: number[]
  stackRssSplit: { anon: number; file: number } | null
  idleSeconds: number
}

function compile(file: string, name: string, flags: string[] = []): string {
  const bin = join(tempDir('floor-bin'), name)
  const built = Bun.spawnSync([process.execPath, 'build', '--compile', ...flags, join(ROOT, 'bench/floor', file), '--outfile', bin], { stdout: 'pipe', stderr: 'pipe' })
  if (built.exitCode !== 0) throw new Error(`cannot compile ${file}: ${built.stderr.toString()}`)
  return bin
}

export async function startup(runs: number, idleSeconds: number): Promise<StartupResult> {
  const bin = compile('ready.ts', 'floor-ready')
  // The stack floor is built the way build.ts builds dist/svc (bytecode, ESM, minified syntax).
  const stackBin = compile('stack.ts', 'floor-stack', ['--bytecode', '--format=esm', '--minify-whitespace', '--minify-syntax'])
  // One untimed start of each first: the figure is a start with the executable in the page cache
  // (a restart, a container re-run), not a read of 100 MiB from a cold disk. The leader's first
  // start also says how many routes the stack floor should have.
  const first = await startLeader({ stateDir: tempDir('cold') })
  const doc = (await (await fetch(`${first.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> }
  const stackRoutes = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).filter((k) => ['get', 'put', 'post', 'delete', 'patch'].includes(k)).length, 0)
  await first.stop()
  const floorEnv = () => ({ FLOOR_DB: join(tempDir('cold-floor'), 'floor.sqlite3') })
  const stackEnv = () => ({ ...floorEnv(), FLOOR_ROUTES: String(stackRoutes) })
  await (await startFloor('ready.ts', floorEnv(), bin)).stop()
  await (await startFloor('stack.ts', stackEnv(), stackBin)).stop()
  const r: StartupResult = {
    runs, leaderReadyMs: [], floorReadyMs: [], leaderIdleRss: [], floorIdleRss: [], leaderRssSplit: null, floorRssSplit: null,
    stackRoutes, stackReadyMs: [], stackIdleRss: [], stackRssSplit: null, idleSeconds,
  }
  /** One start: its time to ready, then its RSS after `idleSeconds` of nothing. */
  const measure = async (start: () => Promise<Server>, ready: number[], idle: number[]) => {
    const server = await start()
    ready.push(server.readyMs)
    await Bun.sleep(idleSeconds * 1000)
    idle.push(server.rss())
    const split = rssSplitOf(server.pid)
    await server.stop()
    return split
  }
  for (let i = 0; i < runs; i++) {
    // Alternate, so a slow moment of the machine is shared.
    r.leaderRssSplit = await measure(() => startLeader({ stateDir: tempDir('cold') }), r.leaderReadyMs, r.leaderIdleRss)
    r.floorRssSplit = await measure(() => startFloor('ready.ts', floorEnv(), bin), r.floorReadyMs, r.floorIdleRss)
    r.stackRssSplit = await measure(() => startFloor('stack.ts', stackEnv(), stackBin), r.stackReadyMs, r.stackIdleRss)
  }
  return r
}

export const startupFigures = (r: StartupResult) => ({
  leaderReadyMs: median(r.leaderReadyMs),
  floorReadyMs: median(r.floorReadyMs),
  leaderIdleRss: median(r.leaderIdleRss),
  floorIdleRss: median(r.floorIdleRss),
  stackReadyMs: median(r.stackReadyMs),
  stackIdleRss: median(r.stackIdleRss),
})
