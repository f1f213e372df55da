// Memory a long-running process (`svc serve`, `svc fellow`) need not keep after its start.

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
 * SQLite's page cache filled by the migrations (PRAGMA shrink_memory, about 0.3 MiB). Returns a
 * cancel for a process that stops before its first quiet moment (the leader closes its state file).
 */
export function dropStartupCode({ everyMs = 500, release }: { everyMs?: number; release?: () => void } = {}): () => void {
  if (typeof Bun.shrink !== 'function') return () => {}
  let since = process.cpuUsage()
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
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}
