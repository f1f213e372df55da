// Fellows: join sessions, registration, node credentials, release and removal.
import { AddressBlocks, limitKey } from '../http/ip'
import { and, count, eq, gt, isNull, lt, min, sql } from 'drizzle-orm'
import { auditLog, fellows, joinSessions, poolNodes, pools, users } from '../db/schema'
import { AppError, notFound } from '../errors'
import { newId, randomToken, sha256, TOKEN_PREFIX } from '../crypto'
import { recordAudit } from '../audit/service'
import { RateLimiter } from '../rate-limit'
import { HOUR_MS, iso, monotonicNow } from '../time'
import { ensureDefaultPool, memberRole, requireMember, requireOwner, getVisiblePool } from '../pools/service'
import type { Ctx } from '../context'
import type { Db } from '../db/client'
import type { Actor, NodeCaller } from '../caller'
import { BUSY_STATUSES, type FellowRegistry, type LiveFellow } from './live'
import type { SignalHub } from './signals'
import type { HeartbeatInput, HeartbeatResult, RegisterInput } from './model'
import type { LoopSpec } from '../loops'
import { shQuote } from './bootstrap'

const JOIN_SESSION_TTL_MS = 24 * HOUR_MS
/** Join commands one person may make in 24 hours. */
export const JOIN_SESSIONS_PER_DAY = 200
/** How long an expired join session's row stays. */
export const DEAD_JOIN_SESSION_KEEP_MS = 30 * 24 * HOUR_MS
/** How often a busy fellow's job is checked against its assignments (see heartbeat). */
const JOB_CHECK_MS = 60_000

/** `find()`, with a "not found" of what it looked through said as one of `what` instead. */
function hiddenAs<T>(find: () => T, what: string): T {
  try {
    return find()
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw notFound(what)
    throw e
  }
}
const TOKEN_CACHE_MAX = 200_000

/** A fellow's pool (null: detached, in none), or undefined when there is no such fellow (its page's visibility check). */
export function fellowPoolOf(db: Db, id: string): string | null | undefined {
  if (db.select({ id: fellows.id }).from(fellows).where(eq(fellows.id, id)).get() === undefined) return undefined
  return db.select({ poolId: poolNodes.poolId }).from(poolNodes).where(eq(poolNodes.fellowId, id)).get()?.poolId ?? null
}

export function signalsUrl(baseUrl: string, fellowId: string): string {
  return `${baseUrl.replace(/^http/, 'ws')}/ws/signals/${fellowId}`
}

export function joinCommand(baseUrl: string, token: string): string {
  // One line a user pastes on the new machine; the token doubles as the bootstrap token. It is on
  // no process's command line (`ps` shows those to every user of the machine, for the minutes the
  // binary downloads): printf is the shell's own, curl reads the header from its stdin, and the
  // script it fetches carries the token (fellow.sh is written for the token it was fetched with).
  // Quoted although config.ts admits only shell-safe URLs and tokens are base64url: the command is
  // pasted into a root shell, so nothing in it may depend on that staying true.
  return `printf '%s\\n' ${shQuote(`X-Bootstrap-Token: ${token}`)} | curl -fsSL -H @- ${shQuote(`${baseUrl}/api/v1/bootstrap/fellow.sh`)} | sh -s -- --leader ${shQuote(baseUrl)}`
}

export interface JoinGrant {
  sessionId: string
  poolId: string
  createdBy: string | null
}

/**
 * The node-token lookup, prepared once per leader. Built through drizzle on every token not yet in
 * the cache it cost 36-41 µs against 8-12 µs prepared (bench/token-lookup.ts), and every fellow's
 * first call after a start takes this path: 100,000 fellows reconnecting at once.
 */
function tokenLookup(ctx: Ctx) {
  return ctx.db
    .select({ id: fellows.id, state: fellows.state })
    .from(fellows)
    .where(eq(fellows.tokenHash, sql.placeholder('hash')))
    .prepare()
}

export class Fellows {
  /** Node-token digest -> caller (or null for a token known to be bad), bounded, invalidated on revoke. */
  private tokenCache = new Map<string, NodeCaller | null>()
  private byTokenHash: ReturnType<typeof tokenLookup>
  /** Token-less registrations per client IP, and of all addresses together (one key). */
  private tokenlessPerIp: RateLimiter
  private tokenlessAll: RateLimiter

  /** Told of every fellow the liveness loop finds gone offline (the jobs reschedule its work). */
  private onOffline: (fellowId: string, why?: string) => void
  private onRestarted: (fellowId: string) => void
  private onBack: (fellowId: string, jobId: string) => void
  /** The job each busy fellow last said it runs, and when that was checked (monotonic): see heartbeat. */
  private jobChecked = new Map<string, { jobId: string; at: number }>()

  constructor(
    private ctx: Ctx,
    readonly registry: FellowRegistry,
    readonly signals: SignalHub,
    opts: { onOffline?: (fellowId: string, why?: string) => void; onRestarted?: (fellowId: string) => void; onBack?: (fellowId: string, jobId: string) => void } = {},
  ) {
    this.onOffline = opts.onOffline ?? (() => {})
    this.onRestarted = opts.onRestarted ?? (() => {})
    this.onBack = opts.onBack ?? (() => {})
    this.byTokenHash = tokenLookup(ctx)
    const windowMs = ctx.cfg.tokenlessJoinWindowS * 1000
    this.tokenlessPerIp = new RateLimiter(ctx.clock, ctx.cfg.tokenlessJoinRateMax, windowMs)
    this.tokenlessAll = new RateLimiter(ctx.clock, ctx.cfg.tokenlessJoinMax, windowMs)
  }

  mintJoinSession(actor: Actor, poolId: string) {
    const { ctx } = this
    return ctx.db.transaction((tx) => {
      requireMember(tx, actor, poolId)
      const now = ctx.clock.now()
      // Each join command is a row kept a month and an audit entry: one API token minted 860 a
      // second (a gigabyte of state file a few hours). A person needs a handful a day. Counted
      // from the audit log, which keeps them all: deleting the pool takes its join sessions along.
      const recent = tx
        .select({ n: count(), oldest: min(auditLog.ts) })
        .from(auditLog)
        .where(and(eq(auditLog.actorUserId, actor.userId), gt(auditLog.ts, now - JOIN_SESSION_TTL_MS), eq(auditLog.kind, 'pool.join_session')))
        .get()
      if (recent && recent.n >= JOIN_SESSIONS_PER_DAY) {
        throw new AppError('rate_limited', `You have made ${JOIN_SESSIONS_PER_DAY} join commands in the last 24 hours, the most one person may; each works for 24 hours and for any number of machines, so use one of those.`, { retryAfterS: Math.max(1, Math.ceil(((recent.oldest ?? now) + JOIN_SESSION_TTL_MS - now) / 1000)) })
      }
      const token = randomToken(TOKEN_PREFIX.joinToken)
      const id = newId()
      tx.insert(joinSessions).values({ id, poolId, createdBy: actor.userId, tokenHash: sha256(token), createdAt: now, expiresAt: now + JOIN_SESSION_TTL_MS }).run()
      recordAudit(tx, ctx.clock, { kind: 'pool.join_session', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId })
      return { id, join_token: token, pool_id: poolId, expires_at: iso(now + JOIN_SESSION_TTL_MS), command: joinCommand(ctx.cfg.baseUrl, token) }
    })
  }

  revokeJoinSession(actor: Actor, id: string): void {
    const { ctx } = this
    ctx.db.transaction((tx) => {
      const row = tx.select().from(joinSessions).where(eq(joinSessions.id, id)).get()
      if (!row) throw notFound('Join session')
      // Someone who cannot see its pool learns what a made-up id would tell them ("Pool not found"
      // said the session existed).
      const pool = hiddenAs(() => getVisiblePool(tx, actor, row.poolId), 'Join session')
      if (row.createdBy !== actor.userId) requireOwner(tx, actor, pool)
      tx.update(joinSessions).set({ revokedAt: ctx.clock.now() }).where(and(eq(joinSessions.id, id), isNull(joinSessions.revokedAt))).run()
      recordAudit(tx, ctx.clock, { kind: 'pool.join_session_revoke', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: row.poolId })
    })
  }

  /**
   * A live, unexpired join token whose maker may still add machines to its pool (an active member
   * of it, or an active admin), or null. Leaving the pool revokes a member's tokens; this also
   * holds for an account disabled, deleted or removed by any other path.
   */
  resolveJoinToken(token: string): JoinGrant | null {
    if (!token.startsWith(TOKEN_PREFIX.joinToken)) return null
    const { db } = this.ctx
    const row = db.select().from(joinSessions).where(eq(joinSessions.tokenHash, sha256(token))).get()
    if (!row || row.revokedAt !== null || row.expiresAt <= this.ctx.clock.now() || row.createdBy === null) return null
    const maker = db.select({ status: users.status, role: users.role }).from(users).where(eq(users.id, row.createdBy)).get()
    if (!maker || maker.status !== 'active') return null
    if (maker.role !== 'admin' && memberRole(db, row.poolId, row.createdBy) === null) return null
    return { sessionId: row.id, poolId: row.poolId, createdBy: row.createdBy }
  }

  resolveNodeToken(token: string): NodeCaller | null {
    const hash = sha256(token)
    const hit = this.tokenCache.get(hash)
    if (hit !== undefined) {
      // The pool binding can change (forced pool delete); the registry is the truth for it.
      if (hit !== null) hit.poolId = this.registry.get(hit.fellowId)?.poolId ?? null
      return hit
    }
    const row = this.byTokenHash.get({ hash })
    const caller: NodeCaller | null =
      row && row.state === 'active' ? { kind: 'node', fellowId: row.id, poolId: this.registry.get(row.id)?.poolId ?? null, credentialId: row.id } : null
    if (this.tokenCache.size >= TOKEN_CACHE_MAX) this.tokenCache.delete(this.tokenCache.keys().next().value!)
    this.tokenCache.set(hash, caller)
    return caller
  }

  private forgetToken(hash: string): void {
    this.tokenCache.delete(hash)
  }

  /**
   * A registration without any token: anonymous, into the default pool. Each one adds a fellow row,
   * a live entry and a log ring that nobody answers for, so they are refused when the operator
   * switched them off, and otherwise limited per address and in total per window: 50 anonymous
   * registrations in 3 s (issue 26) must not grow the leader's memory with them. The total bound
   * is what holds against many addresses; the default pool's node limit caps them for good.
   */
  private admitTokenless(clientIp: string): void {
    const { cfg } = this.ctx
    if (!cfg.allowTokenlessJoin) {
      throw new AppError('join_token_required', 'This leader admits fellows only with a join token (SVC_ALLOW_TOKENLESS_JOIN=0): mint one for a pool and start the fellow with --join-token.')
    }
    const own = this.tokenlessPerIp.hit(limitKey(clientIp))
    if (own > 0) throw new AppError('rate_limited', 'Too many registrations without a join token from your address; try again shortly, or use a join token.', { retryAfterS: own })
    const all = this.tokenlessAll.hit('all')
    if (all > 0) throw new AppError('rate_limited', 'Too many registrations without a join token right now; try again shortly, or use a join token.', { retryAfterS: all })
  }

  /**
   * Registers a fellow. `bearer` is the join token (lands in its pool), the fellow's own node token
   * (re-registration), or null (the default pool). Any other token is refused, whatever the flags.
   */
  register(bearer: string | null, registered: RegisterInput, clientIp: string) {
    const { ctx } = this
    const input = { ...registered, address: p2pAddressFor(registered.address, clientIp) }
    if (input.address !== registered.address) ctx.log.info('p2p address not passed on: it points at the neighbours\' own machine', { address: registered.address, client_ip: clientIp })
    let grant: JoinGrant | null = null
    let self: NodeCaller | null = null
    if (bearer === null) this.admitTokenless(clientIp)
    else {
      if (bearer.startsWith(TOKEN_PREFIX.joinToken)) grant = this.resolveJoinToken(bearer)
      else if (bearer.startsWith(TOKEN_PREFIX.nodeToken)) self = this.resolveNodeToken(bearer)
      if (!grant && !self) throw new AppError('unauthorized', 'The join or node token is wrong, expired or revoked.')
    }
    const token = randomToken(TOKEN_PREFIX.nodeToken)
    const now = ctx.clock.now()
    const result = ctx.db.transaction((tx) => {
      const existing = input.fellow_id ? tx.select().from(fellows).where(eq(fellows.id, input.fellow_id)).get() : undefined
      const binding = existing ? tx.select().from(poolNodes).where(eq(poolNodes.fellowId, existing.id)).get() : undefined
      if (self && (!existing || existing.id !== self.fellowId)) {
        throw new AppError('forbidden', 'A node token can only re-register its own fellow.')
      }
      let poolId: string
      let ownerUserId: string | null
      let joinSessionId: string | null
      if (self) {
        // Detached (its pool deleted, or the member who added it left): it stays out of every pool
        // until someone who may add machines gives it a join token (it used to land in the default
        // pool, where anyone's jobs and chats could reach it).
        if (!binding) throw new AppError('forbidden', 'This fellow was detached from its pool (the pool was deleted, or the member who added it left); start it with a join token of a pool to join one.')
        poolId = binding.poolId
        ownerUserId = binding.ownerUserId
        joinSessionId = binding.joinSessionId
      } else if (grant && existing) {
        // Issue 26, item 3: any member's join token used to take over a fellow of its pool: the
        // owner's node token was revoked and the fellow (its jobs, chats and credit) became the
        // caller's. Now only the member who added it or the pool owner may re-register it with a
        // join token, and it stays the adder's. Refused with 403, not 409: the fellow is no secret
        // to a pool member (404 would hide nothing) and nothing about it would change on a retry;
        // the caller lacks the right, as for release or removal of another member's fellow.
        if (!binding) throw new AppError('forbidden', 'This fellow was detached from its pool; it joins this one as a new fellow.')
        if (binding.poolId !== grant.poolId) {
          throw new AppError('forbidden', 'This fellow belongs to another pool; re-register it with its node token or a join token of its pool.')
        }
        const poolOwner = tx.select({ ownerUserId: pools.ownerUserId }).from(pools).where(eq(pools.id, binding.poolId)).get()?.ownerUserId ?? null
        const minter = grant.createdBy
        if (minter === null || (minter !== binding.ownerUserId && minter !== poolOwner)) {
          throw new AppError('forbidden', 'Only the member who added this fellow or the pool owner can re-register it with a join token; the fellow itself can with its node token.')
        }
        poolId = binding.poolId
        ownerUserId = binding.ownerUserId
        joinSessionId = binding.joinSessionId
      } else if (grant) {
        poolId = grant.poolId
        ownerUserId = grant.createdBy
        joinSessionId = grant.sessionId
      } else {
        if (existing) throw new AppError('unauthorized', 'Re-registering a fellow needs its node token or a join token of its pool.')
        poolId = ensureDefaultPool(tx, ctx.clock).id
        ownerUserId = null
        joinSessionId = null
      }
      const pool = tx.select().from(pools).where(eq(pools.id, poolId)).get()!
      const alreadyIn = binding?.poolId === poolId && existing !== undefined
      if (!alreadyIn && pool.nodeLimit !== null) {
        const n = tx.select({ n: count() }).from(poolNodes).where(eq(poolNodes.poolId, poolId)).get()?.n ?? 0
        if (n >= pool.nodeLimit) throw new AppError('pool_node_limit', `The pool "${pool.name}" already has its ${pool.nodeLimit === 1 ? '1 node' : `${pool.nodeLimit} nodes`}.`, { node_limit: pool.nodeLimit })
      }
      const id = existing?.id ?? newId()
      if (existing) {
        tx.update(fellows).set({ tokenHash: sha256(token), hostname: input.hostname, state: 'active', address: input.address ?? null, agentVersion: input.agent_version ?? null }).where(eq(fellows.id, id)).run()
      } else {
        tx.insert(fellows).values({ id, hostname: input.hostname, tokenHash: sha256(token), state: 'active', registeredAt: now, address: input.address ?? null, agentVersion: input.agent_version ?? null }).run()
      }
      tx.insert(poolNodes)
        .values({ fellowId: id, poolId, ownerUserId, joinSessionId, attachedAt: now })
        .onConflictDoUpdate({ target: poolNodes.fellowId, set: { poolId, ownerUserId, joinSessionId } })
        .run()
      // The actor is whose token did it (the pool owner re-registering a member's fellow), not the owner.
      const actorUserId = grant ? grant.createdBy : ownerUserId
      recordAudit(tx, ctx.clock, { kind: existing ? 'worker.reregister' : 'worker.register', actorUserId, clientIp, targetType: 'fellow', targetId: id, detail: { pool_id: poolId, hostname: input.hostname } })
      return { id, poolId, ownerUserId, oldHash: existing?.tokenHash ?? null, registeredAt: existing?.registeredAt ?? now }
    })
    if (result.oldHash) this.forgetToken(result.oldHash)
    const prev = this.registry.get(result.id)
    const live: LiveFellow = {
      id: result.id,
      hostname: input.hostname,
      poolId: result.poolId,
      ownerUserId: result.ownerUserId,
      released: false,
      registeredAt: result.registeredAt,
      lastSeenAt: now,
      status: prev?.status ?? 'idle',
      jobId: prev?.jobId ?? null,
      step: prev?.step ?? null,
      loss: prev?.loss ?? null,
      bytesSent: prev?.bytesSent ?? 0,
      bytesReceived: prev?.bytesReceived ?? 0,
      hardware: input.gpus ? { gpus: input.gpus } : (prev?.hardware ?? null),
      address: input.address ?? null,
      agentVersion: input.agent_version ?? null,
      servables: prev?.servables ?? [],
      capacity: prev?.capacity ?? null,
      runners: prev?.runners ?? null,
      engines: prev?.engines ?? null,
    }
    this.registry.put(live, prev ? null : 'registered')
    // Registering again is what an agent does when it starts: whatever stage it ran is gone with
    // the old process, even when it was back before its heartbeats were missed.
    if (result.oldHash) {
      this.signals.reset(result.id)
      this.onRestarted(result.id)
    }
    return {
      fellow_id: result.id,
      node_token: token,
      pool_id: result.poolId,
      heartbeat_interval_s: ctx.cfg.heartbeatIntervalS,
      signals_url: signalsUrl(ctx.cfg.baseUrl, result.id),
    }
  }

  /** A fellow the actor may manage: pool owner, the member who admitted it, or an admin. Others: 404/403. */
  private manageable(actor: Actor, fellowId: string): LiveFellow {
    const f = this.registry.get(fellowId)
    if (!f) throw notFound('Fellow')
    if (actor.role === 'admin') return f
    if (f.poolId === null) throw notFound('Fellow')
    const pool = requireMember(this.ctx.db, actor, f.poolId)
    if (pool.my_role !== 'owner' && f.ownerUserId !== actor.userId) throw new AppError('forbidden', 'Only the pool owner, the member who added this fellow, or an admin can do this.')
    return f
  }

  /** Release: the fellow is told to STOP, its token stops working, it shows as released. */
  release(actor: Actor, fellowId: string): void {
    const f = this.manageable(actor, fellowId)
    const old = this.ctx.db.select({ tokenHash: fellows.tokenHash }).from(fellows).where(eq(fellows.id, fellowId)).get()
    this.ctx.db.transaction((tx) => {
      tx.update(fellows).set({ state: 'released', tokenHash: `released:${fellowId}` }).where(eq(fellows.id, fellowId)).run()
      recordAudit(tx, this.ctx.clock, { kind: 'worker.release', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'fellow', targetId: fellowId, detail: { pool_id: f.poolId } })
    })
    if (old) this.forgetToken(old.tokenHash)
    this.signals.send(fellowId, 'STOP', { payload: { reason: 'released' } })
    this.signals.revoke(fellowId, 'released')
    f.released = true
    this.registry.event(f, 'released', null)
    // Its job stages go to other fellows (or the jobs fail) now: they waited "running" for good.
    this.onOffline(fellowId, 'was released')
  }

  remove(actor: Actor, fellowId: string): void {
    const f = this.manageable(actor, fellowId)
    const old = this.ctx.db.select({ tokenHash: fellows.tokenHash }).from(fellows).where(eq(fellows.id, fellowId)).get()
    this.ctx.db.transaction((tx) => {
      tx.delete(fellows).where(eq(fellows.id, fellowId)).run()
      recordAudit(tx, this.ctx.clock, { kind: 'worker.remove', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'fellow', targetId: fellowId, detail: { pool_id: f.poolId } })
    })
    if (old) this.forgetToken(old.tokenHash)
    this.signals.send(fellowId, 'STOP', { payload: { reason: 'removed' } })
    this.signals.revoke(fellowId, 'removed')
    this.registry.remove(fellowId)
    this.onOffline(fellowId, 'was removed')
  }

  /** UPDATE to one fellow, or to every fellow of a pool the actor owns (admins: any). */
  update(actor: Actor, target: { fellow_id?: string; pool_id?: string; version?: string }): { signalled: number } {
    const payload = target.version ? { version: target.version } : {}
    let ids: string[]
    if (target.fellow_id) ids = [this.manageable(actor, target.fellow_id).id]
    else {
      const pool = getVisiblePool(this.ctx.db, actor, target.pool_id!)
      requireOwner(this.ctx.db, actor, pool)
      ids = this.registry.inPools(new Set([pool.id])).filter((f) => !f.released).map((f) => f.id)
    }
    for (const id of ids) this.signals.send(id, 'UPDATE', { payload })
    recordAudit(this.ctx.db, this.ctx.clock, { kind: 'worker.update', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: target.fellow_id ? 'fellow' : 'pool', targetId: target.fellow_id ?? target.pool_id, detail: { count: ids.length, ...payload } })
    return { signalled: ids.length }
  }

  /** The hot path of a fellow's heartbeat: memory only, answered with its pending signals. */
  heartbeat(fellowId: string, body: HeartbeatInput): HeartbeatResult {
    const f = this.registry.get(fellowId)
    if (!f || f.released) throw notFound('Fellow')
    if (body.check === true) return { ok: true as const, next_heartbeat_s: this.ctx.cfg.heartbeatIntervalS }
    const back = this.registry.heartbeat(f, body, this.ctx.clock.now())
    // Busy with a job: whether it still holds it is the jobs' to say (a STOP, if not, goes out with
    // this very answer). Asked when it is back from offline, when it names another job, and once
    // a minute: a fellow left running a job the leader does not give it (a restored state, an
    // older agent that runs on after a refused report) was never told, and never given a job.
    if (body.job_id && BUSY_STATUSES.has(body.status)) {
      if (back || this.checkDue(fellowId, body.job_id)) this.onBack(fellowId, body.job_id)
    } else if (this.jobChecked.size > 0) this.jobChecked.delete(fellowId)
    const pending = this.signals.takePending(fellowId)
    return { ok: true as const, next_heartbeat_s: this.ctx.cfg.heartbeatIntervalS, ...(pending.length > 0 ? { pending_signals: pending } : {}) }
  }

  private checkDue(fellowId: string, jobId: string): boolean {
    const now = monotonicNow(this.ctx.clock)
    const last = this.jobChecked.get(fellowId)
    if (last !== undefined && last.jobId === jobId && now - last.at < JOB_CHECK_MS) return false
    this.jobChecked.set(fellowId, { jobId, at: now })
    return true
  }

  /**
   * A fellow stopping cleanly (SIGTERM): offline at once, and its job stages are re-placed now
   * instead of after 6 missed heartbeat intervals. Its next heartbeat brings it back.
   */
  goodbye(fellowId: string): void {
    const f = this.registry.get(fellowId)
    if (!f || f.released) throw notFound('Fellow')
    const wasOffline = this.registry.stateOf(f, this.ctx.clock.now()) === 'offline'
    this.registry.signOff(f)
    if (!wasOffline) this.onOffline(f.id)
  }

  /** A fellow the leader knows, released or not. */
  isKnown(fellowId: string): boolean {
    return this.registry.get(fellowId) !== undefined
  }

  /** A fellow that may still talk to the leader (known and not released). */
  isActive(fellowId: string): boolean {
    const f = this.registry.get(fellowId)
    return f !== undefined && !f.released
  }

  /**
   * Fellows unbound from their pool (a forced delete, an account deletion, the member who added them
   * leaving it) are told to stop. Started again, they are refused until given a join token.
   */
  detach(fellowIds: string[], reason: string): void {
    this.registry.detach(fellowIds)
    for (const id of fellowIds) {
      this.signals.send(id, 'STOP', { payload: { reason } })
      // Its stages of the pool's running jobs go to other fellows (or the jobs fail) now.
      this.onOffline(id, `left the pool (${reason})`)
    }
  }

  /** Heartbeats land in memory; the flush writes the due rows in batches (live.ts says when). */
  loops(): LoopSpec[] {
    const { ctx, registry } = this
    const livenessEveryMs = Math.max(1000, (ctx.cfg.heartbeatIntervalS * 1000) / 2)
    return [
      { name: 'telemetry-flush', intervalMs: 250, run: () => void registry.flush() },
      {
        // Every join token expires a day after it is made; the rows stayed for good (one per
        // join command ever shown). They go a month after they expired.
        name: 'join-session-purge',
        intervalMs: 10 * 60_000,
        run: () => {
          const cutoff = ctx.clock.now() - DEAD_JOIN_SESSION_KEEP_MS
          const n = ctx.db.delete(joinSessions).where(lt(joinSessions.expiresAt, cutoff)).run().changes
          if (n > 0) ctx.log.debug('purged', { join_sessions: n })
        },
      },
      {
        name: 'liveness',
        intervalMs: livenessEveryMs,
        run: () => {
          for (const f of registry.tick(ctx.clock.now(), livenessEveryMs)) {
            ctx.log.info('fellow offline: no heartbeat', { fellow_id: f.id, pool_id: f.poolId, last_seen_at: f.lastSeenAt === null ? null : new Date(f.lastSeenAt).toISOString() })
            this.onOffline(f.id)
          }
        },
      },
    ]
  }
}

/**
 * The p2p address a fellow advertises goes to its job's other fellows, which connect to it. One on
 * the leader's own machine (tests, one-box setups) may say 127.0.0.1; from anywhere else a
 * loopback, unspecified or link-local host (127/8, ::1, localhost, 0.0.0.0, ::, 169.254/16) would
 * point its neighbours at themselves (their own services, a cloud's metadata endpoint) and tell
 * whoever reads their logs what listens there. Such an address is not passed on: the fellow's
 * neighbours use the relay.
 */
export function p2pAddressFor(address: string | undefined, clientIp: string): string | undefined {
  if (address === undefined) return undefined
  const host = (/^\[([^\]]+)\]:\d+$/.exec(address) ?? /^([^:]+):\d+$/.exec(address))?.[1]?.toLowerCase()
  if (host === undefined) return address
  return onThisMachine(host) && !onThisMachine(clientIp.toLowerCase()) ? undefined : address
}

/** Loopback, unspecified and link-local blocks (an IPv4 one also as IPv4-mapped IPv6). */
const THIS_MACHINE = new AddressBlocks()
for (const [block, prefix] of [['127.0.0.0', 8], ['0.0.0.0', 32], ['169.254.0.0', 16], ['::1', 128], ['::', 128]] as const) THIS_MACHINE.add(block, prefix)
const onThisMachine = (host: string) => host === 'localhost' || host.endsWith('.localhost') || THIS_MACHINE.has(host)
