// Personal API tokens (svc_pat_...). A token acts as its owner; a disabled owner's tokens stop.
import { and, eq, isNull, desc, lt, or, sql } from 'drizzle-orm'
import { apiTokens, users } from '../db/schema'
import { sessionLive } from './sessions'
import { randomToken, sha256, newId, TOKEN_PREFIX } from '../crypto'
import { AppError, notFound } from '../errors'
import { DAY_MS, iso, isoOrNull } from '../time'
import type { Ctx } from '../context'
import { perDb, type Db } from '../db/client'
import type { UserCaller } from '../caller'
import type { ApiTokenRecord } from './model'

type Row = typeof apiTokens.$inferSelect

function toRecord(r: Row, email: string): ApiTokenRecord {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    user_id: r.userId,
    user_email: email,
    created_at: iso(r.createdAt),
    last_used_at: isoOrNull(r.lastUsedAt),
    expires_at: isoOrNull(r.expiresAt),
    revoked_at: isoOrNull(r.revokedAt),
  }
}

/**
 * Refuses unless `sessionId` is a live session of `userId`: checked by the token mint right before
 * it inserts (one synchronous step), since a token is how a session would outlive a password change
 * that ended it while the request was on its way.
 */
export function requireLiveSession(ctx: Ctx, userId: string, sessionId: string): void {
  if (!sessionLive(ctx, userId, sessionId)) throw new AppError('unauthorized', 'This session has ended; log in again.')
}

export function mintApiToken(ctx: Ctx, userId: string, name: string, expiresInDays?: number): ApiTokenRecord & { token: string } {
  const now = ctx.clock.now()
  const token = randomToken(TOKEN_PREFIX.apiToken)
  const row: Row = {
    id: newId(),
    userId,
    name: name.trim(),
    prefix: token.slice(0, TOKEN_PREFIX.apiToken.length + 4),
    tokenHash: sha256(token),
    createdAt: now,
    lastUsedAt: null,
    expiresAt: expiresInDays === undefined ? null : now + expiresInDays * DAY_MS,
    revokedAt: null,
  }
  ctx.db.insert(apiTokens).values(row).run()
  return { ...toRecord(row, emailOf(ctx.db, userId)), token }
}

const emailOf = (db: Db, userId: string) => db.select({ email: users.email }).from(users).where(eq(users.id, userId)).get()?.email ?? ''

export function listApiTokens(ctx: Ctx, caller: UserCaller): ApiTokenRecord[] {
  const q = ctx.db.select({ t: apiTokens, email: users.email }).from(apiTokens).innerJoin(users, eq(users.id, apiTokens.userId))
  const rows = caller.role === 'admin' ? q.orderBy(desc(apiTokens.createdAt)).all() : q.where(eq(apiTokens.userId, caller.userId)).orderBy(desc(apiTokens.createdAt)).all()
  return rows.map((r) => toRecord(r.t, r.email))
}

/** Revokes a token the caller may see; anyone else's token is "not found", not "forbidden". */
export function revokeApiToken(ctx: Ctx, caller: UserCaller, id: string): ApiTokenRecord {
  const row = ctx.db.select().from(apiTokens).where(eq(apiTokens.id, id)).get()
  if (!row || (caller.role !== 'admin' && row.userId !== caller.userId)) throw notFound('API token')
  if (row.revokedAt === null) {
    row.revokedAt = ctx.clock.now()
    ctx.db.update(apiTokens).set({ revokedAt: row.revokedAt }).where(eq(apiTokens.id, id)).run()
  }
  return toRecord(row, emailOf(ctx.db, row.userId))
}

/** How long a revoked or expired token stays listed (with its revoked_at / expires_at) before it goes. */
export const DEAD_TOKEN_KEEP_MS = 30 * DAY_MS

/** Deletes tokens revoked or expired more than 30 days ago: the list (an admin's holds every user's) grew with each token ever made. */
export function purgeApiTokens(ctx: Ctx): number {
  const cutoff = ctx.clock.now() - DEAD_TOKEN_KEEP_MS
  return ctx.db.delete(apiTokens).where(or(lt(apiTokens.revokedAt, cutoff), lt(apiTokens.expiresAt, cutoff))).run().changes
}

export function revokeUserApiTokens(db: Db, now: number, userId: string): number {
  return db.update(apiTokens).set({ revokedAt: now }).where(and(eq(apiTokens.userId, userId), isNull(apiTokens.revokedAt))).run().changes
}

// last_used_at is written at most once a minute per token: no write per request on the hot path.
const LAST_USED_GRANULARITY_MS = 60_000

/**
 * The API-token lookup, prepared once per database: every chat request presents a token, and
 * building the query through drizzle each time was a sixth of the leader's CPU under 1,000
 * streams opening at once (issue 22's profile of the inference bench).
 */
const tokenLookup = perDb((db) =>
  db
    .select({ id: apiTokens.id, expiresAt: apiTokens.expiresAt, revokedAt: apiTokens.revokedAt, lastUsedAt: apiTokens.lastUsedAt, userId: users.id, role: users.role, status: users.status })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(eq(apiTokens.tokenHash, sql.placeholder('hash')))
    .prepare(),
)

export function resolveApiToken(ctx: Ctx, token: string): UserCaller | null {
  const row = tokenLookup(ctx.db).get({ hash: sha256(token) })
  const now = ctx.clock.now()
  if (!row || row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now) || row.status !== 'active') return null
  if (row.lastUsedAt === null || now - row.lastUsedAt >= LAST_USED_GRANULARITY_MS) {
    ctx.db.update(apiTokens).set({ lastUsedAt: now }).where(eq(apiTokens.id, row.id)).run()
  }
  return { kind: 'user', userId: row.userId, role: row.role, via: 'api_token', credentialId: row.id, fromCookie: false }
}
