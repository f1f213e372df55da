// Memory a long-running process (`svc serve`, `svc fellow`) need not keep after its start.
import { dlopen, FFIType } from 'bun:ffi'
import { readFileSync, readlinkSync } from 'node:fs'

/** A process that used less than this share of one core over a check's window is quiet. */
const QUIET_CPU_SHARE = 0.05

/**
 * Start-up runs a lot of code once (migrations, schema and route building, Elysia's compile, the
 * agent's set-up) whose compiled forms would otherwise stay for the life of the process. Bun.shrink
 * has JavaScriptCore drop every function's compiled code and collect: the leader idles 3-4 MiB
 * smaller, the agent about 1 MiB (docs/benchmarks.md). What runs again is compiled again from its
 * bytecode on first use, and hot paths tier up as before.
 *
 * Done at the first quiet moment after the start (a check every `everyMs`: under 5% of a core used
 * since the last one), so a leader taking traffic from its first second does not recompile its hot
 * paths in the middle of it. A synchronous full collection goes first, because JavaScriptCore keeps
 * all code while a collection is under way, which on one core (the concurrent marker sharing it)
 * is most of the first second; it takes 7-15 ms, once. Bun.shrink is marked deprecated in Bun's
 * types but ships; if a later Bun removes it, nothing is done.
 *
 * `release` frees, at the same moment, what else the start left behind: the leader hands back
 * SQLite's page cache filled by the migrations (PRAGMA shrink_memory, about 0.3 MiB). Last, the
 * executable's own pages the start read are let go (releaseExecutablePages). Returns a cancel for
 * a process that stops before its first quiet moment (the leader closes its state file).
 */
export function dropStartupCode({ everyMs = 500, idleEveryMs = IDLE_RELEASE_EVERY_MS, release }: { everyMs?: number; idleEveryMs?: number; release?: () => void } = {}): () => void {
  if (typeof Bun.shrink !== 'function') return () => {}
  let since = process.cpuUsage()
  let idle: ReturnType<typeof setInterval> | null = null
  const timer = setInterval(() => {
    const used = process.cpuUsage(since)
    since = process.cpuUsage()
    if ((used.user + used.system) / 1000 > everyMs * QUIET_CPU_SHARE) return
    clearInterval(timer)
    try {
      release?.()
    } catch {
      // housekeeping: a release that fails leaves memory held, never a stopped process
    }
    Bun.gc(true)
    Bun.shrink()
    releaseExecutablePages()
    idle = releaseWhenIdle(idleEveryMs)
  }, everyMs)
  timer.unref()
  return () => {
    clearInterval(timer)
    if (idle) clearInterval(idle)
  }
}

/** How often a quiet process lets go of the executable's pages again; what it used since comes back. */
export const IDLE_RELEASE_EVERY_MS = 60_000

/**
 * What the process ran since the start maps the executable's pages back in (the console's pages,
 * the API's routes, a login): a leader opened in a browser for a while held 30 MiB of them again
 * (docs/benchmarks.md). So they are let go again after each quiet minute (under 5% of a core, as
 * for the first drop: an idle leader's own loops take 1-2%).
 * A fleet's heartbeats map back the few they use within seconds; each time costs a few
 * milliseconds of CPU a minute, well under a thousandth of a core.
 */
function releaseWhenIdle(everyMs: number): ReturnType<typeof setInterval> {
  let since = process.cpuUsage()
  const timer = setInterval(() => {
    const used = process.cpuUsage(since)
    since = process.cpuUsage()
    if ((used.user + used.system) / 1000 <= everyMs * QUIET_CPU_SHARE) releaseExecutablePages()
  }, everyMs)
  timer.unref()
  return timer
}

const MADV_DONTNEED = 4

/** A mapping of /proc/self/smaps: where, how, of which file, and how much of it was written. */
export interface Mapping {
  start: bigint
  end: bigint
  perms: string
  inode: number
  path: string
  /** Pages copied on write, in memory (`Anonymous:`) and swapped out (`Swap:`). */
  anonymousKb: number
  swapKb: number
}

/** The mappings of an smaps text (`start-end perms offset dev inode path`, then `Key: value` lines). */
export function parseSmaps(text: string): Mapping[] {
  const out: Mapping[] = []
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ (\d+)\s*(.*)$/.exec(line)
    if (head) {
      out.push({ start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3]!, inode: Number(head[4]), path: head[5]!, anonymousKb: 0, swapKb: 0 })
      continue
    }
    const kb = /^(Anonymous|Swap):\s+(\d+) kB/.exec(line)
    if (kb && out.length > 0) out[out.length - 1]![kb[1] === 'Swap' ? 'swapKb' : 'anonymousKb'] = Number(kb[2])
  }
  return out
}

/**
 * The mappings of the executable whose pages are the file's and nothing else: private, never
 * writable and never written (no page of them copied on write, in memory or in swap, which a
 * relocated read-only segment has). Dropping a page of one of these loses nothing: the next read maps the same bytes
 * from the file again.
 */
export function releasableMappings(maps: Mapping[], exePath: string): Mapping[] {
  // By path alone: the maps' inode need not be the one /proc/self/exe stats to (overlayfs, as
  // containers use, has named the lower file's on some kernels; on 6.18 both agree). A binary
  // replaced while running is mapped as "PATH (deleted)", as /proc/self/exe then reads, so the path
  // still names this process's own executable.
  // A written page swapped out counts under Swap, not Anonymous: the relocated read-only segment
  // (its GOT) with all its written pages in swap looked clean, and dropping them would have put
  // the file's unrelocated bytes back under the running code.
  return maps.filter((m) => m.path === exePath && m.perms[1] === '-' && m.perms[3] === 'p' && m.anonymousKb === 0 && m.swapKb === 0)
}

type Madvise = (addr: number, length: number, advice: number) => number
let madvise: Madvise | null | undefined

function libcMadvise(): Madvise | null {
  if (madvise !== undefined) return madvise
  madvise = null
  if (process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64')) {
    try {
      const libc = dlopen('libc.so.6', { madvise: { args: [FFIType.u64, FFIType.u64, FFIType.i32], returns: FFIType.i32 } })
      madvise = (addr, length, advice) => libc.symbols.madvise(addr, length, advice) as number
    } catch {
      // musl, or no libc to load: the pages stay mapped
    }
  }
  return madvise
}

/**
 * Bun's executable is about 120 MiB, and a start reads a third of its code and read-only data:
 * the runtime's and JavaScriptCore's set-up, both of its compilers (the start's run-once code
 * crosses their thresholds), the migrations' and route building's paths. Those pages stay mapped,
 * and counted in the process's resident memory, for as long as it runs, though an idle leader uses
 * a fraction of them: unmapping them takes 17 of an unused leader's 58 MiB, and a used one maps
 * about 20 MiB back, let go again after each quiet minute (releaseWhenIdle; docs/benchmarks.md). Unmapping them
 * (madvise MADV_DONTNEED) leaves them in the kernel's page cache, where the next use maps each
 * page again (a minor fault, no disk read while the cache keeps them; first requests after the
 * drop measured no slower) and the kernel can reclaim the rest without unmapping anything. Only
 * mappings that hold nothing but the file's bytes are touched (releasableMappings). Returns the
 * bytes let go; 0 where there is no /proc or no glibc.
 */
export function releaseExecutablePages(): number {
  const call = libcMadvise()
  if (call === null) return 0
  let released = 0
  try {
    const exe = readlinkSync('/proc/self/exe')
    for (const m of releasableMappings(parseSmaps(readFileSync('/proc/self/smaps', 'utf8')), exe)) {
      if (call(Number(m.start), Number(m.end - m.start), MADV_DONTNEED) === 0) released += Number(m.end - m.start)
    }
  } catch {
    // housekeeping: no /proc to read leaves the pages mapped
  }
  return released
}
