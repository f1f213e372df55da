// Pool membership: invites by email, join requests, approval, leaving and removal.
import { and, asc, eq, gt } from 'drizzle-orm'
import { joinRequests, poolInvites, poolMembers, pools, users } from '../db/schema'
import { AppError, notFound } from '../errors'
import { newId } from '../crypto'
import { recordAudit } from '../audit/service'
import { DAY_MS, iso } from '../time'
import { getUser } from '../accounts/service'
import { getVisiblePool, memberRole, requireMember, requireOwner, type Actor } from './service'
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

/** Owner or admin invites an email; a pending invite to the same address is refreshed, not duplicated. */
export function inviteToPool(ctx: Ctx, actor: Actor, poolId: string, emailIn: string) {
  const email = emailIn.trim().toLowerCase()
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
    let row: InviteRow
    if (existing) {
      row = { ...existing, expiresAt: now + INVITE_TTL_MS, invitedBy: actor.userId }
      tx.update(poolInvites).set({ expiresAt: row.expiresAt, invitedBy: row.invitedBy }).where(eq(poolInvites.id, row.id)).run()
    } else {
      row = { id: newId(), poolId, email, invitedBy: actor.userId, status: 'pending', createdAt: now, expiresAt: now + INVITE_TTL_MS }
      tx.insert(poolInvites).values(row).run()
    }
    const inviter = getUser(tx, actor.userId)
    ctx.mail.enqueue(tx, 'pool-invite', email, {
      pool_name: pool.name,
      inviter: inviter?.displayName ?? inviter?.email ?? 'An administrator',
      link: `${ctx.cfg.baseUrl}/dashboard`,
    })
    recordAudit(tx, ctx.clock, { kind: 'pool.invite', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId, detail: { email, refreshed: existing !== undefined } })
    return { invite: toInvite(row, pool.name), created: existing === undefined }
  })
  ctx.mail.wake()
  return result
}

export function myInvites(db: Db, now: number, userId: string) {
  const me = getUser(db, userId)
  if (!me) return []
  return db
    .select({ invite: poolInvites, poolName: pools.name })
    .from(poolInvites)
    .innerJoin(pools, eq(pools.id, poolInvites.poolId))
    .where(and(eq(poolInvites.email, me.email), eq(poolInvites.status, 'pending'), gt(poolInvites.expiresAt, now)))
    .orderBy(asc(poolInvites.createdAt))
    .all()
    .map((r) => toInvite(r.invite, r.poolName))
}

/** Accepting needs the invitee's own email (case-insensitive); the invitee becomes a `member`. */
export function acceptInvite(ctx: Ctx, actor: Actor, inviteId: string) {
  return ctx.db.transaction((tx) => {
    const row = tx.select({ invite: poolInvites, poolName: pools.name }).from(poolInvites).innerJoin(pools, eq(pools.id, poolInvites.poolId)).where(eq(poolInvites.id, inviteId)).get()
    if (!row || row.invite.status !== 'pending') throw notFound('Invite')
    const now = ctx.clock.now()
    if (row.invite.expiresAt <= now) throw new AppError('gone', 'This invite has expired; ask for a new one.')
    const me = getUser(tx, actor.userId)
    if (!me || me.email !== row.invite.email) throw new AppError('invite_email_mismatch', 'This invite was sent to a different email address.')
    if (memberRole(tx, row.invite.poolId, actor.userId) === null) {
      tx.insert(poolMembers).values({ poolId: row.invite.poolId, userId: actor.userId, role: 'member', createdAt: now }).run()
    }
    tx.update(poolInvites).set({ status: 'accepted' }).where(eq(poolInvites.id, inviteId)).run()
    tx.delete(joinRequests).where(and(eq(joinRequests.poolId, row.invite.poolId), eq(joinRequests.userId, actor.userId))).run()
    recordAudit(tx, ctx.clock, { kind: 'pool.invite_accept', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: row.invite.poolId })
    return toInvite({ ...row.invite, status: 'accepted' }, row.poolName)
  })
}

/** Public + open join: member now. Public otherwise: a pending request. Private: not found. */
export function joinPool(ctx: Ctx, actor: Actor, poolId: string): { status: 'joined' | 'pending' | 'member' } {
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
    tx.insert(joinRequests).values({ poolId, userId: actor.userId, status: 'pending', createdAt: now }).onConflictDoNothing().run()
    recordAudit(tx, ctx.clock, { kind: 'pool.join_request', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId })
    return { status: 'pending' as const }
  })
}

export function listJoinRequests(db: Db, actor: Actor, poolId: string) {
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

export function approveJoinRequest(ctx: Ctx, actor: Actor, poolId: string, userId: string): { status: 'joined' } {
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

export function listMembers(db: Db, actor: Actor, poolId: string) {
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

/** A member leaves, or the owner/an admin removes someone. The owner cannot be removed (409). */
export function removeMember(ctx: Ctx, actor: Actor, poolId: string, userId: string): void {
  ctx.db.transaction((tx) => {
    const pool = getVisiblePool(tx, actor, poolId)
    const self = userId === actor.userId
    if (!self) requireOwner(tx, actor, pool)
    const role = memberRole(tx, poolId, userId)
    if (role === null) throw notFound('Member')
    if (role === 'owner') throw new AppError('owner_cannot_leave', 'The pool owner cannot be removed; delete the pool instead.')
    tx.delete(poolMembers).where(and(eq(poolMembers.poolId, poolId), eq(poolMembers.userId, userId))).run()
    recordAudit(tx, ctx.clock, { kind: self ? 'pool.leave' : 'pool.member_remove', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: poolId, detail: { user_id: userId } })
  })
}
