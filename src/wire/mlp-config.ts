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

/** The config checked and with its defaults; a mistake throws, naming the key (`config.steps must be ...`). */
export function parseTrainConfig(c: Record<string, unknown>): TrainConfig {
  const lr = c.lr
  if (lr !== undefined && (typeof lr !== 'number' || !(lr > 0) || !Number.isFinite(lr))) throw new Error('config.lr must be a positive number')
  const opt = (key: string, max: number) => (c[key] === undefined ? undefined : int(c, key, 0, 1, max))
  return {
    steps: int(c, 'steps', 200, 1, 100_000_000),
    reportEvery: int(c, 'report_every', 10, 1, 1_000_000),
    seed: int(c, 'seed', 1, 0, 2 ** 32 - 1),
    hidden: opt('hidden', 4096),
    batch: opt('batch', 65_536),
    lr: lr as number | undefined,
    resendMs: int(c, 'resend_ms', 5000, 100, 600_000),
  }
}
