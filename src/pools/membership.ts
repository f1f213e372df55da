// Pool membership: invites by email, join requests, approval, leaving and removal.
// Service style: the `Memberships` class, built once in app.ts `createServices` and handed to the
// pool routes; what it shares with `Pools` are the Db-first transaction helpers of ./service.
import { and, asc, count, eq, gt, isNull, min, ne, sql } from 'drizzle-orm'
import { auditLog, joinRequests, mailOutbox, poolInvites, poolMembers, pools, users } from '../db/schema'
import { AppError, notFound } from '../errors'
import { hmac, newId, safeEqual } from '../crypto'
import { recordAudit } from '../audit/service'
import { DAY_MS, iso } from '../time'
import { getUser, mailName, normalizeEmail } from '../accounts/service'
import { detachNodesOf, dropInviteMail, getVisiblePool, memberRole, requireMember, requireOwner, revokeJoinTokensOf } from './service'
import type { Actor } from '../caller'
import type { Ctx } from '../context'
import type { Db } from '../db/client'

const INVITE_TTL_MS = 7 * DAY_MS

type InviteRow = typeof poolInvites.$inferSelect

function toInvite(r: InviteRow, poolName: string) {
  return {
    id: r.id,
    pool_id: r.poolId,
    pool_name: poolName,
    email: r.email,
    invited_by: r.invitedBy,
    status: r.status,
    created_at: iso(r.createdAt),
    expires_at: iso(r.expiresAt),
  }
}

/**
 * The secret of an invite's link, derived from SVC_SECRET_KEY (nothing stored): proof that the
 * caller holds the invitation mail (or the link its inviter passed on), for an account whose
 * address is not verified. Bound to the invite, its pool and its address.
 */
function inviteToken(ctx: Ctx, r: Pick<InviteRow, 'id' | 'poolId' | 'email'>): string {
  return hmac(ctx.cfg.secretKey, `svc pool invite v1\n${r.id}\n${r.poolId}\n${r.email}`)
}

function inviteLink(ctx: Ctx, r: InviteRow): string {
  return `${ctx.cfg.baseUrl}/dashboard?invite=${encodeURIComponent(r.id)}&token=${inviteToken(ctx, r)}`
}


/**
 * Caps on invite mail, checked before a mail is queued (issue 26, item 6: twenty invite mails to
 * one address, with attacker-chosen pool names). A non-admin may have SVC_MAX_PENDING_INVITES_PER_USER
 * pending invites out (409 `invite_limit`); an address gets at most SVC_MAX_INVITE_MAILS_PER_ADDRESS
 * invite mails per 24 hours from all pools together (429), which also bounds deleting and
 * re-creating a pool to mail again.
 */
function checkInviteCaps(ctx: Ctx, tx: Db, actor: Actor, email: string, now: number): void {
  if (actor.role !== 'admin') {
    const limit = ctx.cfg.maxPendingInvitesPerUser
    const pending =
      tx
        .select({ n: count() })
        .from(poolInvites)
        .where(and(eq(poolInvites.invitedBy, actor.userId), eq(poolInvites.status, 'pending'), gt(poolInvites.expiresAt, now)))
        .get()?.n ?? 0
    if (pending >= limit) {
      throw new AppError('invite_limit', `You already have ${limit === 1 ? '1 pending invitation' : `${limit} pending invitations`}, the most one person may have open. Wait until some are accepted or expire.`, { limit })
    }
    // Withdrawing an invite takes it off the pending count, not its mail off the wire: invite,
    // withdraw, invite again mailed any number of addresses a text of the inviter's choosing (the
    // pool name). So twice that number bounds the invite mails one sends in 24 hours (room for
    // invites accepted or withdrawn and made again; the audit log keeps them all, with whether a
    // mail went out).
    if (ctx.mail.enabled) {
      const mailed =
        tx
          .select({ n: count() })
          .from(auditLog)
          .where(and(eq(auditLog.actorUserId, actor.userId), eq(auditLog.kind, 'pool.invite'), gt(auditLog.ts, now - DAY_MS), sql`json_extract(${auditLog.detail}, '$.mailed') = 1`))
          .get()?.n ?? 0
      if (mailed >= 2 * limit) {
        throw new AppError('invite_limit', `You have sent ${mailed} invitation mails in the last 24 hours, the most one person may; try again tomorrow.`, { limit: 2 * limit })
      }
    }
  }
  if (!ctx.mail.enabled) return
  const limit = ctx.cfg.maxInviteMailsPerAddress
  const recent = tx
    .select({ n: count(), oldest: min(mailOutbox.createdAt) })
    .from(mailOutbox)
    .where(and(eq(mailOutbox.toEmail, email), gt(mailOutbox.createdAt, now - DAY_MS), eq(mailOutbox.template, 'pool-invite')))
    .get()
  if (recent && recent.n >= limit) {
    const retryAfterS = ((recent.oldest ?? now) + DAY_MS - now) / 1000
    throw new AppError('rate_limited', `${email} has been sent ${limit === 1 ? '1 invitation' : `${limit} invitations`} in the last 24 hours, the most an address gets; try again later.`, { retryAfterS })
  }
}

/** Whether the user has asked to join the pool and is still waiting (the pool page keeps "Ask to join" off). */
export function hasPendingJoinRequest(db: Db, poolId: string, userId: string): boolean {
  return db.select({ u: joinRequests.userId }).from(joinRequests).where(and(eq(joinRequests.poolId, poolId), eq(joinRequests.userId, userId), eq(joinRequests.status, 'pending'))).get() !== undefined
}

export class Memberships {
  constructor(private readonly ctx: Ctx) {}

  /**
   * Owner or admin invites an email. While a pending invite to that address is open, inviting again
   * answers it (200) with its expiry extended and queues no mail; otherwise (new, or expired) the
   * invite mail goes out (201), within the caps above. The inviter gets the invite's link.
   */
  invite(actor: Actor, poolId: string, emailIn: string) {
    const ctx = this.ctx
    const email = normalizeEmail(emailIn) // the form accounts store, so an IDN invitee matches
    const result = ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, poolId)
      requireOwner(tx, actor, pool)
      const invitee = tx.select({ id: users.id }).from(users).where(eq(users.email, email)).get()
      if (invitee && memberRole(tx, poolId, invitee.id) !== null) throw new AppError('conflict', `${email} is already a member of this pool.`)
      const now = ctx.clock.now()
      const existing = tx
        .select()
        .from(poolInvites)
        .where(and(eq(poolInvites.poolId, poolId), eq(poolInvites.email, email), eq(poolInvites.status, 'pending')))
        .get()
      const open = existing !== undefined && existing.expiresAt > now
      if (!open) checkInviteCaps(ctx, tx, actor, email, now)
      let row: InviteRow
      if (existing) {
        row = { ...existing, expiresAt: now + INVITE_TTL_MS, invitedBy: actor.userId }
        tx.update(poolInvites).set({ expiresAt: row.expiresAt, invitedBy: row.invitedBy }).where(eq(poolInvites.id, row.id)).run()
      } else {
        row = { id: newId(), poolId, email, invitedBy: actor.userId, status: 'pending', createdAt: now, expiresAt: now + INVITE_TTL_MS }
        tx.insert(poolInvites).values(row).run()
      }
      const link = inviteLink(ctx, row)
      if (!open) {
        const inviter = getUser(tx, actor.userId)
        ctx.mail.enqueue(tx, 'pool-invite', email, {
          pool_name: pool.name,
          inviter: inviter ? mailName(inviter) : 'An administrator',
          link,
        })
      }
      recordAudit(tx, ctx.clock, { kind: 'pool.invite', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId, detail: { email, refreshed: existing !== undefined, mailed: !open && ctx.mail.enabled } })
      // `mailed`: whether a mail went out now, so the page says "not mailed, pass the link on" when not.
      return { invite: { ...toInvite(row, pool.name), invite_link: link, mailed: !open && ctx.mail.enabled }, created: !open }
    })
    ctx.mail.wake()
    return result
  }

  /** The pool's pending, unexpired invites with their links (owner or admin), to pass on or revoke. */
  listPoolInvites(actor: Actor, poolId: string) {
    const ctx = this.ctx
    const pool = getVisiblePool(ctx.db, actor, poolId)
    requireOwner(ctx.db, actor, pool)
    return ctx.db
      .select()
      .from(poolInvites)
      .where(and(eq(poolInvites.poolId, poolId), eq(poolInvites.status, 'pending'), gt(poolInvites.expiresAt, ctx.clock.now())))
      .orderBy(asc(poolInvites.createdAt))
      .all()
      .map((r) => ({ ...toInvite(r, pool.name), invite_link: inviteLink(ctx, r) }))
  }

  /** Owner or admin withdraws a pending invite; its link stops working (the row is gone). */
  revokeInvite(actor: Actor, poolId: string, inviteId: string): void {
    const ctx = this.ctx
    ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, poolId)
      requireOwner(tx, actor, pool)
      const row = tx.select().from(poolInvites).where(and(eq(poolInvites.id, inviteId), eq(poolInvites.poolId, poolId), eq(poolInvites.status, 'pending'))).get()
      if (!row) throw notFound('Invite')
      tx.delete(poolInvites).where(eq(poolInvites.id, inviteId)).run()
      dropInviteMail(ctx, tx, [row])
      recordAudit(tx, ctx.clock, { kind: 'pool.invite_revoke', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId, detail: { email: row.email } })
    })
  }

  /**
   * Pending, unexpired invites to the caller's address, listed (and acceptable by id) only once that
   * address is verified: an account that merely registered the address first must not see them.
   */
  listMyInvites(userId: string) {
    const db = this.ctx.db
    const now = this.ctx.clock.now()
    const me = getUser(db, userId)
    if (!me || me.emailVerifiedAt === null) return []
    return db
      .select({ invite: poolInvites, poolName: pools.name })
      .from(poolInvites)
      .innerJoin(pools, eq(pools.id, poolInvites.poolId))
      .where(and(eq(poolInvites.email, me.email), eq(poolInvites.status, 'pending'), gt(poolInvites.expiresAt, now)))
      .orderBy(asc(poolInvites.createdAt))
      .all()
      .map((r) => toInvite(r.invite, r.poolName))
  }

  /**
   * Accepting needs the invitee's own email (case-insensitive) and either a verified address or the
   * invite link's token: with email verification off, whoever registered the address first used to
   * take its invites (issue 26, item 9). The invitee becomes a `member`.
   */
  accept(actor: Actor, inviteId: string, token?: string) {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      const row = tx.select({ invite: poolInvites, poolName: pools.name }).from(poolInvites).innerJoin(pools, eq(pools.id, poolInvites.poolId)).where(eq(poolInvites.id, inviteId)).get()
      if (!row || row.invite.status !== 'pending') throw notFound('Invite')
      const now = ctx.clock.now()
      if (row.invite.expiresAt <= now) throw new AppError('gone', 'This invite has expired; ask for a new one.')
      const me = getUser(tx, actor.userId)
      if (!me || me.email !== row.invite.email) throw new AppError('invite_email_mismatch', 'This invite was sent to a different email address.')
      if (token !== undefined) {
        if (!safeEqual(token, inviteToken(ctx, row.invite))) {
          throw new AppError('invalid_token', 'This invitation link is not valid; open the link from the invitation email again, or ask for a new invitation.')
        }
      } else if (me.emailVerifiedAt === null) {
        throw new AppError('email_not_verified', 'Your email address is not verified: accept the invitation through the link in the invitation email.')
      }
      if (memberRole(tx, row.invite.poolId, actor.userId) === null) {
        tx.insert(poolMembers).values({ poolId: row.invite.poolId, userId: actor.userId, role: 'member', createdAt: now }).run()
      }
      tx.update(poolInvites).set({ status: 'accepted' }).where(eq(poolInvites.id, inviteId)).run()
      tx.delete(joinRequests).where(and(eq(joinRequests.poolId, row.invite.poolId), eq(joinRequests.userId, actor.userId))).run()
      recordAudit(tx, ctx.clock, { kind: 'pool.invite_accept', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: row.invite.poolId, detail: { via: token !== undefined ? 'link' : 'verified_email' } })
      return toInvite({ ...row.invite, status: 'accepted' }, row.poolName)
    })
  }

  /** Public + open join: member now. Public otherwise: a pending request. Private: not found. */
  join(actor: Actor, poolId: string): { status: 'joined' | 'pending' | 'member' } {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, poolId)
      if (pool.my_role !== null) return { status: 'member' as const }
      if (pool.visibility !== 'public') throw notFound('Pool') // only an admin can see a private pool it is not in
      const now = ctx.clock.now()
      if (pool.open_join) {
        tx.insert(poolMembers).values({ poolId, userId: actor.userId, role: 'member', createdAt: now }).run()
        tx.delete(joinRequests).where(and(eq(joinRequests.poolId, poolId), eq(joinRequests.userId, actor.userId))).run()
        recordAudit(tx, ctx.clock, { kind: 'pool.join', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId })
        return { status: 'joined' as const }
      }
      // One request per person and pool: a pending one stays as it is (its place in the owner's
      // list), and the approved one a former member left behind becomes a new request (it was
      // kept, and the new ask was swallowed while the person was told it was pending).
      tx.insert(joinRequests)
        .values({ poolId, userId: actor.userId, status: 'pending', createdAt: now })
        .onConflictDoUpdate({ target: [joinRequests.poolId, joinRequests.userId], set: { status: 'pending', createdAt: now }, setWhere: ne(joinRequests.status, 'pending') })
        .run()
      recordAudit(tx, ctx.clock, { kind: 'pool.join_request', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId })
      return { status: 'pending' as const }
    })
  }

  listJoinRequests(actor: Actor, poolId: string) {
    const db = this.ctx.db
    const pool = getVisiblePool(db, actor, poolId)
    requireOwner(db, actor, pool)
    return db
      .select({ r: joinRequests, email: users.email, displayName: users.displayName })
      .from(joinRequests)
      .innerJoin(users, eq(users.id, joinRequests.userId))
      .where(and(eq(joinRequests.poolId, poolId), eq(joinRequests.status, 'pending')))
      .orderBy(asc(joinRequests.createdAt))
      .all()
      .map(({ r, email, displayName }) => ({ pool_id: r.poolId, user_id: r.userId, email, display_name: displayName, status: r.status, created_at: iso(r.createdAt) }))
  }

  /** Pending join requests to every pool the caller owns, for the dashboard. */
  listOwnedJoinRequests(actor: Actor) {
    const db = this.ctx.db
    return db
      .select({ r: joinRequests, email: users.email, displayName: users.displayName, poolName: pools.name })
      .from(joinRequests)
      .innerJoin(users, eq(users.id, joinRequests.userId))
      .innerJoin(pools, eq(pools.id, joinRequests.poolId))
      .innerJoin(poolMembers, and(eq(poolMembers.poolId, joinRequests.poolId), eq(poolMembers.userId, actor.userId), eq(poolMembers.role, 'owner')))
      .where(eq(joinRequests.status, 'pending'))
      .orderBy(asc(joinRequests.createdAt))
      .all()
      .map(({ r, email, displayName, poolName }) => ({ pool_id: r.poolId, pool_name: poolName, user_id: r.userId, email, display_name: displayName, status: r.status, created_at: iso(r.createdAt) }))
  }

  /**
   * Owner or admin turns a request down: the row goes (no schema state for "rejected"), so the
   * person may ask again later, as after an owner removed them.
   */
  reject(actor: Actor, poolId: string, userId: string): { status: 'rejected' } {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, poolId)
      requireOwner(tx, actor, pool)
      const req = tx.select().from(joinRequests).where(and(eq(joinRequests.poolId, poolId), eq(joinRequests.userId, userId), eq(joinRequests.status, 'pending'))).get()
      if (!req) throw notFound('Join request')
      tx.delete(joinRequests).where(and(eq(joinRequests.poolId, poolId), eq(joinRequests.userId, userId))).run()
      recordAudit(tx, ctx.clock, { kind: 'pool.join_reject', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId, detail: { user_id: userId } })
      return { status: 'rejected' as const }
    })
  }

  approve(actor: Actor, poolId: string, userId: string): { status: 'joined' } {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, poolId)
      requireOwner(tx, actor, pool)
      const req = tx.select().from(joinRequests).where(and(eq(joinRequests.poolId, poolId), eq(joinRequests.userId, userId), eq(joinRequests.status, 'pending'))).get()
      if (!req) throw notFound('Join request')
      tx.update(joinRequests).set({ status: 'approved' }).where(and(eq(joinRequests.poolId, poolId), eq(joinRequests.userId, userId))).run()
      if (memberRole(tx, poolId, userId) === null) {
        tx.insert(poolMembers).values({ poolId, userId, role: 'member', createdAt: ctx.clock.now() }).run()
      }
      recordAudit(tx, ctx.clock, { kind: 'pool.join_approve', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId, detail: { user_id: userId } })
      return { status: 'joined' as const }
    })
  }

  listMembers(actor: Actor, poolId: string) {
    const db = this.ctx.db
    requireMember(db, actor, poolId)
    return db
      .select({ m: poolMembers, email: users.email, displayName: users.displayName })
      .from(poolMembers)
      .innerJoin(users, eq(users.id, poolMembers.userId))
      .where(eq(poolMembers.poolId, poolId))
      .orderBy(asc(poolMembers.createdAt))
      .all()
      .map(({ m, email, displayName }) => ({ user_id: m.userId, email, display_name: displayName, role: m.role, joined_at: iso(m.createdAt) }))
  }

  /**
   * A member leaves, or the owner/an admin removes someone. The owner cannot be removed (409). The
   * machines they added to the pool leave with them (detached; the caller tells them to stop), and
   * the join commands they made stop working: someone outside the pool must not keep machines in
   * it, which would go on receiving its jobs, their data and its chats.
   */
  remove(actor: Actor, poolId: string, userId: string): { fellowIds: string[] } {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, poolId)
      const self = userId === actor.userId
      if (!self) requireOwner(tx, actor, pool)
      const role = memberRole(tx, poolId, userId)
      if (role === null) throw notFound('Member')
      if (role === 'owner') throw new AppError('owner_cannot_leave', 'The pool owner cannot be removed; delete the pool instead.')
      tx.delete(poolMembers).where(and(eq(poolMembers.poolId, poolId), eq(poolMembers.userId, userId))).run()
      const fellowIds = detachNodesOf(tx, userId, poolId)
      const revoked = revokeJoinTokensOf(tx, ctx.clock.now(), userId, poolId)
      recordAudit(tx, ctx.clock, {
        kind: self ? 'pool.leave' : 'pool.member_remove',
        actorUserId: actor.userId,
        clientIp: actor.clientIp,
        targetType: 'pool',
        targetId: poolId,
        detail: { user_id: userId, detached_nodes: fellowIds.length, join_sessions_revoked: revoked },
      })
      return { fellowIds }
    })
  }
}
