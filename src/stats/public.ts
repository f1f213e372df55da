// Anonymous aggregate stats: counts and rounded totals only (no per-node, per-pool or per-model
// row), null below the node floor so a tiny deployment does not reveal its members, cached.
import { count, eq } from 'drizzle-orm'
import { pools, users } from '../db/schema'
import type { Ctx } from '../context'
import type { FellowRegistry } from '../fellows/live'
import type { ContributionRollup } from './contribution'

export interface PublicStats {
  nodes_online: number | null
  gpus_online: number | null
  pools: number | null
  users: number | null
  gpu_hours_contributed: number | null
  tokens_served: number | null
  requests_served: number | null
  generated_at: string
}

/** Rounds down to two significant figures: 7 -> 7, 47 -> 47, 123 -> 120, 98765 -> 98000. */
export function roundCount(n: number): number {
  if (n < 100) return Math.floor(n)
  const p = 10 ** (Math.floor(Math.log10(n)) - 1)
  return Math.floor(n / p) * p
}

export class PublicStatsService {
  private cached: { at: number; value: PublicStats } | null = null

  constructor(
    private ctx: Ctx,
    private registry: FellowRegistry,
    private rollup: ContributionRollup,
  ) {}

  get(): PublicStats {
    const now = this.ctx.clock.now()
    if (this.cached && now - this.cached.at < this.ctx.cfg.publicStatsTtlS * 1000) return this.cached.value
    let nodes = 0
    let gpus = 0
    for (const f of this.registry.all()) {
      // Only machines a member's join token admitted: anyone can register token-less fellows in
      // numbers (issue 26), which would inflate these figures and lift a tiny deployment over the floor.
      if (f.ownerUserId === null || this.registry.stateOf(f, now) !== 'online') continue
      nodes++
      gpus += f.hardware?.gpus.length ?? 0
    }
    const value: PublicStats = {
      nodes_online: null,
      gpus_online: null,
      pools: null,
      users: null,
      gpu_hours_contributed: null,
      tokens_served: null,
      requests_served: null,
      generated_at: new Date(now).toISOString(),
    }
    if (nodes >= this.ctx.cfg.publicStatsMinNodes) {
      const t = this.rollup.totals()
      value.nodes_online = roundCount(nodes)
      value.gpus_online = roundCount(gpus)
      value.pools = roundCount(this.ctx.db.select({ n: count() }).from(pools).get()?.n ?? 0)
      value.users = roundCount(this.ctx.db.select({ n: count() }).from(users).where(eq(users.status, 'active')).get()?.n ?? 0)
      value.gpu_hours_contributed = Math.round(t.gpuSeconds / 3600)
      value.tokens_served = roundCount(t.tokens)
      value.requests_served = roundCount(t.requests)
    }
    this.cached = { at: now, value }
    return value
  }
}
