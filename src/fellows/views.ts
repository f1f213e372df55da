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

export class FellowViews implements PoolTelemetry {
  constructor(
    private db: Db,
    private registry: FellowRegistry,
    private signals: SignalHub,
    private now: () => number,
  ) {}

  view(f: LiveFellow): NodeView {
    return {
      fellow_id: f.id,
      hostname: f.hostname,
      pool_id: f.poolId,
      owner_user_id: f.ownerUserId,
      state: this.registry.stateOf(f, this.now()),
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
      gpus: f.hardware?.gpus ?? [],
      connected: this.signals.connected(f.id),
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
        .map((f) => ({ ...this.view(f), owner_user_id: null, job_id: null, bytes_sent: 0, bytes_received: 0 }))
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

  history(actor: Actor, poolId: string) {
    requireMember(this.db, actor, poolId)
    return {
      items: this.registry.poolHistory(poolId).map((h) => ({ fellow_id: h.fellow_id, points: h.points.map((p) => ({ ...p, ts: iso(p.ts) })) })),
    }
  }
}
