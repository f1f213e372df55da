// The training worker for one START: this fellow's stage of the built-in MLP. Stage 0 drives
// the steps, one in flight at a time: forward, send activations, wait for that step's gradient,
// backward. Later stages react to what arrives; the last one turns activations into a loss and
// reports it. Frames carry {job_id, step, rows}, so a stale or duplicate frame (after a resend
// or a re-placement) is recognised by its step and dropped rather than trained on.
// RECONFIGURE keeps it simple: the neighbours change, every stage forgets forwards whose
// backward will never come, and stage 0 restarts from the step after the last one whose
// gradient it applied. A stage that took over for a lost fellow starts from the job's seed.
//
// The logic (MlpStageRun) reads and writes through a StageIO: in process, the agent's Link to the
// neighbours (PipelineWorker, kept for tests and embedding); in a runner process started as
// `svc runner mlp`, the runner contract's SVC_DATA_URL and stdout (src/agent/mlp-runner.ts).
import { createStage, type Stage } from './mlp'
import { type LeaderClient } from './client'
import { StatusReporter } from './reports'
import { Link, type Counters, type SendOutcome } from './transport'
import { parseTrainConfig, type StageAssignment, type TrainConfig } from './job'
import { readCheckpoint, writeCheckpoint, type CheckpointMeta } from './state'
import type { Channel } from './p2p'
import type { Frame } from '../wire/frames'
import type { StatusReport } from '../wire/jobs'
import { monotonicNow, sleep, type TimerClock } from '../time'
import type { Logger } from '../log'

export type WorkerStatus = 'running' | 'paused' | 'checkpointing' | 'stopped' | 'error'

export interface WorkerDeps {
  jobId: string
  client: LeaderClient
  log: Logger
  stateDir: string
  counters: Counters
  clock: TimerClock
  /** The leader refused a status report: this fellow is off the job (StatusReporter). */
  onGone?: (reason: string) => void
  /**
   * Settles once the stages this fellow stopped before this one are gone (a runner in its stop
   * grace); null when none is left. A runner starts only then: two jobs' runners side by side
   * would hold one GPU's memory twice.
   */
  othersGone?: () => Promise<void> | null
}

/** Where a stage's frames, reports and checkpoints go. */
export interface StageIO {
  start(): void
  close(): void
  /** Aborted when the neighbours change, so a wait for a lost step's gradient ends at once. */
  readonly epochSignal: AbortSignal
  /** 'too_large': the frame can never be carried (past the relay's or the data endpoint's frame limit). */
  send(channel: Channel, frame: Frame): Promise<SendOutcome>
  take(channels: Channel[], signal: AbortSignal, timeoutMs?: number): Promise<{ channel: Channel; frame: Frame } | null>
  report(r: StatusReport): void
  /** Writes the weights; returns where. */
  saveCheckpoint(meta: CheckpointMeta, weights: Uint8Array): string
  loadCheckpoint(): { meta: CheckpointMeta; weights: Uint8Array } | null
}

export interface StageRunDeps {
  jobId: string
  log: Logger
  clock: TimerClock
}

const toBytes = (a: Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength)
// Frames from a socket or a relay body are views at any offset; a copy is always aligned.
const toF32 = (b: Uint8Array) => new Float32Array(b.slice().buffer)
const mean = (xs: number[]) => xs.reduce((s, v) => s + v, 0) / Math.max(1, xs.length)
const nextTick = () => new Promise<void>((r) => setImmediate(r))

/** One stage of the built-in MLP, stepping through a StageIO. */
export class MlpStageRun {
  status: WorkerStatus = 'running'
  /** Last step this stage finished (stage 0: whose gradient it applied). */
  step = 0
  loss: number | null = null
  readonly stage: Stage
  protected readonly cfg: TrainConfig
  private readonly stopper = new AbortController()
  private wakeGate: (() => void) | null = null
  private epoch = 0
  private window: number[] = []
  private lastReport: { at: number; step: number }
  private completed = false

  constructor(
    protected readonly deps: StageRunDeps,
    public assignment: Pick<StageAssignment, 'stage' | 'stages' | 'config' | 'resume'> & Partial<StageAssignment>,
    protected readonly io: StageIO,
  ) {
    const a = assignment
    this.lastReport = { at: monotonicNow(deps.clock), step: 0 }
    this.cfg = parseTrainConfig(a.config)
    this.stage = createStage({ stage: a.stage, stages: a.stages, seed: this.cfg.seed, hidden: this.cfg.hidden, lr: this.cfg.lr, batch: this.cfg.batch })
    if (a.resume) this.restore()
  }

  get jobId(): string {
    return this.deps.jobId
  }

  start(): void {
    this.io.start()
    this.deps.log.info('stage started', { job_id: this.jobId, stage: this.stage.stage, stages: this.stage.stages, transport: this.assignment.transport ?? null, steps: this.cfg.steps, from_step: this.step + 1 })
    this.report({ status: 'running', step: this.step })
    void (this.stage.isFirst ? this.runFirst() : this.runRest()).catch((e: Error) => this.fail(e))
  }

  // Declared before `done`, which sets it: a field declared after would be reset to undefined.
  private finished: () => void = () => {}
  /** Stage 0 only: every step sent and its gradient applied. */
  readonly done: Promise<void> = new Promise((r) => (this.finished = r))

  pause(): void {
    if (this.status !== 'running') return
    this.status = 'paused'
    this.deps.log.info('stage paused', { job_id: this.jobId, step: this.step })
    this.report({ status: 'paused', step: this.step })
  }

  resume(): void {
    if (this.status !== 'paused') return
    this.status = 'running'
    this.wakeGate?.()
    this.deps.log.info('stage resumed', { job_id: this.jobId, step: this.step })
    this.report({ status: 'running', step: this.step })
  }

  /** The neighbours changed: forwards whose backward will never come are forgotten; stage 0 goes on from the last applied step. */
  protected newEpoch(): void {
    this.epoch++
    this.stage.dropPending()
  }

  /** Weights to disk under the state dir; serialize() is synchronous, so no update interleaves. */
  checkpoint(): void {
    const before = this.status
    this.status = 'checkpointing'
    try {
      const meta = { job_id: this.jobId, stage: this.stage.stage, stages: this.stage.stages, step: this.step, ts: new Date().toISOString() }
      const path = this.io.saveCheckpoint(meta, this.stage.serialize())
      this.deps.log.info('checkpoint written', { job_id: this.jobId, step: this.step, path })
      this.report({ status: 'checkpointed', step: this.step })
    } catch (e) {
      this.deps.log.error('checkpoint failed', { job_id: this.jobId, error: (e as Error).message })
    } finally {
      if (this.status === 'checkpointing') this.status = before
    }
  }

  /** In-process: nothing outlives it. */
  stop(reason: string): Promise<void> {
    if (this.status === 'stopped') return Promise.resolve()
    this.status = 'stopped'
    this.stopper.abort()
    this.wakeGate?.()
    this.io.close()
    this.deps.log.info('stage stopped', { job_id: this.jobId, reason, step: this.step })
    return Promise.resolve()
  }

  private restore(): void {
    const cp = this.io.loadCheckpoint()
    if (!cp || cp.meta.stages !== this.stage.stages) return
    try {
      this.stage.load(cp.weights)
      this.step = cp.meta.step
      this.deps.log.info('resumed from checkpoint', { job_id: this.jobId, step: this.step })
    } catch (e) {
      this.deps.log.warn('checkpoint not usable; starting from the seed', { job_id: this.jobId, error: (e as Error).message })
    }
  }

  private fail(e: Error): void {
    if (this.status === 'stopped') return
    this.status = 'error'
    this.deps.log.error('stage failed', { job_id: this.jobId, error: e.message })
    this.report({ status: 'failed', step: this.step, reason: `stage ${this.stage.stage}: ${e.message}`.slice(0, 1000) })
    this.io.close()
  }

  /**
   * Sends a frame; one the link refuses as too large for good fails the stage: every step's frame
   * is as large, and resent it kept the job at step 0 for good, with no reason.
   */
  private async send(channel: Channel, f: Frame): Promise<SendOutcome> {
    const sent = await this.io.send(channel, f)
    if (sent === 'too_large') {
      const { step, rows } = f.meta as { step: number; rows: number }
      const width = f.data.byteLength / 4 / Math.max(1, rows)
      const to = channel === 'activations' ? 'next' : 'previous'
      this.fail(new Error(`the ${channel} frame of step ${step} (${f.data.byteLength} bytes: batch ${rows} × hidden ${width} float32) is larger than the link to the ${to} stage carries (the relay's SVC_RELAY_MAX_FRAME_BYTES; 64 MiB at most): make config.batch or config.hidden smaller`))
    }
    return sent
  }

  /** Resolves true when stepping may go on, false once stopped. */
  private async gate(): Promise<boolean> {
    while (this.status === 'paused') await new Promise<void>((r) => (this.wakeGate = r))
    return this.status !== 'stopped' && this.status !== 'error'
  }

  private frame(step: number, rows: number, data: Float32Array): Frame {
    return { meta: { job_id: this.jobId, step, rows, from: this.stage.stage }, data: toBytes(data) }
  }

  private async runFirst(): Promise<void> {
    const { stage, cfg } = this
    let next = this.step + 1
    let epoch = this.epoch
    while (next <= cfg.steps && (await this.gate())) {
      if (epoch !== this.epoch) {
        epoch = this.epoch
        next = this.step + 1
      }
      // A step can complete without touching the event loop (one stage; a transport that
      // answers from memory): yield once per step so heartbeats and signals always get in.
      await nextTick()
      stage.dropPending()
      const out = stage.forward(stage.nextBatch(next).x, stage.batch)
      if (stage.isLast) {
        this.finishStep(next, out, stage.batch)
        next++
        continue
      }
      const signal = this.io.epochSignal
      const sent = await this.send('activations', this.frame(next, stage.batch, out))
      if (sent === 'too_large') return // failed: never done
      if (sent !== 'sent') {
        await sleep(this.deps.clock, 1000, signal) // unreachable: do not spin, try the step again
        continue
      }
      const g = await this.awaitGradient(next, signal)
      if (!g) continue // lost, or the pipeline changed: resend this step
      stage.backward(toF32(g.data))
      this.step = next++
    }
    if (this.status !== 'stopped') this.deps.log.info('stage 0 sent every step', { job_id: this.jobId, steps: cfg.steps })
    this.finished()
  }

  private async awaitGradient(step: number, epoch: AbortSignal): Promise<Frame | null> {
    const signal = AbortSignal.any([epoch, this.stopper.signal])
    const { clock } = this.deps
    const deadline = monotonicNow(clock) + this.cfg.resendMs
    for (;;) {
      const got = await this.io.take(['gradients'], signal, deadline - monotonicNow(clock))
      if (!got) return null
      if (got.frame.meta.step === step) return got.frame
    }
  }

  private async runRest(): Promise<void> {
    const { stage } = this
    let awaiting: number | null = null
    for (;;) {
      const got = await this.io.take(['gradients', 'activations'], this.stopper.signal)
      if (!got || this.status === 'stopped' || this.status === 'error') return
      const { step, rows } = got.frame.meta
      if (typeof step !== 'number' || typeof rows !== 'number') continue
      try {
        if (got.channel === 'activations') {
          stage.dropPending() // a new forward for a step means the old one will not come back
          const out = stage.forward(toF32(got.frame.data), rows)
          if (stage.isLast) {
            const dx = this.finishStep(step, out, rows)
            if ((await this.send('gradients', this.frame(step, rows, dx))) === 'too_large') return
          } else {
            awaiting = step
            if ((await this.send('activations', this.frame(step, rows, out))) === 'too_large') return
          }
        } else if (step === awaiting) {
          awaiting = null
          const dx = stage.backward(toF32(got.frame.data))
          this.step = step
          if ((await this.send('gradients', this.frame(step, rows, dx))) === 'too_large') return
        }
      } catch (e) {
        this.deps.log.warn('dropped a frame that does not fit this stage', { job_id: this.jobId, step, error: (e as Error).message })
      }
    }
  }

  /** Last stage: loss, first gradient, backward; reports every report_every steps and at the end. */
  private finishStep(step: number, out: Float32Array, rows: number): Float32Array {
    const { stage, cfg } = this
    const { loss, grad } = stage.lossAndGrad(out, stage.targetsFor(step).subarray(0, rows))
    const dx = stage.backward(grad)
    this.step = step
    this.loss = loss
    this.window.push(loss)
    if (step % cfg.reportEvery === 0 || step >= cfg.steps) {
      const now = monotonicNow(this.deps.clock)
      const throughput = Math.max(0, ((step - this.lastReport.step) * 1000) / Math.max(1, now - this.lastReport.at))
      // The mean over the window, not one batch's loss: a steadier curve for the metrics stream.
      this.report({ status: 'running', step, loss: mean(this.window), throughput })
      this.window = []
      this.lastReport = { at: now, step }
    }
    if (step >= cfg.steps && !this.completed) {
      this.completed = true
      this.deps.log.info('job steps completed', { job_id: this.jobId, step, loss })
      this.report({ status: 'completed', step, loss })
    }
    return dx
  }

  private report(r: StatusReport): void {
    this.io.report(r)
  }
}

/** The MLP stage inside the agent, its frames through the agent's Link (p2p, relay or auto). */
export class PipelineWorker extends MlpStageRun {
  readonly link: Link
  declare assignment: StageAssignment

  constructor(deps: WorkerDeps, assignment: StageAssignment) {
    const a = assignment
    const link = new Link({ jobId: deps.jobId, stage: a.stage, stages: a.stages, mode: a.transport, relayUrl: a.relayUrl, prev: a.prev, next: a.next, client: deps.client, log: deps.log, counters: deps.counters, clock: deps.clock, key: a.p2pKey ?? null })
    const reporter = new StatusReporter(deps, deps.jobId)
    super(deps, assignment, {
      start: () => link.start(),
      close: () => link.close(),
      get epochSignal() {
        return link.epochSignal
      },
      send: (channel, frame) => link.sendFrame(channel, frame),
      take: (channels, signal, timeoutMs) => link.inbox.take(channels, signal, timeoutMs),
      report: (r) => reporter.report(r),
      saveCheckpoint: (meta, weights) => writeCheckpoint(deps.stateDir, meta, weights),
      loadCheckpoint: () => readCheckpoint(deps.stateDir, deps.jobId, a.stage),
    })
    this.link = link
  }

  deliver(channel: Channel, frame: Frame): boolean {
    return this.link.deliver(channel, frame)
  }

  /** Nothing to upload: its checkpoints stay under <state-dir>/checkpoints (StageWorker). */
  uploadsDone(): Promise<number | null> {
    return Promise.resolve(-Infinity)
  }

  reconfigure(a: StageAssignment): void {
    this.assignment = a
    this.link.setNeighbours(a.prev, a.next, a.p2pKey ?? null)
    this.newEpoch()
    this.deps.log.info('stage reconfigured', { job_id: this.jobId, stage: a.stage, prev: a.prev?.fellow_id ?? null, next: a.next?.fellow_id ?? null, resume_from: this.step + 1 })
  }
}
