// The audit log: auth events and admin actions, each with the caller's client IP. Written by every
// feature (recordAudit, inside the caller's transaction); read by the admin route (listAudit):
// newest first, filtered by kind (exact, or a prefix ending in '.'), actor and time window.
import { and, count, desc, eq, gte, lt, type SQL } from 'drizzle-orm'
import { auditLog, users } from '../db/schema'
import { newId } from '../crypto'
import type { Db } from '../db/client'
import { iso, type Clock } from '../time'
import { invalid } from '../errors'
import { DEFAULT_PAGE_SIZE } from '../model'
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

function filters(q: AuditQuery): SQL | undefined {
  const conds: SQL[] = []
  if (q.kind !== undefined) {
    if (q.kind.endsWith('.')) {
      // A range instead of LIKE: no wildcard escaping, and the kind index serves it.
      // '/' is the character after '.', so [auth., auth/) holds exactly the kinds under auth.
      conds.push(gte(auditLog.kind, q.kind), lt(auditLog.kind, q.kind.slice(0, -1) + '/'))
    } else conds.push(eq(auditLog.kind, q.kind))
  }
  if (q.actor !== undefined) conds.push(eq(auditLog.actorUserId, q.actor))
  if (q.since !== undefined) conds.push(gte(auditLog.ts, instant('since', q.since)))
  if (q.until !== undefined) conds.push(lt(auditLog.ts, instant('until', q.until)))
  return conds.length > 0 ? and(...conds) : undefined
}

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
  const page = q.page ?? 1
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZE
  const where = filters(q)
  return db.transaction((tx) => {
    const total = tx.select({ n: count() }).from(auditLog).where(where).get()?.n ?? 0
    // The actor's address as it is now (null once the account is deleted): the audit page names people.
    const rows = tx
      .select({ a: auditLog, email: users.email })
      .from(auditLog)
      .leftJoin(users, eq(users.id, auditLog.actorUserId))
      .where(where)
      // Ids are UUIDv7: within one millisecond they keep the order entries were written in.
      .orderBy(desc(auditLog.ts), desc(auditLog.id))
      .limit(pageSize)
      .offset((page - 1) * pageSize)
      .all()
    return { items: rows.map((r) => toView(r.a, r.email)), total, page, page_size: pageSize }
  })
}
