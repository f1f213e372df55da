// Wire shapes of reading the audit log (GET /api/v1/admin/audit).
import { t, type Static } from 'elysia'
import { Page, PageSize, Timestamp, Int } from '../model'

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
export const AuditList = t.Object({
  items: t.Array(AuditEntry),
  /** Matching entries, counted up to 10,000: past that, the cap and total_exact false. */
  total: Int(),
  total_exact: t.Boolean(),
  /** The page asked for; null when the list was read from a cursor. */
  page: t.Nullable(Int()),
  page_size: Int(),
  /** Pass as `cursor` for the entries after this page; null on the last page. */
  next_cursor: t.Nullable(t.String()),
})
export type AuditList = Static<typeof AuditList>
