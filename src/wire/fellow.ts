// What a fellow and its leader say to each other about the fellow itself: registration,
// heartbeats, control signals (and the START payload they carry), log lines. The leader's routes
// validate these (src/fellows/model.ts re-exports them); the agent (src/agent/) sends and reads
// them. Plain TypeBox, so that the agent does not load Elysia.
import { Type, type Static } from '@sinclair/typebox'
import { Int, Label, NO_CONTROL_PATTERN, Nullable, Timestamp, UnionEnum } from './schema'

export const SIGNALS = ['START', 'PAUSE', 'CHECKPOINT', 'STOP', 'RECONFIGURE', 'UPDATE', 'PURGE'] as const
export type SignalName = (typeof SIGNALS)[number]
export const HEARTBEAT_STATUSES = ['idle', 'running', 'paused', 'checkpointing', 'error'] as const
export type HeartbeatStatus = (typeof HEARTBEAT_STATUSES)[number]

// Integers are TypeBox's own, not Elysia's t.Integer: that one is a Transform (it also accepts "5"
// and converts it), so every heartbeat body was walked a second time by TypeBox's decode, about a
// tenth of the leader's CPU per heartbeat (docs/benchmarks.md). JSON carries numbers as numbers.
const FiniteNumber = Type.Number({ minimum: -1e15, maximum: 1e15 })
const Count = Int({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const Hostname = Label(253)
/**
 * What a fellow reports that pages show beside the leader's own words (a GPU's name, its agent's
 * version): no control characters and no bidirectional overrides, which drew "1 of 80 GB free"
 * reversed and let a fellow's text pass for the leader's.
 */
const ReportedText = (maxLength: number) => Type.String({ maxLength, pattern: NO_CONTROL_PATTERN })

/** A model's name, as chat clients send it in `model` (the servable catalog's rule). */
export const MODEL_NAME = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$'
const ModelName = Type.String({ maxLength: 200, pattern: MODEL_NAME, 'x-rule': '1 to 200 letters, digits or any of . _ : / @ + -, starting with a letter or digit' })

export const Gpu = Type.Object(
  {
    index: Int({ minimum: 0, maximum: 1024 }),
    name: ReportedText(200),
    memory_total_mb: Int({ minimum: 0, maximum: 10_000_000 }),
    memory_free_mb: Int({ minimum: 0, maximum: 10_000_000 }),
    utilization_pct: Type.Number({ minimum: 0, maximum: 100 }),
    /** Where the driver reports it; the machine page charts it. */
    temperature_c: Type.Optional(Type.Number({ minimum: -100, maximum: 300 })),
  },
  { additionalProperties: false },
)
export type Gpu = Static<typeof Gpu>
export const Hardware = Type.Object(
  {
    gpus: Type.Array(Gpu, { maxItems: 64 }),
    cpu_pct: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
    mem_free_mb: Type.Optional(Int({ minimum: 0, maximum: 100_000_000 })),
    /** The machine's memory, so a page can show used of total (absent from older agents). */
    mem_total_mb: Type.Optional(Int({ minimum: 0, maximum: 100_000_000 })),
  },
  { additionalProperties: false },
)
export type Hardware = Static<typeof Hardware>

export const RegisterBody = Type.Object(
  {
    fellow_id: Type.Optional(Type.String({ format: 'uuid' })),
    hostname: Hostname,
    gpus: Type.Optional(Type.Array(Gpu, { maxItems: 64 })),
    /** host:port base where neighbours reach this fellow's p2p listeners (activations on base, gradients on base+1). */
    address: Type.Optional(Type.String({ maxLength: 300 })),
    agent_version: Type.Optional(ReportedText(64)),
  },
  { additionalProperties: false },
)
export type RegisterInput = Static<typeof RegisterBody>
export const RegisterResponse = Type.Object({
  fellow_id: Type.String(),
  node_token: Type.String(),
  pool_id: Type.String(),
  heartbeat_interval_s: Int(),
  signals_url: Type.String(),
})
export type RegisterResult = Static<typeof RegisterResponse>

/** A runner's name: what a job names and a fellow's operator declares (never a command). */
export const RUNNER_NAME = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'

/** An engine's name, as its operator declared it (src/agent/fellow-config.ts); `builtin` for tiny-llm. */
export const ENGINE_NAME = RUNNER_NAME

/** One engine the fellow's operator declared: its name, the model it serves, and whether it answers its health check now. */
export const EngineState = Type.Object(
  {
    name: Type.String({ pattern: ENGINE_NAME }),
    model: ModelName,
    healthy: Type.Boolean(),
  },
  { additionalProperties: false },
)
export type EngineState = Static<typeof EngineState>

export const HeartbeatBody = Type.Object(
  {
    /** Only read when no credential is presented (SVC_REQUIRE_NODE_AUTH=0); otherwise the token decides. */
    fellow_id: Type.Optional(Type.String({ format: 'uuid' })),
    // A heartbeat without a status is refused (422), not filled in as 'idle' (schema.ts UnionEnum).
    status: UnionEnum(HEARTBEAT_STATUSES),
    job_id: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    step: Type.Optional(Count),
    loss: Type.Optional(Nullable(FiniteNumber)),
    bytes_sent: Type.Optional(Count),
    bytes_received: Type.Optional(Count),
    hardware: Type.Optional(Hardware),
    /** The models this fellow serves now: only those whose engine is healthy. */
    servables: Type.Optional(Type.Array(ModelName, { maxItems: 100 })),
    /** Requests each served model takes at once (its engine's max_concurrent); a model left out takes 1. */
    capacity: Type.Optional(Type.Record(Type.String({ maxLength: 200 }), Int({ minimum: 1, maximum: 10_000 }), { maxProperties: 100 })),
    /** The runners this machine's operator declared (the built-in `mlp` included): jobs naming one are placed here. */
    runners: Type.Optional(Type.Array(Type.String({ pattern: RUNNER_NAME }), { maxItems: 64 })),
    /** Every engine declared, healthy or not (servables names only the healthy ones' models); the machine page lists them. */
    engines: Type.Optional(Type.Array(EngineState, { maxItems: 100 })),
    /**
     * A check (`svc fellow --once`), not a heartbeat: answered as one would be (401/404 for a token
     * or fellow that no longer works), but nothing is recorded and no waiting signal is handed over:
     * an agent running beside the check keeps its status and gets its signals.
     */
    check: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type HeartbeatInput = Static<typeof HeartbeatBody>

export const Signal = Type.Object({
  id: Type.String(),
  signal: UnionEnum(SIGNALS),
  job_id: Type.Optional(Type.String()),
  payload: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  ts: Timestamp,
})
export type Signal = Static<typeof Signal>

export const HeartbeatResponse = Type.Object({ ok: Type.Literal(true), next_heartbeat_s: Int(), pending_signals: Type.Optional(Type.Array(Signal)) })
export type HeartbeatResult = Static<typeof HeartbeatResponse>

/** base64url of 32 bytes. */
export const P2P_KEY_PATTERN = '^[A-Za-z0-9_-]{43}$'
const StagePeer = Nullable(Type.Object({ fellow_id: Type.String(), address: Nullable(Type.String()) }))
/**
 * The payload of START and RECONFIGURE: this fellow's stage of a job and its neighbours.
 * `p2p_key` is the job's key for the p2p handshake (src/agent/p2p-auth.ts), sent only to the
 * job's fellows; it changes when the job's fellows change. Optional on the wire so an agent can
 * tell an older leader apart (it then refuses p2p and uses the relay in auto mode).
 */
export const StartPayload = Type.Object({
  stage: Int({ minimum: 0 }),
  stages: Int({ minimum: 1 }),
  prev: StagePeer,
  next: StagePeer,
  transport: UnionEnum(['auto', 'tunnel', 'p2p']),
  relay_url: Type.String(),
  config: Type.Record(Type.String(), Type.Unknown()),
  p2p_key: Type.Optional(Type.String({ pattern: P2P_KEY_PATTERN })),
  resume: Type.Optional(Type.Boolean()),
  reconfigured: Type.Optional(Type.Boolean()),
  /** The runner to start, by name; absent from older leaders: the built-in `mlp`. */
  runner: Type.Optional(Type.String({ pattern: RUNNER_NAME })),
})
export type StartPayload = Static<typeof StartPayload>

/** The agent's log lines, shipped in batches (each line and batch bounded as here). */
export const LOG_LINE_MAX = 4096
export const LOG_BATCH_MAX = 500
/** A fellow stopping cleanly says so, and shows offline at once instead of after 6 missed heartbeats. */
export const GoodbyeBody = Type.Object(
  {
    /** Only read when no credential is presented (SVC_REQUIRE_NODE_AUTH=0); otherwise the token decides. */
    fellow_id: Type.Optional(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
)

export const LogLinesBody = Type.Object({ lines: Type.Array(Type.String({ maxLength: LOG_LINE_MAX }), { minItems: 1, maxItems: LOG_BATCH_MAX }) }, { additionalProperties: false })
