// Memory a long-running process (`svc serve`, `svc fellow`) need not keep after its start.

/**
 * Start-up runs a lot of code once (migrations, schema and route building, Elysia's compile, the
 * agent's set-up) whose compiled forms would otherwise stay for the life of the process. Bun.shrink
 * has JavaScriptCore, once the event loop is next idle, drop every function's compiled code and
 * collect: the leader idles 3-4 MiB smaller, the agent about 1 MiB (docs/benchmarks.md). What runs
 * again is compiled again from its bytecode on first use, and hot paths tier up as before.
 *
 * A second after the start, so neither the start nor the first requests wait for it (the one full
 * collection takes 7-15 ms); after a synchronous full collection, because JavaScriptCore keeps all
 * code while a collection is under way, which on one core (the concurrent marker sharing it) is
 * most of the first second. Bun.shrink is marked deprecated in Bun's types but ships; if a later
 * Bun removes it, nothing is done.
 */
export function dropStartupCode(afterMs = 1000): void {
  if (typeof Bun.shrink !== 'function') return
  setTimeout(() => {
    Bun.gc(true)
    Bun.shrink()
  }, afterMs).unref()
}
