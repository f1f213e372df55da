// The live view of every fellow, in memory. Heartbeats update it without touching the database;
// a flush writes the changed rows in one transaction every few hundred milliseconds, and liveness
// (online / stale / offline) is computed from the last heartbeat time instead of being written.
//
// Every reader of telemetry reads this memory; the state file's copy is only for a restart. So a
// fellow's row is written on its first heartbeat after registration, when its status changes, and
// otherwise at most every PERSIST_EVERY_INTERVALS heartbeat intervals (30 s at the default 10 s;
// after a restart the first writes are spread over one period); a clean stop writes whatever is
// newer. In a steady fleet about one heartbeat in three writes, whatever the interval and size.
// A row write costs 10-12 µs once the fleet outgrows SQLite's page cache (each lands on its own
// page, so each is a 4 KiB WAL write): writing every heartbeat made a heartbeat of a 100,000-fellow
// fleet cost more than one of a small fleet (docs/benchmarks.md). A crash loses at most that much
// telemetry, and a fellow's saved last_seen_at is at most 3 intervals old (plus the time the leader
// was down), so a quick restart sees it stale, never offline; its next heartbeat brings it back.
import { eq } from 'drizzle-orm'
import { fellows, poolNodes } from '../db/schema'
import type { Ctx } from '../context'
import { monotonicNow } from '../time'
import type { EngineState, Hardware, HeartbeatInput, NodeState } from './model'
import { TelemetryHistory } from './telemetry'

/** What a fellow reports while it has a stage: none of these once the job is over. */
export const BUSY_STATUSES = new Set(['running', 'paused', 'checkpointing'])

export interface LiveFellow {
  id: string
  hostname: string
  poolId: string | null
  ownerUserId: string | null
  released: boolean
  registeredAt: number
  lastSeenAt: number | null
  status: string | null
  jobId: string | null
  step: number | null
  loss: number | null
  bytesSent: number
  bytesReceived: number
  hardware: Hardware | null
  address: string | null
  /** The version its agent said at registration (null: an agent that does not say). */
  agentVersion: string | null
  servables: string[]
  /** Requests each served model takes at once, as the last heartbeat said (absent: 1). */
  capacity: Record<string, number> | null
  /** The runners its operator declared, as its last heartbeat said; null: an agent that says none (offers `mlp`). */
  runners: string[] | null
  /** Its engines and their health, as its last heartbeat said; null: an agent that does not say. */
  engines: EngineState[] | null
  /** Said goodbye (a clean stop): offline until its next heartbeat, whatever its last one's age. */
  signedOff?: boolean
}

export interface PoolEvent {
  ts: number
  fellow_id: string
  kind: 'registered' | 'online' | 'stale' | 'offline' | 'released' | 'removed' | 'status'
  detail: string | null
}

export interface HistoryPoint {
  ts: number
  status: string | null
  step: number | null
  loss: number | null
  gpu_util_pct: number | null
  gpu_free_mb: number | null
  gpu_total_mb: number | null
  gpu_temp_c: number | null
  cpu_pct: number | null
  mem_free_mb: number | null
  mem_total_mb: number | null
}

const HISTORY_EVERY_MS = 30_000 // one point per fellow per 30 s
const HISTORY_POINTS = 240 // two hours at that rate
const EVENTS_PER_POOL = 500
/** Heartbeat intervals without one after which a fellow is offline (stale from 2). */
const OFFLINE_AFTER_INTERVALS = 6
const PERSIST_EVERY_INTERVALS = 3

/** What the state file last got for a fellow. */
interface Persisted {
  at: number
  status: string | null
}

export class FellowRegistry {
  private byId = new Map<string, LiveFellow>()
  /** Fellow ids by pool, so a pool's fellows are found without walking the fleet. */
  private byPool = new Map<string, Set<string>>()
  /** Fellows with telemetry newer than their row (written by a forced flush, on stop). */
  private unsaved = new Set<string>()
  /** Of those, the ones the next flush writes (first heartbeat, status change, or due). */
  private due = new Set<string>()
  private persisted = new Map<string, Persisted>()
  private lastState = new Map<string, NodeState>()
  private history = new Map<string, HistoryPoint[]>()
  private events = new Map<string, PoolEvent[]>()
  /** Fellows silent since before the leader started that held a stage then: id -> the start (monotonic). */
  private awaited = new Map<string, number>()
  /**
   * When each fellow was last seen on the monotonic clock: liveness is reckoned on it, not on the
   * wall clock (`lastSeenAt`, shown and saved), which an NTP step or an operator moves. A step
   * forward marked every fellow offline at once and failed their jobs; a step back kept a dead
   * one online for as long as the step.
   */
  private seenMono = new Map<string, number>()
  /** When (monotonic) the liveness tick last ran: a much later one means the leader stood still. */
  private lastTick: number | null = null
  /** Fellows whose job ended, and when (monotonic), until their next heartbeat: see stoppingJob. */
  private stopping = new Map<string, number>()
  /** Downsampled history in the state file (telemetry.ts), written by flush(). */
  readonly telemetry: TelemetryHistory

  /** Told the online time observed between two heartbeats (contribution accounting). */
  private onUptime: ((f: LiveFellow, now: number, onlineMs: number, gpuCount: number) => void) | null

  constructor(
    private ctx: Ctx,
    hooks: { onUptime?: (f: LiveFellow, now: number, onlineMs: number, gpuCount: number) => void } = {},
  ) {
    this.onUptime = hooks.onUptime ?? null
    this.telemetry = new TelemetryHistory(ctx.sqlite, ctx.clock, ctx.cfg.telemetryRetentionDays)
    const rows = ctx.db
      .select({ f: fellows, poolId: poolNodes.poolId, ownerUserId: poolNodes.ownerUserId })
      .from(fellows)
      .leftJoin(poolNodes, eq(poolNodes.fellowId, fellows.id))
      .all()
    const now = ctx.clock.now()
    const persistEvery = this.persistEveryMs()
    for (const { f, poolId, ownerUserId } of rows) {
      const live: LiveFellow = {
        id: f.id,
        hostname: f.hostname,
        poolId: poolId ?? null,
        ownerUserId: ownerUserId ?? null,
        released: f.state === 'released',
        registeredAt: f.registeredAt,
        lastSeenAt: f.lastSeenAt,
        status: f.status,
        jobId: null,
        step: f.step,
        loss: f.loss,
        bytesSent: f.bytesSent ?? 0,
        bytesReceived: f.bytesReceived ?? 0,
        hardware: f.hardware ? (JSON.parse(f.hardware) as Hardware) : null,
        address: f.address,
        agentVersion: f.agentVersion,
        servables: [],
        capacity: null,
        runners: null,
        engines: null,
      }
      this.byId.set(f.id, live)
      this.move(f.id, null, live.poolId)
      if (f.lastSeenAt !== null) this.seenMono.set(f.id, this.mono() - Math.max(0, now - f.lastSeenAt))
      this.lastState.set(f.id, this.stateOf(live, now))
      // The row is what the last run wrote. Counting it as written at a point spread over the last
      // persist period (by id, so it is reproducible) keeps a restart from writing every row on
      // its fellow's first heartbeat: the writes are spread over the first period instead.
      if (f.lastSeenAt !== null) this.persisted.set(f.id, { at: now - (Number(Bun.hash(f.id) % 1_000_000n) / 1_000_000) * persistEvery, status: f.status })
    }
  }

  get(id: string): LiveFellow | undefined {
    return this.byId.get(id)
  }

  all(): IterableIterator<LiveFellow> {
    return this.byId.values()
  }

  size(): number {
    return this.byId.size
  }

  put(f: LiveFellow, event: PoolEvent['kind'] | null): void {
    const prev = this.byId.get(f.id)
    this.byId.set(f.id, f)
    this.move(f.id, prev?.poolId ?? null, f.poolId)
    if (f.lastSeenAt !== null) this.seenMono.set(f.id, this.mono() - Math.max(0, this.ctx.clock.now() - f.lastSeenAt))
    else this.seenMono.delete(f.id)
    this.lastState.set(f.id, this.stateOf(f, this.ctx.clock.now()))
    if (event) this.event(f, event, null)
  }

  remove(id: string): void {
    const f = this.byId.get(id)
    if (f) {
      this.event(f, 'removed', null)
      this.move(id, f.poolId, null)
    }
    this.byId.delete(id)
    this.unsaved.delete(id)
    this.due.delete(id)
    this.persisted.delete(id)
    this.lastState.delete(id)
    this.seenMono.delete(id)
    this.history.delete(id)
    this.telemetry.forget(id)
  }

  /** `now`: the wall clock's, for a fellow the registry has no monotonic time for (none it saw). */
  stateOf(f: LiveFellow, now: number): NodeState {
    if (f.released) return 'released'
    if (f.lastSeenAt === null || f.signedOff) return 'offline'
    const interval = this.ctx.cfg.heartbeatIntervalS * 1000
    const seen = this.seenMono.get(f.id)
    const age = seen !== undefined ? this.mono() - seen : now - f.lastSeenAt
    if (age <= 2 * interval) return 'online'
    if (age <= OFFLINE_AFTER_INTERVALS * interval) return 'stale'
    return 'offline'
  }

  /**
   * `ids`: the fellows holding a job's stage when the leader starts. Their heartbeats were refused
   * while the leader was down, so an old last-seen says nothing yet: each gets one offline window
   * from now. Those already offline by their last heartbeat before the stop are reported offline
   * by the liveness tick (`tick`) once they stay silent for that window; the others count as seen
   * now. (Their saved last-seen is up to PERSIST_EVERY_INTERVALS old: an outage shorter than the
   * window put live fellows offline a second after the start, and moved or failed their stages.)
   * A fellow that comes back in time takes the usual way back.
   */
  awaitBack(ids: Iterable<string>): void {
    const since = this.mono()
    for (const id of ids) {
      if (!this.byId.has(id)) continue
      if (this.lastState.get(id) === 'offline') this.awaited.set(id, since)
      else if ((this.seenMono.get(id) ?? -Infinity) < since) this.seenMono.set(id, since)
    }
  }

  private mono(): number {
    return monotonicNow(this.ctx.clock)
  }

  /** A clean stop: offline now, and the liveness tick will not report it again. */
  signOff(f: LiveFellow): void {
    f.signedOff = true
    f.servables = []
    f.capacity = null
    if (this.lastState.get(f.id) !== 'offline') {
      this.lastState.set(f.id, 'offline')
      this.event(f, 'offline', 'the fellow stopped')
    }
  }

  /** The hot path: memory only. */
  /** Records a heartbeat; true when it brings the fellow back from offline. */
  heartbeat(f: LiveFellow, hb: HeartbeatInput, now: number): boolean {
    if (hb.status !== f.status && f.status !== null) this.event(f, 'status', `${f.status} -> ${hb.status}`)
    const mono = this.mono()
    const seen = this.seenMono.get(f.id)
    if (f.lastSeenAt !== null && this.onUptime && !f.released) {
      // Online means seen within two intervals; a longer gap counts only its first two intervals.
      const onlineMs = Math.max(0, Math.min(seen !== undefined ? mono - seen : now - f.lastSeenAt, 2 * this.ctx.cfg.heartbeatIntervalS * 1000))
      this.onUptime(f, now, onlineMs, f.hardware?.gpus.length ?? 0)
    }
    f.lastSeenAt = now
    this.seenMono.set(f.id, mono)
    if (this.stopping.size > 0) this.stopping.delete(f.id)
    f.signedOff = false
    f.status = hb.status
    if (hb.job_id !== undefined) f.jobId = hb.job_id
    if (hb.step !== undefined) f.step = hb.step
    if (hb.loss !== undefined) f.loss = hb.loss
    if (hb.bytes_sent !== undefined) f.bytesSent = hb.bytes_sent
    if (hb.bytes_received !== undefined) f.bytesReceived = hb.bytes_received
    if (hb.hardware !== undefined) f.hardware = hb.hardware
    if (hb.servables !== undefined) f.servables = hb.servables
    if (hb.capacity !== undefined || hb.servables !== undefined) f.capacity = hb.capacity ?? null
    if (hb.runners !== undefined) f.runners = hb.runners
    if (hb.engines !== undefined) f.engines = hb.engines
    this.unsaved.add(f.id)
    const saved = this.persisted.get(f.id)
    if (!saved || saved.status !== f.status || now - saved.at >= this.persistEveryMs()) this.due.add(f.id)
    const prev = this.lastState.get(f.id)
    if (prev !== 'online') {
      this.lastState.set(f.id, 'online')
      this.event(f, 'online', null)
    }
    const back = prev === 'offline'
    this.telemetry.sample(f.id, f.hardware, now)
    const points = this.history.get(f.id) ?? []
    const last = points[points.length - 1]
    if (!last || now - last.ts >= HISTORY_EVERY_MS) {
      const gpus = f.hardware?.gpus ?? []
      points.push({
        ts: now,
        status: f.status,
        step: f.step,
        loss: f.loss,
        gpu_util_pct: gpus.length ? gpus.reduce((s, g) => s + g.utilization_pct, 0) / gpus.length : null,
        gpu_free_mb: gpus.length ? gpus.reduce((s, g) => s + g.memory_free_mb, 0) : null,
        gpu_total_mb: gpus.length ? gpus.reduce((s, g) => s + g.memory_total_mb, 0) : null,
        gpu_temp_c: gpus.reduce<number | null>((m, g) => (g.temperature_c !== undefined && (m === null || g.temperature_c > m) ? g.temperature_c : m), null),
        cpu_pct: f.hardware?.cpu_pct ?? null,
        mem_free_mb: f.hardware?.mem_free_mb ?? null,
        mem_total_mb: f.hardware?.mem_total_mb ?? null,
      })
      if (points.length > HISTORY_POINTS) points.shift()
      this.history.set(f.id, points)
    }
    return back
  }

  private persistEveryMs(): number {
    return PERSIST_EVERY_INTERVALS * this.ctx.cfg.heartbeatIntervalS * 1000
  }

  /**
   * Writes the fellows that are due (see the top of this file) in one transaction; `all` writes
   * every fellow with unsaved telemetry (a clean stop). Returns the rows written.
   */
  flush({ all = false }: { all?: boolean } = {}): number {
    const pick = all ? this.unsaved : this.due
    const now = this.ctx.clock.now()
    const buckets = all || this.telemetry.pending(now)
    if (pick.size === 0 && !buckets) return 0
    const ids = [...pick]
    for (const id of ids) {
      this.unsaved.delete(id)
      this.due.delete(id)
      this.persisted.set(id, { at: now, status: this.byId.get(id)?.status ?? null })
    }
    const stmt = this.ctx.sqlite.prepare(
      'UPDATE fellows SET last_seen_at = ?, status = ?, step = ?, loss = ?, bytes_sent = ?, bytes_received = ?, hardware = ? WHERE id = ?',
    )
    this.ctx.sqlite.transaction(() => {
      for (const id of ids) {
        const f = this.byId.get(id)
        if (!f) continue
        stmt.run(f.lastSeenAt, f.status, f.step, f.loss, f.bytesSent, f.bytesReceived, f.hardware ? JSON.stringify(f.hardware) : null, id)
      }
      if (buckets) this.telemetry.write(now, all)
    })()
    return ids.length
  }

  /**
   * Liveness transitions since the last tick (no database write); returns fellows that just went
   * offline. `periodMs`: how often the caller ticks. A tick later than that by more than a
   * heartbeat interval means the leader itself stood still (stopped with SIGSTOP or `docker
   * pause`, a suspended VM, a blocked event loop): the fellows' heartbeats of that time wait
   * unread in their sockets, behind this tick. The time lost is not held against them, or every
   * fellow went offline at once and every running job failed.
   */
  tick(now: number, periodMs?: number): LiveFellow[] {
    const wentOffline: LiveFellow[] = []
    const interval = this.ctx.cfg.heartbeatIntervalS * 1000
    const window = OFFLINE_AFTER_INTERVALS * interval
    const mono = this.mono()
    const last = this.lastTick
    this.lastTick = mono
    if (periodMs !== undefined && last !== null && mono - last > periodMs + interval) this.forgive(mono - last - periodMs, mono)
    for (const [id, since] of this.awaited) {
      const f = this.byId.get(id)
      if (!f || f.released || (this.seenMono.get(id) ?? -Infinity) >= since) this.awaited.delete(id)
      else if (mono - since > window) {
        this.awaited.delete(id)
        this.event(f, 'offline', null)
        wentOffline.push(f)
      }
    }
    for (const f of this.byId.values()) {
      const s = this.stateOf(f, now)
      const prev = this.lastState.get(f.id)
      if (s === prev) continue
      this.lastState.set(f.id, s)
      if (s === 'stale' || s === 'offline') this.event(f, s, null)
      if (s === 'offline') wentOffline.push(f)
    }
    return wentOffline
  }

  /**
   * Moves every fellow's last sight (and every wait for one) `ms` later: time the leader lost. Never
   * past `now`: a heartbeat read before this late tick is already as recent as can be.
   */
  private forgive(ms: number, now: number): void {
    for (const [id, seen] of this.seenMono) this.seenMono.set(id, Math.min(seen + ms, now))
    for (const [id, since] of this.awaited) this.awaited.set(id, Math.min(since + ms, now))
  }

  event(f: LiveFellow, kind: PoolEvent['kind'], detail: string | null): void {
    if (!f.poolId) return
    const list = this.events.get(f.poolId) ?? []
    list.push({ ts: this.ctx.clock.now(), fellow_id: f.id, kind, detail })
    if (list.length > EVENTS_PER_POOL) list.splice(0, list.length - EVENTS_PER_POOL)
    this.events.set(f.poolId, list)
  }

  /** Deleted pools' events go with them (up to 500 each stayed in memory until a restart). */
  forgetPools(poolIds: readonly string[]): void {
    for (const id of poolIds) this.events.delete(id)
  }

  poolEvents(poolId: string, limit: number): PoolEvent[] {
    return (this.events.get(poolId) ?? []).slice(-limit).reverse()
  }

  /** The fellow's recent samples (one per 30 s, two hours), oldest first. */
  recent(id: string): readonly HistoryPoint[] {
    return this.history.get(id) ?? []
  }

  poolHistory(poolId: string): { fellow_id: string; points: HistoryPoint[] }[] {
    return this.inPools(new Set([poolId])).map((f) => ({ fellow_id: f.id, points: this.history.get(f.id) ?? [] }))
  }

  /** Detaches fellows from their pool (forced pool delete). */
  detach(ids: string[]): void {
    for (const id of ids) {
      const f = this.byId.get(id)
      if (f) {
        this.move(id, f.poolId, null)
        f.poolId = null
        f.ownerUserId = null
        this.forgetJob(f)
      }
    }
  }

  /**
   * A job ended (or its fellows left its pool): its fellows no longer run it, whatever they said
   * last. An offline fellow sends nothing more, and listed "offline running <a failed job>" for
   * good; a live one's next heartbeat says what it does.
   */
  jobEnded(jobId: string, fellowIds: string[]): void {
    for (const id of fellowIds) {
      const f = this.byId.get(id)
      if (f && f.jobId === jobId) {
        this.forgetJob(f)
        this.stopping.set(f.id, this.mono())
      }
    }
  }

  /**
   * Whether a fellow's job ended and no heartbeat has come from it since (at most two intervals):
   * its runner may still be in its stop grace, holding the machine's memory, and only its next
   * heartbeat says (still running that job, or idle). A job placed on it in between ran beside it.
   */
  stoppingJob(f: LiveFellow): boolean {
    const since = this.stopping.get(f.id)
    if (since === undefined) return false
    if (this.mono() - since < 2 * this.ctx.cfg.heartbeatIntervalS * 1000) return true
    this.stopping.delete(f.id)
    return false
  }

  private forgetJob(f: LiveFellow): void {
    if (f.jobId === null && !BUSY_STATUSES.has(f.status ?? '')) return
    f.jobId = null
    if (BUSY_STATUSES.has(f.status ?? '')) f.status = 'idle'
    this.unsaved.add(f.id)
    this.due.add(f.id)
  }

  reload(id: string): void {
    const row = this.ctx.db.select({ poolId: poolNodes.poolId, ownerUserId: poolNodes.ownerUserId }).from(poolNodes).where(eq(poolNodes.fellowId, id)).get()
    const f = this.byId.get(id)
    if (f) {
      this.move(id, f.poolId, row?.poolId ?? null)
      f.poolId = row?.poolId ?? null
      f.ownerUserId = row?.ownerUserId ?? null
    }
  }

  /** The fellows of these pools (null: every fellow), in the order they joined each pool. */
  inPools(poolIds: Set<string> | null): LiveFellow[] {
    if (poolIds === null) return [...this.byId.values()]
    const out: LiveFellow[] = []
    for (const poolId of poolIds) for (const id of this.byPool.get(poolId) ?? []) out.push(this.byId.get(id)!)
    return out
  }

  /** Keeps byPool in step; called before a fellow's poolId changes (`from` is its current one). */
  private move(id: string, from: string | null, to: string | null): void {
    if (from === to) return
    const left = from === null ? undefined : this.byPool.get(from)
    if (left) {
      left.delete(id)
      if (left.size === 0) this.byPool.delete(from!)
    }
    if (to === null) return
    let members = this.byPool.get(to)
    if (!members) this.byPool.set(to, (members = new Set()))
    members.add(id)
  }
}
