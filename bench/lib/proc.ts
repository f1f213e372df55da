// Processes of a benchmark run: the leader (a snapshot of dist/svc), the floors, and the load
// generators, each pinned to its own side of the machine so that load and server do not fight
// over one core (on a 2-core machine: server on CPU 1, load on CPU 0).
import { copyFileSync, existsSync, mkdtempSync, readFileSync, chmodSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'

export const ROOT = resolve(import.meta.dir, '../..')
export const SVC_BIN = join(ROOT, 'dist/svc')

export function tempDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `svc-bench-${tag}-`))
}

const CPUS = availableParallelism()
const HAVE_TASKSET = CPUS >= 2 && Bun.which('taskset') !== null

/** CPU lists for the two sides, or null when pinning is not possible (one core, no taskset). */
export const PINNING: { server: string; load: string } | null = HAVE_TASKSET
  ? { load: CPUS === 2 ? '0' : `0-${Math.floor(CPUS / 2) - 1}`, server: CPUS === 2 ? '1' : `${Math.floor(CPUS / 2)}-${CPUS - 1}` }
  : null

export function pinned(side: 'server' | 'load', argv: string[]): string[] {
  return PINNING ? ['taskset', '-c', PINNING[side], ...argv] : argv
}

/**
 * The leader binary this run measures. Copied once at the start, because other engineers rebuild
 * dist/svc while they work, and a binary swapped mid-run would mix two builds in one table.
 */
let snapshot: string | null = null
export function useBinary(path: string): void {
  if (!existsSync(path)) throw new Error(`${path} does not exist`)
  snapshot = resolve(path)
}
export function leaderBinary(): string {
  if (snapshot) return snapshot
  if (!existsSync(SVC_BIN)) throw new Error(`${SVC_BIN} is missing: run \`bun run build\` first`)
  snapshot = join(tempDir('bin'), 'svc')
  copyFileSync(SVC_BIN, snapshot)
  chmodSync(snapshot, 0o755)
  return snapshot
}

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}

/** Resident set size of a process in bytes, from /proc (the kernel's figure, not the runtime's). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : NaN
}

/** RSS split into anonymous memory (heap, JIT, malloc) and file-backed pages (the mapped executable). */
export function rssSplitOf(pid: number): { anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) * 1024
  return { anon: kb('RssAnon'), file: kb('RssFile') }
}

const CLK_TCK = 100 // Linux's USER_HZ for /proc/<pid>/stat on every mainstream kernel

/** CPU time (user + system, all threads) a process has used so far, in seconds. */
export function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / CLK_TCK
}

export interface Server {
  name: string
  url: string
  port: number
  pid: number
  proc: Subprocess<'ignore', 'ignore', 'pipe'>
  /** Milliseconds from spawn to the first 200 from the readiness path. */
  readyMs: number
  rss(): number
  /** CPU seconds used so far: the server's cost of a round, whatever else runs on the machine. */
  cpu(): number
  stop(): Promise<void>
}

/** Polls `path` until it answers 200 (a refused connection fails in microseconds, so poll tight). */
async function waitReady(url: string, proc: Subprocess, deadlineMs: number): Promise<void> {
  const end = performance.now() + deadlineMs
  while (performance.now() < end) {
    if (proc.exitCode !== null) throw new Error(`exited with code ${proc.exitCode} before it was ready`)
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2000) })
      if (r.status === 200) return
      await r.arrayBuffer()
    } catch {
      // not listening yet
    }
    await Bun.sleep(1)
  }
  throw new Error(`not ready after ${deadlineMs} ms: ${url}`)
}

// Servers still running: killed if the runner exits early (an error, Ctrl-C), so a failed run
// leaves no leader behind holding a port and a core.
const live = new Set<Subprocess>()
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130))

async function spawnServer(name: string, argv: string[], env: Record<string, string>, port: number, readyPath: string, readyDeadlineMs = 120_000): Promise<Server> {
  const t0 = performance.now()
  const proc = Bun.spawn(pinned('server', argv), { env: { PATH: process.env.PATH ?? '', ...env }, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
  live.add(proc)
  void proc.exited.then(() => live.delete(proc))
  const url = `http://127.0.0.1:${port}`
  try {
    await waitReady(url + readyPath, proc, readyDeadlineMs)
  } catch (e) {
    proc.kill('SIGKILL')
    throw new Error(`${name}: ${(e as Error).message}\n${await new Response(proc.stderr).text()}`)
  }
  const readyMs = performance.now() - t0
  return {
    name,
    url,
    port,
    pid: proc.pid,
    proc,
    readyMs,
    rss: () => rssOf(proc.pid),
    cpu: () => cpuSecondsOf(proc.pid),
    async stop() {
      proc.kill('SIGTERM')
      const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
      await proc.exited
      clearTimeout(killer)
    },
  }
}

export interface LeaderOptions {
  stateDir: string
  env?: Record<string, string>
  /** Run from source under `bun --cpu-prof`, writing the profile into this directory. */
  profileDir?: string
}

/** When set, every leader runs from source under `bun --cpu-prof` and writes its profile here. */
let profileAll: string | null = null
export function profileLeadersInto(dir: string): void {
  profileAll = dir
}

export async function startLeader(opts: LeaderOptions): Promise<Server> {
  const port = await freePort()
  const profileDir = opts.profileDir ?? profileAll
  const argv = profileDir
    ? [process.execPath, '--cpu-prof', `--cpu-prof-dir=${profileDir}`, join(ROOT, 'src/main.ts'), 'serve']
    : [leaderBinary(), 'serve']
  return spawnServer(
    'leader',
    argv,
    {
      SVC_HOST: '127.0.0.1',
      SVC_PORT: String(port),
      SVC_STATE_DIR: opts.stateDir,
      SVC_LOG_LEVEL: 'warn',
      SVC_COOKIE_SECURE: '0',
      ...opts.env,
    },
    port,
    '/api/v1/ready',
  )
}

/** A floor program from bench/floor/, run by this Bun on the server side of the machine. */
export async function startFloor(file: string, env: Record<string, string> = {}, argv0?: string): Promise<Server> {
  const port = await freePort()
  const argv = argv0 ? [argv0] : [process.execPath, join(ROOT, 'bench/floor', file)]
  return spawnServer(`floor ${file}`, argv, { FLOOR_PORT: String(port), ...env }, port, '/ready')
}

/** Runs a child to completion (pinned to the load side) and returns its stdout parsed as JSON. */
export async function runLoad<T>(argv: string[], env: Record<string, string> = {}, opts: { pin?: boolean } = {}): Promise<T> {
  const proc = Bun.spawn(opts.pin === false ? argv : pinned('load', argv), {
    env: { ...process.env, ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`${argv.join(' ')} failed (${code}):\n${err}\n${out}`)
  try {
    return JSON.parse(out.trim().split('\n').pop()!) as T
  } catch {
    throw new Error(`${argv.join(' ')} printed no JSON result:\n${out}\n${err}`)
  }
}
