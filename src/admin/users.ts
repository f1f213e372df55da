// Admin row actions on user accounts. Each runs in one synchronous transaction that re-reads the
// acting admin and the target, checks, writes and audit-logs; mail is enqueued in that transaction
// and the sender woken after it commits.
// Service style: the `AdminUsers` class, built once in app.ts `createServices` and handed to the
// admin routes. Plain functions that take a `Db` (list.ts) are helpers other code composes.
import { and, count, eq, isNull, or, sql } from 'drizzle-orm'
import { actionTokens, apiTokens, loginFailures, mailOutbox, poolInvites, poolMembers, pools, sessions, users } from '../db/schema'
import { AppError, notFound } from '../errors'
import { recordAudit } from '../audit/service'
import { findUserByEmail, getUser, issueActionToken, mailName, normalizeEmail, type UserRow, type UserStatus } from '../accounts/service'
import { revokeUserSessions } from '../accounts/sessions'
import { revokeUserApiTokens } from '../accounts/api-tokens'
import { deletePoolRow, detachNodesOf, dropPoolInviteMail, revokeJoinTokensOf } from '../pools/service'
import { DAY_MS, iso } from '../time'
import type { Ctx } from '../context'
import type { Db } from '../db/client'
import type { AdminActor } from '../caller'
import { adminUsersByIds, listUsers, pendingCount } from './list'
import type { AdminUser, DeleteResult, ResendResult, ResetResult, TargetStatus, UpdateUserInput, UserList, UserListQuery } from './model'

/**
 * The caller's rights were checked when the request arrived; a concurrent demotion may have
 * landed since. Re-reading them here, in the writing transaction, keeps a just-demoted admin's
 * in-flight request from acting.
 */
function requireActingAdmin(tx: Db, actor: AdminActor): void {
  const me = getUser(tx, actor.userId)
  if (!me || me.role !== 'admin' || me.status !== 'active') throw new AppError('forbidden', 'Admins only.')
}

function loadTarget(tx: Db, id: string): UserRow {
  const u = getUser(tx, id)
  if (!u) throw notFound('User')
  return u
}

function activeAdminCount(tx: Db): number {
  return tx.select({ n: count() }).from(users).where(and(eq(users.role, 'admin'), eq(users.status, 'active'))).get()?.n ?? 0
}

/** Refuses to remove the last active admin; counted in the same transaction as the change. */
function guardLastAdmin(tx: Db, target: UserRow, action: 'demoted' | 'deactivated' | 'deleted'): void {
  if (target.role !== 'admin' || target.status !== 'active') return
  if (activeAdminCount(tx) <= 1) {
    throw new AppError('last_admin', `The last active admin cannot be ${action}; make another user an active admin first.`)
  }
}

/**
 * Guards against a leaked admin API token taking over or locking out its own admin (issue 26):
 * resetting, disabling or deleting one's own account, or changing one's own role or email (where
 * reset mail goes), needs a browser session, as changing one's password does.
 */
function requireSessionForSelf(actor: AdminActor, targetId: string): void {
  if (actor.userId === targetId && actor.via !== 'session') {
    throw new AppError('session_required', 'Changing your own account needs a browser session, not an API token.')
  }
}

const audit = (ctx: Ctx, tx: Db, actor: AdminActor, kind: string, targetId: string, detail?: Record<string, unknown>) =>
  recordAudit(tx, ctx.clock, { kind, actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'user', targetId, detail })

/** Runs `fn` in a transaction with the acting admin re-checked, then wakes the mail sender. */
function adminTx<T>(ctx: Ctx, actor: AdminActor, fn: (tx: Db, now: number) => T): T {
  const result = ctx.db.transaction((tx) => {
    requireActingAdmin(tx, actor)
    return fn(tx, ctx.clock.now())
  })
  ctx.mail.wake()
  return result
}

const userView = (tx: Db, id: string): AdminUser => adminUsersByIds(tx, [id])[0]!

/** Makes unused mailed links stop working: all of them on deactivation, the verify link on approval. */
function retireActionTokens(tx: Db, now: number, userId: string, kind?: 'verify'): void {
  const unused = and(eq(actionTokens.userId, userId), isNull(actionTokens.usedAt))
  tx.update(actionTokens).set({ usedAt: now }).where(kind ? and(unused, eq(actionTokens.kind, kind)) : unused).run()
}

export class AdminUsers {
  constructor(private readonly ctx: Ctx) {}

  /** One page of the user list (search, filter, sort), counts included. */
  list(query: UserListQuery): UserList {
    return listUsers(this.ctx.db, query)
  }

  /** Accounts waiting for an admin (the badge on the admin pages). */
  pendingCount(): number {
    return pendingCount(this.ctx.db)
  }

  update(actor: AdminActor, id: string, input: UpdateUserInput): AdminUser {
    const ctx = this.ctx
    return adminTx(ctx, actor, (tx, now) => {
      const u = loadTarget(tx, id)
      const set: Partial<UserRow> = {}
      const detail: Record<string, unknown> = {}
      if (input.display_name !== undefined) {
        const name = input.display_name?.trim() || null
        if (name !== u.displayName) set.displayName = name
      }
      if (input.email !== undefined) {
        const email = normalizeEmail(input.email)
        if (email !== u.email) {
          requireSessionForSelf(actor, id)
          if (findUserByEmail(tx, email)) throw new AppError('email_taken', 'An account with this email already exists.')
          set.email = email
          // A new address is unproven: it must not take that address's pending invites by id. And
          // the links mailed to the old one stop working, the reset link too: whoever holds the old
          // mailbox (the address was changed because it is not the person's any more) could
          // otherwise set a password and take the account.
          tx.update(users).set({ emailVerifiedAt: null }).where(eq(users.id, id)).run()
          retireActionTokens(tx, now, id)
        }
      }
      if (input.role !== undefined && input.role !== u.role) {
        requireSessionForSelf(actor, id)
        if (input.role === 'user') guardLastAdmin(tx, u, 'demoted')
        set.role = input.role
        detail.role = { from: u.role, to: input.role }
      }
      const fields = Object.keys(set).map((k) => (k === 'displayName' ? 'display_name' : k))
      if (fields.length > 0) {
        tx.update(users).set({ ...set, updatedAt: now }).where(eq(users.id, id)).run()
        // Field names only: the audit log outlives the account and must not keep old emails.
        audit(ctx, tx, actor, 'admin.user.update', id, { fields, ...detail })
      }
      return userView(tx, id)
    })
  }

  setStatus(actor: AdminActor, id: string, target: TargetStatus): AdminUser {
    const ctx = this.ctx
    return adminTx(ctx, actor, (tx, now) => {
      requireSessionForSelf(actor, id)
      const u = loadTarget(tx, id)
      if (u.status === target) return userView(tx, id) // idempotent: no second mail, no audit noise
      let detail: Record<string, unknown> = { from: u.status, to: target }
      if (target === 'disabled') {
        guardLastAdmin(tx, u, 'deactivated')
        tx.update(users).set({ status: 'disabled', updatedAt: now }).where(eq(users.id, id)).run()
        const sessionsRevoked = revokeUserSessions(tx, now, id)
        const tokensRevoked = revokeUserApiTokens(tx, now, id)
        // Its join tokens too: they failed while it was disabled and worked again once it was back.
        const joinRevoked = revokeJoinTokensOf(tx, now, id)
        retireActionTokens(tx, now, id)
        ctx.mail.enqueue(tx, 'account-deactivated', u.email, { name: mailName(u) })
        detail = { ...detail, sessions_revoked: sessionsRevoked, api_tokens_revoked: tokensRevoked, join_sessions_revoked: joinRevoked }
      } else {
        if (u.status !== 'disabled') {
          throw new AppError('conflict', `The account is ${u.status}; approve it instead of reactivating it.`, { account_status: u.status })
        }
        tx.update(users).set({ status: 'active', updatedAt: now }).where(eq(users.id, id)).run()
      }
      audit(ctx, tx, actor, 'admin.user.status', id, detail)
      return userView(tx, id)
    })
  }

  approve(actor: AdminActor, id: string): AdminUser {
    const ctx = this.ctx
    return adminTx(ctx, actor, (tx, now) => {
      const u = loadTarget(tx, id)
      const approvable: UserStatus[] = ['pending_approval', 'unverified']
      if (!approvable.includes(u.status)) {
        throw new AppError('conflict', `The account is ${u.status}; only pending or unverified accounts can be approved.`, { account_status: u.status })
      }
      // A verification link sent before stays good: it no longer moves the status, but it still
      // proves the address, which invites by email need (it used to die here, and nothing could
      // send another).
      tx.update(users).set({ status: 'active', updatedAt: now }).where(eq(users.id, id)).run()
      ctx.mail.enqueue(tx, 'account-approved', u.email, { name: mailName(u) })
      audit(ctx, tx, actor, 'admin.user.approve', id, { from: u.status })
      return userView(tx, id)
    })
  }

  issuePasswordReset(actor: AdminActor, id: string): ResetResult {
    const ctx = this.ctx
    return adminTx(ctx, actor, (tx, now) => {
      requireSessionForSelf(actor, id)
      const u = loadTarget(tx, id)
      const token = issueActionToken(tx, now, id, 'reset')
      const path = `/reset-password?token=${token}`
      const delivery = ctx.mail.enabled ? 'mail' : 'link'
      if (delivery === 'mail') ctx.mail.enqueue(tx, 'password-reset', u.email, { name: mailName(u), link: `${ctx.cfg.baseUrl}${path}` })
      audit(ctx, tx, actor, 'admin.user.reset_password', id, { delivery })
      const expires_at = iso(now + DAY_MS)
      return delivery === 'mail' ? { delivery, expires_at } : { delivery, link: path, expires_at }
    })
  }

  resendVerification(actor: AdminActor, id: string): ResendResult {
    const ctx = this.ctx
    return adminTx(ctx, actor, (tx, now) => {
      const u = loadTarget(tx, id)
      if (!ctx.mail.enabled) throw new AppError('mail_disabled', 'Mail is not configured; approve the account instead.')
      // An account approved before its owner used the link still has an unproven address.
      if (u.emailVerifiedAt !== null) throw new AppError('conflict', 'The address is already verified.', { account_status: u.status })
      if (u.status === 'disabled') throw new AppError('conflict', 'The account is disabled; reactivate it first.', { account_status: u.status })
      const token = issueActionToken(tx, now, id, 'verify')
      ctx.mail.enqueue(tx, 'verify-email', u.email, { name: mailName(u), link: `${ctx.cfg.baseUrl}/verify-email?token=${token}` })
      audit(ctx, tx, actor, 'admin.user.resend_verification', id)
      return { delivery: 'mail' as const, expires_at: iso(now + DAY_MS) }
    })
  }

  /**
   * The GDPR cascade, in SPEC.md's order, all in one transaction: refuse the last active admin
   * before anything is touched; delete owned pools (nodes detached); drop other memberships;
   * revoke API tokens; remove the user row with its sessions and action tokens. Also goes: the
   * failed-login counters and queued or sent mail addressed to the account (personal data).
   * Nodes the user attached to other pools leave them with the memberships (detached).
   */
  delete(actor: AdminActor, id: string): DeleteResult & { fellowIds: string[]; poolIds: string[] } {
    const ctx = this.ctx
    return adminTx(ctx, actor, (tx, now) => {
      requireSessionForSelf(actor, id)
      const u = loadTarget(tx, id)
      guardLastAdmin(tx, u, 'deleted')
      const owned = tx.select({ id: pools.id }).from(pools).where(eq(pools.ownerUserId, id)).all()
      const fellowIds: string[] = []
      for (const p of owned) {
        dropPoolInviteMail(ctx, tx, p.id)
        fellowIds.push(...deletePoolRow(tx, ctx.clock, p.id, true, { userId: actor.userId, role: 'admin', clientIp: actor.clientIp }).fellowIds)
      }
      // Dropping the memberships is leaving those pools: the machines the user added there leave
      // too (detached, told to stop), as when a member leaves; nobody outside a pool keeps
      // machines in it. (They stayed, unattributed, receiving the pools' jobs and chats.)
      fellowIds.push(...detachNodesOf(tx, id))
      const membershipsRemoved = tx.delete(poolMembers).where(eq(poolMembers.userId, id)).run().changes as number
      const apiTokensRevoked = revokeUserApiTokens(tx, now, id)
      tx.delete(apiTokens).where(eq(apiTokens.userId, id)).run()
      const sessionsRemoved = tx.delete(sessions).where(eq(sessions.userId, id)).run().changes as number
      tx.delete(actionTokens).where(eq(actionTokens.userId, id)).run()
      const pair = `pair:${u.email}|`
      tx.delete(loginFailures)
        .where(or(eq(loginFailures.key, `account:${u.email}`), sql`substr(${loginFailures.key}, 1, ${pair.length}) = ${pair}`))
        .run()
      tx.delete(mailOutbox).where(eq(mailOutbox.toEmail, u.email)).run()
      tx.update(poolInvites).set({ invitedBy: null }).where(eq(poolInvites.invitedBy, id)).run()
      tx.delete(users).where(eq(users.id, id)).run()
      const result = {
        deleted: true as const,
        pools_deleted: owned.length,
        memberships_removed: membershipsRemoved,
        api_tokens_revoked: apiTokensRevoked,
        sessions_removed: sessionsRemoved,
        nodes_detached: fellowIds.length,
      }
      const { deleted: _, ...counts } = result
      audit(ctx, tx, actor, 'admin.user.delete', id, counts)
      return { ...result, fellowIds, poolIds: owned.map((p) => p.id) }
    })
  }
}
