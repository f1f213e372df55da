// Wire shapes of the fellow-facing routes (registration, heartbeat, signals, logs) and of the
// operator views of nodes and devices. The reference agent (src/fellow/) shares these.
import { t, type Static } from 'elysia'
import { Type, type IntegerOptions } from '@sinclair/typebox'
import { Timestamp } from '../accounts/model'

export const SIGNALS = ['START', 'PAUSE', 'CHECKPOINT', 'STOP', 'RECONFIGURE', 'UPDATE', 'PURGE'] as const
export type SignalName = (typeof SIGNALS)[number]
export const HEARTBEAT_STATUSES = ['idle', 'running', 'paused', 'checkpointing', 'error'] as const
export type HeartbeatStatus = (typeof HEARTBEAT_STATUSES)[number]
export type NodeState = 'online' | 'stale' | 'offline' | 'released'

// TypeBox's own Integer, not Elysia's t.Integer: that one is a Transform (it also accepts "5" and
// converts it), so every heartbeat body was walked a second time by TypeBox's decode, about a
// tenth of the leader's CPU per heartbeat (docs/benchmarks.md). JSON carries numbers as numbers.
const Int = (options?: IntegerOptions) => Type.Integer(options)
const FiniteNumber = t.Number({ minimum: -1e15, maximum: 1e15 })
const Count = Int({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const Hostname = t.String({ minLength: 1, maxLength: 253 })

export const Gpu = t.Object(
  {
    index: Int({ minimum: 0, maximum: 1024 }),
    name: t.String({ maxLength: 200 }),
    memory_total_mb: Int({ minimum: 0, maximum: 10_000_000 }),
    memory_free_mb: Int({ minimum: 0, maximum: 10_000_000 }),
    utilization_pct: t.Number({ minimum: 0, maximum: 100 }),
  },
  { additionalProperties: false },
)
export type Gpu = Static<typeof Gpu>
export const Hardware = t.Object(
  {
    gpus: t.Array(Gpu, { maxItems: 64 }),
    cpu_pct: t.Optional(t.Number({ minimum: 0, maximum: 100 })),
    mem_free_mb: t.Optional(Int({ minimum: 0, maximum: 100_000_000 })),
  },
  { additionalProperties: false },
)
export type Hardware = Static<typeof Hardware>

export const JoinSessionBody = t.Object({ pool_id: t.String({ format: 'uuid' }) }, { additionalProperties: false })
export const JoinSession = t.Object({ id: t.String(), join_token: t.String(), pool_id: t.String(), expires_at: Timestamp, command: t.String() })

export const RegisterBody = t.Object(
  {
    fellow_id: t.Optional(t.String({ format: 'uuid' })),
    hostname: Hostname,
    gpus: t.Optional(t.Array(Gpu, { maxItems: 64 })),
    /** host:port base where neighbours reach this fellow's p2p listeners (activations on base, gradients on base+1). */
    address: t.Optional(t.String({ maxLength: 300 })),
    agent_version: t.Optional(t.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
)
export type RegisterInput = Static<typeof RegisterBody>
export const RegisterResponse = t.Object({
  fellow_id: t.String(),
  node_token: t.String(),
  pool_id: t.String(),
  heartbeat_interval_s: Int(),
  signals_url: t.String(),
})

export const HeartbeatBody = t.Object(
  {
    /** Only read when no credential is presented (SVC_REQUIRE_NODE_AUTH=0); otherwise the token decides. */
    fellow_id: t.Optional(t.String({ format: 'uuid' })),
    // default: undefined: a heartbeat without a status is refused (422), not filled in as 'idle'.
    status: t.UnionEnum(HEARTBEAT_STATUSES, { default: undefined }),
    job_id: t.Optional(t.Nullable(t.String({ maxLength: 64 }))),
    step: t.Optional(Count),
    loss: t.Optional(t.Nullable(FiniteNumber)),
    bytes_sent: t.Optional(Count),
    bytes_received: t.Optional(Count),
    hardware: t.Optional(Hardware),
    servables: t.Optional(t.Array(t.String({ maxLength: 200 }), { maxItems: 100 })),
  },
  { additionalProperties: false },
)
export type HeartbeatInput = Static<typeof HeartbeatBody>

export const Signal = t.Object({
  id: t.String(),
  signal: t.UnionEnum(SIGNALS),
  job_id: t.Optional(t.String()),
  payload: t.Optional(t.Record(t.String(), t.Unknown())),
  ts: Timestamp,
})
export type Signal = Static<typeof Signal>

/** base64url of 32 bytes. */
export const P2P_KEY_PATTERN = '^[A-Za-z0-9_-]{43}$'
const StagePeer = t.Nullable(t.Object({ fellow_id: t.String(), address: t.Nullable(t.String()) }))
/**
 * The payload of START and RECONFIGURE: this fellow's stage of a job and its neighbours.
 * `p2p_key` is the job's key for the p2p handshake (src/fellow/p2p-auth.ts), sent only to the
 * job's fellows; it changes when the job's fellows change. Optional on the wire so an agent can
 * tell an older leader apart (it then refuses p2p and uses the relay in auto mode).
 */
export const StartPayload = t.Object({
  stage: Int({ minimum: 0 }),
  stages: Int({ minimum: 1 }),
  prev: StagePeer,
  next: StagePeer,
  transport: t.UnionEnum(['auto', 'tunnel', 'p2p']),
  relay_url: t.String(),
  config: t.Record(t.String(), t.Unknown()),
  p2p_key: t.Optional(t.String({ pattern: P2P_KEY_PATTERN })),
  resume: t.Optional(t.Boolean()),
  reconfigured: t.Optional(t.Boolean()),
})
export type StartPayload = Static<typeof StartPayload>
export const HeartbeatResponse = t.Object({ ok: t.Literal(true), next_heartbeat_s: Int(), pending_signals: t.Optional(t.Array(Signal)) })

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
  gpus: t.Array(Gpu),
  connected: t.Boolean(),
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
export const LogLinesBody = t.Object({ lines: t.Array(t.String({ maxLength: 4096 }), { minItems: 1, maxItems: 500 }) }, { additionalProperties: false })
