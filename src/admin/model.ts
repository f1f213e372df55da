// Wire shapes of the admin routes: user management and the mail status (the audit log's are in
// src/audit/model.ts).
import { t, type Static } from 'elysia'
import { DisplayName, Email, Me, Role, UserStatus } from '../accounts/model'
import { NO_CONTROL_PATTERN, Page, PageSize, Timestamp, Int } from '../model'

export const USER_SORT_KEYS = ['email', 'display_name', 'created_at', 'last_login_at', 'pool_count', 'node_count'] as const
export type UserSortKey = (typeof USER_SORT_KEYS)[number]
export { MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE } from '../model'
const Order = t.Union([t.Literal('asc'), t.Literal('desc')])

export const UserListQuery = t.Object(
  {
    q: t.Optional(t.String({ maxLength: 254, pattern: NO_CONTROL_PATTERN })),
    status: t.Optional(UserStatus),
    role: t.Optional(Role),
    sort: t.Optional(t.Union(USER_SORT_KEYS.map((k) => t.Literal(k)))),
    order: t.Optional(Order),
    page: t.Optional(Page),
    page_size: t.Optional(PageSize),
  },
  { additionalProperties: false },
)
export type UserListQuery = Static<typeof UserListQuery>

// The account fields of /auth/me, plus the two counts the admin table sorts by.
export const AdminUser = t.Composite([
  Me,
  t.Object({
    /** Pools the user belongs to, owned ones included (pool_members rows). */
    pool_count: Int(),
    /** Nodes the user attached, in any pool (pool_nodes.owner_user_id). */
    node_count: Int(),
  }),
])
export type AdminUser = Static<typeof AdminUser>

export const UserList = t.Object({ items: t.Array(AdminUser), total: Int(), page: Int(), page_size: Int() })
export type UserList = Static<typeof UserList>

export const UserParams = t.Object({ id: t.String({ format: 'uuid' }) })

export const UpdateUserBody = t.Object(
  { display_name: t.Optional(t.Nullable(DisplayName)), email: t.Optional(Email), role: t.Optional(Role) },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateUserInput = Static<typeof UpdateUserBody>

export const StatusBody = t.Object({ status: t.Union([t.Literal('disabled'), t.Literal('active')]) }, { additionalProperties: false })
export type TargetStatus = Static<typeof StatusBody>['status']

export const PendingCount = t.Object({ count: Int() })

export const ResetResult = t.Object({
  delivery: t.Union([t.Literal('mail'), t.Literal('link')]),
  /** Only without SMTP: the one-time `/reset-password?token=` path, shown to the admin once. */
  link: t.Optional(t.String()),
  expires_at: Timestamp,
})
export type ResetResult = Static<typeof ResetResult>

export const ResendResult = t.Object({ delivery: t.Literal('mail'), expires_at: Timestamp })
export type ResendResult = Static<typeof ResendResult>

export const DeleteResult = t.Object({
  deleted: t.Literal(true),
  pools_deleted: Int(),
  memberships_removed: Int(),
  api_tokens_revoked: Int(),
  sessions_removed: Int(),
  nodes_detached: Int(),
})
export type DeleteResult = Static<typeof DeleteResult>

// The audit log's shapes are the audit feature's (src/audit/model.ts).
export { AuditQuery, AuditEntry, AuditList } from '../audit/model'

export const FailedMail = t.Object({
  to: t.String(),
  template: t.String(),
  attempts: Int(),
  /** The SMTP server's reply, or why the mail could not be built. */
  last_error: t.Union([t.String(), t.Null()]),
  queued_at: Timestamp,
})

export const MailState = t.Object({
  configured: t.Boolean(),
  status: t.Union([t.Literal('configured'), t.Literal('disabled')]),
  pending: Int(),
  failed: Int(),
  sent: Int(),
  /** The ten mails given up most recently, the last attempt first. */
  recent_failures: t.Array(FailedMail),
})
export type MailState = Static<typeof MailState>
export const MailTestResult = t.Object({ sent: t.Literal(true), to: t.String() })
