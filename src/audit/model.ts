// Wire shapes of reading the audit log (GET /api/v1/admin/audit).
import { t, type Static } from 'elysia'
import { CursorList, Page, PageSize, Timestamp, Int } from '../model'

export const AuditQuery = t.Object(
  {
    kind: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
    actor: t.Optional(t.String({ format: 'uuid' })),
    target: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    since: t.Optional(t.String({ format: 'date-time' })),
    until: t.Optional(t.String({ format: 'date-time' })),
    page: t.Optional(Page),
    page_size: t.Optional(PageSize),
    cursor: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
)
export type AuditQuery = Static<typeof AuditQuery>

export const AuditEntry = t.Object({
  id: t.String(),
  ts: Timestamp,
  kind: t.String(),
  actor_user_id: t.Nullable(t.String()),
  actor_email: t.Nullable(t.String()),
  client_ip: t.Nullable(t.String()),
  target_type: t.Nullable(t.String()),
  target_id: t.Nullable(t.String()),
  detail: t.Nullable(t.Record(t.String(), t.Unknown())),
})
export type AuditEntry = Static<typeof AuditEntry>
/** Matching entries are counted up to 10,000 (AUDIT_TOTAL_CAP). */
export const AuditList = CursorList(AuditEntry)
export type AuditList = Static<typeof AuditList>
