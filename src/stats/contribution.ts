// Contribution accounting. Heartbeats and served inference requests are metered in memory with
// their time; the roll-up loop takes everything before its window end, so consecutive windows
// [previous end, this end) abut and never overlap, also across a restart (the end is persisted).
// A clean shutdown rolls up once more; a crash loses at most one window of unrolled metering.
import { eq, sql } from 'drizzle-orm'
import { contributions, rollupState, users } from '../db/schema'
import type { Ctx } from '../context'
import type { LoopSpec } from '../loops'

interface Entry {
  ts: number
  ownerUserId: string | null
  gpuSeconds: number
  tokens: number
  requests: number
}

export interface WindowTotals {
  start: number
  end: number
  gpuSeconds: number
  tokens: number
  requests: number
  members: number
}

export class ContributionMeter {
  private entries: Entry[] = []

  /** Online time observed between two heartbeats, times the fellow's GPU count. */
  uptime(ownerUserId: string | null, ts: number, onlineMs: number, gpuCount: number): void {
    if (onlineMs <= 0 || gpuCount <= 0) return
    this.entries.push({ ts, ownerUserId, gpuSeconds: (onlineMs / 1000) * gpuCount, tokens: 0, requests: 0 })
  }

  served(ownerUserId: string | null, ts: number, tokens: number, requests = 1): void {
    this.entries.push({ ts, ownerUserId, gpuSeconds: 0, tokens, requests })
  }

  /** Removes and returns the entries strictly before `end`. */
  take(end: number): Entry[] {
    const taken: Entry[] = []
    const kept: Entry[] = []
    for (const e of this.entries) (e.ts < end ? taken : kept).push(e)
    this.entries = kept
    return taken
  }
}

export class ContributionRollup {
  constructor(
    private ctx: Ctx,
    readonly meter: ContributionMeter,
  ) {
    this.windowEnd() // the first window starts when the leader first starts, not at its first tick
  }

  loops(): LoopSpec[] {
    return [{ name: 'contribution-rollup', intervalMs: this.ctx.cfg.metricsRollupS * 1000, run: () => void this.tick() }]
  }

  /** The end of the last rolled-up window; created at first use. */
  windowEnd(): number {
    const row = this.ctx.db.select().from(rollupState).where(eq(rollupState.key, 'global')).get()
    if (row) return row.windowEnd
    const now = this.ctx.clock.now()
    this.ctx.db.insert(rollupState).values({ key: 'global', windowEnd: now, gpuSeconds: 0, tokensServed: 0, requestsServed: 0 }).onConflictDoNothing().run()
    return now
  }

  /** Rolls up [windowEnd, end) into per-member totals and the cluster totals, in one transaction. */
  tick(end = this.ctx.clock.now()): WindowTotals {
    const start = this.windowEnd()
    if (end <= start) return { start, end: start, gpuSeconds: 0, tokens: 0, requests: 0, members: 0 }
    // Metering stamped before the persisted start belongs to a window already closed (clock skew
    // at restart); it is dropped rather than counted twice.
    const entries = this.meter.take(end).filter((e) => e.ts >= start)
    const perMember = new Map<string, { gpuSeconds: number; tokens: number; requests: number }>()
    const total = { gpuSeconds: 0, tokens: 0, requests: 0 }
    for (const e of entries) {
      total.gpuSeconds += e.gpuSeconds
      total.tokens += e.tokens
      total.requests += e.requests
      if (e.ownerUserId === null) continue // joined without a member's token: unattributed
      const m = perMember.get(e.ownerUserId) ?? { gpuSeconds: 0, tokens: 0, requests: 0 }
      m.gpuSeconds += e.gpuSeconds
      m.tokens += e.tokens
      m.requests += e.requests
      perMember.set(e.ownerUserId, m)
    }
    const now = this.ctx.clock.now()
    this.ctx.db.transaction((tx) => {
      for (const [userId, m] of perMember) {
        // The member may have been deleted since: the foreign key would refuse the row.
        if (!tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).get()) continue
        tx.insert(contributions)
          .values({ userId, gpuSeconds: m.gpuSeconds, tokensServed: m.tokens, requestsServed: m.requests, updatedAt: now })
          .onConflictDoUpdate({
            target: contributions.userId,
            set: {
              gpuSeconds: sql`${contributions.gpuSeconds} + ${m.gpuSeconds}`,
              tokensServed: sql`${contributions.tokensServed} + ${m.tokens}`,
              requestsServed: sql`${contributions.requestsServed} + ${m.requests}`,
              updatedAt: now,
            },
          })
          .run()
      }
      tx.update(rollupState)
        .set({
          windowEnd: end,
          gpuSeconds: sql`${rollupState.gpuSeconds} + ${total.gpuSeconds}`,
          tokensServed: sql`${rollupState.tokensServed} + ${total.tokens}`,
          requestsServed: sql`${rollupState.requestsServed} + ${total.requests}`,
        })
        .where(eq(rollupState.key, 'global'))
        .run()
    })
    return { start, end, ...total, members: perMember.size }
  }

  mine(userId: string) {
    const row = this.ctx.db.select().from(contributions).where(eq(contributions.userId, userId)).get()
    return {
      gpu_seconds: Math.round((row?.gpuSeconds ?? 0) * 1000) / 1000,
      tokens_served: row?.tokensServed ?? 0,
      requests_served: row?.requestsServed ?? 0,
      credits_status: 'not_implemented' as const,
      updated_at: row ? new Date(row.updatedAt).toISOString() : null,
    }
  }

  totals() {
    this.windowEnd()
    const row = this.ctx.db.select().from(rollupState).where(eq(rollupState.key, 'global')).get()!
    return { gpuSeconds: row.gpuSeconds, tokens: row.tokensServed, requests: row.requestsServed }
  }
}
