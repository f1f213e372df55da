// What each control signal does to this fellow's work. One job at a time (the leader never
// places two on one fellow); a START for another job replaces the current one, because the
// leader's view of what this fellow runs is the one that counts. A stage stopped is not gone
// until its runner has exited (up to its stop_grace_s): until then the fellow says it is busy
// with it, and the next stage's runner waits for it. Once a job is over on this fellow, its
// stage's directory goes when the leader holds its newest checkpoint (tidy).
import { parseAssignment, parseTrainConfig, type StageAssignment } from './job'
import { PipelineWorker, type WorkerDeps, type WorkerStatus } from './pipeline'
import { RunnerWorker } from './runner'
import { BUILTIN_RUNNER, builtinRunner, type RunnerSpec } from './fellow-config'
import { purgeCheckpoints } from './state'
import { filesChangedSince, removeStageDir, stageDirOf } from './stage-dir'
import { join } from 'node:path'
import type { Channel, JobKey } from './p2p'
import type { Counters } from './transport'
import type { LeaderClient } from './client'
import type { Frame } from '../wire/frames'
import type { HeartbeatStatus, Signal } from '../wire/fellow'
import type { TimerClock } from '../time'
import type { Logger } from '../log'

export interface WorkDeps {
  client: LeaderClient
  log: Logger
  stateDir: string
  counters: Counters
  clock: TimerClock
  /** STOP without a job: this fellow was released or removed. */
  onReleased: (reason: string) => void
  /** The runners this machine's operator declared (besides the built-in mlp). */
  runners?: RunnerSpec[]
  leaderUrl?: string
  nodeToken?: () => string | null
  /** Run the built-in MLP inside the agent (tests with a fake clock) instead of as `svc runner mlp`. */
  inProcessMlp?: boolean
}

/** One stage of one job on this fellow: the built-in MLP in process, or a declared runner's process. */
export interface StageWorker {
  readonly jobId: string
  readonly status: WorkerStatus
  readonly step: number
  readonly loss: number | null
  readonly stage: { stage: number; stages: number }
  assignment: StageAssignment
  start(): void
  deliver(channel: Channel, frame: Frame): boolean
  pause(): void
  resume(): void
  checkpoint(): void
  reconfigure(a: StageAssignment): void
  /** Resolves once nothing the stage started runs any more (a runner gets its stop grace, then SIGKILL). */
  stop(reason: string): Promise<void>
  /**
   * Once stopped and its checkpoint uploads are done: the wall time up to which the leader holds
   * what its checkpoint directory has (-Infinity: nothing stored; null: the newest not stored).
   */
  uploadsDone(): Promise<number | null>
}

const SEEN_MAX = 512
const samePeer = (a: { fellow_id: string; address: string | null } | null, b: typeof a) => a?.fellow_id === b?.fellow_id && a?.address === b?.address
const sameKey = (a: Buffer | null | undefined, b: typeof a) => (a && b ? a.equals(b) : !a && !b)

export class Work {
  worker: StageWorker | null = null
  // A signal can reach us twice (socket and heartbeat); ids make handling idempotent.
  private readonly seen = new Set<string>()
  /** Stages stopped whose runner is still in its stop grace, each with what settles once it is gone. */
  private readonly exiting = new Map<StageWorker, Promise<void>>()

  constructor(private readonly d: WorkDeps) {}

  /** Heartbeat fields describing the current work. */
  snapshot(): { status: HeartbeatStatus; job_id: string | null; step?: number; loss?: number | null } {
    const w = this.worker
    if (!w || w.status === 'stopped') {
      // A stopped stage whose runner is still exiting holds its memory: busy with it, not idle.
      const exiting = [...this.exiting.keys()].at(-1)
      return exiting ? { status: 'running', job_id: exiting.jobId, step: exiting.step } : { status: 'idle', job_id: null }
    }
    const loss = w.loss !== null && Number.isFinite(w.loss) ? w.loss : null
    return { status: w.status === 'error' ? 'error' : w.status, job_id: w.jobId, step: w.step, loss }
  }

  /** A frame from the p2p listeners; frames for no current job are dropped. */
  deliver(channel: Channel, frame: Frame): void {
    this.worker?.deliver(channel, frame)
  }

  /** What the p2p listeners check a peer against: the running job's key and this stage. */
  p2pAuth(jobId: string): JobKey | null {
    const w = this.worker
    if (!w || w.jobId !== jobId || w.status === 'stopped' || w.status === 'error' || !w.assignment.p2pKey) return null
    return { key: w.assignment.p2pKey, stage: w.assignment.stage }
  }

  handle(s: Signal, via: 'socket' | 'heartbeat'): void {
    if (this.seen.has(s.id)) return
    this.seen.add(s.id)
    if (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.values().next().value!)
    const { log } = this.d
    const w = this.worker && this.worker.jobId === s.job_id ? this.worker : null
    log.info('signal received', { signal: s.signal, job_id: s.job_id ?? null, via })
    switch (s.signal) {
      case 'START':
      case 'RECONFIGURE':
        return this.place(s)
      case 'PAUSE':
        return w ? w.pause() : log.warn('PAUSE for a job this fellow does not run', { job_id: s.job_id ?? null })
      case 'CHECKPOINT':
        return w ? w.checkpoint() : log.warn('CHECKPOINT for a job this fellow does not run', { job_id: s.job_id ?? null })
      case 'STOP': {
        const reason = typeof s.payload?.reason === 'string' ? s.payload.reason : 'stopped'
        if (!s.job_id) return this.d.onReleased(reason)
        if (w) this.end(w, reason)
        return
      }
      case 'UPDATE': {
        const version = typeof s.payload?.version === 'string' ? s.payload.version : null
        // There is no self-update: replacing a running binary safely is the installer's job.
        log.warn('UPDATE requested, but this agent cannot update itself: re-run the join command (fellow.sh) and restart it', { version })
        return
      }
      case 'PURGE':
        if (this.worker) this.end(this.worker, 'purged')
        purgeCheckpoints(this.d.stateDir)
        log.info('purged all job state and checkpoints')
        return
    }
  }

  /**
   * Stops the stage and resolves once every runner stopped so far is gone. The agent waits for
   * it before it exits: the SIGKILL after stop_grace_s and the group's cleanup are its timers,
   * and a runner deaf to SIGTERM (or its children) outlived an agent that exited first.
   */
  async stopAll(reason: string): Promise<void> {
    // The agent stops, the job goes on: started again, the stage may resume from its directory.
    if (this.worker) this.end(this.worker, reason, { over: false })
    await Promise.all([...this.exiting.values()])
  }

  /** Names of the runners this fellow offers, for its heartbeats. */
  runnerNames(): string[] {
    return [BUILTIN_RUNNER, ...(this.d.runners ?? []).map((r) => r.name)]
  }

  /** `over`: the job is over on this fellow (STOP, another job's START, the leader refused a report): its directory may go. */
  private end(w: StageWorker, reason: string, o = { over: true }): void {
    const gone = w.stop(reason)
    this.exiting.set(w, gone)
    void gone.finally(() => this.exiting.delete(w))
    if (this.worker === w) this.worker = null
    if (o.over) void w.uploadsDone().then((storedAt) => this.tidy(w, storedAt)).catch((e: Error) => this.d.log.warn("could not remove the stage's work directory", { job_id: w.jobId, stage: w.stage.stage, error: e.message }))
  }

  /**
   * A stopped stage's directory (its checkpoints: gigabytes, job after job) goes once the leader
   * holds what it has: the newest checkpoint stored and nothing in it written since. What the
   * leader may not have stays (the log says so) until PURGE, as does everything while the stage
   * is this fellow's again (a START for it came meanwhile).
   */
  private async tidy(w: StageWorker, storedAt: number | null): Promise<void> {
    const { log, stateDir } = this.d
    const ids = { job_id: w.jobId, stage: w.stage.stage }
    const dir = stageDirOf(stateDir, w.jobId, w.stage.stage)
    const newer = storedAt === null ? [] : await filesChangedSince(join(dir, 'checkpoints'), storedAt)
    const cur = this.worker
    if (cur && cur.jobId === w.jobId && cur.stage.stage === w.stage.stage && cur.status !== 'stopped') return
    if (storedAt === null || newer.length > 0) {
      const why = storedAt === null ? 'its newest checkpoint could not be stored on the leader' : storedAt === -Infinity ? 'the leader holds no checkpoint of what is in it' : 'files in it are newer than its newest checkpoint on the leader'
      return log.info(`kept the stage's checkpoints on this fellow: ${why} (PURGE clears them)`, { ...ids, path: join(dir, 'checkpoints'), newer: newer.slice(0, 5) })
    }
    if (removeStageDir(stateDir, w.jobId, w.stage.stage)) log.info("removed the stage's work directory: the job is over on this fellow and its checkpoints are on the leader", { ...ids, path: dir })
  }

  /** What settles once every stage stopped so far is gone; null when none is still exiting. */
  private othersGone(): Promise<void> | null {
    return this.exiting.size > 0 ? Promise.all([...this.exiting.values()]).then(() => undefined) : null
  }

  /** START (new stage, or resume) and RECONFIGURE (new neighbours) both land here. */
  private place(s: Signal): void {
    const { log, client } = this.d
    if (!s.job_id) return log.warn(`${s.signal} without a job_id ignored`)
    let a: StageAssignment
    try {
      a = parseAssignment(s.payload)
    } catch (e) {
      return this.refuse(s.job_id, `bad ${s.signal} payload: ${(e as Error).message}`)
    }
    const w = this.worker
    const alive = w && w.jobId === s.job_id && w.status !== 'stopped' && w.status !== 'error'
    if (alive && w.stage.stage === a.stage && w.stage.stages === a.stages) {
      // A new key means the job's fellows changed even where this stage's neighbours did not.
      if (!samePeer(w.assignment.prev, a.prev) || !samePeer(w.assignment.next, a.next) || !sameKey(w.assignment.p2pKey, a.p2pKey)) w.reconfigure(a)
      if (s.signal === 'START') w.resume()
      return
    }
    if (w) this.end(w, `replaced by ${s.signal} for job ${s.job_id}`)
    const runner = typeof s.payload?.runner === 'string' ? s.payload.runner : BUILTIN_RUNNER
    const spec = runner === BUILTIN_RUNNER ? (this.d.inProcessMlp ? null : builtinRunner()) : ((this.d.runners ?? []).find((r) => r.name === runner) ?? null)
    // The leader places a job only on fellows that offer its runner; one it sent anyway is refused.
    if (runner !== BUILTIN_RUNNER && !spec) return this.refuse(s.job_id, `this fellow does not offer the runner '${runner}' (its operator declares runners with --runner or [runners.NAME])`)
    try {
      const jobId = s.job_id
      // Only this worker: a later START for the same job has a worker of its own.
      const onGone = (reason: string) => {
        const mine = this.worker
        if (mine !== worker || !mine || mine.status === 'stopped') return
        // Also how a stage hears of its job's end when its report races the STOP: info, not a warning.
        log.info('stopping the stage: the leader no longer has this fellow on the job', { job_id: jobId, reason })
        this.end(mine, reason)
      }
      let worker: StageWorker | null = null
      const deps: WorkerDeps = { jobId, client, log, stateDir: this.d.stateDir, counters: this.d.counters, clock: this.d.clock, onGone, othersGone: () => this.othersGone() }
      // The built-in MLP is a runner like any other (`svc runner mlp`), unless told to run in process.
      if (runner === BUILTIN_RUNNER) parseTrainConfig(a.config) // a bad config fails at START with its reason
      worker = spec
        ? new RunnerWorker({ ...deps, leaderUrl: this.d.leaderUrl ?? client.leaderUrl, nodeToken: this.d.nodeToken ?? (() => null) }, a, spec)
        : new PipelineWorker(deps, a)
      this.worker = worker
      worker.start()
    } catch (e) {
      this.worker = null
      this.refuse(s.job_id, (e as Error).message)
    }
  }

  private refuse(jobId: string, reason: string): void {
    this.d.log.error('cannot run the assigned stage', { job_id: jobId, reason })
    this.d.client.jobStatus(jobId, { status: 'failed', reason: reason.slice(0, 1000) }).catch((e: Error) => this.d.log.warn('job status report failed', { job_id: jobId, error: e.message }))
  }
}
