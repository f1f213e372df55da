// The state file's tables. Times are Unix milliseconds; ids are UUIDv7 strings.
// Only SHA-256 digests of tokens are stored (never the token itself).
import { sqliteTable, text, integer, index, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(), // stored lower-cased: emails compare case-insensitively
    passwordHash: text('password_hash').notNull(),
    displayName: text('display_name'),
    role: text('role', { enum: ['user', 'admin'] }).notNull(),
    status: text('status', { enum: ['unverified', 'pending_approval', 'active', 'disabled'] }).notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    lastLoginAt: integer('last_login_at'),
  },
  (t) => [
    uniqueIndex('users_email_uq').on(t.email),
    index('users_status_idx').on(t.status),
    index('users_created_idx').on(t.createdAt),
  ],
)

export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    revokedAt: integer('revoked_at'),
    clientIp: text('client_ip'),
  },
  (t) => [uniqueIndex('sessions_token_uq').on(t.tokenHash), index('sessions_user_idx').on(t.userId), index('sessions_expires_idx').on(t.expiresAt)],
)

export const apiTokens = sqliteTable(
  'api_tokens',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    tokenHash: text('token_hash').notNull(),
    createdAt: integer('created_at').notNull(),
    lastUsedAt: integer('last_used_at'),
    expiresAt: integer('expires_at'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [uniqueIndex('api_tokens_token_uq').on(t.tokenHash), index('api_tokens_user_idx').on(t.userId)],
)

export const actionTokens = sqliteTable(
  'action_tokens',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['verify', 'reset'] }).notNull(),
    tokenHash: text('token_hash').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
  },
  (t) => [uniqueIndex('action_tokens_token_uq').on(t.tokenHash), index('action_tokens_user_idx').on(t.userId)],
)

/** Failed-login counters; kept in the state file so a restart does not reset a lockout. */
export const loginFailures = sqliteTable('login_failures', {
  key: text('key').primaryKey(), // 'pair:<email>|<ip>' or 'account:<email>'
  count: integer('count').notNull(),
  lastAt: integer('last_at').notNull(),
  lockedUntil: integer('locked_until'),
})

export const auditLog = sqliteTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    ts: integer('ts').notNull(),
    kind: text('kind').notNull(),
    actorUserId: text('actor_user_id'), // no foreign key: entries outlive deleted users
    clientIp: text('client_ip'),
    targetType: text('target_type'),
    targetId: text('target_id'),
    detail: text('detail'), // JSON
  },
  (t) => [index('audit_ts_idx').on(t.ts), index('audit_kind_idx').on(t.kind), index('audit_actor_idx').on(t.actorUserId)],
)

/**
 * Transactional mail, written in the same transaction as the change that triggers it and sent by
 * the mail loop. `payload` holds the template variables (which include one-time links) encrypted
 * with a key derived from SVC_SECRET_KEY, and is cleared once the mail is sent.
 */
export const mailOutbox = sqliteTable(
  'mail_outbox',
  {
    id: text('id').primaryKey(),
    template: text('template').notNull(),
    toEmail: text('to_email').notNull(),
    payload: text('payload'),
    status: text('status', { enum: ['pending', 'sent', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull(),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
    sentAt: integer('sent_at'),
  },
  (t) => [index('mail_outbox_due_idx').on(t.status, t.nextAttemptAt)],
)
