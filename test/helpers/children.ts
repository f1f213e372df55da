// Processes the suites start and must not outlive the run: a test that fails before its own stop()
// (or kill) leaves them running. The preload (tmp-root.ts) kills whatever is still alive after the
// last file; bun test fires no process 'exit' event to do it from here.
import type { Subprocess } from 'bun'

const live = new Set<Subprocess>()

export function track<P extends Subprocess>(proc: P): P {
  live.add(proc)
  void proc.exited.then(() => live.delete(proc))
  return proc
}

export async function killTracked(): Promise<void> {
  const left = [...live]
  for (const p of left) p.kill('SIGKILL')
  await Promise.all(left.map((p) => p.exited))
}
