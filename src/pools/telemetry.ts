// Per-node telemetry of a pool (metrics, events, history), answered only to members and admins.
// The Fellows feature provides the implementation fed by heartbeats.
import type { Static } from 'elysia'
import type { Actor } from '../caller'
import type { PoolTelemetrySeries } from '../fellows/model'

export interface PoolTelemetry {
  metrics(actor: Actor, poolId: string): { items: unknown[] }
  events(actor: Actor, poolId: string, limit: number): { items: unknown[] }
  history(actor: Actor, poolId: string): { items: unknown[] }
  poolTelemetry(actor: Actor, poolId: string, range: '1h' | '1d' | '30d'): Static<typeof PoolTelemetrySeries>
}
