// Domain errors: services throw these with a stable code; only src/http maps codes to statuses.
export type ErrorCode =
  | 'bad_request'
  | 'validation_failed'
  | 'unauthorized'
  | 'join_token_required'
  | 'invalid_credentials'
  | 'invalid_token'
  | 'wrong_password'
  | 'forbidden'
  | 'session_required'
  | 'account_not_active'
  | 'csrf_failed'
  | 'rate_limited'
  | 'locked_out'
  | 'quota_exceeded'
  | 'artifact_quota_exceeded'
  | 'checksum_mismatch'
  | 'range_not_satisfiable'
  | 'not_found'
  | 'conflict'
  | 'email_taken'
  | 'slug_taken'
  | 'pool_has_nodes'
  | 'last_admin'
  | 'owner_cannot_leave'
  | 'invite_email_mismatch'
  | 'email_not_verified'
  | 'invite_limit'
  | 'pool_node_limit'
  | 'job_queue_full'
  | 'gone'
  | 'request_timeout'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'misdirected_request'
  | 'mail_disabled'
  | 'smtp_failed'
  | 'service_unavailable'
  | 'model_not_found'
  | 'fellow_failed'
  | 'dispatch_timeout'
  | 'fellow_timeout'
  | 'insufficient_storage'
  | 'internal_error'

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra members of the problem body (e.g. account_status), and retryAfterS for 429s. */
    readonly extra: Record<string, unknown> & { retryAfterS?: number } = {},
  ) {
    super(message)
  }
}

/**
 * The disk under the state file or the artifact store is full (or the owner's quota spent):
 * SQLite's SQLITE_FULL, the system's ENOSPC or EDQUOT, or EFBIG (a file past the file system's
 * largest file or the process's file-size limit, ulimit -f). Nothing is wrong with the request or
 * the code; the operator has to free space (or raise the limit), and the same request succeeds then.
 */
export function isStorageFull(e: unknown): boolean {
  for (let cur = e, depth = 0; cur !== null && typeof cur === 'object' && depth < 4; cur = (cur as { cause?: unknown }).cause, depth++) {
    const code = (cur as { code?: unknown }).code
    if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG') return true
  }
  return false
}

/**
 * The state file stayed locked by another process (an `svc admin` command writing, a backup tool)
 * past the busy timeout: SQLITE_BUSY or SQLITE_LOCKED. The request was fine; it succeeds shortly.
 */
export function isDatabaseBusy(e: unknown): boolean {
  for (let cur = e, depth = 0; cur !== null && typeof cur === 'object' && depth < 4; cur = (cur as { cause?: unknown }).cause, depth++) {
    const code = (cur as { code?: unknown }).code
    if (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))) return true
  }
  return false
}

export const databaseBusy = () => new AppError('service_unavailable', 'The state database is busy with another process (an svc admin command?); retry shortly.', { retryAfterS: 1 })

export const storageFull = (extra: Record<string, unknown> = {}) =>
  new AppError('insufficient_storage', "The leader's disk is full: nothing more could be saved. Try again once its operator has freed space.", { retryAfterS: 60, ...extra })

export const notFound = (what: string) => new AppError('not_found', `${what} not found`)
export const invalid = (message: string, extra: Record<string, unknown> = {}) =>
  new AppError('validation_failed', message, extra)
