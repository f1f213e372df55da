// Browser sessions: 32 random bytes in the svc_session cookie, only the SHA-256 stored.
import { and, eq, isNull, lt, ne, or, isNotNull, sql } from 'drizzle-orm'
import { sessions, users } from '../db/schema'
import { randomToken, sha256, newId } from '../crypto'
import { HOUR_MS } from '../time'
import type { Ctx } from '../context'
import { perDb, type Db } from '../db/client'
import type { UserCaller } from '../caller'

export interface NewSession {
  id: string
  token: string
  expiresAt: number
}

export function createSession(ctx: Ctx, userId: string, clientIp: string | null, db: Db = ctx.db): NewSession {
  const token = randomToken()
  const now = ctx.clock.now()
  const expiresAt = now + ctx.cfg.sessionTtlHours * HOUR_MS
  const id = newId()
  db.insert(sessions).values({ id, userId, tokenHash: sha256(token), createdAt: now, expiresAt, clientIp }).run()
  return { id, token, expiresAt }
}

/** The session lookup, prepared once per database (every signed-in request makes it; see api-tokens.ts). */
const sessionLookup = perDb((db) =>
  db
    .select({ id: sessions.id, expiresAt: sessions.expiresAt, revokedAt: sessions.revokedAt, userId: users.id, role: users.role, status: users.status })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(eq(sessions.tokenHash, sql.placeholder('hash')))
    .prepare(),
)

export function resolveSession(ctx: Ctx, token: string, fromCookie: boolean): UserCaller | null {
  const row = sessionLookup(ctx.db).get({ hash: sha256(token) })
  if (!row || row.revokedAt !== null || row.expiresAt <= ctx.clock.now() || row.status !== 'active') return null
  return { kind: 'user', userId: row.userId, role: row.role, via: 'session', credentialId: row.id, fromCookie }
}

export function revokeSession(ctx: Ctx, sessionId: string): void {
  ctx.db.update(sessions).set({ revokedAt: ctx.clock.now() }).where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt))).run()
}

/** Revokes every live session of a user, except `keepId` (the caller's own, on password change). */
export function revokeUserSessions(db: Db, now: number, userId: string, keepId?: string): number {
  const where = keepId
    ? and(eq(sessions.userId, userId), isNull(sessions.revokedAt), ne(sessions.id, keepId))
    : and(eq(sessions.userId, userId), isNull(sessions.revokedAt))
  return db.update(sessions).set({ revokedAt: now }).where(where).run().changes
}

/** Deletes sessions that expired or were revoked more than a day ago. */
export function purgeSessions(ctx: Ctx): number {
  const cutoff = ctx.clock.now() - 24 * HOUR_MS
  return ctx.db
    .delete(sessions)
    .where(or(lt(sessions.expiresAt, cutoff), and(isNotNull(sessions.revokedAt), lt(sessions.revokedAt, cutoff))))
    .run().changes
}
