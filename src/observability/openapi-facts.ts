// What the OpenAPI document must say that the routes' schemas do not: the success answers of
// routes without a response schema (204s, streams, scripts, pages, redirects), the error statuses
// particular to a route (409 on a pool with nodes, 429 on login...), and the problem+json body all
// errors share. Each entry was checked against the running binary by test/e2e/openapi-fuzz.test.ts,
// which fails on any status the document does not name. openapi.ts adds the errors every route of
// a class and shape can answer (401/403 by class, 400/413/415 on bodies, 404 on ids, 422...).
import type { Config } from '../config'
import type { PolicyClass } from '../http/policy'

export interface ResponseFact {
  description: string
  /** Media type -> JSON Schema; none for an answer without a body. */
  content?: Record<string, unknown>
}

export interface ParameterFact {
  name: string
  in: 'query' | 'header'
  description: string
  schema: unknown
}

export interface OperationFacts {
  responses: Record<string, ResponseFact>
  /** Parameters the handler reads without a schema (headers, a page's query). */
  parameters?: ParameterFact[]
  errors: number[]
  security?: (cfg: Config) => Record<string, string[]>[]
  bodyDescription?: string
}

export const ERROR_TEXT: Record<number, string> = {
  400: 'Bad request: the body is not JSON or not UTF-8, nests too deep, or a link token is invalid or expired.',
  401: 'No credential, or a wrong, expired or revoked one.',
  403: 'The credential may not do this: wrong route class, CSRF check failed, not the owner, quota, account not active.',
  404: 'No such resource, or not visible to the caller (a foreign id is "not found").',
  408: 'The request body did not arrive in time.',
  409: 'Conflicts with the current state (taken name, last admin, pool with nodes, node limit, full queue...).',
  410: 'Gone: the request or resource no longer exists.',
  413: 'The request body is too large.',
  421: 'The Host header names a host this leader does not answer to (SVC_BASE_URL\'s, localhost, IP addresses and SVC_ALLOWED_HOSTS): a defence against DNS rebinding.',
  415: 'Unsupported Content-Type.',
  416: 'The requested byte range lies outside the body; Content-Range says its size.',
  422: 'Validation failed: `errors` lists each refused field (or, `checksum_mismatch`, uploaded bytes do not match their SHA-256).',
  429: 'Too many requests or a full queue: retry after Retry-After seconds.',
  502: 'An upstream (SMTP server, fellow) failed.',
  503: 'Temporarily unavailable: retry after Retry-After seconds.',
  504: 'An upstream (fellow) did not answer in time.',
  507: "The leader's disk is full: nothing was saved; retry after Retry-After seconds (an upload goes on from `offset`).",
}

export const PROBLEM = {
  type: 'object',
  description: 'RFC 9457 problem details. `code` is a stable snake_case string; some codes add members (account_status, errors).',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string' },
    code: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } },
    },
    account_status: { type: 'string' },
  },
  additionalProperties: true,
}

export const OPENAI_ERROR = {
  type: 'object',
  description: "OpenAI's error shape, so its official clients understand the chat routes' refusals.",
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: { message: { type: 'string' }, type: { type: 'string' }, param: { type: ['string', 'null'] }, code: { type: ['string', 'null'] } },
    },
  },
}

/** Routes that answer errors in OpenAI's shape (src/inference/routes.ts). */
export { isOpenAiPath } from '../http/policy'

const none = (description: string): ResponseFact => ({ description })
const json = (description: string, schema: unknown = { type: 'object' }): ResponseFact => ({ description, content: { 'application/json': schema } })
const media = (description: string, type: string, schema: unknown = { type: 'string' }): ResponseFact => ({ description, content: { [type]: schema } })
const obj = (properties: Record<string, unknown>) => ({ type: 'object', required: Object.keys(properties), properties })
const items = obj({ items: { type: 'array', items: { type: 'object' } } })
const sse = (what: string) => media(`Server-Sent Events: ${what}; resumes from Last-Event-ID.`, 'text/event-stream')
const lastEventId: ParameterFact = { name: 'Last-Event-ID', in: 'header', description: 'The id of the last event received: the stream resumes after it.', schema: { type: 'string', pattern: '^[0-9]{0,16}$' } }
const html = (description = 'The page.') => media(description, 'text/html')
const bootstrapSecurity = (cfg: Config) => (cfg.bootstrapRequireToken ? [{ bootstrapToken: [] }] : [])

const FACTS: Record<string, Partial<OperationFacts>> = {
  'GET /api/v1/ready': { responses: { 200: json('Ready: the state database answers and is migrated.', obj({ status: { const: 'ready' } })) }, errors: [503] },
  'POST /api/v1/auth/register': { errors: [409, 429] },
  'POST /api/v1/auth/login': { errors: [401, 429] },
  'POST /api/v1/auth/logout': { responses: { 204: none('Logged out; the session cookies are cleared.') } },
  'POST /api/v1/auth/password': { responses: { 204: none('Changed; other sessions are ended.') }, errors: [429] },
  'POST /api/v1/auth/reset-password': { responses: { 204: none('The password is set; sessions are ended.') }, errors: [429] },
  'PATCH /api/v1/admin/role-limits/{role}': { responses: { 200: json('The role\'s limits.', { $ref: '#/components/schemas/RoleLimits' }) } },
  'DELETE /api/v1/admin/pools/{id}': { errors: [409] },
  'DELETE /api/v1/pools/{id}': { errors: [409] },
  'POST /api/v1/pools': { errors: [409] },
  'POST /api/v1/admin/pools': { errors: [409] },
  'POST /api/v1/pools/{id}/invites': { errors: [409, 429] },
  'POST /api/v1/pools/invites/{invite_id}/accept': { errors: [410] },
  'DELETE /api/v1/pools/{id}/members/{user_id}': { responses: { 204: none('Removed from the pool.') }, errors: [409] },
  'GET /api/v1/pools/{id}/metrics': { responses: { 200: json('Latest telemetry of each node of the pool.', items) } },
  'GET /api/v1/pools/{id}/events': { responses: { 200: json('Recent events of the pool, newest first.', items) } },
  'GET /api/v1/pools/{id}/metrics/history': { responses: { 200: json('Telemetry history of the pool.', items) } },
  'PATCH /api/v1/admin/users/{id}': { errors: [409] },
  'POST /api/v1/admin/users/{id}/status': { errors: [409] },
  'POST /api/v1/admin/users/{id}/approve': { errors: [409] },
  'POST /api/v1/admin/users/{id}/resend-verification': { errors: [409] },
  'DELETE /api/v1/admin/users/{id}': { errors: [409] },
  'POST /api/v1/admin/mail/test': { errors: [409, 502] },
  'DELETE /api/v1/bootstrap/join-sessions/{id}': { responses: { 204: none('Revoked.') } },
  'GET /api/v1/bootstrap/manifest.json': { responses: { 200: json('What a new machine needs to join: version, leader URL, agent binary.') }, errors: [401], security: bootstrapSecurity },
  'GET /api/v1/bootstrap/fellow.sh': { responses: { 200: media('The install script.', 'text/x-shellscript') }, errors: [401], security: bootstrapSecurity },
  'GET /api/v1/bootstrap/svc': {
    responses: { 200: media("The leader's own executable, which carries the fellow agent.", 'application/octet-stream', { type: 'string', format: 'binary' }) },
    errors: [401, 404],
    security: bootstrapSecurity,
  },
  'POST /api/v1/workers/register': {
    errors: [401, 403, 409, 429],
    security: () => [{}, { joinToken: [] }, { nodeToken: [] }] as Record<string, string[]>[],
  },
  'POST /api/v1/workers/goodbye': { responses: { 204: none('The fellow shows offline; its job stages are re-placed.') } },
  'POST /api/v1/workers/{fellow_id}/logs': { responses: { 204: none('Appended to the fellow\'s log ring.') } },
  'GET /ws/signals/{fellow_id}': {
    responses: { 101: none('Switching Protocols: the signal WebSocket; text frames {id, signal, job_id?, payload?, ts}. The token may also be passed as ?token=. A plain GET (no Upgrade) answers 400.') },
    errors: [400, 403],
  },
  'GET /ws/relay/{job_id}': {
    responses: {
      101: none(
        'Switching Protocols: the relay data channel of the calling fellow\'s stage (docs/api.md, Relay). Binary messages both ways: a channel tag byte (0 activations, 1 gradients) and frames in the relay encoding; each pushed message is answered in order with a text message {ok, queued_frames, depth_bytes} or {ok: false, code, detail, retry_after_s?}. Closes 1009 for a frame over SVC_RELAY_MAX_FRAME_BYTES, 1003 for anything but such binary messages, 1008 once the fellow is no longer assigned. A plain GET (no Upgrade) answers 400.',
      ),
    },
    errors: [400, 403, 404],
  },
  'GET /ws/infer/{fellow_id}': {
    responses: {
      101: none(
        'Switching Protocols: the inference channel of the calling fellow (docs/api.md, Inference transport). Text messages, one JSON object each: the fellow sends {t: "credit", n} (it may be sent n more requests) and {t: "frames", id, seq, frames} (the POST\'s frames); the leader sends {t: "request", request} (an InferRequest, against credit) and answers each frames message with {t: "ack", seq, result: ok|gone|full|not_yours}. Closes 1009 for a message over SVC_MAX_BODY_BYTES, 1003 for a binary or malformed message, 1008 once the fellow is released. A plain GET (no Upgrade) answers 400.',
      ),
    },
    errors: [400, 403, 404],
  },
  'DELETE /api/v1/workers/{fellow_id}': { responses: { 204: none('Removed.') } },
  'POST /api/v1/workers/release': { responses: { 200: json('Released; the fellow is told to stop.', obj({ released: { const: true }, fellow_id: { type: 'string' } })) } },
  'POST /api/v1/workers/update': { responses: { 200: json('UPDATE signals sent.', obj({ signalled: { type: 'integer', minimum: 0 } })) } },
  'GET /api/v1/workers/{fellow_id}/logs/stream': { responses: { 200: sse('`log` events {ts, line}') }, parameters: [lastEventId] },
  'GET /api/v1/jobs/{job_id}/metrics/stream': { responses: { 200: sse('`metrics` events {step, loss, ...}') }, parameters: [lastEventId] },
  'POST /api/v1/jobs': { errors: [409] },
  'DELETE /api/v1/jobs/{job_id}': { errors: [409] },
  'POST /api/v1/jobs/{job_id}/pause': { errors: [409] },
  'POST /api/v1/jobs/{job_id}/resume': { errors: [409] },
  'POST /api/v1/jobs/{job_id}/checkpoint': { errors: [409] },
  'POST /api/v1/relay/{job_id}/{channel}/push': {
    bodyDescription: 'A sequence of frames, each u32 meta_len, meta JSON, u64 data_len, data (big-endian).',
    responses: { 202: json('Queued for the neighbouring stage.', obj({ queued_frames: { type: 'integer', minimum: 0 }, depth_bytes: { type: 'integer', minimum: 0 } })) },
    errors: [409, 413, 415, 429],
  },
  'GET /api/v1/relay/{job_id}/{channel}/pop': {
    responses: {
      200: media('Frames, in the push wire format; X-Frame-Count says how many.', 'application/octet-stream', { type: 'string', format: 'binary' }),
      204: none('Nothing arrived within wait_ms.'),
    },
  },
  'POST /api/v1/artifacts/uploads': { errors: [409, 413] },
  'DELETE /api/v1/artifacts/uploads/{upload_id}': { errors: [409] },
  'PUT /api/v1/artifacts/uploads/{upload_id}': {
    bodyDescription: 'The next bytes of the artifact, from ?offset= (where the upload stands), at most as many as it still expects; streamed to disk.',
    errors: [409, 413, 415, 422],
  },
  'GET /api/v1/artifacts/{id}/content': {
    parameters: [
      { name: 'Range', in: 'header', description: 'One byte range (bytes=a-b, bytes=a-, bytes=-n), answered with 206; anything else is ignored.', schema: { type: 'string', pattern: '^[\\x20-\\x7e]{0,100}$' } },
      { name: 'If-Range', in: 'header', description: 'The ETag of the copy the range continues: another tag or a date sends the whole body (200).', schema: { type: 'string', pattern: '^[\\x20-\\x7e]{0,100}$' } },
      { name: 'If-None-Match', in: 'header', description: 'ETags the client holds: the artifact\'s answers 304.', schema: { type: 'string', pattern: '^[\\x20-\\x7e]{0,1000}$' } },
    ],
    responses: {
      200: media('The bytes; ETag is the quoted SHA-256, Content-Disposition an attachment.', 'application/octet-stream', { type: 'string', format: 'binary' }),
      206: media('The requested range; Content-Range says which.', 'application/octet-stream', { type: 'string', format: 'binary' }),
      304: none('Not modified: If-None-Match names the ETag (the bytes never change).'),
    },
    errors: [410, 416, 503],
  },
  'DELETE /api/v1/artifacts/{id}': { responses: { 204: none('Deleted; its blob goes with a later collection unless another artifact names it.') } },
  'POST /api/v1/chat/completions': {
    responses: { 200: media('With `stream: true`: chat.completion.chunk events, then [DONE].', 'text/event-stream') },
    errors: [404, 410, 502, 503, 504],
  },
  'POST /api/v1/embeddings': { errors: [404, 410, 502, 503, 504] },
  'POST /api/v1/infer/responses/{request_id}': { responses: { 204: none('Frames accepted.') }, errors: [410, 429] },
  'GET /api/v1/public/stats': { errors: [429] },
  'GET /metrics': { responses: { 200: media('Prometheus text format 0.0.4.', 'text/plain') } },
  'GET /api/v1/openapi.json': { responses: { 200: json('This document.') } },
  'GET /api/v1/docs': { responses: { 200: html('The API reference page.') } },
  'GET /en': { responses: { 301: none('To /, the English landing page.') } },
  'GET /lang/{code}': { responses: { 303: none('Back to the referring page, in the chosen language (svc_lang cookie).'), 404: html('Not a language of the site.') } },
  'GET /robots.txt': { responses: { 200: media('robots.txt', 'text/plain') } },
  'GET /favicon.svg': { responses: { 200: media('The site icon.', 'image/svg+xml') } },
  'DELETE /api/v1/pools/{id}/invites/{invite_id}': { responses: { 204: none('Withdrawn; its link no longer works.') } },
  'GET /favicon.ico': { responses: { 301: none('To /favicon.svg.') } },
  'GET /sitemap.xml': { responses: { 200: media('The sitemap.', 'application/xml') } },
  'GET /llms.txt': { responses: { 200: media('llms.txt', 'text/plain') } },
  'GET /assets/{name}': {
    parameters: [
      { name: 'v', in: 'query', description: 'The asset version: with the current one the answer may be cached for a year.', schema: { type: 'string', maxLength: 64 } },
      { name: 'If-None-Match', in: 'header', description: 'The ETag of a cached copy.', schema: { type: 'string', pattern: '^[\\x20-\\x7e]{0,200}$' } },
    ],
    responses: {
      200: { description: 'A stylesheet, script or icon built into the binary.', content: { 'text/css': { type: 'string' }, 'text/javascript': { type: 'string' }, 'image/svg+xml': { type: 'string' } } },
      304: none('Not modified (If-None-Match).'),
      404: html('No such asset.'),
    },
  },
}

/** The facts of one operation (method lower-case, path with {params}). */
export function factsOf(method: string, path: string, policy: PolicyClass): OperationFacts {
  const f = FACTS[`${method.toUpperCase()} ${path}`] ?? {}
  const responses: Record<string, ResponseFact> = {}
  // Pages: HTML, and class `page` sends a caller without a session to /login.
  if (!path.startsWith('/api/') && !path.startsWith('/ws/') && path !== '/metrics' && f.responses === undefined) {
    responses[200] = html()
    if (policy === 'page') responses[303] = none('To /login without a session (or to /dashboard when the page is not for the caller).')
    if (path.includes('{')) responses[404] = html('The not-found page.')
  }
  return { responses: { ...responses, ...f.responses }, errors: f.errors ?? [], ...(f.parameters ? { parameters: f.parameters } : {}), ...(f.security ? { security: f.security } : {}), ...(f.bodyDescription ? { bodyDescription: f.bodyDescription } : {}) }
}
