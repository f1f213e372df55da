// Entry of the compiled binary. Elysia decides when it is imported whether to pretty-print the
// refused value into every validation error; outside production that cost about a second of CPU
// for a 1 MiB body of the wrong shape (a cheap denial of service). The shipped binary therefore
// runs in production mode unless the operator says otherwise.
process.env.NODE_ENV ??= 'production'
tuneAllocator()
await import('./main')
export {}

/**
 * The leader and the fellow agent move relay bodies and frames of up to several MiB. Bun's
 * allocator (mimalloc) hands freed memory back to the kernel 10 ms after it is freed, and the next
 * body faults its pages in again, zeroed: relaying over the WebSocket channel for 18 s took 528,000
 * page faults (53,000 with the setting below) and about a fifth more of the server's CPU per GB
 * (docs/benchmarks.md). With a purge delay of 1 s the memory is reused while it is still mapped;
 * an idle process returns it all the same. mimalloc reads the setting from the environment before
 * any of our code runs, so `serve` and `fellow` start themselves again, in the same process (same
 * PID, same descriptors), with it set. An operator who sets MIMALLOC_PURGE_DELAY (any value) keeps
 * theirs (and children of the agent inherit it); short-lived commands do not pay the second start (about 5 ms); neither does
 * `bun src/entry.ts`.
 */
function tuneAllocator(): void {
  const [, script, command] = process.argv
  if (command !== 'serve' && command !== 'fellow') return
  if (!script?.startsWith('/$bunfs/') || process.env.MIMALLOC_PURGE_DELAY !== undefined) return
  try {
    // SVC_ALLOCATOR_TUNED marks the setting as ours: the agent takes it out of what its engines
    // and runners inherit (src/agent/lines.ts, childEnv), so they run with their own defaults.
    process.execve?.(process.execPath, [process.execPath, ...process.argv.slice(2)], { ...process.env, MIMALLOC_PURGE_DELAY: '1000', SVC_ALLOCATOR_TUNED: '1' })
  } catch {
    // Cannot start again (the executable moved or lost its execute bit): run as we are.
  }
}
