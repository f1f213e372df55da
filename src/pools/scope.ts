// Pool scoping, the service concern every feature shares: which pools a caller may see. A fellow,
// job or model outside them is "not found" to that caller.
import { eq, sql } from 'drizzle-orm'
import { poolMembers, pools } from '../db/schema'
import { perDb, type Db } from '../db/client'
import type { Caller } from '../caller'

/**
 * The two lookups every scoped request makes, prepared once per database: built through drizzle
 * per call they were a tenth of the leader's CPU while 1,000 chat streams opened (issue 22).
 */
const lookupsOf = perDb((db) => ({
  memberships: db.select({ poolId: poolMembers.poolId }).from(poolMembers).where(eq(poolMembers.userId, sql.placeholder('user'))).prepare(),
  pool: db.select({ id: pools.id }).from(pools).where(eq(pools.id, sql.placeholder('id'))).prepare(),
}))

/** The pools whose fellows a caller may see: its memberships; null means every pool (admins). */
export function scopeOf(db: Db, caller: Caller): Set<string> | null {
  if (caller.kind === 'anonymous') return caller.open ? null : new Set()
  if (caller.kind === 'node') return new Set(caller.poolId ? [caller.poolId] : [])
  if (caller.role === 'admin') return null
  return new Set(lookupsOf(db).memberships.all({ user: caller.userId }).map((r) => r.poolId))
}

/** Whether a pool exists. */
export function poolExists(db: Db, poolId: string): boolean {
  return lookupsOf(db).pool.get({ id: poolId }) !== undefined
}

export function inScope(scope: Set<string> | null, poolId: string | null): boolean {
  return scope === null || (poolId !== null && scope.has(poolId))
}
