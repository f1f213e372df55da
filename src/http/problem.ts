// RFC 9457 problem+json for every error. No stack trace, SQL or secret reaches a body: unexpected
// errors are logged with a request-local reference and answered with a generic 500.
import { Elysia, ValidationError } from 'elysia'
import { AppError, databaseBusy, isDatabaseBusy, isStorageFull, storageFull, type ErrorCode } from '../errors'
import type { Logger } from '../log'
import { issueText, queryParamHolding } from '../wire/issue-text'
import { requestUrl } from './host'

const STATUS: Record<ErrorCode, [number, string]> = {
  bad_request: [400, 'Bad Request'],
  invalid_token: [400, 'Invalid or Expired Link'],
  validation_failed: [422, 'Validation Failed'],
  unauthorized: [401, 'Unauthorized'],
  join_token_required: [401, 'Join Token Required'],
  invalid_credentials: [401, 'Invalid Credentials'],
  forbidden: [403, 'Forbidden'],
  session_required: [403, 'Session Required'],
  account_not_active: [403, 'Account Not Active'],
  csrf_failed: [403, 'CSRF Check Failed'],
  quota_exceeded: [403, 'Quota Exceeded'],
  invite_email_mismatch: [403, 'Invite Email Mismatch'],
  email_not_verified: [403, 'Email Not Verified'],
  wrong_password: [403, 'Wrong Password'],
  not_found: [404, 'Not Found'],
  model_not_found: [404, 'Model Not Found'],
  conflict: [409, 'Conflict'],
  email_taken: [409, 'Email Already Registered'],
  slug_taken: [409, 'Slug Already Taken'],
  pool_has_nodes: [409, 'Pool Has Nodes'],
  last_admin: [409, 'Last Active Admin'],
  owner_cannot_leave: [409, 'Owner Cannot Leave'],
  pool_node_limit: [409, 'Pool Node Limit Reached'],
  job_queue_full: [409, 'Job Queue Full'],
  // 409, not quota_exceeded's 403: a pool's storage fills and empties (deletes, GC), like a job queue;
  // quota_exceeded is a person's plan, which waiting does not change.
  artifact_quota_exceeded: [409, 'Artifact Quota Exceeded'],
  invite_limit: [409, 'Invite Limit Reached'],
  mail_disabled: [409, 'Mail Disabled'],
  request_timeout: [408, 'Request Timeout'],
  misdirected_request: [421, 'Misdirected Request'],
  gone: [410, 'Gone'],
  payload_too_large: [413, 'Payload Too Large'],
  unsupported_media_type: [415, 'Unsupported Media Type'],
  range_not_satisfiable: [416, 'Range Not Satisfiable'],
  checksum_mismatch: [422, 'Checksum Mismatch'],
  rate_limited: [429, 'Too Many Requests'],
  locked_out: [429, 'Temporarily Locked'],
  internal_error: [500, 'Internal Server Error'],
  smtp_failed: [502, 'SMTP Failed'],
  fellow_failed: [502, 'Fellow Failed'],
  service_unavailable: [503, 'Service Unavailable'],
  dispatch_timeout: [504, 'Dispatch Timeout'],
  fellow_timeout: [504, 'Fellow Timeout'],
  insufficient_storage: [507, 'Insufficient Storage'],
}

export function statusOf(code: ErrorCode): number {
  return STATUS[code][0]
}

export function problem(code: ErrorCode, detail: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Response {
  const [status, title] = STATUS[code]
  const { retryAfterS, ...members } = extra
  const h: Record<string, string> = { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers }
  if (typeof retryAfterS === 'number') h['retry-after'] = String(Math.max(1, Math.ceil(retryAfterS)))
  return new Response(JSON.stringify({ type: 'about:blank', title, status, detail, code, ...members }), { status, headers: h })
}

export function problemFrom(e: AppError): Response {
  // After a body timeout the rest of the body may still trickle in: end the connection with the answer.
  return problem(e.code, e.message, e.extra, e.code === 'request_timeout' ? { connection: 'close' } : {})
}

interface ValidationIssue {
  path: string
  message: string
}

function validationIssues(error: ValidationError): ValidationIssue[] {
  try {
    const seen = new Set<string>()
    return error.all.slice(0, 20).map((i) => {
      const path = 'path' in i && typeof i.path === 'string' ? i.path : ''
      const schema = 'schema' in i ? i.schema : undefined
      const type = 'type' in i ? i.type : undefined
      const fallback = 'summary' in i && typeof i.summary === 'string' ? i.summary : 'invalid value'
      const plain = issueText(schema, type, '', 'value' in i ? i.value : undefined)
      const message = plain !== '' ? plain : fallback
      // Summaries echo the refused value ("... but found: <value>"): cap them, so a 1 MiB body is
      // not mirrored twice into the answer.
      return { path: path === '' ? '/' : path.slice(0, 200), message: message.length > 300 ? `${message.slice(0, 300)}...` : message }
    }).filter((x) => {
      // One rule broken is said once (a missing query number was reported twice).
      const key = `${x.path}\n${x.message}`
      return seen.has(key) ? false : (seen.add(key), true)
    })
  } catch {
    return []
  }
}

/**
 * A 500 for an error nobody expected: logged with a reference the answer names, no stack sent.
 * A full disk is no bug: 507 with Retry-After, and a log line that says so.
 */
export function internalProblem(log: Logger, request: Request, error: unknown): Response {
  if (isStorageFull(error)) {
    log.error('disk full: a write failed', { method: request.method, path: requestUrl(request).pathname, error: String((error as Error)?.message ?? error) })
    return problemFrom(storageFull())
  }
  if (isDatabaseBusy(error)) {
    log.warn('state database busy: a request gave up waiting for another process', { method: request.method, path: requestUrl(request).pathname, error: String((error as Error)?.message ?? error) })
    return problemFrom(databaseBusy())
  }
  const ref = Bun.randomUUIDv7()
  log.error('unhandled error', { ref, method: request.method, path: requestUrl(request).pathname, error: String((error as Error)?.stack ?? error) })
  return problem('internal_error', `Something went wrong on our side (reference ${ref}).`)
}

/** A browser's 404 page is a promise the first time (the pages load with it); the rest answer at once. */
export type NotFoundGate = (request: Request) => Response | Promise<Response> | null

export function errorPlugin(log: Logger, notFoundGate: NotFoundGate) {
  return new Elysia({ name: 'errors' }).onError({ as: 'global' }, (c) => {
    const res = toProblem(c.code, c.error, c.request)
    // So after-response hooks (logs, counters) see the real status.
    if (res instanceof Response) {
      c.set.status = res.status
      return res
    }
    return res.then((r) => {
      c.set.status = r.status
      return r
    })
  })

  function toProblem(code: string | number, error: unknown, request: Request): Response | Promise<Response> {
    if (error instanceof AppError) return problemFrom(error)
    switch (code) {
      case 'VALIDATION': {
        const issues = validationIssues(error as ValidationError)
        let where = (error as ValidationError).type
        const first = issues[0]
        // A query number out of range is refused after decoding, where the error lost its field.
        const param = where === 'property' && first?.path === '/' ? queryParamHolding(request.url, (error as ValidationError).value) : null
        if (param !== null && first) {
          where = 'query'
          first.path = `/${param}`
        }
        const detail = first ? `${where}${first.path === '/' ? '' : ` ${first.path}`}: ${first.message}` : `The request ${where} is not valid.`
        return problem('validation_failed', detail, { errors: issues })
      }
      case 'NOT_FOUND':
        // Unknown paths are admin-only: callers without admin rights learn nothing about what exists.
        return notFoundGate(request) ?? problem('not_found', 'No such route.')
      case 'PARSE': {
        // Our body parser throws AppErrors (413, 415, 400); Elysia wraps them as the cause.
        const cause = (error as Error).cause
        if (cause instanceof AppError) return problemFrom(cause)
        return problem('bad_request', 'The request body could not be parsed.')
      }
      case 'INVALID_COOKIE_SIGNATURE':
        return problem('bad_request', 'A cookie is malformed.')
      default: {
        const status = (error as { status?: unknown })?.status
        if (typeof status === 'number' && status === 413) return problem('payload_too_large', 'The request body is too large.')
        return internalProblem(log, request, error)
      }
    }
  }
}
