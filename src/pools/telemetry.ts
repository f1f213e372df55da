// Per-node telemetry of a pool (metrics, events, history), answered only to members and admins.
// The Fellows feature provides the implementation fed by heartbeats.
import type { Actor } from '../caller'

export interface PoolTelemetry {
  metrics(actor: Actor, poolId: string): { items: unknown[] }
  events(actor: Actor, poolId: string, limit: number): { items: unknown[] }
  history(actor: Actor, poolId: string): { items: unknown[] }
}
