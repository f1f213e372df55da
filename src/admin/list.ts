// The admin user list: search, filter, sort and paginate in SQL, pool and node counts included.
// The page is picked first (ids only), then the counts are computed for those rows alone, so a
// sort on an indexed column never pays two subqueries for every user in the table.
import { and, asc, count, desc, eq, inArray, or, sql, type SQL } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { users } from '../db/schema'
import { iso, isoOrNull } from '../time'
import type { Db } from '../db/client'
import { DEFAULT_PAGE_SIZE, type AdminUser, type UserList, type UserListQuery, type UserSortKey } from './model'

/** Pools the user belongs to (the owner is a member too). */
export const poolCountOf = (id: SQLiteColumn | SQL) => sql<number>`(SELECT count(*) FROM pool_members pm WHERE pm.user_id = ${id})`
/** Nodes the user attached, whatever pool they are in. */
export const nodeCountOf = (id: SQLiteColumn | SQL) => sql<number>`(SELECT count(*) FROM pool_nodes pn WHERE pn.owner_user_id = ${id})`

// Times and counts read best newest / largest first; names alphabetically.
const DEFAULT_ORDER: Record<UserSortKey, 'asc' | 'desc'> = {
  email: 'asc',
  display_name: 'asc',
  created_at: 'desc',
  last_login_at: 'desc',
  pool_count: 'desc',
  node_count: 'desc',
}

/** `%` and `_` in a search are literal characters, not wildcards. */
export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => '\\' + c)}%`
}

function filters(query: UserListQuery): SQL | undefined {
  const conds: SQL[] = []
  const q = query.q?.trim() ?? ''
  if (q !== '') {
    // LIKE folds ASCII case; emails are stored lower-cased, so a lower-cased search also matches
    // non-ASCII emails. Display names fold ASCII letters only (SQLite without ICU).
    conds.push(
      or(
        sql`${users.email} LIKE ${likePattern(q.toLowerCase())} ESCAPE '\\'`,
        sql`${users.displayName} LIKE ${likePattern(q)} ESCAPE '\\'`,
      )!,
    )
  }
  if (query.status !== undefined) conds.push(eq(users.status, query.status))
  if (query.role !== undefined) conds.push(eq(users.role, query.role))
  return conds.length > 0 ? and(...conds) : undefined
}

/**
 * A total order for every key, ties broken by the email (unique). Accounts without a display
 * name come last in both directions (a page of blanks first helps nobody); "never logged in"
 * counts as the oldest login: last newest-first, first oldest-first, which finds dormant accounts.
 * Each order but the counts is served by an index (schema.ts), so deep pages stay cheap.
 */
function ordering(key: UserSortKey, dir: 'asc' | 'desc'): SQL[] {
  const d = dir === 'asc' ? asc : desc
  switch (key) {
    case 'email':
      return [d(users.email)]
    case 'display_name':
      return [sql`${users.displayName} IS NULL`, d(sql`${users.displayName} COLLATE NOCASE`), d(users.email)]
    case 'created_at':
      return [d(users.createdAt), d(users.email)]
    case 'last_login_at':
      return [d(users.lastLoginAt), d(users.email)]
    case 'pool_count':
      return [d(poolCountOf(users.id)), d(users.email)]
    case 'node_count':
      return [d(nodeCountOf(users.id)), d(users.email)]
  }
}

const itemColumns = {
  id: users.id,
  email: users.email,
  displayName: users.displayName,
  role: users.role,
  status: users.status,
  createdAt: users.createdAt,
  lastLoginAt: users.lastLoginAt,
  poolCount: poolCountOf(users.id),
  nodeCount: nodeCountOf(users.id),
}

type ItemRow = Pick<typeof users.$inferSelect, 'id' | 'email' | 'displayName' | 'role' | 'status' | 'createdAt' | 'lastLoginAt'> & {
  poolCount: number
  nodeCount: number
}

function toAdminUser(r: ItemRow): AdminUser {
  return {
    id: r.id,
    email: r.email,
    display_name: r.displayName,
    role: r.role,
    status: r.status,
    created_at: iso(r.createdAt),
    last_login_at: isoOrNull(r.lastLoginAt),
    pool_count: Number(r.poolCount),
    node_count: Number(r.nodeCount),
  }
}

/** Rows of the given users with their counts, in the order of `ids`. */
export function adminUsersByIds(db: Db, ids: string[]): AdminUser[] {
  if (ids.length === 0) return []
  const rows = db.select(itemColumns).from(users).where(inArray(users.id, ids)).all() as ItemRow[]
  const byId = new Map(rows.map((r) => [r.id, r]))
  return ids.flatMap((id) => {
    const r = byId.get(id)
    return r ? [toAdminUser(r)] : []
  })
}

export function listUsers(db: Db, query: UserListQuery): UserList {
  const page = query.page ?? 1
  const pageSize = query.page_size ?? DEFAULT_PAGE_SIZE
  const key = query.sort ?? 'created_at'
  const where = filters(query)
  // One read transaction: the total and the page describe the same moment.
  return db.transaction((tx) => {
    const total = tx.select({ n: count() }).from(users).where(where).get()?.n ?? 0
    const ids = tx
      .select({ id: users.id })
      .from(users)
      .where(where)
      .orderBy(...ordering(key, query.order ?? DEFAULT_ORDER[key]))
      .limit(pageSize)
      .offset((page - 1) * pageSize)
      .all()
      .map((r) => r.id)
    return { items: adminUsersByIds(tx, ids), total, page, page_size: pageSize }
  })
}

export function pendingCount(db: Db): number {
  return db.select({ n: count() }).from(users).where(eq(users.status, 'pending_approval')).get()?.n ?? 0
}
