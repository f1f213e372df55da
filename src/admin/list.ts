// The admin user list: search, filter, sort and paginate in SQL, pool and node counts included.
// The counts are columns of users kept by triggers (migration 0011), each sort has an index that
// ends in the email tie-break, and a search of three characters or more goes through a trigram
// index (users_fts, its rowids those of users): 100,000 users answer any page in milliseconds.
import { and, asc, count, desc, eq, inArray, or, sql, type SQL } from 'drizzle-orm'
import { users } from '../db/schema'
import { idnaASCII } from '../accounts/email'
import { iso, isoOrNull } from '../time'
import { READ_ONLY, type Db } from '../db/client'
import { DEFAULT_PAGE_SIZE, type AdminUser, type UserList, type UserListQuery, type UserSortKey } from './model'


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

/**
 * The FTS5 phrase for a search of three characters or more: the trigram index finds every row
 * with the text in its email or name, ignoring case (Unicode case folding). A shorter search has no
 * trigram; it is a LIKE over every user (ASCII case folding, as SQLite's LIKE does).
 */
function trigramPhrase(q: string): string | null {
  const forms = searchForms(q)
  return forms.every((f) => [...f].length >= 3) ? forms.map((f) => `"${f.replace(/"/g, '""')}"`).join(' OR ') : null
}

/**
 * The search as typed and, when it holds a domain in Unicode, that domain as addresses are stored
 * (IDNA A-labels: `bücher.example` is kept as `xn--bcher-kva.example`). Whole labels only: the
 * A-label of a piece of a label is another string.
 */
export function searchForms(q: string): string[] {
  if (!/[^\x00-\x7f]/.test(q)) return [q]
  const at = q.lastIndexOf('@')
  const domain = q.slice(at + 1)
  const ascii = domain === '' ? '' : idnaASCII(domain.toLowerCase())
  return ascii === '' || ascii === domain ? [q] : [q, q.slice(0, at + 1) + ascii]
}

/**
 * Up to this many matches, a search's page is read from the matches (a lookup each, then a sort);
 * past it, by walking the sort's index and keeping the matches (they are dense enough that a page
 * is near). Each lookup of a row costs a few microseconds; the walk, about 0.1 µs an entry.
 */
const SEARCH_LOOKUP_LIMIT = 1000

interface Search {
  phrase: string
  matches: number
}

function filters(query: UserListQuery, search: Search | null): SQL | undefined {
  const conds: SQL[] = []
  const q = query.q?.trim() ?? ''
  if (search) {
    // `+rowid` keeps SQLite from driving the query from the matches: it walks the sort's index.
    const rowid = search.matches <= SEARCH_LOOKUP_LIMIT ? sql`${users}.rowid` : sql`+${users}.rowid`
    conds.push(sql`${rowid} IN (SELECT rowid FROM users_fts WHERE users_fts MATCH ${search.phrase})`)
  } else if (q !== '') {
    // LIKE folds ASCII case; emails are stored lower-cased, so a lower-cased search also matches
    // non-ASCII emails. Display names fold ASCII letters only (SQLite without ICU).
    conds.push(
      or(
        ...searchForms(q).map((f) => sql`${users.email} LIKE ${likePattern(f.toLowerCase())} ESCAPE '\\'`),
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
      return [d(users.poolCount), d(users.email)]
    case 'node_count':
      return [d(users.nodeCount), d(users.email)]
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
  poolCount: users.poolCount,
  nodeCount: users.nodeCount,
}

type ItemRow = Pick<typeof users.$inferSelect, 'id' | 'email' | 'displayName' | 'role' | 'status' | 'createdAt' | 'lastLoginAt' | 'poolCount' | 'nodeCount'>

function toAdminUser(r: ItemRow): AdminUser {
  return {
    id: r.id,
    email: r.email,
    display_name: r.displayName,
    role: r.role,
    status: r.status,
    created_at: iso(r.createdAt),
    last_login_at: isoOrNull(r.lastLoginAt),
    pool_count: r.poolCount,
    node_count: r.nodeCount,
  }
}

/** Rows of the given users with their counts, in the order of `ids`. */
export function adminUsersByIds(db: Db, ids: string[]): AdminUser[] {
  if (ids.length === 0) return []
  const rows: ItemRow[] = db.select(itemColumns).from(users).where(inArray(users.id, ids)).all()
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
  // One read transaction: the total and the page describe the same moment.
  return db.transaction((tx) => {
    const phrase = trigramPhrase(query.q?.trim() ?? '')
    const search = phrase === null ? null : { phrase, matches: tx.values<[number]>(sql`SELECT count(*) FROM users_fts WHERE users_fts MATCH ${phrase}`)[0]![0] }
    const where = filters(query, search)
    const total = search && query.status === undefined && query.role === undefined ? search.matches : (tx.select({ n: count() }).from(users).where(where).get()?.n ?? 0)
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
  }, READ_ONLY)
}

export function pendingCount(db: Db): number {
  return db.select({ n: count() }).from(users).where(eq(users.status, 'pending_approval')).get()?.n ?? 0
}
