// Pool scoping, the service concern every feature shares: which pools a caller may see. A fellow,
// job or model outside them is "not found" to that caller.
import { eq } from 'drizzle-orm'
import { poolMembers } from '../db/schema'
import type { Db } from '../db/client'
import type { Caller } from '../caller'

/** The pools whose fellows a caller may see: its memberships; null means every pool (admins). */
export function scopeOf(db: Db, caller: Caller): Set<string> | null {
  if (caller.kind === 'anonymous') return caller.open ? null : new Set()
  if (caller.kind === 'node') return new Set(caller.poolId ? [caller.poolId] : [])
  if (caller.role === 'admin') return null
  return new Set(db.select({ poolId: poolMembers.poolId }).from(poolMembers).where(eq(poolMembers.userId, caller.userId)).all().map((r) => r.poolId))
}

export function inScope(scope: Set<string> | null, poolId: string | null): boolean {
  return scope === null || (poolId !== null && scope.has(poolId))
}
