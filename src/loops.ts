// Background loops start from one place and stop before the database closes. Each loop body is a
// plain function of the context (and so of its clock): tests call it directly with a fake clock.
import type { Ctx } from './context'
import { purgeSessions } from './accounts/sessions'
import { purgeLoginFailures } from './accounts/lockout'

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

export function purgeLoop(ctx: Ctx): LoopSpec {
  return {
    name: 'token-purge',
    intervalMs: 10 * 60_000,
    run() {
      const sessions = purgeSessions(ctx)
      const failures = purgeLoginFailures(ctx)
      if (sessions + failures > 0) ctx.log.debug('purged', { sessions, failures })
    },
  }
}
