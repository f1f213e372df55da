// Wire shapes of the pool routes.
import { t, type Static } from 'elysia'
import { Label, Timestamp, Int } from '../model'
// Registers the `email` format InviteBody uses (SMTPUTF8 local parts, IDN domains).
import '../accounts/email'

export const Visibility = t.Union([t.Literal('public'), t.Literal('private')])
export const MemberRole = t.Union([t.Literal('owner'), t.Literal('member')])
export const Slug = t.String({ pattern: '^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$', maxLength: 48, 'x-rule': "1 to 48 lower-case letters, digits or '-', starting and ending with a letter or digit" })
const Name = Label(100)
const Description = t.String({ maxLength: 2000 })
const NodeLimit = t.Nullable(Int({ minimum: 0, maximum: 1_000_000 }))

export const Pool = t.Object({
  id: t.String(),
  name: t.String(),
  slug: t.String(),
  description: t.String(),
  visibility: Visibility,
  node_limit: t.Nullable(Int()),
  open_join: t.Boolean(),
  owner_user_id: t.Nullable(t.String()),
  is_default: t.Boolean(),
  node_count: Int(),
  member_count: Int(),
  created_at: Timestamp,
  my_role: t.Nullable(MemberRole),
})
export type Pool = Static<typeof Pool>
export const PoolList = t.Object({ items: t.Array(Pool) })

export const CreatePoolBody = t.Object(
  {
    name: Name,
    slug: t.Optional(Slug),
    description: t.Optional(Description),
    visibility: t.Optional(Visibility),
    node_limit: t.Optional(NodeLimit),
    open_join: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
)
export type CreatePoolInput = Static<typeof CreatePoolBody>

// No slug: it is fixed at creation, so a PATCH naming it is refused (422) by the schema.
export const UpdatePoolBody = t.Object(
  {
    name: t.Optional(Name),
    description: t.Optional(Description),
    visibility: t.Optional(Visibility),
    node_limit: t.Optional(NodeLimit),
    open_join: t.Optional(t.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdatePoolInput = Static<typeof UpdatePoolBody>

export const DeleteQuery = t.Object({ force: t.Optional(t.Union([t.Literal('true'), t.Literal('false')])) }, { additionalProperties: false })
export const DeleteResult = t.Object({ deleted: t.Literal(true), detached_nodes: Int() })

export const Limits = t.Object({
  role: t.String(),
  max_pools: t.Nullable(Int()),
  max_nodes_per_pool: t.Nullable(Int()),
  allowed_visibilities: t.Array(Visibility),
  pools_owned: Int(),
  plan: t.String(),
})
export const RoleLimitsList = t.Object({ items: t.Array(t.Omit(Limits, ['pools_owned', 'plan'])) })
export const RoleLimitsPatch = t.Object(
  {
    max_pools: t.Optional(t.Nullable(Int({ minimum: 0, maximum: 1_000_000 }))),
    max_nodes_per_pool: t.Optional(NodeLimit),
    allowed_visibilities: t.Optional(t.Array(Visibility, { minItems: 1, uniqueItems: true })),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const Invite = t.Object({
  id: t.String(),
  pool_id: t.String(),
  pool_name: t.String(),
  email: t.String(),
  invited_by: t.Nullable(t.String()),
  status: t.Union([t.Literal('pending'), t.Literal('accepted')]),
  created_at: Timestamp,
  expires_at: Timestamp,
})
export const InviteList = t.Object({ items: t.Array(Invite) })
/** What the inviter gets: the invite and its link, to pass on when mail is off or lost. */
export const InviteCreated = t.Composite([Invite, t.Object({ invite_link: t.String(), mailed: t.Boolean() })])
/** A pending invite as its pool's owner sees it: with the link to pass on again. */
export const PoolInvite = t.Composite([Invite, t.Object({ invite_link: t.String() })])
export const PoolInviteList = t.Object({ items: t.Array(PoolInvite) })
export const PoolInviteParams = t.Object({ id: t.String({ format: 'uuid' }), invite_id: t.String({ format: 'uuid' }) })
/** `token`: from the invite link; needed unless the caller's email address is verified. */
export const AcceptInviteBody = t.Optional(t.Object({ token: t.Optional(t.String({ minLength: 1, maxLength: 128 })) }, { additionalProperties: false }))
export const InviteBody = t.Object({ email: t.String({ format: 'email', maxLength: 254 }) }, { additionalProperties: false })

export const JoinRequest = t.Object({
  pool_id: t.String(),
  user_id: t.String(),
  email: t.String(),
  display_name: t.Nullable(t.String()),
  status: t.Union([t.Literal('pending'), t.Literal('approved')]),
  created_at: Timestamp,
})
export const JoinRequestList = t.Object({ items: t.Array(JoinRequest) })
export const OwnedJoinRequestList = t.Object({ items: t.Array(t.Composite([JoinRequest, t.Object({ pool_name: t.String() })])) })
export const JoinResult = t.Object({ status: t.Union([t.Literal('joined'), t.Literal('pending'), t.Literal('member')]) })

export const Member = t.Object({
  user_id: t.String(),
  email: t.String(),
  display_name: t.Nullable(t.String()),
  role: MemberRole,
  joined_at: Timestamp,
})
export const MemberList = t.Object({ items: t.Array(Member) })

export const PoolParams = t.Object({ id: t.String({ format: 'uuid' }) })
export const PoolUserParams = t.Object({ id: t.String({ format: 'uuid' }), user_id: t.String({ format: 'uuid' }) })
export const InviteParams = t.Object({ invite_id: t.String({ format: 'uuid' }) })
