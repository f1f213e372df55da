// Operator views of fellows, held to the caller's pools: a fellow outside them is "not found".
import { eq } from 'drizzle-orm'
import { pools } from '../db/schema'
import { notFound } from '../errors'
import { iso, isoOrNull } from '../time'
import { requireMember } from '../pools/service'
import { inScope, scopeOf } from '../pools/scope'
import type { Db } from '../db/client'
import type { Actor, Caller } from '../caller'
import type { PoolTelemetry } from '../pools/telemetry'
import type { FellowRegistry, LiveFellow } from './live'
import type { SignalHub } from './signals'
import type { NodeView } from './model'
import { BUILTIN_RUNNER } from '../jobs/placement'
import { MINUTE_MS, QUARTER_MS, RANGE_MS, type TelemetryRange } from './telemetry'

export class FellowViews implements PoolTelemetry {
  constructor(
    private db: Db,
    private registry: FellowRegistry,
    private signals: SignalHub,
    private now: () => number,
  ) {}

  view(f: LiveFellow): NodeView {
    const state = this.registry.stateOf(f, this.now())
    return {
      fellow_id: f.id,
      hostname: f.hostname,
      pool_id: f.poolId,
      owner_user_id: f.ownerUserId,
      state,
      registered_at: iso(f.registeredAt),
      last_seen_at: isoOrNull(f.lastSeenAt),
      status: f.status,
      job_id: f.jobId,
      step: f.step,
      loss: f.loss,
      bytes_sent: f.bytesSent,
      bytes_received: f.bytesReceived,
      cpu_pct: f.hardware?.cpu_pct ?? null,
      mem_free_mb: f.hardware?.mem_free_mb ?? null,
      mem_total_mb: f.hardware?.mem_total_mb ?? null,
      gpus: f.hardware?.gpus ?? [],
      connected: this.signals.connected(f.id),
      agent_version: f.agentVersion,
      runners: f.runners ?? [BUILTIN_RUNNER],
      servables: f.servables,
      // Healthy means it answers for the fellow now; a fellow that is not online serves nothing
      // (inference routes only to online ones), whatever its last heartbeat said.
      engines: (f.engines ?? []).map((e) => ({ name: e.name, model: e.model, healthy: e.healthy && state === 'online' })),
    }
  }

  nodes(caller: Caller, poolId?: string): NodeView[] {
    const scope = scopeOf(this.db, caller)
    if (poolId !== undefined && !inScope(scope, poolId)) {
      // A public pool shows its machines to every signed-in person (its page says what they would
      // join), without whose they are or what they run; per-node telemetry stays with members.
      if (caller.kind !== 'user' || !this.isPublic(poolId)) return []
      return this.registry
        .inPools(new Set([poolId]))
        .sort((a, b) => a.registeredAt - b.registeredAt)
        .map((f) => ({ ...this.view(f), owner_user_id: null, job_id: null, bytes_sent: 0, bytes_received: 0, servables: [], engines: [] }))
    }
    const wanted = poolId !== undefined ? new Set([poolId]) : scope
    return this.registry.inPools(wanted).sort((a, b) => a.registeredAt - b.registeredAt).map((f) => this.view(f))
  }

  private isPublic(poolId: string): boolean {
    return this.db.select({ v: pools.visibility }).from(pools).where(eq(pools.id, poolId)).get()?.v === 'public'
  }

  devices(caller: Caller, poolId?: string) {
    return this.nodes(caller, poolId).flatMap((n) =>
      n.gpus.map((g) => ({ ...g, fellow_id: n.fellow_id, hostname: n.hostname, pool_id: n.pool_id, state: n.state })),
    )
  }

  /** One fellow the caller may see, else 404. */
  fellow(caller: Caller, id: string): LiveFellow {
    const f = this.registry.get(id)
    if (!f || !inScope(scopeOf(this.db, caller), f.poolId)) throw notFound('Fellow')
    return f
  }

  metrics(actor: Actor, poolId: string) {
    requireMember(this.db, actor, poolId)
    return { items: this.registry.inPools(new Set([poolId])).map((f) => this.view(f)) }
  }

  events(actor: Actor, poolId: string, limit: number) {
    requireMember(this.db, actor, poolId)
    return { items: this.registry.poolEvents(poolId, limit).map((e) => ({ ...e, ts: iso(e.ts) })) }
  }

  /**
   * One fellow's telemetry over `range`: the last hour from the samples in memory (one per 30 s),
   * a day from the 1-minute buckets, 30 days from the 15-minute ones.
   */
  telemetry(caller: Caller, id: string, range: TelemetryRange) {
    const f = this.fellow(caller, id)
    const now = this.now()
    const since = now - RANGE_MS[range]
    if (range === '1h') {
      const points = this.registry
        .recent(f.id)
        .filter((p) => p.ts >= since)
        .map((p) => ({ ts: iso(p.ts), cpu_pct: p.cpu_pct, mem_free_mb: p.mem_free_mb, mem_total_mb: p.mem_total_mb, gpu_util_pct: p.gpu_util_pct, gpu_free_mb: p.gpu_free_mb, gpu_total_mb: p.gpu_total_mb, gpu_temp_c: p.gpu_temp_c }))
      return { fellow_id: f.id, range, resolution_s: 30, points }
    }
    const res = range === '1d' ? MINUTE_MS : QUARTER_MS
    const points = this.registry.telemetry.fellowSeries(f.id, res, since).map(({ samples: _n, ...p }) => ({ ...p, ts: iso(p.ts) }))
    return { fellow_id: f.id, range, resolution_s: res / 1000, points }
  }

  /** A pool's machines over `range`, summed per bucket (1-minute for an hour or a day, 15-minute for 30 days). */
  poolTelemetry(actor: Actor, poolId: string, range: TelemetryRange) {
    requireMember(this.db, actor, poolId)
    const res = range === '30d' ? QUARTER_MS : MINUTE_MS
    const members = this.registry.inPools(new Set([poolId])).map((f) => f.id)
    const points = this.registry.telemetry.poolSeries(poolId, members, res, this.now() - RANGE_MS[range]).map((p) => ({ ...p, ts: iso(p.ts) }))
    return { pool_id: poolId, range, resolution_s: res / 1000, points }
  }

  history(actor: Actor, poolId: string) {
    requireMember(this.db, actor, poolId)
    return {
      items: this.registry.poolHistory(poolId).map((h) => ({ fellow_id: h.fellow_id, points: h.points.map((p) => ({ ...p, ts: iso(p.ts) })) })),
    }
  }
}
