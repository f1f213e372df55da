// Failed-login counters per (account, IP) pair and per account, kept in the state file so that a
// restart does not hand an attacker a fresh set of guesses. Unknown emails are counted the same
// way as known ones, so lockout behaviour does not reveal which accounts exist.
import { eq, inArray, lt, and, or, isNull } from 'drizzle-orm'
import { loginFailures } from '../db/schema'
import { limitKey } from '../http/ip'
import type { Ctx } from '../context'
import type { Db } from '../db/client'

// An IPv6 client is its /64 (limitKey): a machine's own addresses are one address here.
const pairKey = (email: string, ip: string) => `pair:${email}|${limitKey(ip)}`
const accountKey = (email: string) => `account:${email}`

/** Seconds until the pair or the account may try again; 0 when not locked. */
export function lockedForSeconds(ctx: Ctx, email: string, ip: string): number {
  const now = ctx.clock.now()
  const rows = ctx.db
    .select({ lockedUntil: loginFailures.lockedUntil })
    .from(loginFailures)
    .where(inArray(loginFailures.key, [pairKey(email, ip), accountKey(email)]))
    .all()
  const until = Math.max(0, ...rows.map((r) => r.lockedUntil ?? 0))
  return until > now ? Math.ceil((until - now) / 1000) : 0
}

export interface FailureOutcome {
  pairLocked: boolean
  accountLocked: boolean
}

/** Counts one failure against both counters; locks a counter that reaches its threshold. */
export function recordLoginFailure(ctx: Ctx, email: string, ip: string): FailureOutcome {
  const { cfg } = ctx
  const now = ctx.clock.now()
  const bump = (key: string, threshold: number, lockMs: number): boolean => {
    const row = ctx.db.select().from(loginFailures).where(eq(loginFailures.key, key)).get()
    // A counter starts over once its lock has passed, or after a quiet spell as long as the lock.
    const stale = !row || (row.lockedUntil !== null ? row.lockedUntil <= now : now - row.lastAt >= lockMs)
    const count = stale ? 1 : row.count + 1
    const lockedUntil = count >= threshold ? now + lockMs : null
    ctx.db
      .insert(loginFailures)
      .values({ key, count, lastAt: now, lockedUntil })
      .onConflictDoUpdate({ target: loginFailures.key, set: { count, lastAt: now, lockedUntil } })
      .run()
    return lockedUntil !== null
  }
  return ctx.db.transaction(() => ({
    pairLocked: bump(pairKey(email, ip), cfg.loginLockoutThreshold, cfg.loginLockoutSeconds * 1000),
    accountLocked: bump(accountKey(email), cfg.accountLockoutThreshold, cfg.accountLockoutSeconds * 1000),
  }))
}

export function clearLoginFailures(db: Db, email: string, ip: string): void {
  db.delete(loginFailures).where(inArray(loginFailures.key, [pairKey(email, ip), accountKey(email)])).run()
}

export function clearAccountFailures(db: Db, email: string): void {
  db.delete(loginFailures).where(eq(loginFailures.key, accountKey(email))).run()
}

/** Drops counters that are neither locked nor recent (the purge loop). */
export function purgeLoginFailures(ctx: Ctx): number {
  const now = ctx.clock.now()
  const quiet = now - Math.max(ctx.cfg.loginLockoutSeconds, ctx.cfg.accountLockoutSeconds) * 1000
  return ctx.db
    .delete(loginFailures)
    .where(and(lt(loginFailures.lastAt, quiet), or(isNull(loginFailures.lockedUntil), lt(loginFailures.lockedUntil, now))))
    .run().changes
}
