// Liveness and readiness. Ready means the state database answers and carries every migration.
import { t } from 'elysia'
import { isMigrated } from '../db/migrate'
import { problem } from '../http/problem'
import { VERSION } from '../version'
import type { AppBase } from '../http/base'
import type { Ctx } from '../context'

export function healthRoutes(app: AppBase, ctx: Ctx) {
  return app
    .get('/api/v1/health', () => ({ status: 'ok' as const, version: VERSION }), {
      policy: 'public',
      response: { 200: t.Object({ status: t.Literal('ok'), version: t.String() }) },
    })
    .get(
      '/api/v1/ready',
      () => {
        try {
          ctx.sqlite.query('SELECT 1').get()
          if (!isMigrated(ctx.sqlite)) return problem('service_unavailable', 'The state database is not fully migrated.')
        } catch {
          return problem('service_unavailable', 'The state database does not answer.')
        }
        return { status: 'ready' as const }
      },
      { policy: 'public' },
    )
}
