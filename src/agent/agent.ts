// The fellow agent: registers with the leader (re-using its saved identity), keeps the signal
// socket open, heartbeats with live telemetry, runs what the signals say, serves inference and
// ships its logs. Every loop here survives a leader restart: failures are retried with
// backoff, and only a refusal that retrying cannot fix (a wrong join token, a full pool,
// eviction by a newer agent) ends the process.
import { redactUrl } from './redact'
import { readTelemetry } from './telemetry'
import { Backoff } from './backoff'
import { LeaderClient, LeaderError, NetworkError, isAuthRefusal, isRetryable, type RegisterResult } from './client'
import { featuresOff, fieldName, leaveOut, namesUnknownField, unknownFields } from './compat'
import { SignalChannel } from './signals'
import { P2PListeners } from './p2p'
import { Work } from './work'
import { leaderVersion, waitForLeader } from './health'
import { InferenceServer } from './inference'
import { loadEngines, type EngineSpec, type RunnerSpec } from './fellow-config'
import { ensureStateDir, loadState, saveState, type FellowState } from './state'
import { reapLeftoverRunners } from './leftovers'
import { VERSION } from '../version'
import { monotonicNow, sleep, systemClock, type TimerClock } from '../time'
import type { LogBuffer } from './logship'
import type { Logger } from '../log'
import type { HeartbeatInput } from '../wire/fellow'

export interface AgentOptions {
  leaderUrl: string
  joinToken: string | null
  stateDir: string
  hostname: string
  /** host:port base neighbours use; listeners bind listenHost on port and port+1. */
  advertiseHost: string
  listenHost: string
  p2pPortBase: number
  once: boolean
  log: Logger
  logs: LogBuffer
  /** Every timer of the agent runs on it (tests pass a fake one); the system clock by default. */
  clock?: TimerClock
  /** The engines its operator declared (src/agent/fellow-config.ts); default: the built-in tiny-llm. */
  engines?: EngineSpec[]
  /** The runners its operator declared; the built-in mlp is always offered. */
  runners?: RunnerSpec[]
}

const LOG_SHIP_MS = 2000
/** Heartbeat fields an older leader refused are offered again this long after (it may have been upgraded). */
export const LEFT_OUT_RETRY_MS = 10 * 60_000

export class Agent {
  private readonly client: LeaderClient
  private state: FellowState | null = null
  private signals: SignalChannel | null = null
  private readonly listeners: P2PListeners
  private readonly work: Work
  private readonly counters = { sent: 0, received: 0 }
  private readonly stopper = new AbortController()
  private exitCode = 0
  /** Set by shutdown(): tell the leader on the way out. */
  private farewell = false
  private heartbeatMs = 10_000
  private signalsUrl = ''
  private reregistering: Promise<boolean> | null = null
  /** The heartbeat on the wire: a refused socket asks for one and shares it. */
  private beating: Promise<boolean> | null = null
  /** The signal socket URL last said to be refused with a working token (said once). */
  private refusedSocketUrl = ''
  /**
   * Fields an older leader refused as unknown, left out of what goes to it: heartbeat fields until
   * it is registered with again, answered nothing or not as itself (a restart, a proxy's page), or
   * LEFT_OUT_RETRY_MS passed (an upgrade in place keeps the node token and may fall between two
   * heartbeats: the fields came back only with a restart of the agent); registration fields for
   * one registration.
   */
  private readonly leftOut = { heartbeats: new Set<string>(), registration: new Set<string>() }
  /** When (monotonic) heartbeat fields were last left out; they are tried again LEFT_OUT_RETRY_MS later. */
  private leftOutAt = 0
  /** What was said about fields left out, so each is said once. */
  private readonly saidLeftOut = new Set<string>()
  private heartbeatFailures = 0
  private readonly clock: TimerClock
  private readonly inference: InferenceServer
  /** Aborted to end the heartbeat loop's wait early (an engine's health changed). */
  private wake = new AbortController()

  constructor(private readonly o: AgentOptions) {
    const clock = (this.clock = o.clock ?? systemClock)
    this.client = new LeaderClient(o.leaderUrl, () => this.state?.node_token ?? null)
    this.listeners = new P2PListeners({
      host: o.listenHost,
      basePort: o.p2pPortBase,
      onFrame: (channel, frame) => this.work.deliver(channel, frame),
      authorize: (jobId) => this.work.p2pAuth(jobId),
      log: o.log,
      clock,
    })
    this.work = new Work({
      client: this.client, log: o.log, stateDir: o.stateDir, counters: this.counters, clock, onReleased: (r) => this.onReleased(r),
      runners: o.runners ?? [], leaderUrl: o.leaderUrl, nodeToken: () => this.state?.node_token ?? null,
    })
    this.inference = new InferenceServer(
      {
        client: this.client, log: o.log, fellowId: () => this.state!.fellow_id, signal: this.stopper.signal, clock, stateDir: o.stateDir,
        socketUrl: () => (this.state ? this.client.inferSocketUrl(this.state.fellow_id) : null),
      },
      o.engines ?? loadEngines({}),
      () => this.wake.abort(),
    )
  }

  get address(): string {
    const h = this.o.advertiseHost
    return `${h.includes(':') ? `[${h}]` : h}:${this.o.p2pPortBase}`
  }

  /** Ends run() with `code` (0: a clean stop). Safe to call more than once. */
  stop(reason: string, code = 0): void {
    if (this.stopper.signal.aborted) return
    this.o.log.info('agent stopping', { reason })
    this.exitCode = code
    this.stopper.abort()
  }

  /**
   * The machine's operator stops the agent (SIGTERM, SIGINT): say goodbye, so the leader shows
   * this fellow offline at once and re-places its stages. Not on eviction (another agent owns the
   * fellow_id now) or release (the token is gone).
   */
  shutdown(reason: string): void {
    if (this.stopper.signal.aborted) return
    this.farewell = true
    this.stop(reason)
  }

  async run(): Promise<number> {
    const { log } = this.o
    const signal = this.stopper.signal
    ensureStateDir(this.o.stateDir)
    this.state = loadState(this.o.stateDir)
    if (this.o.once) return this.checkOnce()
    // Runners of an agent instance that died (a paused one does not die with it) stop now; the
    // runners this agent starts wait for that.
    void reapLeftoverRunners(this.o.stateDir, log)
    try {
      await this.listeners.start()
    } catch (e) {
      const hint = 'the listeners bind the advertised address, so it must be one of this machine\'s; behind NAT or port forwarding set --p2p-listen-host to the local address'
      log.error('cannot listen for p2p frames', { host: this.o.listenHost, ports: [this.o.p2pPortBase, this.o.p2pPortBase + 1], error: (e as Error).message, hint })
      return 1
    }
    log.info('agent starting', { version: VERSION, leader: redactUrl(this.o.leaderUrl), state_dir: this.o.stateDir, p2p: this.address, p2p_listen: this.o.listenHost, saved_identity: this.state?.fellow_id ?? null })
    const up = await waitForLeader(this.o.leaderUrl, signal, (r, ms) => {
      log.warn('leader not reachable yet', { reason: r.reason, retry_ms: ms })
      // --once is a connectivity check: an unreachable leader is its answer, not a reason to wait.
      if (this.o.once) this.stop('--once: leader unreachable', 1)
    }, this.clock)
    if (up && (await this.register())) {
      {
        this.signals = new SignalChannel({
          url: () => this.client.rebase(this.signalsUrl, true),
          token: () => this.state?.node_token ?? null,
          onSignal: (s) => this.work.handle(s, 'socket'),
          onRefused: (status) => void this.onRefused(status),
          onEvicted: (reason) => {
            log.warn('evicted: another agent with this fellow_id connected; not reconnecting', { reason })
            this.stop('evicted')
          },
          log,
          clock: this.clock,
        })
        this.signals.start()
        void this.heartbeatLoop()
        void this.shipLoop()
        this.inference.start()
        if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
      }
    }
    this.stopper.abort()
    this.signals?.close()
    // The runner gets its stop grace here, then SIGKILL with its process group: the agent exits
    // after it, not before (a runner deaf to SIGTERM, or its children, outlived the agent).
    const runnersGone = this.work.stopAll('agent stopping')
    // The models are withdrawn first: the engines get their stop grace (up to stop_grace_s) to
    // finish what they hold, and the leader went on routing new requests here all through it,
    // which then ended as 504s while another fellow stood idle.
    await Promise.all([this.withdrawModels(), this.listeners.stop(), this.inference.stop(), runnersGone])
    if (this.state) await Promise.race([this.o.logs.flush((lines) => this.client.shipLogs(this.state!.fellow_id, lines), this.onLogLineDropped), sleep(this.clock, 2000)])
    if (this.state && this.farewell) await this.sayGoodbye()
    return this.exitCode
  }

  /**
   * `--once`, a connectivity check. It may run beside an agent on the same state directory, so it
   * takes nothing from it: no p2p ports, no leftover runners reaped, no goodbye, and a saved
   * identity is only used (one heartbeat with the saved node token), never rotated or written: a
   * re-registration would revoke the running agent's token. Only a state directory without an
   * identity for this leader registers (and saves it), as the first start of an agent would.
   */
  private async checkOnce(): Promise<number> {
    const { log } = this.o
    const saved = this.state?.leader_url === this.o.leaderUrl ? this.state : null
    log.info('connectivity check (--once)', { version: VERSION, leader: redactUrl(this.o.leaderUrl), state_dir: this.o.stateDir, saved_identity: saved?.fellow_id ?? null })
    const up = await waitForLeader(this.o.leaderUrl, this.stopper.signal, (r) => {
      log.warn('leader not reachable yet', { reason: r.reason })
      // An unreachable leader is the check's answer, not a reason to wait.
      this.stop('--once: leader unreachable', 1)
    }, this.clock)
    if (!up) return this.exitCode || 1
    if (!saved) {
      this.state = null
      if (!(await this.register())) return this.exitCode || 1
    }
    const how = saved ? 'the saved node token' : 'the new node token'
    try {
      // With a saved identity an agent may run beside it: the heartbeat is a check (`check: true`),
      // which the leader answers without recording a status or handing over the signals waiting
      // for that agent. A leader from before the flag refuses it (422): a plain heartbeat then,
      // with what it does not know (the job, the runners) left out.
      const plain = { status: 'idle' as const, hardware: await readTelemetry(), ...(saved ? {} : { job_id: null, runners: this.work.runnerNames() }) }
      const send = (body: HeartbeatInput) => this.sendTaken('heartbeats', body, (b) => this.client.heartbeat(b))
      let res
      try {
        res = await send(saved ? { ...plain, check: true } : plain)
      } catch (e) {
        if (!(saved && e instanceof LeaderError && e.status === 422)) throw e
        res = await send(plain)
      }
      // Nothing runs here: signals for this fellow belong to the agent that runs its work.
      const pending = (res.pending_signals ?? []).map((p) => p.signal)
      if (pending.length > 0) log.warn('signals for this fellow came with the check\'s heartbeat and were not acted on', { signals: pending })
      log.info('--once: the leader took a heartbeat', { fellow_id: this.state!.fellow_id, with: how })
    } catch (e) {
      const gone = e instanceof LeaderError && (e.status === 401 || e.status === 403 || e.status === 404)
      const hint = gone
        ? 'the saved node token no longer works (revoked, or the fellow released or removed): start the agent without --once, with a join token (`svc pools join-command POOL`), to register again'
        : 'the leader did not take the heartbeat'
      log.error('--once: heartbeat refused', { fellow_id: this.state!.fellow_id, with: how, error: (e as Error).message, hint })
      this.exitCode = 1
    }
    if (!saved) await Promise.race([this.o.logs.flush((lines) => this.client.shipLogs(this.state!.fellow_id, lines), this.onLogLineDropped), sleep(this.clock, 2000)])
    return this.exitCode
  }

  /** Best effort, at most 2 s: a leader that does not answer marks the fellow offline by its clock. */
  private async sayGoodbye(): Promise<void> {
    const said = this.client.goodbye().then(
      () => this.o.log.info('said goodbye to the leader'),
      (e: unknown) => this.o.log.warn('could not say goodbye; the leader will mark this fellow offline when its heartbeats stop', { error: (e as Error).message }),
    )
    await Promise.race([said, sleep(this.clock, 2000)])
  }

  /** Registers until it works or is refused for good; false when the agent must stop. */
  private async register(): Promise<boolean> {
    const backoff = new Backoff({ baseMs: 1000, maxMs: 60_000 })
    this.leftOut.registration.clear()
    while (!this.stopper.signal.aborted) {
      try {
        await this.registerOnce()
        return true
      } catch (e) {
        if (!isRetryable(e) || this.o.once) {
          const full = e instanceof LeaderError && e.code === 'pool_node_limit'
          // A 422 is what this agent said (its --hostname, say), not its token; a field the leader
          // does not know means a leader older than this agent.
          const refusedInput = e instanceof LeaderError && e.status === 422
          // 421: the leader does not answer to the name in --leader (its DNS rebinding defence).
          const misdirected = e instanceof LeaderError && e.status === 421
          const hint = full
            ? 'the pool is full: an admin can raise its node limit, or its owner can remove a fellow'
            : isRetryable(e)
              ? 'the leader did not answer'
              : misdirected
                ? "the leader does not answer to the host name in --leader: use the address of its join command (SVC_BASE_URL), or its operator adds the name to SVC_ALLOWED_HOSTS"
                : namesUnknownField(e)
                  ? 'the leader does not take a field this agent sends (see the error): it is likely older than this agent; upgrade the leader, or run the agent of its release'
                  : refusedInput
                  ? 'the leader refused what this agent sent (see the error): fix that setting'
                  : 'check the join token (it may be expired or revoked): `svc pools join-command POOL` prints a new one'
          this.o.log.error('registration refused', { error: (e as Error).message, hint })
          this.stop('registration refused', 1)
          return false
        }
        const ms = backoff.next()
        this.o.log.warn('registration failed; retrying', { error: (e as Error).message, retry_ms: ms })
        await sleep(this.clock, ms, this.stopper.signal)
      }
    }
    return false
  }

  /**
   * The saved node token first (re-uses fellow_id and token), then the join token keeping the
   * fellow_id (the token was revoked), then the join token as a new fellow (the old identity is
   * gone or belongs to another pool). A saved token is only ever shown to the leader that issued it.
   */
  private async registerOnce(): Promise<void> {
    const { log, joinToken } = this.o
    const hw = await readTelemetry()
    const body = { hostname: this.o.hostname, gpus: hw.gpus, address: this.address, agent_version: VERSION }
    const saved = this.state?.leader_url === this.o.leaderUrl ? this.state : null
    const attempts: { bearer: string | null; fellowId?: string; how: string }[] = []
    if (saved) attempts.push({ bearer: saved.node_token, fellowId: saved.fellow_id, how: 'node token' })
    if (saved && joinToken) attempts.push({ bearer: joinToken, fellowId: saved.fellow_id, how: 'join token, same fellow_id' })
    if (!saved || joinToken) attempts.push({ bearer: joinToken, how: joinToken ? 'join token' : 'no token (default pool)' })
    let last: unknown = null
    for (const a of attempts) {
      try {
        const r = await this.sendTaken('registration', { ...body, ...(a.fellowId ? { fellow_id: a.fellowId } : {}) }, (b) => this.client.register(a.bearer, b))
        // The leader makes a new fellow when the old one is gone (removed): say so, not "same fellow_id".
        const how = a.fellowId && r.fellow_id !== a.fellowId ? `${a.how.replace(/, same fellow_id$/, '')}, as a new fellow (the leader no longer knew ${a.fellowId})` : a.how
        return this.registered(r, how, saved?.fellow_id ?? null)
      } catch (e) {
        // 401/403: this credential cannot do it; the next one may. Anything else decides now.
        if (!(e instanceof LeaderError) || (e.status !== 401 && e.status !== 403)) throw e
        log.warn('registration refused with this credential', { how: a.how, error: e.message })
        last = e
      }
    }
    throw last ?? new Error('no credential to register with')
  }

  private registered(r: RegisterResult, how: string, previous: string | null): void {
    this.state = { fellow_id: r.fellow_id, node_token: r.node_token, leader_url: this.o.leaderUrl, pool_id: r.pool_id }
    saveState(this.o.stateDir, this.state)
    this.heartbeatMs = Math.max(1, r.heartbeat_interval_s) * 1000
    this.signalsUrl = r.signals_url
    this.leftOut.heartbeats.clear()
    this.o.log.info('registered', { fellow_id: r.fellow_id, pool_id: r.pool_id, how, reused_identity: previous === r.fellow_id, heartbeat_interval_s: r.heartbeat_interval_s })
  }

  /** Re-registration after the token was refused; concurrent triggers share one attempt. */
  private reregister(why: string): Promise<boolean> {
    this.reregistering ??= (async () => {
      this.o.log.warn('node token refused; re-registering', { why })
      const ok = await this.register()
      if (ok) this.signals?.reconnectNow()
      return ok
    })().finally(() => (this.reregistering = null))
    return this.reregistering
  }

  /**
   * The signal socket's handshake was refused. A revoked token is one cause, but a wrong path or a
   * proxy answers 403 too, and re-registering for those rotated the node token every 10 s for good.
   * The heartbeat tells them apart: one goes now and re-registers if it is refused 401. Taken, the
   * token works and the socket's URL is what is refused: said once, the socket keeps its back-off.
   */
  private async onRefused(status: number | null): Promise<void> {
    // A heartbeat already on the wire may have been taken before the token was revoked: wait it
    // out and ask with one sent after the refusal.
    await this.beating
    if (this.reregistering || !(await this.heartbeat())) return
    const url = this.client.rebase(this.signalsUrl, true)
    if (url === this.refusedSocketUrl) return
    this.refusedSocketUrl = url
    this.o.log.warn('signal socket refused although the node token works', {
      url: redactUrl(url),
      status,
      hint: "check that --leader has the path of the leader's SVC_BASE_URL, if any, and that a proxy in front passes WebSocket upgrades for /ws/signals/*; signals come with the heartbeats' answers meanwhile",
    })
  }

  private onReleased(reason: string): void {
    this.o.log.warn('the leader released or removed this fellow; stopping (its node token no longer works: to bring it back, start the agent with a join token of a pool, `svc pools join-command POOL`)', { reason })
    this.stop(`released: ${reason}`)
  }

  /** One heartbeat serving nothing, best effort and at most 2 s: no new requests come here. */
  private async withdrawModels(): Promise<void> {
    if (!this.state || this.inference.servables().length === 0) return
    const said = this.client
      .heartbeat(leaveOut({ ...this.work.snapshot(), servables: [], engines: this.inference.engineStates() }, this.leftOut.heartbeats))
      .then(() => this.o.log.info('models withdrawn from the leader before the engines stop'))
      .catch(() => {})
    await Promise.race([said, sleep(this.clock, 2000)])
  }

  /** One heartbeat (the one on the wire, if any); true when the leader took it. */
  private heartbeat(): Promise<boolean> {
    this.beating ??= this.beatOnce().finally(() => (this.beating = null))
    return this.beating
  }

  private async beatOnce(): Promise<boolean> {
    const { log } = this.o
    try {
      const hardware = await readTelemetry()
      const res = await this.sendTaken('heartbeats', {
        ...this.work.snapshot(),
        bytes_sent: this.counters.sent,
        bytes_received: this.counters.received,
        hardware,
        servables: this.inference.servables(),
        capacity: this.inference.capacity(),
        runners: this.work.runnerNames(),
        engines: this.inference.engineStates(),
      }, (b) => this.client.heartbeat(b))
      if (this.heartbeatFailures > 0) log.info('heartbeat recovered', { after_failures: this.heartbeatFailures })
      this.signals?.leaderIsBack()
      this.heartbeatFailures = 0
      this.heartbeatMs = Math.max(1, res.next_heartbeat_s) * 1000
      for (const s of res.pending_signals ?? []) this.work.handle(s, 'heartbeat')
      return true
    } catch (e) {
      if (isAuthRefusal(e)) {
        await this.reregister('heartbeat answered 401')
        return false
      }
      // Out of reach, or a proxy answering for it (5xx, not its problem+json): it may come back
      // upgraded, and take what it refused.
      if (e instanceof NetworkError || (e instanceof LeaderError && (e.status >= 500 || e.code === ''))) this.leftOut.heartbeats.clear()
      this.heartbeatFailures++
      if (this.heartbeatFailures === 1 || this.heartbeatFailures % 10 === 0) log.warn('heartbeat failed', { error: (e as Error).message, failures: this.heartbeatFailures })
      return false
    }
  }

  /**
   * Sends `body` without what this leader does not take. A 422 naming optional fields as unknown
   * (a leader older than this agent) leaves them out and sends again at once; once that is taken,
   * the agent says which features are off.
   */
  private async sendTaken<B, T>(what: 'heartbeats' | 'registration', body: B, send: (b: B) => Promise<T>): Promise<T> {
    const leftOut = this.leftOut[what]
    if (what === 'heartbeats' && leftOut.size > 0 && monotonicNow(this.clock) - this.leftOutAt >= LEFT_OUT_RETRY_MS) leftOut.clear()
    const before = leftOut.size
    for (;;) {
      try {
        const res = await send(leaveOut(body, leftOut))
        if (leftOut.size > before) {
          if (what === 'heartbeats') this.leftOutAt = monotonicNow(this.clock)
          void this.sayLeftOut(what, new Set(leftOut))
        }
        return res
      } catch (e) {
        // Each round leaves out at least one more field of a short list: this ends.
        const fields = unknownFields(e).filter((f) => !leftOut.has(f))
        if (fields.length === 0) throw e
        for (const f of fields) leftOut.add(f)
      }
    }
  }

  private async sayLeftOut(what: string, fields: Set<string>): Promise<void> {
    const key = `${what}:${[...fields].sort().join(',')}`
    if (this.saidLeftOut.has(key)) return
    this.saidLeftOut.add(key)
    const names = [...fields].map(fieldName)
    this.o.log.warn(`the leader is older than this agent: it does not take ${names.join(', ')} in ${what}, so they are left out; upgrade the leader`, {
      leader_version: await leaderVersion(this.o.leaderUrl),
      agent_version: VERSION,
      left_out: names,
      features_off: featuresOff(fields),
    })
  }

  private async heartbeatLoop(): Promise<void> {
    const signal = this.stopper.signal
    while (!signal.aborted) {
      // On the monotonic clock: a step back of the wall clock during a heartbeat made the wait
      // that long (an hour's step, an hour offline).
      const started = monotonicNow(this.clock)
      if (this.wake.signal.aborted) this.wake = new AbortController()
      await this.heartbeat()
      // An engine that turned healthy or unhealthy is said at once, not at the next interval.
      await sleep(this.clock, Math.max(0, this.heartbeatMs - (monotonicNow(this.clock) - started)), AbortSignal.any([signal, this.wake.signal]))
    }
  }

  private async shipLoop(): Promise<void> {
    while (await sleep(this.clock, LOG_SHIP_MS, this.stopper.signal)) {
      const id = this.state?.fellow_id
      if (id) await this.o.logs.flush((lines) => this.client.shipLogs(id, lines), this.onLogLineDropped)
    }
  }

  /** A line the leader refuses as too large even alone (a proxy's or its own small body limit). */
  private readonly onLogLineDropped = ({ chars, error }: { chars: number; error: string }) =>
    this.o.log.warn('log line dropped: the leader refused it as too large even alone', { chars, error, hint: "raise the leader's SVC_MAX_BODY_BYTES (or a proxy's body limit)" })
}
