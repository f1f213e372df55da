// The audit log: auth events and admin actions, each with the caller's client IP. Written by every
// feature (recordAudit, inside the caller's transaction); read by the admin route (listAudit):
// newest first, filtered by kind (exact, or a prefix ending in '.'), actor, target and time window,
// a page at a time from a cursor. Every filter has an index ending in (ts, id) (schema.ts), so a
// page is an index walk however long the log: 1,000,000 entries answer in about a millisecond.
import { and, desc, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm'
import { auditLog, users } from '../db/schema'
import { newId } from '../crypto'
import { READ_ONLY, type Db } from '../db/client'
import { iso, type Clock } from '../time'
import { invalid } from '../errors'
import { DEFAULT_PAGE_SIZE } from '../model'
import { cursorOf, parseCursor } from '../db/keyset'
import type { AuditEntry as AuditView, AuditList, AuditQuery } from './model'

export interface AuditEntry {
  kind: string
  actorUserId?: string | null
  clientIp?: string | null
  targetType?: string | null
  targetId?: string | null
  detail?: Record<string, unknown>
}

export function recordAudit(db: Db, clock: Clock, e: AuditEntry): void {
  db.insert(auditLog)
    .values({
      id: newId(),
      ts: clock.now(),
      kind: e.kind,
      actorUserId: e.actorUserId ?? null,
      clientIp: e.clientIp ?? null,
      targetType: e.targetType ?? null,
      targetId: e.targetId ?? null,
      detail: e.detail === undefined ? null : JSON.stringify(e.detail),
    })
    .run()
}

function instant(name: 'since' | 'until', v: string): number {
  const ms = Date.parse(v)
  if (Number.isNaN(ms)) throw invalid(`${name} is not a timestamp`, { errors: [{ path: `/${name}`, message: 'expected an ISO 8601 date-time' }] })
  return ms
}

/** A kind prefix ('auth.') as a range: no wildcard escaping, and an index serves it. '/' is the
 * character after '.', so [auth., auth/) holds exactly the kinds under auth. */
function kindRange(kind: string): [string, string] | null {
  return kind.endsWith('.') ? [kind, kind.slice(0, -1) + '/'] : null
}

function filters(q: AuditQuery, kindIndexed: boolean): SQL[] {
  const conds: SQL[] = []
  if (q.kind !== undefined) {
    const range = kindRange(q.kind)
    // `+kind` keeps SQLite off the kind index: it walks the (ts, id) index and filters instead.
    const kind = kindIndexed ? sql`${auditLog.kind}` : sql`+${auditLog.kind}`
    if (range) conds.push(sql`${kind} >= ${range[0]}`, sql`${kind} < ${range[1]}`)
    else conds.push(eq(auditLog.kind, q.kind))
  }
  if (q.actor !== undefined) conds.push(eq(auditLog.actorUserId, q.actor))
  if (q.target !== undefined) conds.push(eq(auditLog.targetId, q.target))
  if (q.since !== undefined) conds.push(gte(auditLog.ts, instant('since', q.since)))
  if (q.until !== undefined) conds.push(lt(auditLog.ts, instant('until', q.until)))
  return conds
}

/** Entries counted at most: past it the total says "at least" (total_exact false). */
export const AUDIT_TOTAL_CAP = 10_000

/** Stored detail is JSON written by recordAudit; anything else is handed back as text, not dropped. */
function parseDetail(raw: string | null): Record<string, unknown> | null {
  if (raw === null) return null
  try {
    const v: unknown = JSON.parse(raw)
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v }
  } catch {
    return { raw }
  }
}

function toView(r: typeof auditLog.$inferSelect, actorEmail: string | null): AuditView {
  return {
    id: r.id,
    ts: iso(r.ts),
    kind: r.kind,
    actor_user_id: r.actorUserId,
    actor_email: actorEmail,
    client_ip: r.clientIp,
    target_type: r.targetType,
    target_id: r.targetId,
    detail: parseDetail(r.detail),
  }
}

export function listAudit(db: Db, q: AuditQuery): AuditList {
  if (q.cursor !== undefined && q.page !== undefined) throw invalid('use cursor or page, not both', { errors: [{ path: '/page', message: 'not with cursor' }] })
  const page = q.page ?? 1
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZE
  const after = q.cursor === undefined ? null : parseCursor(q.cursor)
  return db.transaction((tx) => {
    // Counted up to the cap (an index range, under a millisecond): an exact count of a million
    // entries took 70 ms, and "10,000 or more" is all a reader of a total that large takes in.
    const where = filters(q, true)
    const counted = tx.values<[number]>(sql`SELECT count(*) FROM (SELECT 1 FROM ${auditLog} ${where.length > 0 ? sql`WHERE ${and(...where)}` : sql``} LIMIT ${AUDIT_TOTAL_CAP + 1})`)[0]![0]
    // A kind prefix alone picks its plan by that count: a common one walks the log newest first
    // and filters (a page is near); a rare one sorts its few (ts, id) from the kind index, where
    // the walk would pass over most of the log to fill a page.
    const prefixOnly = q.kind !== undefined && kindRange(q.kind) !== null && q.actor === undefined && q.target === undefined
    const conds = prefixOnly && counted > AUDIT_TOTAL_CAP ? filters(q, false) : where
    if (after) conds.push(sql`(${auditLog.ts}, ${auditLog.id}) < (${after.ts}, ${after.id})`)
    const ids = tx
      .select({ id: auditLog.id })
      .from(auditLog)
      .where(conds.length > 0 ? and(...conds) : undefined)
      // Ids are UUIDv7: within one millisecond they keep the order entries were written in.
      .orderBy(desc(auditLog.ts), desc(auditLog.id))
      .limit(pageSize + 1)
      .offset(after ? 0 : (page - 1) * pageSize)
      .all()
      .map((r) => r.id)
    const more = ids.length > pageSize
    if (more) ids.pop()
    // The actor's address as it is now (null once the account is deleted): the audit page names people.
    const rows =
      ids.length === 0
        ? []
        : tx
            .select({ a: auditLog, email: users.email })
            .from(auditLog)
            .leftJoin(users, eq(users.id, auditLog.actorUserId))
            .where(inArray(auditLog.id, ids))
            .orderBy(desc(auditLog.ts), desc(auditLog.id))
            .all()
    const last = rows.at(-1)?.a
    return {
      items: rows.map((r) => toView(r.a, r.email)),
      total: Math.min(counted, AUDIT_TOTAL_CAP),
      total_exact: counted <= AUDIT_TOTAL_CAP,
      page: after ? null : page,
      page_size: pageSize,
      next_cursor: more && last ? cursorOf(last) : null,
    }
  }, READ_ONLY)
}
