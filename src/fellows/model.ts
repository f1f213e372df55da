// Wire shapes of the fellow-facing routes (registration, heartbeat, signals, logs) and of the
// operator views of nodes and devices. The agent's share of them is in src/wire/fellow.ts.
import { t, type Static } from 'elysia'
import { Type, type IntegerOptions } from '@sinclair/typebox'
import { Timestamp, UnionEnum } from '../model'

// The fellow-facing wire shapes live in src/wire/fellow.ts (the agent loads them without Elysia).
export {
  SIGNALS,
  HEARTBEAT_STATUSES,
  P2P_KEY_PATTERN,
  Gpu,
  Hardware,
  EngineState,
  RegisterBody,
  RegisterResponse,
  HeartbeatBody,
  HeartbeatResponse,
  Signal,
  StartPayload,
  LogLinesBody,
  GoodbyeBody,
  type SignalName,
  type HeartbeatStatus,
  type RegisterInput,
  type HeartbeatInput,
  type HeartbeatResult,
} from '../wire/fellow'
import { EngineState, Gpu } from '../wire/fellow'
export type NodeState = 'online' | 'stale' | 'offline' | 'released'

// TypeBox's own Integer, not Elysia's t.Integer (see src/wire/fellow.ts).
const Int = (options?: IntegerOptions) => Type.Integer(options)

export const JoinSessionBody = t.Object({ pool_id: t.String({ format: 'uuid' }) }, { additionalProperties: false })
export const JoinSession = t.Object({ id: t.String(), join_token: t.String(), pool_id: t.String(), expires_at: Timestamp, command: t.String() })

export const NodeView = t.Object({
  fellow_id: t.String(),
  hostname: t.String(),
  pool_id: t.Nullable(t.String()),
  owner_user_id: t.Nullable(t.String()),
  state: t.Union([t.Literal('online'), t.Literal('stale'), t.Literal('offline'), t.Literal('released')]),
  registered_at: Timestamp,
  last_seen_at: t.Nullable(Timestamp),
  status: t.Nullable(t.String()),
  job_id: t.Nullable(t.String()),
  step: t.Nullable(Int()),
  loss: t.Nullable(t.Number()),
  bytes_sent: Int(),
  bytes_received: Int(),
  cpu_pct: t.Nullable(t.Number()),
  mem_free_mb: t.Nullable(Int()),
  mem_total_mb: t.Nullable(Int()),
  gpus: t.Array(Gpu),
  connected: t.Boolean(),
  /** The version its agent said when it registered (`svc --version` of that binary); null from an agent that does not say. */
  agent_version: t.Nullable(t.String()),
  /** The runners its operator declared (the built-in `mlp` when it names none). */
  runners: t.Array(t.String()),
  /** The models its engines serve now. */
  servables: t.Array(t.String()),
  /**
   * The engines it declared and whether each is healthy, as its last heartbeat said; empty from an
   * agent that does not say (older than this field); none is healthy while the fellow is not online.
   */
  engines: t.Array(EngineState),
})
export type NodeView = Static<typeof NodeView>
export const NodeList = t.Object({ items: t.Array(NodeView) })
export const DeviceView = t.Composite([
  Gpu,
  t.Object({ fellow_id: t.String(), hostname: t.String(), pool_id: t.Nullable(t.String()), state: t.String() }),
])
export const DeviceList = t.Object({ items: t.Array(DeviceView) })
export const PoolFilter = t.Object({ pool_id: t.Optional(t.String({ format: 'uuid' })) }, { additionalProperties: false })

export const FellowParams = t.Object({ fellow_id: t.String({ format: 'uuid' }) })
export const FellowRef = t.Object({ fellow_id: t.String({ format: 'uuid' }) }, { additionalProperties: false })
export const UpdateBody = t.Object(
  { fellow_id: t.Optional(t.String({ format: 'uuid' })), pool_id: t.Optional(t.String({ format: 'uuid' })), version: t.Optional(t.String({ maxLength: 64 })) },
  { additionalProperties: false, minProperties: 1 },
)

export const TelemetryQuery = t.Object(
  // A missing range is the route's choice (1h), not filled in by the schema.
  { range: t.Optional(UnionEnum(['1h', '1d', '30d'])) },
  { additionalProperties: false },
)
const Num = t.Nullable(t.Number())
export const TelemetryPoint = t.Object({
  ts: Timestamp,
  cpu_pct: Num,
  mem_free_mb: Num,
  mem_total_mb: Num,
  gpu_util_pct: Num,
  gpu_free_mb: Num,
  gpu_total_mb: Num,
  gpu_temp_c: Num,
})
export const FellowTelemetry = t.Object({
  fellow_id: t.String(),
  range: t.String(),
  /** Seconds between points: 30 (recent samples in memory), 60 or 900 (buckets in the state file). */
  resolution_s: Int(),
  points: t.Array(TelemetryPoint),
})
export const PoolTelemetryPoint = t.Object({ ts: Timestamp, online: Int(), vram_total_mb: Int(), vram_free_mb: Int(), cpu_pct: Num })
export const PoolTelemetrySeries = t.Object({ pool_id: t.String(), range: t.String(), resolution_s: Int(), points: t.Array(PoolTelemetryPoint) })
