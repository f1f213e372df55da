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

type SessionRow = { revokedAt: number | null; expiresAt: number; status: string }

/** A session that lets its person in now: not revoked, not expired, its account active. */
const isLive = (row: SessionRow | undefined, now: number): row is SessionRow => row !== undefined && row.revokedAt === null && row.expiresAt > now && row.status === 'active'

export function resolveSession(ctx: Ctx, token: string, fromCookie: boolean): UserCaller | null {
  const row = sessionLookup(ctx.db).get({ hash: sha256(token) })
  if (!isLive(row, ctx.clock.now())) return null
  return { kind: 'user', userId: row.userId, role: row.role, via: 'session', credentialId: row.id, fromCookie }
}

/** Whether the session `sessionId` of `userId` still lets them in (the same rule as resolveSession). */
export function sessionLive(ctx: Ctx, userId: string, sessionId: string): boolean {
  const row = ctx.db
    .select({ revokedAt: sessions.revokedAt, expiresAt: sessions.expiresAt, status: users.status })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId)))
    .get()
  return isLive(row, ctx.clock.now())
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
