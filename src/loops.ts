// Background loops start from one place and stop before the database closes. Each loop body is a
// plain function of the context (and so of its clock): tests call it directly with a fake clock.
// The features say which loops they run (`loops()` on their services); this only runs them.
import type { Ctx } from './context'

export interface LoopSpec {
  name: string
  intervalMs: number
  run: () => void | Promise<void>
}

export interface Loops {
  stop(): Promise<void>
}

export function startLoops(ctx: Ctx, specs: LoopSpec[]): Loops {
  let stopping = false
  const running = new Set<Promise<void>>()
  const timers = specs.map((spec) =>
    setInterval(() => {
      if (stopping) return
      const p = (async () => {
        try {
          await spec.run()
        } catch (e) {
          ctx.log.error('loop failed', { loop: spec.name, error: String(e) })
        }
      })()
      running.add(p)
      void p.finally(() => running.delete(p))
    }, spec.intervalMs),
  )
  return {
    async stop() {
      stopping = true
      for (const t of timers) clearInterval(t)
      await Promise.allSettled([...running])
    },
  }
}
