// `svc runner mlp`: the built-in MLP as a runner (runner contract v1, docs/workloads.md), so the
// default training path is the one a user's own runner takes. The agent starts it for every stage
// of a job with runner `mlp`; it steps through MlpStageRun (pipeline.ts) with frames from and to
// SVC_DATA_URL, prints progress as JSON lines, writes checkpoints into SVC_CHECKPOINT_DIR on
// SIGUSR1, resumes from SVC_RESUME_FROM, and exits 0 when its part is done (the last stage: the
// job's last step; stage 0: every step's gradient applied), 1 with the reason on stderr when it
// cannot go on, 143 on SIGTERM.
import { fstatSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Inbox } from './transport'
import { MlpStageRun, type StageIO } from './pipeline'
import { writeFileAtomic, type CheckpointMeta } from './state'
import { createLogger } from '../log'
import { decodeFrames, encodeFrames, type Frame } from '../wire/frames'
import { sleep, systemClock } from '../time'
import type { StatusReport } from '../wire/jobs'
import type { Channel } from './p2p'
import type { SendOutcome } from './transport'

const POLL_WAIT_MS = 1000
const MAX_FRAME_BYTES = 64 << 20

/** The frames of one stage through the agent's data endpoint: two long-polls feed an inbox. */
class DataEndpointIO implements StageIO {
  readonly inbox = new Inbox({ clock: systemClock })
  private readonly stopper = new AbortController()
  /** The agent re-routes frames when neighbours change; the runner is not told, so this never aborts. */
  readonly epochSignal = new AbortController().signal

  constructor(
    private readonly url: string,
    private readonly checkpointDir: string,
    private readonly resumeFrom: string | null,
    private readonly stage: number,
    private readonly onReport: (r: StatusReport) => void,
  ) {}

  start(): void {
    for (const channel of ['activations', 'gradients'] as const) void this.poll(channel)
  }

  close(): void {
    this.stopper.abort()
  }

  private async poll(channel: Channel): Promise<void> {
    const signal = this.stopper.signal
    while (!signal.aborted) {
      try {
        const res = await fetch(`${this.url}/${channel}?wait_ms=${POLL_WAIT_MS}&max=64`, { signal })
        if (res.status === 200) for (const f of decodeFrames(new Uint8Array(await res.arrayBuffer()), { maxFrameBytes: MAX_FRAME_BYTES })) this.inbox.push(channel, f)
        else await res.arrayBuffer()
      } catch {
        if (!signal.aborted) await sleep(systemClock, 200, signal)
      }
    }
  }

  /** 202 sent; 413 never (the frame is past a limit: docs/workloads.md, do not send it again); anything else: again later. */
  async send(channel: Channel, frame: Frame): Promise<SendOutcome> {
    try {
      const res = await fetch(`${this.url}/${channel}`, { method: 'POST', body: encodeFrames([frame]) as Uint8Array<ArrayBuffer>, signal: this.stopper.signal })
      await res.arrayBuffer()
      return res.status === 202 ? 'sent' : res.status === 413 ? 'too_large' : 'unreachable'
    } catch {
      return 'unreachable'
    }
  }

  take(channels: Channel[], signal: AbortSignal, timeoutMs?: number) {
    return this.inbox.take(channels, signal, timeoutMs)
  }

  report(r: StatusReport): void {
    this.onReport(r)
  }

  saveCheckpoint(meta: CheckpointMeta, weights: Uint8Array): string {
    mkdirSync(this.checkpointDir, { recursive: true, mode: 0o700 })
    // Weights first, then the metadata that points at them: a crash between leaves no meta.
    writeFileAtomic(join(this.checkpointDir, `mlp-stage-${this.stage}.bin`), weights)
    writeFileAtomic(join(this.checkpointDir, `mlp-stage-${this.stage}.json`), JSON.stringify(meta) + '\n')
    return this.checkpointDir
  }

  loadCheckpoint(): { meta: CheckpointMeta; weights: Uint8Array } | null {
    if (!this.resumeFrom) return null
    try {
      const meta = JSON.parse(readFileSync(join(this.resumeFrom, `mlp-stage-${this.stage}.json`), 'utf8')) as CheckpointMeta
      if (meta.stage !== this.stage || !Number.isSafeInteger(meta.step)) return null
      return { meta, weights: new Uint8Array(readFileSync(join(this.resumeFrom, `mlp-stage-${this.stage}.bin`))) }
    } catch {
      return null
    }
  }
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const v = env[name]
  if (v === undefined || v === '') throw new Error(`${name} is not set: svc runner mlp is started by the fellow agent (docs/workloads.md)`)
  return v
}

/** Runs one stage; resolves with the exit code. */
export async function runMlpRunner(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  // Log lines go to stderr (the agent ships them); stdout carries only the contract's JSON lines.
  const log = createLogger('warn', (l) => process.stderr.write(l + '\n'))
  const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n')
  let stage: number
  let stages: number
  let config: Record<string, unknown>
  let io: DataEndpointIO
  let exit!: (code: number) => void
  const exited = new Promise<number>((r) => (exit = r))
  try {
    stage = Number(required(env, 'SVC_STAGE'))
    stages = Number(required(env, 'SVC_STAGES'))
    if (!Number.isInteger(stages) || stages < 1 || !Number.isInteger(stage) || stage < 0 || stage >= stages) throw new Error('SVC_STAGE and SVC_STAGES must be a stage within the stages')
    const parsed = JSON.parse(env.SVC_JOB_CONFIG || '{}') as unknown
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('SVC_JOB_CONFIG must be a JSON object')
    config = parsed as Record<string, unknown>
    io = new DataEndpointIO(required(env, 'SVC_DATA_URL'), required(env, 'SVC_CHECKPOINT_DIR'), env.SVC_RESUME_FROM || null, stage, (r) => {
      if (r.status === 'running' && r.step !== undefined) say({ step: r.step, ...(r.loss != null ? { loss: r.loss } : {}), ...(r.throughput !== undefined ? { throughput: r.throughput } : {}) })
      else if (r.status === 'checkpointed') say({ checkpoint: env.SVC_CHECKPOINT_DIR, step: r.step })
      else if (r.status === 'completed') {
        say({ step: r.step, ...(r.loss != null ? { loss: r.loss } : {}) })
        exit(0)
      } else if (r.status === 'failed') {
        process.stderr.write(`${r.reason ?? 'the stage failed'}\n`)
        exit(1)
      }
    })
  } catch (e) {
    process.stderr.write(`svc runner mlp: ${(e as Error).message}\n`)
    return 1
  }
  let run: MlpStageRun
  try {
    run = new MlpStageRun({ jobId: env.SVC_JOB_ID ?? 'job', log, clock: systemClock }, { stage, stages, config, resume: !!env.SVC_RESUME_FROM }, io)
  } catch (e) {
    // A bad config: the job fails with this line as its reason.
    process.stderr.write(`${(e as Error).message}\n`)
    return 1
  }
  const onCheckpoint = () => run.checkpoint()
  const onTerm = () => {
    run.stop('SIGTERM')
    exit(143)
  }
  process.on('SIGUSR1', onCheckpoint)
  process.on('SIGTERM', onTerm)
  // stdin is the agent's pipe that nobody writes to: its end means the agent is gone (contract v1).
  if (fromAgent()) void drain(Bun.stdin.stream()).then(onTerm)
  run.start()
  // Stage 0 is done once every step's gradient came back; the last stage says so by reporting.
  if (run.stage.isFirst && !run.stage.isLast) void run.done.then(() => exit(0))
  const code = await exited
  run.stop('exiting')
  process.off('SIGUSR1', onCheckpoint)
  process.off('SIGTERM', onTerm)
  return code
}

/** stdin is a pipe or socket (the agent's), not a terminal or /dev/null (run by hand). */
function fromAgent(): boolean {
  const s = fstatSync(0)
  return s.isFIFO() || s.isSocket()
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<void> {
  try {
    for await (const _ of stream) void _
  } catch {
    // closed: the same as its end
  }
}
