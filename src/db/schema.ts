// The state file's tables. Times are Unix milliseconds; ids are UUIDv7 strings.
// Only SHA-256 digests of tokens are stored (never the token itself).
import { sql } from 'drizzle-orm'
import { sqliteTable, text, integer, real, index, uniqueIndex, primaryKey } from 'drizzle-orm/sqlite-core'

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
    // Set when a mailed verify link for the current address is used; cleared when an admin
    // changes the address. Pending invites are handed over only to a verified address, or through
    // the invite's own link: without it, whoever registered an address first got its invites.
    emailVerifiedAt: integer('email_verified_at'),
    // Pools the user is a member of and nodes the user attached, for the admin list's columns and
    // sorts: kept by triggers on pool_members and pool_nodes (migration 0011), so every change,
    // cascades included, moves them in its own transaction. `svc admin doctor` checks for drift.
    poolCount: integer('pool_count').notNull().default(0),
    nodeCount: integer('node_count').notNull().default(0),
  },
  (t) => [
    uniqueIndex('users_email_uq').on(t.email),
    index('users_status_idx').on(t.status),
    index('users_created_idx').on(t.createdAt),
    // The admin user list's sort orders (src/admin/list.ts), each ending in the email tie-break,
    // so any page, however deep, is an index walk instead of a sort of the whole table.
    index('users_created_email_idx').on(t.createdAt, t.email),
    index('users_last_login_email_idx').on(t.lastLoginAt, t.email),
    index('users_status_created_idx').on(t.status, t.createdAt, t.email),
    index('users_role_created_idx').on(t.role, t.createdAt, t.email),
    // Nameless accounts last in both directions: one index per direction.
    index('users_name_asc_idx').on(sql`(display_name IS NULL)`, sql`display_name COLLATE NOCASE`, t.email),
    index('users_name_desc_idx').on(sql`(display_name IS NULL)`, sql`display_name COLLATE NOCASE DESC`, sql`email DESC`),
    index('users_status_login_idx').on(t.status, t.lastLoginAt, t.email),
    index('users_pool_count_idx').on(t.poolCount, t.email),
    index('users_node_count_idx').on(t.nodeCount, t.email),
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
  // Newest first, ties by id (UUIDv7), under every filter: each index ends in (ts, id), so a page
  // of any filter is an index walk from its cursor (src/audit/service.ts).
  (t) => [
    index('audit_ts_id_idx').on(t.ts, t.id),
    index('audit_kind_ts_idx').on(t.kind, t.ts, t.id),
    index('audit_actor_ts_idx').on(t.actorUserId, t.ts, t.id),
    index('audit_target_ts_idx').on(t.targetId, t.ts, t.id),
  ],
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
  (t) => [
    index('mail_outbox_due_idx').on(t.status, t.nextAttemptAt),
    // Invite mails to one address per day are counted (a flood of invite mails is phishing), and
    // the GDPR delete removes an account's mail: both look rows up by address.
    index('mail_outbox_to_idx').on(t.toEmail, t.createdAt),
  ],
)

/** Plans: per-role quotas, read on every check so an edit applies without a restart. NULL = unlimited. */
export const roleLimits = sqliteTable('role_limits', {
  role: text('role').primaryKey(),
  maxPools: integer('max_pools'),
  maxNodesPerPool: integer('max_nodes_per_pool'),
  allowedVisibilities: text('allowed_visibilities').notNull(), // comma-separated: 'private' or 'public,private'
})

export const pools = sqliteTable(
  'pools',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description').notNull(),
    visibility: text('visibility', { enum: ['public', 'private'] }).notNull(),
    nodeLimit: integer('node_limit'),
    openJoin: integer('open_join', { mode: 'boolean' }).notNull(),
    // NULL only for the deployment's default pool, which no person owns.
    ownerUserId: text('owner_user_id').references(() => users.id, { onDelete: 'restrict' }),
    isDefault: integer('is_default', { mode: 'boolean' }).notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('pools_slug_uq').on(t.slug), index('pools_owner_idx').on(t.ownerUserId), index('pools_visibility_idx').on(t.visibility)],
)

export const poolMembers = sqliteTable(
  'pool_members',
  {
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ['owner', 'member'] }).notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.poolId, t.userId] }), index('pool_members_user_idx').on(t.userId)],
)

export const poolInvites = sqliteTable(
  'pool_invites',
  {
    id: text('id').primaryKey(),
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    email: text('email').notNull(), // lower-cased
    invitedBy: text('invited_by'),
    status: text('status', { enum: ['pending', 'accepted'] }).notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [
    index('pool_invites_email_idx').on(t.email),
    index('pool_invites_pool_idx').on(t.poolId),
    // The per-inviter cap on pending invites counts by inviter (and the GDPR delete clears it).
    index('pool_invites_inviter_idx').on(t.invitedBy, t.status),
  ],
)

export const joinRequests = sqliteTable(
  'join_requests',
  {
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['pending', 'approved'] }).notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.poolId, t.userId] })],
)

/** A machine registered with the leader. Its latest telemetry lives here, written in batches. */
export const fellows = sqliteTable(
  'fellows',
  {
    id: text('id').primaryKey(),
    hostname: text('hostname').notNull(),
    tokenHash: text('token_hash').notNull(),
    state: text('state', { enum: ['active', 'released'] }).notNull(),
    registeredAt: integer('registered_at').notNull(),
    lastSeenAt: integer('last_seen_at'),
    status: text('status'),
    step: integer('step'),
    loss: real('loss'),
    bytesSent: integer('bytes_sent'),
    bytesReceived: integer('bytes_received'),
    hardware: text('hardware'), // JSON, the heartbeat's hardware object
    address: text('address'), // where neighbours reach its p2p ports
    agentVersion: text('agent_version'),
  },
  (t) => [uniqueIndex('fellows_token_uq').on(t.tokenHash)],
)

/** The pool a fellow belongs to, and the member whose join token admitted it (never from a request body). */
export const poolNodes = sqliteTable(
  'pool_nodes',
  {
    fellowId: text('fellow_id')
      .primaryKey()
      .references(() => fellows.id, { onDelete: 'cascade' }),
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    ownerUserId: text('owner_user_id').references(() => users.id, { onDelete: 'set null' }),
    joinSessionId: text('join_session_id'),
    attachedAt: integer('attached_at').notNull(),
  },
  (t) => [index('pool_nodes_pool_idx').on(t.poolId), index('pool_nodes_owner_idx').on(t.ownerUserId)],
)

export const joinSessions = sqliteTable(
  'join_sessions',
  {
    id: text('id').primaryKey(),
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    createdBy: text('created_by').references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [uniqueIndex('join_sessions_token_uq').on(t.tokenHash), index('join_sessions_pool_idx').on(t.poolId)],
)

/** Training jobs, bound to a pool. `assignments` is the pipeline: stage i -> fellow, as JSON. */
export const jobs = sqliteTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    // False when the submitter gave no pool_id and the job fell to the default pool: such a job is
    // never placed on the default pool's fellows (token-less, anonymous machines), so an admin's
    // job and its config cannot leak to them by omission. Naming the default pool places it there.
    poolNamed: integer('pool_named', { mode: 'boolean' }).notNull().default(true),
    createdBy: text('created_by'),
    status: text('status', { enum: ['queued', 'scheduled', 'running', 'paused', 'completed', 'failed', 'cancelled'] }).notNull(),
    reason: text('reason'),
    stages: integer('stages').notNull(),
    minFreeVramMb: integer('min_free_vram_mb').notNull(),
    // JSON text in the column; drizzle parses and serializes it (mode 'json' maps, the SQL type stays TEXT).
    config: text('config', { mode: 'json' }).$type<Record<string, unknown>>().notNull(), // handed to fellows
    transport: text('transport'),
    assignments: text('assignments', { mode: 'json' }).$type<{ stage: number; fellow_id: string }[]>().notNull(), // [{stage, fellow_id}]
    step: integer('step').notNull(),
    loss: real('loss'),
    // The runner its fellows start (a name their operators declared; `mlp` is built in): placed only
    // on fellows that offer it. Never a command line: the fellow maps the name to its own command.
    runner: text('runner').notNull().default('mlp'),
    // The step the job's last re-placement resumed from (a checkpoint in the artifact store), if any.
    resumedFromStep: integer('resumed_from_step'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    finishedAt: integer('finished_at'),
  },
  (t) => [index('jobs_pool_idx').on(t.poolId), index('jobs_status_idx').on(t.status)],
)

/**
 * The model catalog: manifests fellows post for models they can serve. Stamped with the pool of the
 * job that produced them so a catalog is as private as the pool; rows from before stamping have
 * pool_id NULL and stay visible to every logged-in person (SPEC "Job and servable").
 */
export const servables = sqliteTable(
  'servables',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    version: text('version').notNull(),
    format: text('format').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    // Cascade, not set null: a NULL pool would turn a private manifest into a legacy public one.
    poolId: text('pool_id').references(() => pools.id, { onDelete: 'cascade' }),
    jobId: text('job_id'), // no foreign key: a manifest outlives a purged job
    fellowId: text('fellow_id').references(() => fellows.id, { onDelete: 'set null' }),
    // The model file in the artifact store the serving engine loads, if it came from there. No
    // foreign key (the artifacts table comes later in this file); the service checks the pool.
    artifactId: text('artifact_id'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('servables_pool_name_version_uq').on(t.poolId, t.name, t.version), index('servables_name_idx').on(t.name)],
)

/**
 * The artifact store's index: checkpoints and model files fellows uploaded. The bytes are never in
 * this file: a row names a content-addressed blob (sha256) in the blob store (src/artifacts/store.ts),
 * which several rows may share. A blob no row names is garbage, collected by the artifacts loop.
 */
export const artifacts = sqliteTable(
  'artifacts',
  {
    id: text('id').primaryKey(),
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    // Cascade, not set null: a checkpoint is a stage of its job, useless without it, and a purge
    // (svc admin / POST /admin/jobs/purge) is how an operator frees what jobs left behind. Set null
    // would keep orphans counting against the pool's quota with nothing left to resume.
    jobId: text('job_id').references(() => jobs.id, { onDelete: 'cascade' }),
    stage: integer('stage'),
    kind: text('kind', { enum: ['checkpoint', 'model', 'file'] }).notNull(),
    name: text('name').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    sha256: text('sha256').notNull(),
    step: integer('step'),
    fellowId: text('fellow_id').references(() => fellows.id, { onDelete: 'set null' }),
    // The person who uploaded it (null for a fellow's upload, or once the account is deleted).
    userId: text('user_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    // A job's artifacts, and the latest checkpoint of one of its stages (highest step).
    index('artifacts_job_idx').on(t.jobId, t.stage, t.step),
    index('artifacts_pool_idx').on(t.poolId, t.createdAt),
    // Whether a blob is still named, when an artifact is deleted and when garbage is collected.
    index('artifacts_sha256_idx').on(t.sha256),
  ],
)

/**
 * Uploads under way: what the fellow declared (size, SHA-256) and how many bytes have arrived in the
 * temp file `<state>/artifacts/uploads/<id>`. Declared sizes count against the pool's quota until
 * the upload completes or is dropped (checksum mismatch, idle for a day, its job deleted).
 */
export const artifactUploads = sqliteTable(
  'artifact_uploads',
  {
    id: text('id').primaryKey(),
    poolId: text('pool_id')
      .notNull()
      .references(() => pools.id, { onDelete: 'cascade' }),
    jobId: text('job_id').references(() => jobs.id, { onDelete: 'cascade' }),
    stage: integer('stage'),
    kind: text('kind', { enum: ['checkpoint', 'model', 'file'] }).notNull(),
    name: text('name').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    sha256: text('sha256').notNull(),
    step: integer('step'),
    // Who began it, and alone may continue it: a fellow (its node token) or a person (svc
    // artifacts upload); exactly one is set. Cascade: gone with the fellow or the account.
    fellowId: text('fellow_id').references(() => fellows.id, { onDelete: 'cascade' }),
    userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
    receivedBytes: integer('received_bytes').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('artifact_uploads_pool_idx').on(t.poolId), index('artifact_uploads_updated_idx').on(t.updatedAt), index('artifact_uploads_job_idx').on(t.jobId)],
)

/**
 * Blobs this leader may delete from the store once no artifact names them: one the last artifact
 * naming it let go of (written by the trigger `artifacts_blob_let_go` of migration 0014, in the
 * transaction that deleted the row, however it went: a delete, a job purge, a pool deletion), or
 * one an upload is writing now (an intent, recorded before the store write and cleared in the
 * transaction that inserts its artifact: a leader that dies mid-write leaves it here). The S3
 * collector deletes only these, never "whatever is listed and not mine": a bucket prefix another
 * leader writes to (staging, a restore drill) must not lose its blobs to this one.
 */
export const artifactBlobCandidates = sqliteTable('artifact_blob_candidates', {
  sha256: text('sha256').primaryKey(),
  since: integer('since').notNull(),
})

/** Per-member contribution totals, added to by the metrics roll-up loop. */
export const contributions = sqliteTable('contributions', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  gpuSeconds: real('gpu_seconds').notNull(),
  tokensServed: integer('tokens_served').notNull(),
  requestsServed: integer('requests_served').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** Roll-up bookkeeping: the end of the last window (so windows abut across restarts) and cluster totals. */
export const rollupState = sqliteTable('rollup_state', {
  key: text('key').primaryKey(), // 'global'
  windowEnd: integer('window_end').notNull(),
  gpuSeconds: real('gpu_seconds').notNull(),
  tokensServed: integer('tokens_served').notNull(),
  requestsServed: integer('requests_served').notNull(),
})

/**
 * A fellow's telemetry, downsampled: one row per fellow and bucket (`res` 60 s kept a day, 900 s
 * kept SVC_TELEMETRY_RETENTION_DAYS), averages of the heartbeats that fell in it. Written by the
 * heartbeat flush when a bucket closes (src/fellows/telemetry.ts); the recent samples stay in memory.
 * `pool_id` is the pool the fellow was in then, so a pool's history does not move with its machines.
 */
export const telemetryBuckets = sqliteTable(
  'telemetry_buckets',
  {
    fellowId: text('fellow_id')
      .notNull()
      .references(() => fellows.id, { onDelete: 'cascade' }),
    poolId: text('pool_id').references(() => pools.id, { onDelete: 'cascade' }),
    res: integer('res').notNull(),
    ts: integer('ts').notNull(),
    samples: integer('samples').notNull(),
    cpuPct: real('cpu_pct'),
    memFreeMb: real('mem_free_mb'),
    memTotalMb: real('mem_total_mb'),
    gpuUtilPct: real('gpu_util_pct'),
    gpuFreeMb: real('gpu_free_mb'),
    gpuTotalMb: real('gpu_total_mb'),
    gpuTempC: real('gpu_temp_c'),
  },
  (t) => [primaryKey({ columns: [t.fellowId, t.res, t.ts] }), index('telemetry_buckets_pool_idx').on(t.poolId, t.res, t.ts), index('telemetry_buckets_age_idx').on(t.res, t.ts)],
)
