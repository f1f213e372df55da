// Accounts: register, login, logout, password change, email verification and password reset.
// No HTTP here: routes, the CLI and tests call these with plain values.
// Service style: the service is the `Accounts` class, built once in app.ts `createServices` (the CLI
// builds its own) and handed to the routes. The plain exported functions take a `Db` (or
// transaction) first: they are helpers other services compose inside their own transactions.
// sessions.ts, api-tokens.ts and lockout.ts are this class's building blocks (they take the Ctx);
// the rest of the leader reaches them through the class (the credential resolver in app.ts too).
import { and, count, eq, isNull } from 'drizzle-orm'
import { actionTokens, users } from '../db/schema'
import { limitKey } from '../http/ip'
import { AppError, invalid } from '../errors'
import { newId, randomToken, sha256 } from '../crypto'
import { recordAudit } from '../audit/service'
import { RateLimiter } from '../rate-limit'
import { DAY_MS, iso, isoOrNull } from '../time'
import { hashPassword, verifyPassword, dummyHash, passwordProblem, HashPool, HASH_CONCURRENCY } from './passwords'
import { createSession, purgeSessions, resolveSession, revokeSession, revokeUserSessions, type NewSession } from './sessions'
import { purgeApiTokens, resolveApiToken, revokeUserApiTokens } from './api-tokens'
import { isEmailAddress, normalizeEmail } from './email'
import { revokeJoinTokensOf } from '../pools/service'
import { lockedForSeconds, recordLoginFailure, clearLoginFailures, clearAccountFailures, purgeLoginFailures } from './lockout'
import type { UserCaller } from '../caller'
import type { Ctx } from '../context'
import type { Db } from '../db/client'
import type { Me } from './model'
import { NO_CONTROL_PATTERN } from '../wire/schema'
import type { LoopSpec } from '../loops'

export type UserRow = typeof users.$inferSelect
export type UserStatus = UserRow['status']

export { normalizeEmail }

/**
 * The name a mail greets its reader by. Anyone can sign up with someone else's address and a
 * display name of their choosing ("Hello your account is locked, call ..."), and the leader would
 * deliver it from its own sender: until the address is proven (its verify link was opened), a mail
 * greets the address itself.
 */
export function mailName(u: Pick<UserRow, 'displayName' | 'email' | 'emailVerifiedAt'>): string {
  return u.emailVerifiedAt !== null && u.displayName ? u.displayName : u.email
}

export function toMe(u: UserRow): Me {
  return {
    id: u.id,
    email: u.email,
    display_name: u.displayName,
    role: u.role,
    status: u.status,
    created_at: iso(u.createdAt),
    last_login_at: isoOrNull(u.lastLoginAt),
  }
}

export function findUserByEmail(db: Db, email: string): UserRow | undefined {
  return db.select().from(users).where(eq(users.email, normalizeEmail(email))).get()
}

export function getUser(db: Db, id: string): UserRow | undefined {
  return db.select().from(users).where(eq(users.id, id)).get()
}

const ACTION_TOKEN_TTL_MS = DAY_MS

/** Issues a single-use verify or reset token valid for 24 hours; earlier unused ones of that kind stop working. */
export function issueActionToken(db: Db, now: number, userId: string, kind: 'verify' | 'reset'): string {
  const token = randomToken()
  db.update(actionTokens)
    .set({ usedAt: now })
    .where(and(eq(actionTokens.userId, userId), eq(actionTokens.kind, kind), isNull(actionTokens.usedAt)))
    .run()
  db.insert(actionTokens)
    .values({ id: newId(), userId, kind, tokenHash: sha256(token), createdAt: now, expiresAt: now + ACTION_TOKEN_TTL_MS })
    .run()
  return token
}

/** Marks a valid token used and returns its user id; a used, expired or unknown token is refused. */
function consumeActionToken(db: Db, now: number, token: string, kind: 'verify' | 'reset'): string {
  const row = db.select().from(actionTokens).where(eq(actionTokens.tokenHash, sha256(token))).get()
  if (!row || row.kind !== kind || row.usedAt !== null || row.expiresAt <= now) {
    throw new AppError('invalid_token', 'This link is invalid, was already used or has expired.')
  }
  db.update(actionTokens).set({ usedAt: now }).where(eq(actionTokens.id, row.id)).run()
  return row.userId
}

export interface RequestInfo {
  clientIp: string
}

export interface RegisterInput {
  email: string
  password: string
  display_name?: string
}

/** Expired sessions, stale login-failure counters and long-dead API tokens, dropped every ten minutes. */
function purgeLoop(ctx: Ctx): LoopSpec {
  return {
    name: 'token-purge',
    intervalMs: 10 * 60_000,
    run() {
      const sessions = purgeSessions(ctx)
      const failures = purgeLoginFailures(ctx)
      const apiTokens = purgeApiTokens(ctx)
      if (sessions + failures + apiTokens > 0) ctx.log.debug('purged', { sessions, failures, api_tokens: apiTokens })
    },
  }
}

export class Accounts {
  private authLimiter: RateLimiter
  /** Every scrypt run of the leader: bounded, with a bounded line (a full one answers 429). */
  readonly hashes: HashPool

  constructor(private ctx: Ctx) {
    this.authLimiter = new RateLimiter(ctx.clock, ctx.cfg.authRateMax, ctx.cfg.authRateWindowS * 1000)
    this.hashes = new HashPool(HASH_CONCURRENCY, ctx.cfg.passwordHashQueue)
  }

  loops(): LoopSpec[] {
    return [purgeLoop(this.ctx)]
  }

  /** The person behind a session token (cookie or bearer), or null when it is not valid now. */
  resolveSession(token: string, fromCookie: boolean): UserCaller | null {
    return resolveSession(this.ctx, token, fromCookie)
  }

  /** The person behind a personal API token, or null when it is not valid now. */
  resolveApiToken(token: string): UserCaller | null {
    return resolveApiToken(this.ctx, token)
  }

  /** The per-IP limit shared by login and register (an IPv6 client's /64 is one IP: limitKey). */
  private limit(ip: string): void {
    const wait = this.authLimiter.hit(limitKey(ip))
    if (wait > 0) throw new AppError('rate_limited', 'Too many attempts from your address; try again shortly.', { retryAfterS: wait })
  }

  /** The status a new (not first) user starts in, per SVC_REQUIRE_* and whether mail works. */
  private startingStatus(): UserStatus {
    const { cfg, mail } = this.ctx
    if (cfg.requireEmailVerification && mail.enabled) return 'unverified'
    if (cfg.requireAdminApproval) return 'pending_approval'
    return 'active'
  }

  async register(input: RegisterInput, req: RequestInfo): Promise<{ user: Me; session: NewSession | null }> {
    this.limit(req.clientIp)
    const email = normalizeEmail(input.email)
    const problem = passwordProblem(input.password, email)
    if (problem) throw invalid(problem, { errors: [{ path: '/password', message: problem }] })
    const displayName = input.display_name?.trim() || null
    // Hash before the transaction: the transaction stays synchronous and short.
    const passwordHash = await hashPassword(input.password, this.hashes)
    const { ctx } = this
    const result = ctx.db.transaction((tx) => {
      if (tx.select({ id: users.id }).from(users).where(eq(users.email, email)).get()) {
        throw new AppError('email_taken', 'An account with this email already exists.')
      }
      const first = (tx.select({ n: count() }).from(users).get()?.n ?? 0) === 0
      const now = ctx.clock.now()
      const row: UserRow = {
        id: newId(),
        email,
        passwordHash,
        displayName,
        role: first ? 'admin' : 'user',
        status: first ? 'active' : this.startingStatus(),
        createdAt: now,
        updatedAt: now,
        lastLoginAt: null,
        emailVerifiedAt: null,
        poolCount: 0,
        nodeCount: 0,
      }
      if (row.status === 'active') row.lastLoginAt = now
      tx.insert(users).values(row).run()
      const session = row.status === 'active' ? createSession(ctx, row.id, req.clientIp, tx) : null
      if (row.status === 'unverified') {
        const token = issueActionToken(tx, now, row.id, 'verify')
        ctx.mail.enqueue(tx, 'verify-email', email, { link: `${ctx.cfg.baseUrl}/verify-email?token=${token}`, name: mailName(row) })
      } else if (row.status === 'pending_approval') {
        ctx.mail.enqueue(tx, 'pending-approval', email, { name: mailName(row) })
      }
      recordAudit(tx, ctx.clock, {
        kind: 'auth.register',
        actorUserId: row.id,
        clientIp: req.clientIp,
        targetType: 'user',
        targetId: row.id,
        detail: { role: row.role, status: row.status },
      })
      return { user: toMe(row), session }
    })
    ctx.mail.wake()
    return result
  }

  async login(emailIn: string, password: string, req: RequestInfo): Promise<{ user: Me; session: NewSession }> {
    this.limit(req.clientIp)
    const { ctx } = this
    const email = normalizeEmail(emailIn)
    const refuseIfLocked = () => {
      const wait = lockedForSeconds(ctx, email, req.clientIp)
      if (wait === 0) return
      recordAudit(ctx.db, ctx.clock, { kind: 'auth.login_locked', clientIp: req.clientIp, targetType: 'email', targetId: email })
      throw new AppError('locked_out', 'Too many failed logins; try again later.', { retryAfterS: wait })
    }
    refuseIfLocked()
    const user = findUserByEmail(ctx.db, email)
    // Unknown emails verify against a dummy hash: same work, same answer, no account enumeration.
    const ok = await verifyPassword(password, user?.passwordHash ?? (await dummyHash(this.hashes)), this.hashes)
    // Guesses sent together are hashed together: those that were in the hashing line when others
    // locked the pair are answered as if they came after the lock (not counted, 429), right or
    // wrong. Else a burst got twice the threshold's guesses, and a right one answered 200 (and
    // cleared the counters) where a wrong one of the same burst answered 401.
    refuseIfLocked()
    if (!user || !ok) {
      // What was typed is kept (the audit log's target, the lockout counters) only when it is an
      // address, or an account's: a password typed into the email field is neither, and was kept.
      // No account can be locked under it, so it counts against the client's rate limit alone.
      const typed = user || isEmailAddress(email) ? email : null
      const outcome = typed === null ? { pairLocked: false, accountLocked: false } : recordLoginFailure(ctx, typed, req.clientIp)
      // Who tried is not known (anyone may type an address): no actor, the address is the target.
      // Naming the account's owner as actor put an attacker's guesses under "what this user did".
      recordAudit(ctx.db, ctx.clock, { kind: 'auth.login_failed', actorUserId: null, clientIp: req.clientIp, targetType: 'email', targetId: typed, ...(typed === null ? { detail: { not_an_address: true } } : {}) })
      if (outcome.pairLocked || outcome.accountLocked) {
        recordAudit(ctx.db, ctx.clock, {
          kind: 'auth.lockout',
          actorUserId: null,
          clientIp: req.clientIp,
          targetType: 'email',
          targetId: email,
          detail: { scope: outcome.accountLocked ? 'account' : 'pair' },
        })
      }
      throw new AppError('invalid_credentials', 'Wrong email or password.')
    }
    if (user.status !== 'active') {
      recordAudit(ctx.db, ctx.clock, { kind: 'auth.login_refused', actorUserId: user.id, clientIp: req.clientIp, targetType: 'user', targetId: user.id, detail: { status: user.status } })
      throw new AppError('account_not_active', notActiveReason(user.status), { account_status: user.status })
    }
    const now = ctx.clock.now()
    const session = ctx.db.transaction((tx) => {
      // The hash took a few hundred milliseconds: the account may have changed in them. A password
      // changed or reset since ends every session, so none may begin with the old one; a deleted
      // account has nobody to log in as, a disabled one is refused as above.
      const current = getUser(tx, user.id)
      if (!current || current.passwordHash !== user.passwordHash) throw new AppError('invalid_credentials', 'Wrong email or password.')
      if (current.status !== 'active') throw new AppError('account_not_active', notActiveReason(current.status), { account_status: current.status })
      clearLoginFailures(tx, email, req.clientIp)
      tx.update(users).set({ lastLoginAt: now }).where(eq(users.id, user.id)).run()
      recordAudit(tx, ctx.clock, { kind: 'auth.login', actorUserId: user.id, clientIp: req.clientIp, targetType: 'user', targetId: user.id })
      return createSession(ctx, user.id, req.clientIp, tx)
    })
    return { user: toMe({ ...user, lastLoginAt: now }), session }
  }

  logout(userId: string, sessionId: string, req: RequestInfo): void {
    revokeSession(this.ctx, sessionId)
    recordAudit(this.ctx.db, this.ctx.clock, { kind: 'auth.logout', actorUserId: userId, clientIp: req.clientIp, targetType: 'user', targetId: userId })
  }

  me(userId: string): Me {
    const u = getUser(this.ctx.db, userId)
    if (!u) throw new AppError('unauthorized', 'Log in first.')
    return toMe(u)
  }

  async changePassword(userId: string, sessionId: string, current: string, next: string, req: RequestInfo): Promise<void> {
    const { ctx } = this
    const u = getUser(ctx.db, userId)
    if (!u) throw new AppError('unauthorized', 'Log in first.')
    // Guessing the current password here counts as failed logins do (the same counters, limits
    // and lockout): a stolen session must not be a way to try passwords without end.
    this.limit(req.clientIp)
    const refuseIfLocked = () => {
      const wait = lockedForSeconds(ctx, u.email, req.clientIp)
      if (wait > 0) throw new AppError('locked_out', 'Too many wrong passwords; try again later.', { retryAfterS: wait })
    }
    refuseIfLocked()
    const ok = await verifyPassword(current, u.passwordHash, this.hashes)
    // As for logins: a guess hashed while others locked the pair is answered as the lock says.
    refuseIfLocked()
    if (!ok) {
      const outcome = recordLoginFailure(ctx, u.email, req.clientIp)
      recordAudit(ctx.db, ctx.clock, { kind: 'auth.password_change_failed', actorUserId: userId, clientIp: req.clientIp, targetType: 'user', targetId: userId })
      if (outcome.pairLocked || outcome.accountLocked) {
        recordAudit(ctx.db, ctx.clock, { kind: 'auth.lockout', actorUserId: userId, clientIp: req.clientIp, targetType: 'email', targetId: u.email, detail: { scope: outcome.accountLocked ? 'account' : 'pair' } })
      }
      throw new AppError('wrong_password', 'The current password is wrong.')
    }
    const problem = passwordProblem(next, u.email)
    if (problem) throw invalid(problem, { errors: [{ path: '/new_password', message: problem }] })
    const hash = await hashPassword(next, this.hashes)
    ctx.db.transaction((tx) => {
      const now = ctx.clock.now()
      // Another change or a reset may have landed during the hashing: the password checked above
      // is then no longer the account's.
      if (getUser(tx, userId)?.passwordHash !== u.passwordHash) throw new AppError('wrong_password', 'The current password is wrong.')
      clearLoginFailures(tx, u.email, req.clientIp)
      tx.update(users).set({ passwordHash: hash, updatedAt: now }).where(eq(users.id, userId)).run()
      // A new password ends every other way in: other sessions, all API tokens (a token minted by
      // whoever knew the old password must not outlive it) and the join tokens made for pasting
      // on machines (which would let them add machines to the user's pools for a day).
      const sessionsRevoked = revokeUserSessions(tx, now, userId, sessionId)
      const tokensRevoked = revokeUserApiTokens(tx, now, userId)
      const joinRevoked = revokeJoinTokensOf(tx, now, userId)
      ctx.mail.enqueue(tx, 'password-changed', u.email, { name: mailName(u) })
      recordAudit(tx, ctx.clock, {
        kind: 'auth.password_change',
        actorUserId: userId,
        clientIp: req.clientIp,
        targetType: 'user',
        targetId: userId,
        detail: { sessions_revoked: sessionsRevoked, api_tokens_revoked: tokensRevoked, join_sessions_revoked: joinRevoked },
      })
    })
    ctx.mail.wake()
  }

  /** Confirms an email: unverified -> active, or -> pending_approval when admin approval is on. */
  verifyEmail(token: string, req: RequestInfo): { status: UserStatus } {
    const { ctx } = this
    const status = ctx.db.transaction((tx) => {
      const now = ctx.clock.now()
      const userId = consumeActionToken(tx, now, token, 'verify')
      const u = getUser(tx, userId)
      if (!u) throw new AppError('invalid_token', 'This link is invalid, was already used or has expired.')
      // The link reached this mailbox: the address is proven, which is what lets the account
      // take the address's pending invites by id (src/pools/membership.ts).
      if (u.emailVerifiedAt === null) tx.update(users).set({ emailVerifiedAt: now }).where(eq(users.id, userId)).run()
      if (u.status !== 'unverified') return u.status
      const next: UserStatus = ctx.cfg.requireAdminApproval ? 'pending_approval' : 'active'
      tx.update(users).set({ status: next, updatedAt: now }).where(eq(users.id, userId)).run()
      if (next === 'pending_approval') ctx.mail.enqueue(tx, 'pending-approval', u.email, { name: mailName({ ...u, emailVerifiedAt: now }) })
      recordAudit(tx, ctx.clock, { kind: 'auth.email_verified', actorUserId: userId, clientIp: req.clientIp, targetType: 'user', targetId: userId, detail: { status: next } })
      return next
    })
    ctx.mail.wake()
    return { status }
  }

  /** Sets the new password; answers the account's status (a new password opens only an active one). */
  async resetPassword(token: string, next: string, req: RequestInfo): Promise<UserStatus> {
    const { ctx } = this
    // Check the token before the slow hash, then consume it in the transaction that sets the hash.
    const peek = ctx.db.select().from(actionTokens).where(eq(actionTokens.tokenHash, sha256(token))).get()
    const u = peek ? getUser(ctx.db, peek.userId) : undefined
    if (!peek || !u || peek.kind !== 'reset' || peek.usedAt !== null || peek.expiresAt <= ctx.clock.now()) {
      throw new AppError('invalid_token', 'This link is invalid, was already used or has expired.')
    }
    const problem = passwordProblem(next, u.email)
    if (problem) throw invalid(problem, { errors: [{ path: '/new_password', message: problem }] })
    const hash = await hashPassword(next, this.hashes)
    ctx.db.transaction((tx) => {
      const now = ctx.clock.now()
      const userId = consumeActionToken(tx, now, token, 'reset')
      tx.update(users).set({ passwordHash: hash, updatedAt: now }).where(eq(users.id, userId)).run()
      // A reset is how an account is taken back: nothing issued before it may keep working,
      // API tokens included (a leaked token must not survive the owner's recovery).
      const sessionsRevoked = revokeUserSessions(tx, now, userId)
      const tokensRevoked = revokeUserApiTokens(tx, now, userId)
      const joinRevoked = revokeJoinTokensOf(tx, now, userId)
      clearAccountFailures(tx, u.email)
      ctx.mail.enqueue(tx, 'password-changed', u.email, { name: mailName(u) })
      recordAudit(tx, ctx.clock, {
        kind: 'auth.password_reset',
        actorUserId: userId,
        clientIp: req.clientIp,
        targetType: 'user',
        targetId: userId,
        detail: { sessions_revoked: sessionsRevoked, api_tokens_revoked: tokensRevoked, join_sessions_revoked: joinRevoked },
      })
    })
    ctx.mail.wake()
    return u.status
  }

  /** `svc admin create-user`: an active admin, created directly in the state file. */
  async createAdminUser(emailIn: string, password: string, displayName?: string): Promise<Me> {
    const ctx = this.ctx
    const email = normalizeEmail(emailIn)
    const nameProblem = displayName === undefined ? null : displayNameProblem(displayName)
    if (nameProblem) throw invalid(`display name ${nameProblem}`)
    const problem = passwordProblem(password, email)
    if (problem) throw invalid(problem)
    const passwordHash = await hashPassword(password)
    return ctx.db.transaction((tx) => {
      if (findUserByEmail(tx, email)) throw new AppError('email_taken', `An account with email ${email} already exists.`)
      const now = ctx.clock.now()
      const row: UserRow = { id: newId(), email, passwordHash, displayName: displayName ?? null, role: 'admin', status: 'active', createdAt: now, updatedAt: now, lastLoginAt: null, emailVerifiedAt: null, poolCount: 0, nodeCount: 0 }
      tx.insert(users).values(row).run()
      recordAudit(tx, ctx.clock, { kind: 'cli.create_user', targetType: 'user', targetId: row.id, detail: { role: 'admin' } })
      return toMe(row)
    })
  }

  /** `svc admin set-password`: new password, every session, API token and join token of that user revoked. */
  async setUserPassword(emailIn: string, password: string): Promise<{ revokedSessions: number; revokedApiTokens: number; revokedJoinTokens: number }> {
    const ctx = this.ctx
    const email = normalizeEmail(emailIn)
    const u = findUserByEmail(ctx.db, email)
    if (!u) throw new AppError('not_found', `No account with email ${email}.`)
    const problem = passwordProblem(password, email)
    if (problem) throw invalid(problem)
    const passwordHash = await hashPassword(password)
    return ctx.db.transaction((tx) => {
      const now = ctx.clock.now()
      tx.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, u.id)).run()
      const revokedSessions = revokeUserSessions(tx, now, u.id)
      const revokedApiTokens = revokeUserApiTokens(tx, now, u.id)
      const revokedJoinTokens = revokeJoinTokensOf(tx, now, u.id)
      clearAccountFailures(tx, email)
      recordAudit(tx, ctx.clock, {
        kind: 'cli.set_password',
        targetType: 'user',
        targetId: u.id,
        detail: { sessions_revoked: revokedSessions, api_tokens_revoked: revokedApiTokens, join_sessions_revoked: revokedJoinTokens },
      })
      return { revokedSessions, revokedApiTokens, revokedJoinTokens }
    })
  }
}

function notActiveReason(status: UserStatus): string {
  switch (status) {
    case 'unverified':
      return 'Confirm your email address first: follow the link we sent you.'
    case 'pending_approval':
      return 'Your account is waiting for an administrator to approve it.'
    case 'disabled':
      return 'Your account has been deactivated by an administrator.'
    default:
      return 'Your account is not active.'
  }
}

/**
 * What the API's DisplayName schema refuses, for callers without it (`svc admin create-user`):
 * control characters would break lines in logs, mails and terminals (an escape sequence could
 * repaint an operator's terminal).
 */
export function displayNameProblem(name: string): string | null {
  if (name.length < 1 || name.length > 100) return 'must be 1 to 100 characters long'
  if (!new RegExp(NO_CONTROL_PATTERN).test(name)) return 'must not hold control characters'
  return null
}
