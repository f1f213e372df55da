// A job's stage run by a runner its operator declared (`--runner NAME=COMMAND`, [runners.NAME]):
// the agent starts the command as a child process with the runner contract's environment
// (docs/workloads.md), carries its activation and gradient frames between SVC_DATA_URL (a
// loopback HTTP endpoint of the agent, in the relay's frame encoding) and the neighbours over p2p,
// the relay or auto, reads its progress from stdout, and maps the control signals to process
// signals: PAUSE/resume SIGSTOP/SIGCONT, CHECKPOINT SIGUSR1, STOP SIGTERM then SIGKILL. Exit 0
// finishes the stage (the last stage's completes the job); any other exit fails the job with the
// last lines of the runner's stderr as the reason.
import { mkdirSync, readdirSync, realpathSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { randomBytes } from 'node:crypto'
import { Link } from './transport'
import { LineLimiter, Throttle, childEnv, readLines, signalChild, spawnChild } from './lines'
import { StatusReporter } from './reports'
import { fetchCheckpoint, uploadCheckpoint } from './checkpoints'
import { isInside } from './tar'
import { secretEnvValues, secretMask } from './redact'
import { leftoversGone, recordRunner } from './leftovers'
import { stageDirOf } from './stage-dir'
import { decodeFrames, encodeFrames, type Frame } from '../wire/frames'
import { AppError } from '../errors'
import type { StageAssignment } from './job'
import { monotonicNow } from '../time'
import type { WorkerDeps, WorkerStatus } from './pipeline'
import type { RunnerSpec } from './fellow-config'
import type { Channel } from './p2p'

/** The largest frame body a runner may send at once (the leader's relay takes 64 MiB frames). */
const MAX_SEND_BYTES = 256 << 20
const MAX_FRAME_BYTES = 64 << 20
const MAX_WAIT_MS = 30_000
const STDERR_TAIL = 20
/** Progress and checkpoint lines are reported at most this often each (the last one always). */
const REPORT_EVERY_MS = 50
/** Output lines logged (and shipped to the leader) per second; the rest are counted. */
const LOG_LINES_PER_S = 200
/** How long the stage says 'checkpointing' after SIGUSR1 without a checkpoint line. */
const CHECKPOINT_WAIT_MS = 60_000

export interface RunnerDeps extends WorkerDeps {
  leaderUrl: string
  /** The fellow's node token, passed as SVC_RELAY_TOKEN (SPEC: training subprocesses read it). */
  nodeToken: () => string | null
}

const CHANNELS: Record<string, Channel> = { activations: 'activations', gradients: 'gradients' }

export class RunnerWorker {
  status: WorkerStatus = 'running'
  step = 0
  loss: number | null = null
  readonly link: Link
  readonly stage: { stage: number; stages: number }
  private proc: ReturnType<typeof Bun.spawn> | null = null
  private server: ReturnType<typeof Bun.serve> | null = null
  private readonly secret = randomBytes(24).toString('base64url')
  private readonly stopper = new AbortController()
  private readonly reporter: StatusReporter
  private readonly stderrTail: string[] = []
  /** What it prints, without the node token and its declared secrets (redact.ts). */
  private readonly scrub: (line: string) => string
  private stopping = false
  /** Settles once the runner stopped by `stop` has exited (resolved when there was none). */
  private gone: Promise<void> = Promise.resolve()
  /** SIGUSR1 was sent: an exit with 138 (a shell whose child it killed) is then said as such. */
  private checkpointAsked = false
  /** Ends a 'checkpointing' the runner never answered with a checkpoint line. */
  private checkpointWait: (() => void) | null = null
  private readonly progressReports: Throttle
  /** The throughput the runner's last progress line gave (null: computed from the steps). */
  private throughput: number | null = null
  private lastProgress = { at: 0, step: 0 }
  private readonly checkpointReports: Throttle
  private checkpointStep = 0
  private readonly output: LineLimiter
  readonly checkpointDir: string
  /** Where archives and downloaded checkpoints go (below the job's directory, not the runner's). */
  private readonly workDir: string
  /** Uploads go one at a time; a newer checkpoint waits and replaces an older waiting one. */
  private uploading: Promise<void> | null = null
  private nextUpload: { step: number; dir: string; at: number } | null = null
  /** When the runner said its newest stored checkpoint was written (wall time); -Infinity: none yet; null: the newest could not be stored. */
  private storedAt: number | null = -Infinity
  /** Settles once the runner's output is read to its end (its last lines may name a checkpoint). */
  private outputRead: Promise<unknown> = Promise.resolve()
  /** Set while the start waits for a PAUSE that came before the runner existed to be lifted. */
  private unpaused: (() => void) | null = null

  constructor(
    private readonly deps: RunnerDeps,
    public assignment: StageAssignment,
    private readonly spec: RunnerSpec,
  ) {
    const a = assignment
    this.stage = { stage: a.stage, stages: a.stages }
    this.reporter = new StatusReporter(deps, deps.jobId)
    this.link = new Link({ jobId: deps.jobId, stage: a.stage, stages: a.stages, mode: a.transport, relayUrl: a.relayUrl, prev: a.prev, next: a.next, client: deps.client, log: deps.log, counters: deps.counters, clock: deps.clock, key: a.p2pKey ?? null })
    this.checkpointDir = join(stageDirOf(deps.stateDir, deps.jobId, a.stage), 'checkpoints')
    this.workDir = join(stageDirOf(deps.stateDir, deps.jobId, a.stage), 'transfer')
    this.scrub = secretMask(() => [deps.nodeToken?.(), ...secretEnvValues(spec.env)])
    this.output = new LineLimiter(LOG_LINES_PER_S, deps.clock, (n) => deps.log.warn('runner output suppressed', { job_id: deps.jobId, runner: spec.name, lines: n, limit_per_s: LOG_LINES_PER_S }))
    this.progressReports = new Throttle(deps.clock, REPORT_EVERY_MS, () => this.sendProgress())
    this.checkpointReports = new Throttle(deps.clock, REPORT_EVERY_MS, () => this.report({ status: 'checkpointed', step: this.checkpointStep }))
  }

  get jobId(): string {
    return this.deps.jobId
  }

  start(): void {
    void this.launch().catch((e: Error) => this.fail(`runner ${this.spec.name} could not start: ${e.message}`))
  }

  /**
   * The stage's newest checkpoint in the leader's store, if any, becomes SVC_RESUME_FROM (a stage
   * that moved here from a lost fellow goes on from it); else a checkpoint of its own, on a START
   * that resumes. Then the runner starts.
   */
  private async launch(): Promise<void> {
    const { log } = this.deps
    mkdirSync(this.checkpointDir, { recursive: true, mode: 0o700 })
    const stored = await fetchCheckpoint({ ...this.deps, signal: this.stopper.signal }, { jobId: this.jobId, stage: this.stage.stage, workDir: this.workDir })
    if (this.status === 'stopped') return
    let resumeFrom: string | null = stored?.dir ?? null
    if (!resumeFrom && this.assignment.resume && readdirSync(this.checkpointDir).length > 0) resumeFrom = this.checkpointDir
    if (stored) this.step = stored.step
    // A runner a previous agent left behind (paused when that agent died) is gone first: two
    // runners of one stage would hold its memory twice.
    await leftoversGone(this.deps.stateDir)
    // So is a runner of this fellow's previous stage that is still in its stop grace (the leader
    // places the next job as soon as the last one ended).
    const others = this.deps.othersGone?.() ?? null
    if (others) {
      log.info("waiting for the previous stage's runner to exit before starting this one", { job_id: this.jobId, runner: this.spec.name, stage: this.stage.stage })
      await others
    }
    if ((this.status as WorkerStatus) === 'stopped') return
    // A PAUSE that came while the stage was starting (a paused job's stage started again, or moved
    // here: START, then PAUSE) holds: the runner starts only once the job is resumed, so not one
    // step is trained while the job is paused.
    if (this.status === 'paused') {
      log.info('stage starts paused: the runner starts when the job is resumed', { job_id: this.jobId, runner: this.spec.name, stage: this.stage.stage, resumed_from_step: stored?.step ?? null })
      this.report({ status: 'paused', step: this.step, ...(stored ? { resumed_from_step: stored.step } : {}) })
      await new Promise<void>((resolve) => (this.unpaused = resolve))
      this.unpaused = null
      // Resumed, or stopped meanwhile (the narrowing above does not know the wait changed it).
      if ((this.status as WorkerStatus) === 'stopped' || (this.status as WorkerStatus) === 'error') return
    }
    this.link.start()
    this.server = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, maxRequestBodySize: MAX_SEND_BYTES, fetch: (req) => this.data(req) })
    const env: Record<string, string> = {
      ...childEnv(),
      ...this.spec.env,
      SVC_LEADER_URL: this.deps.leaderUrl,
      SVC_RELAY_TOKEN: this.deps.nodeToken() ?? '',
      SVC_JOB_ID: this.jobId,
      SVC_STAGE: String(this.stage.stage),
      SVC_STAGES: String(this.stage.stages),
      SVC_JOB_CONFIG: JSON.stringify(this.assignment.config),
      SVC_CHECKPOINT_DIR: this.checkpointDir,
      SVC_DATA_URL: `http://127.0.0.1:${this.server.port}/${this.secret}`,
      SVC_RUNNER_CONTRACT: '1',
    }
    if (resumeFrom) env.SVC_RESUME_FROM = resumeFrom
    try {
      // stdin is a pipe the agent never writes to: its end of file tells the runner the agent is gone.
      this.proc = spawnChild(this.spec.command, env, 'pipe')
    } catch (e) {
      return this.fail(`runner ${this.spec.name} could not start: ${(e as Error).message}`)
    }
    // Recorded until it exits, so that the next agent can stop it if this one dies first.
    const forget = recordRunner(this.deps.stateDir, this.proc.pid, { jobId: this.jobId, stage: this.stage.stage, stopGraceS: this.spec.stopGraceS })
    const started = this.proc
    // However it ends (done, failed, stopped), what it started and left behind in its process
    // group goes with it.
    void started.exited.then(() => {
      signalChild(started, 'SIGKILL')
      forget()
    })
    this.lastProgress = { at: monotonicNow(this.deps.clock), step: this.step }
    log.info('runner started', { job_id: this.jobId, runner: this.spec.name, stage: this.stage.stage, stages: this.stage.stages, pid: this.proc.pid, transport: this.assignment.transport, resume_from: resumeFrom, resumed_from_step: stored?.step ?? null })
    this.report({ status: 'running', step: this.step, ...(stored ? { resumed_from_step: stored.step } : {}) })
    const out = readLines(this.proc.stdout as ReadableStream<Uint8Array>, (l) => this.stdout(l))
    const err = readLines(this.proc.stderr as ReadableStream<Uint8Array>, (l) => {
      const line = this.scrub(l)
      this.stderrTail.push(line.slice(0, 400))
      if (this.stderrTail.length > STDERR_TAIL) this.stderrTail.shift()
      if (this.output.allow()) log.info('runner output', { job_id: this.jobId, runner: this.spec.name, stream: 'stderr', line })
    })
    const proc = this.proc
    this.outputRead = Promise.all([out, err])
    // Its last lines (the final step, the reason it failed) are read before its exit is acted on.
    // Bun's `exited` says 128+N for a process a signal killed: the code and the signal are read apart.
    void Promise.all([proc.exited, out, err]).then(() => this.exited(proc.signalCode === null ? proc.exitCode : null, proc.signalCode === null ? null : String(proc.signalCode)))
  }

  deliver(channel: Channel, frame: Frame): boolean {
    return this.link.deliver(channel, frame)
  }

  /**
   * SIGSTOP. A stage still starting (its checkpoint being fetched, no process yet) is marked paused
   * and its runner not started until it is resumed; one writing a checkpoint is stopped too (it
   * finishes the checkpoint once resumed).
   */
  pause(): void {
    if (this.status !== 'running' && this.status !== 'checkpointing') return
    if (this.proc) signalChild(this.proc, 'SIGSTOP')
    this.status = 'paused'
    // Progress already on its way must not say "running" after "paused".
    this.progressReports.cancel()
    this.deps.log.info('stage paused', { job_id: this.jobId, step: this.step })
    this.report({ status: 'paused', step: this.step })
  }

  /** SIGCONT; before the runner exists, it lets the start go on. */
  resume(): void {
    if (this.status !== 'paused') return
    if (this.proc) signalChild(this.proc, 'SIGCONT')
    this.unpaused?.()
    this.status = 'running'
    this.deps.log.info('stage resumed', { job_id: this.jobId, step: this.step })
    this.report({ status: 'running', step: this.step })
  }

  /**
   * SIGUSR1: the runner writes a checkpoint into SVC_CHECKPOINT_DIR and says so on stdout. A
   * runner may fail to (a full disk) or ignore the signal: a CHECKPOINT while the last one is still
   * unanswered is sent all the same (it was dropped, every later one with it), and after
   * CHECKPOINT_WAIT_MS without a checkpoint line the stage says 'running' again.
   */
  checkpoint(): void {
    if ((this.status !== 'running' && this.status !== 'checkpointing') || !this.proc) return
    const { log, clock } = this.deps
    if (this.status === 'checkpointing') log.info('CHECKPOINT while the last one is still unanswered (no checkpoint line yet); signalling the runner again', { job_id: this.jobId, runner: this.spec.name })
    this.status = 'checkpointing'
    this.checkpointAsked = true
    this.proc.kill('SIGUSR1')
    this.checkpointWait?.()
    this.checkpointWait = clock.setTimeout(() => {
      this.checkpointWait = null
      if (this.status !== 'checkpointing') return
      this.status = 'running'
      log.warn(`no checkpoint line from the runner within ${CHECKPOINT_WAIT_MS / 1000} s of CHECKPOINT (SIGUSR1); the stage says running again (a checkpoint line that comes later is still uploaded)`, { job_id: this.jobId, runner: this.spec.name })
    }, CHECKPOINT_WAIT_MS)
  }

  reconfigure(a: StageAssignment): void {
    this.assignment = a
    this.link.setNeighbours(a.prev, a.next, a.p2pKey ?? null)
    this.deps.log.info('stage reconfigured', { job_id: this.jobId, stage: a.stage, prev: a.prev?.fellow_id ?? null, next: a.next?.fellow_id ?? null })
  }

  stop(reason: string): Promise<void> {
    if (this.status === 'stopped') return this.gone
    this.stopping = true
    this.status = 'stopped'
    const p = this.proc
    if (p && p.exitCode === null && p.signalCode === null) {
      signalChild(p, 'SIGCONT') // a paused runner must run to hear SIGTERM
      signalChild(p, 'SIGTERM')
      const timer = setTimeout(() => signalChild(p, 'SIGKILL'), this.spec.stopGraceS * 1000)
      // SVC_DATA_URL stays up (answering 410) until the runner is gone: one in the middle of a
      // long poll or a send during its grace period hears "stopping", not a refused connection.
      this.gone = p.exited.then(() => {
        clearTimeout(timer)
        this.closeServer()
      })
      this.close(true)
    } else this.close()
    this.deps.log.info('stage stopped', { job_id: this.jobId, reason, step: this.step })
    return this.gone
  }

  /** Ends the stage's work; `keepServer`: SVC_DATA_URL stays up for a runner still exiting. */
  private close(keepServer = false): void {
    this.stopper.abort()
    this.checkpointWait?.()
    this.checkpointWait = null
    this.unpaused?.() // a start waiting for a resume ends
    this.link.close()
    if (!keepServer) this.closeServer()
  }

  private closeServer(): void {
    this.server?.stop(true)
    this.server = null
  }

  /** One line of the runner's stdout: progress or checkpoint JSON, or a log line. */
  private stdout(line: string): void {
    const { log } = this.deps
    let j: Record<string, unknown> | null = null
    if (line.startsWith('{')) {
      try {
        const v = JSON.parse(line) as unknown
        if (typeof v === 'object' && v !== null && !Array.isArray(v)) j = v as Record<string, unknown>
      } catch {
        // a log line that starts with a brace
      }
    }
    if (j && typeof j.checkpoint === 'string') {
      if (this.status === 'checkpointing') this.status = 'running'
      this.checkpointWait?.()
      this.checkpointWait = null
      // It handled the signal: a later exit with 138 is its own, not the signal's.
      this.checkpointAsked = false
      const step = typeof j.step === 'number' && Number.isSafeInteger(j.step) && j.step >= 0 ? j.step : this.step
      // Only what really lies in its own checkpoint directory leaves the machine: the path is
      // resolved through its links (a link in the directory to /home/someone/.ssh points outside).
      const dir = this.checkpointPath(j.checkpoint)
      // Within the output's limit, and reported like progress: a runner printing checkpoint lines
      // in a loop logged and reported each one (300 000 log lines and queued POSTs).
      if (this.output.allow()) {
        if (dir === null) log.warn('checkpoint path outside SVC_CHECKPOINT_DIR; archiving SVC_CHECKPOINT_DIR instead', { job_id: this.jobId, runner: this.spec.name, path: j.checkpoint })
        log.info('checkpoint written', { job_id: this.jobId, runner: this.spec.name, step, path: j.checkpoint })
      }
      this.checkpointStep = step
      this.checkpointReports.request()
      this.upload(step, dir ?? this.checkpointDir)
      return
    }
    // A step past 2^53 is not a step the leader takes (it would refuse every later report).
    if (j && typeof j.step === 'number' && Number.isSafeInteger(j.step) && j.step >= 0) {
      this.step = j.step
      if (typeof j.loss === 'number' && Number.isFinite(j.loss)) this.loss = j.loss
      const throughput = typeof j.throughput === 'number' && Number.isFinite(j.throughput) && j.throughput >= 0 ? j.throughput : null
      this.progress(throughput)
      return
    }
    if (this.output.allow()) log.info('runner output', { job_id: this.jobId, runner: this.spec.name, stream: 'stdout', line: this.scrub(line) })
  }

  /** The real path of a checkpoint the runner named, when it lies in SVC_CHECKPOINT_DIR; else null. */
  private checkpointPath(named: string): string | null {
    try {
      const root = realpathSync(this.checkpointDir)
      const dir = realpathSync(resolve(this.checkpointDir, named))
      return isInside(root, dir) ? dir : null
    } catch {
      // Not there (or not readable): said when the upload fails, if it lies inside at all.
      const dir = resolve(this.checkpointDir, named)
      return isInside(this.checkpointDir, dir) ? dir : null
    }
  }

  /** A progress report, at most every REPORT_EVERY_MS (the latest figures win). */
  private progress(throughput: number | null): void {
    if (this.status === 'paused') return
    this.throughput = throughput
    this.progressReports.request()
  }

  private sendProgress(): void {
    if (this.status === 'paused') return
    // Rates and the report interval on the monotonic clock: a step back of the wall clock held
    // every report back for the step's length.
    const now = monotonicNow(this.deps.clock)
    const rate = this.throughput ?? Math.max(0, ((this.step - this.lastProgress.step) * 1000) / Math.max(1, now - this.lastProgress.at))
    this.lastProgress = { at: now, step: this.step }
    this.report({ status: 'running', step: this.step, loss: this.loss, throughput: rate })
  }

  /** Into the leader's store, one upload at a time; the newest waiting checkpoint wins. */
  private upload(step: number, dir: string): void {
    // Wall time, as file times are: what the runner wrote before it said so is in this checkpoint.
    this.nextUpload = { step, dir, at: Date.now() }
    if (this.uploading) return
    this.uploading = (async () => {
      while (this.nextUpload) {
        const next = this.nextUpload
        this.nextUpload = null
        // Not the stage's stop signal: a checkpoint taken just before a STOP still gets stored.
        const art = await uploadCheckpoint({ ...this.deps, signal: new AbortController().signal }, { jobId: this.jobId, stage: this.stage.stage, step: next.step, dir: next.dir, workDir: this.workDir, within: this.checkpointDir })
        if (art) this.deps.log.info('checkpoint stored on the leader', { job_id: this.jobId, stage: this.stage.stage, step: next.step, artifact_id: art.id, bytes: art.size_bytes })
        this.storedAt = art ? next.at : null
      }
    })().finally(() => (this.uploading = null))
  }

  /**
   * Once the runner is gone, its output read and its uploads done: when it said it wrote the
   * newest checkpoint the leader stored (files in SVC_CHECKPOINT_DIR not changed since are in
   * it), -Infinity when it stored none, null when its newest could not be stored.
   */
  async uploadsDone(): Promise<number | null> {
    await this.gone
    await this.outputRead
    while (this.uploading) await this.uploading
    return this.storedAt
  }

  private exited(code: number | null, signal: string | null): void {
    // Its last figures before what its exit says.
    this.progressReports.flush()
    this.checkpointReports.flush()
    this.output.flush()
    if (this.stopping) {
      this.deps.log.info('runner stopped', { job_id: this.jobId, runner: this.spec.name, code, signal })
      return
    }
    this.close()
    if (code === 0) {
      this.status = 'stopped'
      const last = this.stage.stage === this.stage.stages - 1
      this.deps.log.info(last ? 'runner completed the job' : 'runner finished its stage', { job_id: this.jobId, runner: this.spec.name, step: this.step })
      // The last stage's exit completes the job; an earlier stage has only finished its part.
      if (last) this.report({ status: 'completed', step: this.step, loss: this.loss })
      return
    }
    const tail = this.stderrTail.slice(-5).join(' | ')
    // SIGUSR1 (CHECKPOINT) ends a process that does not handle it: said as such, not as a bare code.
    const usr1 = 'the CHECKPOINT signal: the runner does not handle it; docs/workloads.md, Signals'
    const how =
      signal !== null
        ? `was killed by signal ${signal}${signal === 'SIGUSR1' ? ` (${usr1})` : ''}`
        : `exited with code ${code}${code === 138 && this.checkpointAsked ? ` (128 + SIGUSR1: ${usr1})` : ''}`
    this.fail(`runner ${this.spec.name} (stage ${this.stage.stage}) ${how}${tail ? `: ${tail}` : ''}`)
  }

  private fail(reason: string): void {
    if (this.status === 'stopped') return
    this.status = 'error'
    this.close()
    this.deps.log.error('stage failed', { job_id: this.jobId, reason })
    this.report({ status: 'failed', step: this.step, reason: reason.slice(0, 1000) })
  }

  private report(r: Parameters<StatusReporter['report']>[0]): void {
    this.reporter.report(r)
  }

  /**
   * SVC_DATA_URL: POST {url}/activations or /gradients sends frames to the neighbour (202 once
   * handed on; 503 when it cannot be reached: send again; 409 when the stage has no neighbour
   * that way: the last stage's activations, the first stage's gradients), GET the same waits up to `wait_ms` for
   * frames from the neighbour (200 with frames, 204 without). Once the stage is stopping (STOP:
   * SIGTERM sent, until the runner exits) every call, a waiting GET too, answers 410: stop.
   */
  private async data(req: Request): Promise<Response> {
    const url = new URL(req.url)
    const [secret, name, ...rest] = url.pathname.slice(1).split('/')
    const channel = name !== undefined && Object.hasOwn(CHANNELS, name) ? CHANNELS[name]! : null
    if (secret !== this.secret || channel === null || rest.length > 0) return new Response('not found\n', { status: 404 })
    if (this.stopping) return stoppingAnswer()
    if (req.method === 'POST') {
      // The last stage has no next stage, the first no previous one: a send there can never be
      // handed on, so it is refused for good rather than answered "send again" forever.
      const last = this.stage.stage === this.stage.stages - 1
      if ((channel === 'activations' && last) || (channel === 'gradients' && this.stage.stage === 0)) {
        const text =
          channel === 'activations'
            ? `stage ${this.stage.stage} is the last of the job's ${this.stage.stages} stage${this.stage.stages === 1 ? '' : 's'}: it has no next stage to send activations to`
            : 'stage 0 is the first stage: it has no previous stage to send gradients to'
        return new Response(`${text}\n`, { status: 409 })
      }
      let frames: Frame[]
      try {
        frames = decodeFrames(new Uint8Array(await req.arrayBuffer()), { maxFrameBytes: MAX_FRAME_BYTES })
      } catch (e) {
        // A frame over 64 MiB is no more carried the next time: 413 like the relay's limit, not "bad".
        const tooLarge = e instanceof AppError && e.code === 'payload_too_large'
        if (tooLarge) return new Response(`${(e as Error).message}: do not send it again; send smaller frames\n`, { status: 413 })
        return new Response(`bad frames: ${(e as Error).message}\n`, { status: 400 })
      }
      for (const f of frames) {
        // The agent's own fields: a runner cannot send frames as another job or stage.
        const frame = { meta: { ...f.meta, job_id: this.jobId, from: this.stage.stage }, data: f.data }
        const sent = await this.link.sendFrame(channel, frame)
        if (sent === 'sent') continue
        if (this.stopping) return stoppingAnswer()
        // Past the relay's frame limit no resend can help: 413 tells the runner not to try.
        if (sent === 'too_large') {
          const n = frames.indexOf(f)
          return new Response(`frame ${n + 1} of ${frames.length} is larger than the relay carries (SVC_RELAY_MAX_FRAME_BYTES): do not send it again; the ${n} before it were handed on\n`, { status: 413 })
        }
        return new Response('the neighbour cannot be reached now; send again\n', { status: 503, headers: { 'retry-after': '1' } })
      }
      return Response.json({ sent: frames.length }, { status: 202 })
    }
    if (req.method === 'GET') {
      const wait = Math.min(MAX_WAIT_MS, Math.max(0, Number(url.searchParams.get('wait_ms') ?? 0) || 0))
      const max = Math.min(1024, Math.max(1, Number(url.searchParams.get('max') ?? 64) || 64))
      const signal = AbortSignal.any([req.signal, this.stopper.signal])
      const out: Frame[] = []
      const first = await this.link.inbox.take([channel], signal, wait)
      if (first) out.push(first.frame)
      while (out.length < max) {
        const more = await this.link.inbox.take([channel], signal, 0)
        if (!more) break
        out.push(more.frame)
      }
      if (out.length === 0) return this.stopping ? stoppingAnswer() : new Response(null, { status: 204 })
      return new Response(encodeFrames(out), { headers: { 'content-type': 'application/octet-stream', 'x-frame-count': String(out.length) } })
    }
    return new Response('method not allowed\n', { status: 405, headers: { allow: 'GET, POST' } })
  }
}

/** What SVC_DATA_URL answers a stopping stage's runner (docs/workloads.md): stop, do not call again. */
const stoppingAnswer = () => new Response('the stage is stopping: end the runner (do not send or wait again)\n', { status: 410 })
