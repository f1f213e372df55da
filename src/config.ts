// Every SVC_* variable the leader reads, parsed and checked once at start-up.
// Nothing else in the code base reads process.env: a bad value stops the process
// here, with one line naming the variable, instead of failing later mid-request.
import { mkdirSync, readFileSync, writeFileSync, existsSync, chmodSync, statSync, accessSync, constants as fsConstants } from 'node:fs'
import { join, resolve } from 'node:path'
import { randomBytes } from './crypto'
import { DEFAULT_TRUSTED_PROXIES, parseCidr } from './http/client-ip'
import { ipVersion } from './http/ip'
import { badAllowedHost } from './http/host'
import { LOG_LEVELS, type LogLevel } from './log'

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`)
  }
}

type Env = Record<string, string | undefined>

export const PIPELINE_TRANSPORTS = ['auto', 'tunnel', 'p2p'] as const
export type PipelineTransport = (typeof PIPELINE_TRANSPORTS)[number]
export const SMTP_TLS_MODES = ['starttls', 'ssl', 'none'] as const
export type SmtpTls = (typeof SMTP_TLS_MODES)[number]
// The agent's log levels too: they live with the logger, which the agent loads without this file.
export { LOG_LEVELS, type LogLevel }

export interface SmtpConfig {
  host: string
  port: number
  user: string | null
  password: string | null
  from: string
  tls: SmtpTls
  /** PEM text of an extra CA to trust (SVC_SMTP_CA_FILE), for a private mail server. */
  ca: string | null
}

/** Where artifact blobs live (SVC_ARTIFACTS_URL): files under the state directory, or an S3 bucket. */
export type ArtifactStoreConfig =
  | { kind: 'local' }
  | { kind: 's3'; bucket: string; prefix: string; endpoint: string | null; region: string; accessKeyId: string; secretAccessKey: string; sessionToken: string | null }

export interface Config {
  host: string
  port: number
  baseUrl: string
  /** False when SVC_BASE_URL was not given: serve then fills in the port it actually got. */
  baseUrlExplicit: boolean
  stateDir: string
  dbPath: string
  secretKey: Buffer<ArrayBufferLike>
  heartbeatIntervalS: number
  pipelineTransport: PipelineTransport
  requireEmailVerification: boolean
  requireAdminApproval: boolean
  requireNodeAuth: boolean
  requireOperatorAuth: boolean
  requireCsrf: boolean
  cookieSecure: boolean
  trustedProxyHops: number
  /** Proxy address blocks (canonical CIDRs) whose X-Forwarded-For is read (SVC_TRUSTED_PROXIES). */
  trustedProxies: string[]
  /** Host names the leader answers to besides its SVC_BASE_URL's, localhost and IP addresses (SVC_ALLOWED_HOSTS). */
  allowedHosts: string[]
  /** Password hashes that may wait for a free scrypt slot before new ones get 429 (SVC_PASSWORD_HASH_QUEUE). */
  passwordHashQueue: number
  sessionTtlHours: number
  authRateMax: number
  authRateWindowS: number
  loginLockoutThreshold: number
  loginLockoutSeconds: number
  accountLockoutThreshold: number
  accountLockoutSeconds: number
  maxBodyBytes: number
  /** Request-body bytes being read at once across all requests (SVC_MAX_INFLIGHT_BODY_BYTES). */
  maxInflightBodyBytes: number
  /** Seconds a request body may take to arrive in full (SVC_BODY_TIMEOUT_S); 408 after. */
  bodyTimeoutS: number
  /** Seconds an artifact upload's body may go without progress before its connection closes (SVC_UPLOAD_IDLE_TIMEOUT_S). */
  uploadIdleTimeoutS: number
  relayMaxFrameBytes: number
  relayMaxQueueBytes: number
  /** Relay bytes queued across every channel of every job (SVC_RELAY_MAX_TOTAL_BYTES). */
  relayMaxTotalBytes: number
  /** Relay bytes queued across the channels of one pool's jobs (SVC_RELAY_MAX_POOL_BYTES). */
  relayMaxPoolBytes: number
  /** Queued (not yet placed) jobs one person may have at once (SVC_MAX_QUEUED_JOBS_PER_USER). */
  maxQueuedJobsPerUser: number
  /** Queued (not yet placed) jobs one pool may hold at once (SVC_MAX_QUEUED_JOBS_PER_POOL). */
  maxQueuedJobsPerPool: number
  /** Pending invites one non-admin person may have out at once (SVC_MAX_PENDING_INVITES_PER_USER). */
  maxPendingInvitesPerUser: number
  /** Invite mails one address may get per 24 hours, from all pools (SVC_MAX_INVITE_MAILS_PER_ADDRESS). */
  maxInviteMailsPerAddress: number
  inferDispatchTimeoutS: number
  metricsRollupS: number
  metricsToken: string | null
  publicStatsMinNodes: number
  publicStatsTtlS: number
  bootstrapRequireToken: boolean
  /** Fellows may register without a join token, into the default pool (SVC_ALLOW_TOKENLESS_JOIN). */
  allowTokenlessJoin: boolean
  /** Token-less registrations one client IP may make per window (SVC_TOKENLESS_JOIN_RATE_MAX). */
  tokenlessJoinRateMax: number
  /** Token-less registrations all addresses together may make per window (SVC_TOKENLESS_JOIN_MAX). */
  tokenlessJoinMax: number
  /** The window of both (SVC_TOKENLESS_JOIN_WINDOW_S). */
  tokenlessJoinWindowS: number
  /** Bytes of shipped log lines kept for all fellows together (SVC_LOG_MAX_TOTAL_BYTES). */
  logMaxTotalBytes: number
  /** Days the 15-minute telemetry buckets are kept in the state file; 0 keeps none (SVC_TELEMETRY_RETENTION_DAYS). */
  telemetryRetentionDays: number
  artifactStore: ArtifactStoreConfig
  /** The largest artifact a fellow may upload (SVC_ARTIFACT_MAX_BYTES). */
  artifactMaxBytes: number
  /** Artifact bytes one pool may hold, stored plus being uploaded (SVC_ARTIFACT_POOL_QUOTA_BYTES). */
  artifactPoolQuotaBytes: number
  smtp: SmtpConfig | null
  imprintFile: string | null
  privacyFile: string | null
  legalLang: string
  a11yContact: string | null
  accessibilityFile: string | null
  dgsVideoUrl: string | null
  logLevel: LogLevel
  /** How long a stop lets requests under way finish before it cuts them (SVC_SHUTDOWN_GRACE_S). */
  shutdownGraceMs: number
}

/** Names of every variable `loadConfig` reads; docs/operations.md must describe each. */
export const CONFIG_VARIABLES = [
  'SVC_HOST', 'SVC_PORT', 'SVC_BASE_URL', 'SVC_STATE_DIR', 'SVC_JOIN_STATE_DB',
  'SVC_SECRET_KEY', 'SVC_SECRET_KEY_FILE', 'SVC_HEARTBEAT_INTERVAL_S', 'SVC_PIPELINE_TRANSPORT',
  'SVC_REQUIRE_EMAIL_VERIFICATION', 'SVC_REQUIRE_ADMIN_APPROVAL', 'SVC_REQUIRE_NODE_AUTH',
  'SVC_REQUIRE_OPERATOR_AUTH', 'SVC_REQUIRE_CSRF', 'SVC_COOKIE_SECURE', 'SVC_TRUSTED_PROXY_HOPS',
  'SVC_TRUSTED_PROXIES', 'SVC_ALLOWED_HOSTS', 'SVC_PASSWORD_HASH_QUEUE',
  'SVC_SESSION_TTL_HOURS', 'SVC_AUTH_RATE_MAX', 'SVC_AUTH_RATE_WINDOW_S',
  'SVC_LOGIN_LOCKOUT_THRESHOLD', 'SVC_LOGIN_LOCKOUT_SECONDS', 'SVC_ACCOUNT_LOCKOUT_THRESHOLD',
  'SVC_ACCOUNT_LOCKOUT_SECONDS', 'SVC_MAX_BODY_BYTES', 'SVC_MAX_INFLIGHT_BODY_BYTES', 'SVC_BODY_TIMEOUT_S', 'SVC_UPLOAD_IDLE_TIMEOUT_S', 'SVC_RELAY_MAX_FRAME_BYTES',
  'SVC_RELAY_MAX_QUEUE_BYTES', 'SVC_RELAY_MAX_TOTAL_BYTES', 'SVC_RELAY_MAX_POOL_BYTES',
  'SVC_MAX_QUEUED_JOBS_PER_USER', 'SVC_MAX_QUEUED_JOBS_PER_POOL', 'SVC_MAX_PENDING_INVITES_PER_USER', 'SVC_MAX_INVITE_MAILS_PER_ADDRESS', 'SVC_INFER_DISPATCH_TIMEOUT_S', 'SVC_METRICS_ROLLUP_S',
  'SVC_METRICS_TOKEN', 'SVC_PUBLIC_STATS_MIN_NODES', 'SVC_PUBLIC_STATS_TTL_S',
  'SVC_BOOTSTRAP_REQUIRE_TOKEN', 'SVC_ALLOW_TOKENLESS_JOIN', 'SVC_TOKENLESS_JOIN_RATE_MAX', 'SVC_TOKENLESS_JOIN_MAX',
  'SVC_TOKENLESS_JOIN_WINDOW_S', 'SVC_LOG_MAX_TOTAL_BYTES', 'SVC_TELEMETRY_RETENTION_DAYS', 'SVC_ARTIFACTS_URL', 'SVC_ARTIFACTS_S3_ENDPOINT',
  'SVC_ARTIFACTS_S3_REGION', 'SVC_ARTIFACTS_S3_ACCESS_KEY_ID', 'SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY',
  'SVC_ARTIFACT_MAX_BYTES', 'SVC_ARTIFACT_POOL_QUOTA_BYTES', 'SVC_SMTP_HOST', 'SVC_SMTP_PORT', 'SVC_SMTP_USER',
  'SVC_SMTP_PASSWORD', 'SVC_SMTP_FROM', 'SVC_SMTP_TLS', 'SVC_SMTP_CA_FILE', 'SVC_IMPRINT_FILE', 'SVC_PRIVACY_FILE',
  'SVC_LEGAL_LANG', 'SVC_A11Y_CONTACT', 'SVC_ACCESSIBILITY_FILE', 'SVC_DGS_VIDEO_URL',
  'SVC_LOG_LEVEL', 'SVC_SHUTDOWN_GRACE_S',
] as const

const TRUE = new Set(['1', 'true', 'on', 'yes'])
const FALSE = new Set(['0', 'false', 'off', 'no'])

function str(env: Env, name: string): string | null {
  const v = env[name]
  return v === undefined || v.trim() === '' ? null : v.trim()
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const v = str(env, name)
  if (v === null) return dflt
  const l = v.toLowerCase()
  if (TRUE.has(l)) return true
  if (FALSE.has(l)) return false
  throw new ConfigError(name, `expected 1 or 0 (true/false, on/off, yes/no), got ${JSON.stringify(v)}`)
}

function int(env: Env, name: string, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = str(env, name)
  if (v === null) return dflt
  if (!/^-?\d+$/.test(v)) throw new ConfigError(name, `expected a whole number, got ${JSON.stringify(v)}`)
  const n = Number(v)
  // Echo what was given: a number past 2^53 would print as 1e+23.
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${v}`)
  return n
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], dflt: T): T {
  const v = str(env, name)
  if (v === null) return dflt
  const l = v.toLowerCase() as T
  if (!allowed.includes(l)) {
    throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`)
  }
  return l
}

/** A value as a configuration error shows it: credentials in it (`//user:password@`) as `***` (the error goes to the service log). */
const shownValue = (v: string) => JSON.stringify(v.replace(/\/\/.*@/s, '//***@'))

function url(env: Env, name: string, dflt: string): string {
  const v = str(env, name) ?? dflt
  let u: URL
  try {
    u = new URL(v)
  } catch {
    throw new ConfigError(name, `not a URL: ${shownValue(v)}`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ConfigError(name, `must be an http:// or https:// URL, got ${shownValue(v)}`)
  }
  return v.replace(/\/+$/, '')
}

/**
 * A leader's base URL as clients append `/api/v1/...` to it: no trailing slash, and without
 * `/api/v1` when one was pasted (the chat clients' base URL ends there). A path before it stays
 * (a leader behind a path prefix).
 */
export const leaderBase = (url: string): string => url.replace(/\/+$/, '').replace(/\/api\/v1$/i, '')

/** A DNS host name: dot-separated labels of letters, digits and inner hyphens, 63 characters at most. */
const HOST_NAME = /^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.?$/i

/**
 * SVC_HOST: an IP address (an IPv6 one with or without brackets, as it is written in URLs) or a
 * host name. Anything else would fail only at listen, in the system's words, or end up in
 * SVC_BASE_URL's default and be blamed on that.
 */
function listenHost(env: Env): string {
  const v = str(env, 'SVC_HOST') ?? '127.0.0.1'
  const bare = /^\[(.*)\]$/.exec(v)?.[1]
  if (bare !== undefined && ipVersion(bare) === 6) return bare
  // A name ending in a number is read as an IPv4 address in a URL: 999.1.1.1 is no host name.
  if (bare === undefined && (ipVersion(v) !== 0 || (v.length <= 253 && HOST_NAME.test(v) && URL.canParse(`http://${v}/`)))) return v
  throw new ConfigError('SVC_HOST', `expected an IP address or a host name, got ${JSON.stringify(v)}`)
}

/**
 * SVC_BASE_URL goes into links, mails and the pasteable join command, so it must be a plain
 * origin with an optional path: no credentials, query or fragment, and only characters that need
 * no quoting in a URL or a shell (a hostname like `a'$(id)'.org` is a valid WHATWG URL).
 */
function baseUrl(env: Env, dflt: string): string {
  // Scheme and host are case-insensitive in a URL (HTTP://Example.org is http://example.org): they
  // are lower-cased, as the URL parser does; the path keeps its case.
  const v = url(env, 'SVC_BASE_URL', dflt).replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/]*)/, (_, scheme: string, authority: string) => scheme.toLowerCase() + authority.toLowerCase())
  const u = new URL(v)
  if (u.username !== '' || u.password !== '') throw new ConfigError('SVC_BASE_URL', 'must not carry a user name or password')
  if (u.search !== '' || u.hash !== '' || /[?#]/.test(v)) throw new ConfigError('SVC_BASE_URL', 'must not carry a query or fragment')
  if (!/^https?:\/\/[A-Za-z0-9.\-_:\[\]]+(\/[A-Za-z0-9._~\-/%]*)?$/.test(v)) {
    throw new ConfigError('SVC_BASE_URL', `may hold only letters, digits and . - _ ~ / % : [ ] (got ${JSON.stringify(v)})`)
  }
  return v
}

/** SVC_TRUSTED_PROXIES: comma-separated addresses or CIDR blocks; unset means loopback only. */
function trustedProxies(env: Env): string[] {
  const v = str(env, 'SVC_TRUSTED_PROXIES')
  if (v === null) return [...DEFAULT_TRUSTED_PROXIES]
  const out: string[] = []
  for (const part of v.split(',')) {
    if (part.trim() === '') continue
    const cidr = parseCidr(part)
    if (cidr === null) throw new ConfigError('SVC_TRUSTED_PROXIES', `not an IP address or CIDR block: ${JSON.stringify(part.trim())}`)
    out.push(cidr)
  }
  if (out.length === 0) throw new ConfigError('SVC_TRUSTED_PROXIES', 'names no address; unset it or set SVC_TRUSTED_PROXY_HOPS=0')
  return out
}

function allowedHosts(env: Env): string[] {
  const out: string[] = []
  for (const part of (str(env, 'SVC_ALLOWED_HOSTS') ?? '').split(',')) {
    const entry = part.trim().toLowerCase().replace(/\.$/, '')
    if (entry === '') continue
    if (badAllowedHost(entry) !== null) throw new ConfigError('SVC_ALLOWED_HOSTS', `not a host name, .domain or *: ${JSON.stringify(part.trim())}`)
    out.push(entry)
  }
  return out
}

/**
 * A file named by a variable: it must be a regular file this process can read, of at most
 * `maxBytes` (a directory, a device or a 120 MB binary named by mistake is refused at start, not
 * found out on a request).
 */
function readableFile(env: Env, name: string, maxBytes = 1024 * 1024): string | null {
  const v = str(env, name)
  if (v === null) return null
  checkReadableFile(name, v, maxBytes)
  return v
}

function checkReadableFile(name: string, file: string, maxBytes: number): void {
  let st
  try {
    st = statSync(file)
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') throw new ConfigError(name, `file not found: ${file}`)
    throw new ConfigError(name, `cannot read ${file}: ${fsReason(e)}`)
  }
  if (st.isDirectory()) throw new ConfigError(name, `${file} is a directory, not a file`)
  if (!st.isFile()) throw new ConfigError(name, `${file} is not a regular file`)
  if (st.size > maxBytes) throw new ConfigError(name, `${file} is ${st.size} bytes, more than the ${maxBytes} this setting takes`)
  try {
    accessSync(file, fsConstants.R_OK)
  } catch (e) {
    throw new ConfigError(name, `cannot read ${file}: ${fsReason(e)}`)
  }
}

/** Node's "EACCES: permission denied, open '/x'" without the code and the path (the caller names it). */
const fsReason = (e: unknown): string => {
  const m = /^[A-Z]+: ([^,]+)/.exec((e as Error).message)
  return m ? m[1]! : (e as Error).message
}

function readText(name: string, file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (e) {
    throw new ConfigError(name, `cannot read ${file}: ${fsReason(e)}`)
  }
}

function smtpConfig(env: Env): SmtpConfig | null {
  const host = str(env, 'SVC_SMTP_HOST')
  const tls = oneOf(env, 'SVC_SMTP_TLS', SMTP_TLS_MODES, 'starttls')
  const port = int(env, 'SVC_SMTP_PORT', tls === 'ssl' ? 465 : 587, 1, 65535)
  const user = str(env, 'SVC_SMTP_USER')
  const password = str(env, 'SVC_SMTP_PASSWORD')
  const from = str(env, 'SVC_SMTP_FROM')
  const caFile = readableFile(env, 'SVC_SMTP_CA_FILE')
  if (host === null) return null
  if (from === null) throw new ConfigError('SVC_SMTP_FROM', 'required when SVC_SMTP_HOST is set')
  if (!/^[^\s@<>]+@[^\s@<>]+$/.test(from.replace(/^.*<([^>]*)>\s*$/, '$1'))) {
    throw new ConfigError('SVC_SMTP_FROM', `not an email address: ${JSON.stringify(from)}`)
  }
  if ((user === null) !== (password === null)) {
    throw new ConfigError(user === null ? 'SVC_SMTP_USER' : 'SVC_SMTP_PASSWORD', 'SVC_SMTP_USER and SVC_SMTP_PASSWORD go together')
  }
  return { host, port, user, password, from, tls, ca: caFile === null ? null : readText('SVC_SMTP_CA_FILE', caFile) }
}

/**
 * SVC_ARTIFACTS_URL: unset keeps blobs under the state directory; `s3://bucket/prefix` puts them in
 * a bucket. Endpoint, region and keys have their own variables, each falling back to the AWS_* one
 * every S3 tool reads; they are resolved here, so Bun's client never reads the environment itself.
 */
function artifactStore(env: Env): ArtifactStoreConfig {
  const where = artifactsBucket(env)
  if (where === null) return { kind: 'local' }
  const either = (name: string, ...fallbacks: string[]) => [name, ...fallbacks].map((n) => str(env, n)).find((x) => x !== null) ?? null
  const endpointName = str(env, 'SVC_ARTIFACTS_S3_ENDPOINT') !== null ? 'SVC_ARTIFACTS_S3_ENDPOINT' : str(env, 'AWS_ENDPOINT_URL_S3') !== null ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL'
  const endpoint = str(env, endpointName) === null ? null : url(env, endpointName, '')
  const accessKeyId = either('SVC_ARTIFACTS_S3_ACCESS_KEY_ID', 'AWS_ACCESS_KEY_ID')
  const secretAccessKey = either('SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY', 'AWS_SECRET_ACCESS_KEY')
  if (accessKeyId === null) throw new ConfigError('SVC_ARTIFACTS_S3_ACCESS_KEY_ID', 'required with an s3:// SVC_ARTIFACTS_URL (or set AWS_ACCESS_KEY_ID)')
  if (secretAccessKey === null) throw new ConfigError('SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY', 'required with an s3:// SVC_ARTIFACTS_URL (or set AWS_SECRET_ACCESS_KEY)')
  const region = either('SVC_ARTIFACTS_S3_REGION', 'AWS_REGION', 'AWS_DEFAULT_REGION') ?? 'us-east-1'
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw new ConfigError('SVC_ARTIFACTS_S3_REGION', `not a region name: ${JSON.stringify(region)}`)
  return { kind: 's3', ...where, endpoint, region, accessKeyId, secretAccessKey, sessionToken: str(env, 'AWS_SESSION_TOKEN') }
}

/**
 * The bucket and prefix SVC_ARTIFACTS_URL names, or null when it is unset (blobs under the state
 * directory). Checked, but needs no keys: `svc admin backup` names the place with it.
 */
export function artifactsBucket(env: Env): { bucket: string; prefix: string } | null {
  const v = str(env, 'SVC_ARTIFACTS_URL')
  if (v === null) return null
  // A bucket name as S3 allows it; a prefix of plain key characters (no `..`, no empty segment).
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/([A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*)?\/?)?$/.exec(v)
  if (m === null || (m[2] ?? '').split('/').some((seg) => seg === '.' || seg === '..')) {
    throw new ConfigError('SVC_ARTIFACTS_URL', `expected s3://bucket or s3://bucket/prefix (unset: files under SVC_STATE_DIR), got ${shownValue(v)}`)
  }
  return { bucket: m[1]!, prefix: m[2] ?? '' }
}

/** BCP 47 language tag, loosely: a primary subtag and optional subtags. Falls back to `en`. */
export function parseLangTag(v: string | null): string {
  if (v === null) return 'en'
  return /^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8})*$/.test(v) ? v : 'en'
}

function loadSecretKey(env: Env, stateDir: string): Buffer {
  const inline = str(env, 'SVC_SECRET_KEY')
  if (inline !== null) {
    if (inline.length < 32) throw new ConfigError('SVC_SECRET_KEY', 'must be at least 32 characters')
    return Buffer.from(inline, 'utf8')
  }
  const file = str(env, 'SVC_SECRET_KEY_FILE') ?? join(stateDir, 'secret_key')
  const explicit = str(env, 'SVC_SECRET_KEY_FILE') !== null
  // The default key file is blamed on the directory it is in (the operator set that, not the file).
  const variable = explicit ? 'SVC_SECRET_KEY_FILE' : 'SVC_STATE_DIR'
  if (existsSync(file)) {
    checkReadableFile(variable, file, 64 * 1024)
    const key = readText(variable, file).trim()
    if (key.length < 32) throw new ConfigError(variable, `${file} holds fewer than 32 characters`)
    return Buffer.from(key, 'utf8')
  }
  if (explicit) throw new ConfigError('SVC_SECRET_KEY_FILE', `file not found: ${file}`)
  const key = randomBytes(32).toString('base64url')
  try {
    // wx: never overwrite a key another process wrote between our check and now.
    writeFileSync(file, key + '\n', { mode: 0o600, flag: 'wx' })
    chmodSync(file, 0o600)
  } catch (e) {
    throw new ConfigError('SVC_STATE_DIR', `cannot create the secret key file ${file}: ${fsReason(e)} (or set SVC_SECRET_KEY / SVC_SECRET_KEY_FILE)`)
  }
  return Buffer.from(key, 'utf8')
}

export interface LoadOptions {
  /** Skip reading or creating the secret key (CLI commands that only touch the database). */
  withoutSecret?: boolean
}

export function loadConfig(env: Env = process.env, opts: LoadOptions = {}): Config {
  const host = listenHost(env)
  const port = int(env, 'SVC_PORT', 8080, 0, 65535)
  const stateDir = resolve(str(env, 'SVC_STATE_DIR') ?? 'state')
  const dbPath = resolve(str(env, 'SVC_JOIN_STATE_DB') ?? join(stateDir, 'join_state.sqlite3'))
  const loginLockoutThreshold = int(env, 'SVC_LOGIN_LOCKOUT_THRESHOLD', 5, 1, 1_000_000)
  const relayMaxFrameBytes = int(env, 'SVC_RELAY_MAX_FRAME_BYTES', 64 * 1024 * 1024, 1024, 1024 * 1024 * 1024)
  const relayMaxQueueBytes = int(env, 'SVC_RELAY_MAX_QUEUE_BYTES', 256 * 1024 * 1024, 1024, 16 * 1024 * 1024 * 1024)
  if (relayMaxQueueBytes < relayMaxFrameBytes) {
    throw new ConfigError('SVC_RELAY_MAX_QUEUE_BYTES', 'must be at least SVC_RELAY_MAX_FRAME_BYTES')
  }
  // Per-channel caps alone let a few jobs park 8 x 60 MiB unpopped (RSS 270 -> 751 MiB): the relay
  // as a whole and each pool are bounded too. One largest frame must fit each, else it never could.
  const relayMaxTotalBytes = int(env, 'SVC_RELAY_MAX_TOTAL_BYTES', Math.max(256 * 1024 * 1024, relayMaxQueueBytes), 1024, 64 * 1024 * 1024 * 1024)
  if (relayMaxTotalBytes < relayMaxFrameBytes) {
    throw new ConfigError('SVC_RELAY_MAX_TOTAL_BYTES', 'must be at least SVC_RELAY_MAX_FRAME_BYTES')
  }
  const relayMaxPoolBytes = int(env, 'SVC_RELAY_MAX_POOL_BYTES', Math.max(relayMaxFrameBytes, Math.floor(relayMaxTotalBytes / 2)), 1024, 64 * 1024 * 1024 * 1024)
  if (relayMaxPoolBytes < relayMaxFrameBytes) {
    throw new ConfigError('SVC_RELAY_MAX_POOL_BYTES', 'must be at least SVC_RELAY_MAX_FRAME_BYTES')
  }
  if (relayMaxPoolBytes > relayMaxTotalBytes) {
    throw new ConfigError('SVC_RELAY_MAX_POOL_BYTES', 'must be at most SVC_RELAY_MAX_TOTAL_BYTES')
  }
  // One relay push (a frame cap plus framing) must always fit, else it could never be accepted.
  const maxInflightBodyBytes = int(env, 'SVC_MAX_INFLIGHT_BODY_BYTES', Math.max(256 * 1024 * 1024, 2 * (relayMaxFrameBytes + 1024 * 1024)), 1024, 64 * 1024 * 1024 * 1024)
  if (maxInflightBodyBytes < relayMaxFrameBytes + 1024 * 1024) {
    throw new ConfigError('SVC_MAX_INFLIGHT_BODY_BYTES', 'must be at least SVC_RELAY_MAX_FRAME_BYTES plus 1 MiB (one relay push)')
  }
  const artifactMaxBytes = int(env, 'SVC_ARTIFACT_MAX_BYTES', 10 * 1024 ** 3, 1, 2 ** 50)
  const artifactPoolQuotaBytes = int(env, 'SVC_ARTIFACT_POOL_QUOTA_BYTES', 50 * 1024 ** 3, 0, 2 ** 53 - 1)
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host
  const cfg: Omit<Config, 'secretKey'> = {
    host,
    port,
    baseUrl: baseUrl(env, `http://${urlHost}:${port}`),
    baseUrlExplicit: str(env, 'SVC_BASE_URL') !== null,
    stateDir,
    dbPath,
    heartbeatIntervalS: int(env, 'SVC_HEARTBEAT_INTERVAL_S', 10, 1, 3600),
    pipelineTransport: oneOf(env, 'SVC_PIPELINE_TRANSPORT', PIPELINE_TRANSPORTS, 'auto'),
    requireEmailVerification: bool(env, 'SVC_REQUIRE_EMAIL_VERIFICATION', false),
    requireAdminApproval: bool(env, 'SVC_REQUIRE_ADMIN_APPROVAL', false),
    requireNodeAuth: bool(env, 'SVC_REQUIRE_NODE_AUTH', true),
    requireOperatorAuth: bool(env, 'SVC_REQUIRE_OPERATOR_AUTH', true),
    requireCsrf: bool(env, 'SVC_REQUIRE_CSRF', true),
    cookieSecure: bool(env, 'SVC_COOKIE_SECURE', true),
    trustedProxyHops: int(env, 'SVC_TRUSTED_PROXY_HOPS', 1, 0, 32),
    trustedProxies: trustedProxies(env),
    allowedHosts: allowedHosts(env),
    passwordHashQueue: int(env, 'SVC_PASSWORD_HASH_QUEUE', 4, 0, 10_000),
    sessionTtlHours: int(env, 'SVC_SESSION_TTL_HOURS', 336, 1, 24 * 366),
    authRateMax: int(env, 'SVC_AUTH_RATE_MAX', 10, 1, 1_000_000),
    authRateWindowS: int(env, 'SVC_AUTH_RATE_WINDOW_S', 60, 1, 86_400),
    loginLockoutThreshold,
    loginLockoutSeconds: int(env, 'SVC_LOGIN_LOCKOUT_SECONDS', 300, 1, 86_400 * 30),
    accountLockoutThreshold: int(env, 'SVC_ACCOUNT_LOCKOUT_THRESHOLD', 8 * loginLockoutThreshold, 1, 100_000_000),
    accountLockoutSeconds: int(env, 'SVC_ACCOUNT_LOCKOUT_SECONDS', 900, 1, 86_400 * 30),
    maxBodyBytes: int(env, 'SVC_MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxInflightBodyBytes,
    bodyTimeoutS: int(env, 'SVC_BODY_TIMEOUT_S', 30, 1, 3600),
    uploadIdleTimeoutS: int(env, 'SVC_UPLOAD_IDLE_TIMEOUT_S', 60, 1, 3600),
    relayMaxFrameBytes,
    relayMaxQueueBytes,
    relayMaxTotalBytes,
    relayMaxPoolBytes,
    maxQueuedJobsPerUser: int(env, 'SVC_MAX_QUEUED_JOBS_PER_USER', 20, 1, 1_000_000),
    maxQueuedJobsPerPool: int(env, 'SVC_MAX_QUEUED_JOBS_PER_POOL', 100, 1, 1_000_000),
    maxPendingInvitesPerUser: int(env, 'SVC_MAX_PENDING_INVITES_PER_USER', 50, 1, 1_000_000),
    maxInviteMailsPerAddress: int(env, 'SVC_MAX_INVITE_MAILS_PER_ADDRESS', 5, 1, 1_000_000),
    inferDispatchTimeoutS: int(env, 'SVC_INFER_DISPATCH_TIMEOUT_S', 30, 1, 3600),
    metricsRollupS: int(env, 'SVC_METRICS_ROLLUP_S', 60, 1, 86_400),
    metricsToken: str(env, 'SVC_METRICS_TOKEN'),
    publicStatsMinNodes: int(env, 'SVC_PUBLIC_STATS_MIN_NODES', 3, 0, 1_000_000),
    publicStatsTtlS: int(env, 'SVC_PUBLIC_STATS_TTL_S', 60, 0, 86_400),
    bootstrapRequireToken: bool(env, 'SVC_BOOTSTRAP_REQUIRE_TOKEN', false),
    // On by default: SPEC (node auth rule 5) lands a fellow without a token in the default pool.
    allowTokenlessJoin: bool(env, 'SVC_ALLOW_TOKENLESS_JOIN', true),
    tokenlessJoinRateMax: int(env, 'SVC_TOKENLESS_JOIN_RATE_MAX', 10, 1, 1_000_000),
    tokenlessJoinMax: int(env, 'SVC_TOKENLESS_JOIN_MAX', 30, 1, 1_000_000),
    tokenlessJoinWindowS: int(env, 'SVC_TOKENLESS_JOIN_WINDOW_S', 60, 1, 86_400),
    logMaxTotalBytes: int(env, 'SVC_LOG_MAX_TOTAL_BYTES', 16 * 1024 * 1024, 64 * 1024, 16 * 1024 * 1024 * 1024),
    telemetryRetentionDays: int(env, 'SVC_TELEMETRY_RETENTION_DAYS', 30, 0, 366),
    artifactStore: artifactStore(env),
    artifactMaxBytes,
    artifactPoolQuotaBytes,
    smtp: smtpConfig(env),
    imprintFile: readableFile(env, 'SVC_IMPRINT_FILE'),
    privacyFile: readableFile(env, 'SVC_PRIVACY_FILE'),
    legalLang: parseLangTag(str(env, 'SVC_LEGAL_LANG')),
    a11yContact: str(env, 'SVC_A11Y_CONTACT'),
    accessibilityFile: readableFile(env, 'SVC_ACCESSIBILITY_FILE'),
    dgsVideoUrl: str(env, 'SVC_DGS_VIDEO_URL') === null ? null : url(env, 'SVC_DGS_VIDEO_URL', ''),
    logLevel: oneOf(env, 'SVC_LOG_LEVEL', LOG_LEVELS, 'info'),
    shutdownGraceMs: int(env, 'SVC_SHUTDOWN_GRACE_S', 5, 0, 3600) * 1000,
  }
  if (cfg.metricsToken !== null && cfg.metricsToken.length < 16) {
    throw new ConfigError('SVC_METRICS_TOKEN', 'must be at least 16 characters')
  }
  let secretKey: Buffer = Buffer.alloc(0)
  if (!opts.withoutSecret) {
    ensureDir(stateDir, 'SVC_STATE_DIR')
    tightenDir(stateDir)
    secretKey = loadSecretKey(env, stateDir)
  }
  return { ...cfg, secretKey }
}

export function ensureDir(dir: string, variable: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
  } catch (e) {
    throw new ConfigError(variable, `cannot create directory ${dir}: ${(e as Error).message}`)
  }
}

/**
 * The state directory holds the secret key, the state file and artifact blobs: owner-only, as it
 * is made, and an existing one is tightened like the state file. Only a directory of this user's
 * own and without the sticky bit (never a shared one such as /tmp named by mistake).
 */
export function tightenDir(dir: string): void {
  try {
    const st = statSync(dir)
    if ((st.mode & 0o077) === 0 || (st.mode & 0o1000) !== 0 || dir === '/' || st.uid !== process.getuid?.()) return
    chmodSync(dir, st.mode & 0o700)
  } catch {
    // best effort: a directory we cannot change is still usable
  }
}

/** The warnings `serve` logs for each enforcement flag switched off. */
export function securityWarnings(cfg: Config): string[] {
  const out: string[] = []
  if (!cfg.requireNodeAuth) out.push('SECURITY: SVC_REQUIRE_NODE_AUTH=0: fellow calls without a node token are accepted')
  if (!cfg.requireOperatorAuth) out.push('SECURITY: SVC_REQUIRE_OPERATOR_AUTH=0: operator routes are open without a credential')
  if (!cfg.requireCsrf) out.push('SECURITY: SVC_REQUIRE_CSRF=0: cookie-authenticated state changes are not CSRF-checked')
  if (!cfg.cookieSecure) out.push('SECURITY: SVC_COOKIE_SECURE=0: session cookies are sent over plain HTTP')
  return out
}

/** Settings of `svc fellow`. Flags win over SVC_LEADER_URL and SVC_JOIN_TOKEN; the rest are flags only. */
export interface FellowFlags {
  leader?: string
  joinToken?: string
  stateDir?: string
  p2pPortBase?: string
  advertiseHost?: string
  p2pListenHost?: string
  hostname?: string
}
export interface FellowConfig {
  leaderUrl: string
  joinToken: string | null
  stateDir: string
  p2pPortBase: number
  /** Null: the agent picks this machine's first non-internal address. */
  advertiseHost: string | null
  /** Null: the listeners bind the advertised address and nothing else. */
  p2pListenHost: string | null
  hostname: string | null
  logLevel: LogLevel
}

export function loadFellowConfig(env: Env = process.env, flags: FellowFlags = {}): FellowConfig {
  // A flag is checked under its own name, a variable under its: the one-line error points at what was given.
  const pick = (flag: string | undefined, flagName: string, variable?: string): [string, Env] =>
    (flag !== undefined && flag.trim() !== '') || !variable ? [flagName, { [flagName]: flag }] : [variable, env]
  const [leaderName, leaderEnv] = pick(flags.leader, '--leader', 'SVC_LEADER_URL')
  if (str(leaderEnv, leaderName) === null) throw new ConfigError('--leader', 'the leader URL is required (or set SVC_LEADER_URL)')
  const [tokenName, tokenEnv] = pick(flags.joinToken, '--join-token', 'SVC_JOIN_TOKEN')
  const joinToken = str(tokenEnv, tokenName)
  if (joinToken !== null && !/^svc_join_[A-Za-z0-9_-]{20,}$/.test(joinToken)) throw new ConfigError(tokenName, 'not a join token (they start with svc_join_)')
  const [portName, portEnv] = pick(flags.p2pPortBase, '--p2p-port-base')
  const hostOrAddress = (flag: string | undefined, flagName: string): string | null => {
    const [name, env] = pick(flag, flagName)
    const v = str(env, name)
    if (v !== null && !/^[A-Za-z0-9.-]{1,253}$|^\[?[0-9A-Fa-f:.]+\]?$/.test(v)) throw new ConfigError(name, `not a host name or address: ${JSON.stringify(v)}`)
    return v?.replace(/^\[(.*)\]$/, '$1') ?? null
  }
  const advertiseHost = hostOrAddress(flags.advertiseHost, '--advertise-host')
  return {
    leaderUrl: leaderBase(url(leaderEnv, leaderName, '')),
    joinToken,
    stateDir: resolve(flags.stateDir?.trim() || 'fellow-state'),
    // base+1 carries gradients, so the base stops one short of the last port.
    p2pPortBase: int(portEnv, portName, 5557, 1, 65534),
    advertiseHost,
    p2pListenHost: hostOrAddress(flags.p2pListenHost, '--p2p-listen-host'),
    hostname: flags.hostname?.trim() || null,
    logLevel: oneOf(env, 'SVC_LOG_LEVEL', LOG_LEVELS, 'info'),
  }
}

/**
 * Settings of the operator CLI's remote commands (`svc pools ...`, docs/cli.md). Flags win over
 * SVC_TOKEN and SVC_LEADER_URL, which win over the config file (SVC_CLI_CONFIG, else
 * $XDG_CONFIG_HOME/svc/config.toml when it is an absolute path, else ~/.config/svc/config.toml).
 */
export interface ClientEnv {
  token: string | null
  leader: string | null
  /** null: neither SVC_CLI_CONFIG, XDG_CONFIG_HOME nor HOME is set (tokens are not written into the current directory). */
  configFile: string | null
}

export function loadClientEnv(env: Env = process.env): ClientEnv {
  const home = str(env, 'HOME')
  // A relative XDG_CONFIG_HOME is invalid and to be ignored (XDG Base Directory spec): it would put
  // the tokens under whatever directory the command runs in.
  const xdg = str(env, 'XDG_CONFIG_HOME')
  const dir = xdg !== null && xdg.startsWith('/') ? xdg : home === null ? null : join(home, '.config')
  const file = str(env, 'SVC_CLI_CONFIG') ?? (dir === null ? null : join(dir, 'svc', 'config.toml'))
  return {
    token: str(env, 'SVC_TOKEN'),
    leader: str(env, 'SVC_LEADER_URL'),
    configFile: file === null ? null : resolve(file),
  }
}
