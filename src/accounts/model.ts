// Wire shapes of the account routes. Types come from these schemas; response schemas are declared
// on every route so nothing the schema does not name (hashes, tokens) can leak.
import { t, type Static } from 'elysia'
// Registers the `email` format (SMTPUTF8 local parts, IDN domains) before any schema compiles.
import './email'
import { Int, Label, NO_CONTROL_PATTERN, Timestamp } from '../model'
import { PASSWORD_MAX, PASSWORD_MIN } from './passwords'

export const Email = t.String({ format: 'email', minLength: 3, maxLength: 254 })
/** A password given to log in (or to confirm one): any the account may have. */
export const Password = t.String({ minLength: 1, maxLength: 4096 })
/**
 * A password being set: the policy's bounds (passwords.ts), so the OpenAPI document says them. The
 * policy counts characters, the schema UTF-16 units: its upper bound is twice the policy's, so a
 * password of 512 emoji is the policy's to judge (the schema alone refused it as too long).
 */
export const NewPassword = t.String({ minLength: PASSWORD_MIN, maxLength: 2 * PASSWORD_MAX, 'x-rule': `${PASSWORD_MIN} to ${PASSWORD_MAX} characters, and not the email address` })
export const DisplayName = t.String({ minLength: 1, maxLength: 100, pattern: NO_CONTROL_PATTERN })
export const Role = t.Union([t.Literal('user'), t.Literal('admin')])
export const UserStatus = t.Union([
  t.Literal('unverified'),
  t.Literal('pending_approval'),
  t.Literal('active'),
  t.Literal('disabled'),
])

export const Me = t.Object({
  id: t.String(),
  email: t.String(),
  display_name: t.Nullable(t.String()),
  role: Role,
  status: UserStatus,
  created_at: Timestamp,
  last_login_at: t.Nullable(Timestamp),
})
export type Me = Static<typeof Me>

export const RegisterBody = t.Object(
  { email: Email, password: NewPassword, display_name: t.Optional(DisplayName) },
  { additionalProperties: false },
)
export const RegisterResult = t.Object({ user: Me, logged_in: t.Boolean() })

export const LoginBody = t.Object({ email: t.String({ maxLength: 254 }), password: Password }, { additionalProperties: false })
export const LoginResult = t.Object({ user: Me })

export const PasswordChangeBody = t.Object(
  { current_password: Password, new_password: NewPassword },
  { additionalProperties: false },
)
export const TokenBody = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })
export const ResetPasswordBody = t.Object(
  { token: t.String({ minLength: 1, maxLength: 200 }), new_password: NewPassword },
  { additionalProperties: false },
)
export const StatusResult = t.Object({ status: UserStatus })
/** A reset's answer: whether the new password opens the account now (only an active one). */
export const ResetResult = t.Object({ account_status: UserStatus })

export const ApiTokenRecord = t.Object({
  id: t.String(),
  name: t.String(),
  prefix: t.String(),
  user_id: t.String(),
  /** Whose token it is (an admin's list holds everyone's). */
  user_email: t.String(),
  created_at: Timestamp,
  last_used_at: t.Nullable(Timestamp),
  expires_at: t.Nullable(Timestamp),
  revoked_at: t.Nullable(Timestamp),
})
export type ApiTokenRecord = Static<typeof ApiTokenRecord>
export const MintTokenBody = t.Object(
  {
    name: Label(100),
    expires_in_days: t.Optional(Int({ minimum: 1, maximum: 3650 })),
  },
  { additionalProperties: false },
)
export const MintedToken = t.Composite([ApiTokenRecord, t.Object({ token: t.String() })])
export const ApiTokenList = t.Object({ items: t.Array(ApiTokenRecord) })
export const IdParams = t.Object({ id: t.String({ format: 'uuid' }) })
