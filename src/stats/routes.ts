// GET /api/v1/public/stats (anonymous, rate-limited per client IP) and GET /api/v1/me/contribution.
import { t } from 'elysia'
import { ContributionShape, PublicStatsShape } from './model'
import { AppError } from '../errors'
import { RateLimiter } from '../rate-limit'
import { limitKey } from '../http/ip'
import { asUser } from '../http/callers'
import type { AppBase } from '../http/base'
import type { Ctx } from '../context'
import type { ContributionRollup } from './contribution'
import type { PublicStatsService } from './public'

export function statsRoutes(app: AppBase, ctx: Ctx, stats: PublicStatsService, rollup: ContributionRollup) {
  // The bundled reverse proxy is not assumed: the leader limits this anonymous route itself.
  const limiter = new RateLimiter(ctx.clock, 60, 60_000)
  return app
    .get(
      '/api/v1/public/stats',
      ({ clientIp, set }) => {
        const wait = limiter.hit(limitKey(clientIp))
        if (wait > 0) throw new AppError('rate_limited', 'Too many requests; try again shortly.', { retryAfterS: wait })
        set.headers['cache-control'] = `public, max-age=${ctx.cfg.publicStatsTtlS}`
        return stats.get()
      },
      { policy: 'public', response: { 200: PublicStatsShape } },
    )
    .get('/api/v1/me/contribution', ({ caller }) => rollup.mine(asUser(caller).userId), {
      policy: 'operator',
      // No parameter selects another user: anything in the query is refused (422), never honoured.
      query: t.Object({}, { additionalProperties: false }),
      response: { 200: ContributionShape },
    })
}
