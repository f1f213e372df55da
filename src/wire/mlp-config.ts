// The built-in runner's (mlp) job config: read by the fellow at START, and by the leader when the
// job is submitted, so a mistake is refused then (422) instead of failing the job once placed.

export interface TrainConfig {
  steps: number
  reportEvery: number
  seed: number
  hidden?: number
  lr?: number
  batch?: number
  /** Stage 0 re-sends a step whose gradient has not come back after this long. */
  resendMs: number
}

function int(c: Record<string, unknown>, key: string, dflt: number, min: number, max: number): number {
  const v = c[key]
  if (v === undefined || v === null) return dflt
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new Error(`config.${key} must be an integer from ${min} to ${max}`)
  return v
}

/** The defaults of hidden and batch when a config leaves them out (src/agent/mlp.ts). */
const DEFAULT_HIDDEN = 32
const DEFAULT_BATCH = 32
/** Floats in one frame: the data endpoint and the relay carry frames of at most 64 MiB. */
const MAX_FRAME_FLOATS = (64 << 20) / 4

/** The config checked and with its defaults; a mistake throws, naming the key (`config.steps must be ...`). */
export function parseTrainConfig(c: Record<string, unknown>): TrainConfig {
  const lr = c.lr
  if (lr !== undefined && (typeof lr !== 'number' || !(lr > 0) || !Number.isFinite(lr))) throw new Error('config.lr must be a positive number')
  const opt = (key: string, max: number) => (c[key] === undefined ? undefined : int(c, key, 0, 1, max))
  const hidden = opt('hidden', 4096)
  const batch = opt('batch', 65_536)
  // Each of them fits, but a stage's activations (and the gradients back) go as one frame of batch
  // × hidden float32: past 64 MiB no stage could ever send one, and the job sat at step 0 for good.
  const h = hidden ?? DEFAULT_HIDDEN
  if ((batch ?? DEFAULT_BATCH) * h > MAX_FRAME_FLOATS) throw new Error(`config.batch must be at most ${Math.floor(MAX_FRAME_FLOATS / h)} with config.hidden ${h} (its activation frames, batch × hidden float32, must fit in 64 MiB)`)
  return {
    steps: int(c, 'steps', 200, 1, 100_000_000),
    reportEvery: int(c, 'report_every', 10, 1, 1_000_000),
    seed: int(c, 'seed', 1, 0, 2 ** 32 - 1),
    hidden,
    batch,
    lr: lr as number | undefined,
    resendMs: int(c, 'resend_ms', 5000, 100, 600_000),
  }
}
