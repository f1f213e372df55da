// The names client generators give each operation: its operationId (the function, method or file
// name in TypeScript, Python, Go and Java clients) and its summary (the doc comment). The
// generator's own ids are the path spelled out (`postApiV1AuthVerify-email`), often not an
// identifier at all. Here a small rule reads the method and path as verb and noun (`listPools`,
// `getPool`, `pauseJob`), so that a new route gets a sane id with no further work, and a table
// names what the rule reads badly. test/http/openapi-names.test.ts fails on an id that is not an
// identifier or that two operations share.

/** What the rule cannot know: a better id, and the summary (from docs/api.md's route tables). */
interface Naming {
  id?: string
  /** Without one: the route's own (detail.summary), else the id in words. */
  summary?: string
}

const NAMES: Record<string, Naming> = {
  'GET /api/v1/health': { summary: 'Liveness and version' },
  'GET /api/v1/ready': { id: 'getReadiness', summary: 'Readiness: the state database answers' },
  'POST /api/v1/auth/register': { id: 'registerAccount', summary: 'Create an account' },
  'POST /api/v1/auth/login': { id: 'login', summary: 'Log in with email and password' },
  'POST /api/v1/auth/logout': { id: 'logout', summary: 'Log out: end the session' },
  'GET /api/v1/auth/me': { id: 'getMe', summary: 'The calling account' },
  'POST /api/v1/auth/password': { id: 'changePassword', summary: 'Change the password' },
  'POST /api/v1/auth/verify-email': { id: 'verifyEmail', summary: 'Confirm an email address with its token' },
  'POST /api/v1/auth/reset-password': { id: 'resetPassword', summary: 'Set a new password with a reset token' },
  'POST /api/v1/api-tokens': { summary: 'Mint an API token (shown once)' },
  'GET /api/v1/api-tokens': { summary: 'List API tokens' },
  'DELETE /api/v1/api-tokens/{id}': { id: 'revokeApiToken', summary: 'Revoke an API token' },
  'GET /api/v1/admin/pools': { summary: 'List every pool' },
  'POST /api/v1/admin/pools': { summary: 'Create a pool, outside any plan' },
  'GET /api/v1/admin/pools/{id}': { summary: 'Get any pool' },
  'PATCH /api/v1/admin/pools/{id}': { summary: 'Update any pool' },
  'DELETE /api/v1/admin/pools/{id}': { summary: 'Delete any pool' },
  'GET /api/v1/admin/role-limits': { summary: 'List the plans: pool limits by role' },
  'PATCH /api/v1/admin/role-limits/{role}': { id: 'adminUpdateRoleLimits', summary: "Change a role's pool limits" },
  'GET /api/v1/pools': { summary: 'List the pools the caller may see' },
  'POST /api/v1/pools': { summary: "Create a pool within the caller's plan" },
  'GET /api/v1/pools/limits': { id: 'getPoolLimits', summary: "The caller's plan and what it allows" },
  'GET /api/v1/pools/invites/mine': { id: 'listMyInvites', summary: 'List pending invites to the caller' },
  'POST /api/v1/pools/invites/{invite_id}/accept': { id: 'acceptInvite', summary: 'Accept an invite' },
  'GET /api/v1/pools/join-requests': { id: 'listOwnedJoinRequests', summary: 'List join requests to the pools the caller owns' },
  'GET /api/v1/pools/{id}': { summary: 'Get a pool' },
  'PATCH /api/v1/pools/{id}': { summary: 'Update a pool' },
  'DELETE /api/v1/pools/{id}': { summary: 'Delete a pool' },
  'POST /api/v1/pools/{id}/invites': { id: 'invitePoolMember', summary: 'Invite someone to a pool by email' },
  'GET /api/v1/pools/{id}/invites': { summary: "List a pool's pending invites" },
  'DELETE /api/v1/pools/{id}/invites/{invite_id}': { id: 'withdrawPoolInvite', summary: 'Withdraw a pending invite' },
  'POST /api/v1/pools/{id}/join': { summary: 'Join a pool, or ask to' },
  'GET /api/v1/pools/{id}/join-requests': { summary: "List a pool's join requests" },
  'POST /api/v1/pools/{id}/join-requests/{user_id}/approve': { id: 'approveJoinRequest', summary: 'Approve a join request' },
  'POST /api/v1/pools/{id}/join-requests/{user_id}/reject': { id: 'rejectJoinRequest', summary: 'Reject a join request' },
  'GET /api/v1/pools/{id}/members': { summary: "List a pool's members" },
  'DELETE /api/v1/pools/{id}/members/{user_id}': { id: 'removePoolMember', summary: 'Leave a pool, or remove a member' },
  'GET /api/v1/pools/{id}/metrics': { summary: 'Latest telemetry of each node of a pool' },
  'GET /api/v1/pools/{id}/events': { summary: 'Recent events of a pool' },
  'GET /api/v1/pools/{id}/metrics/history': { summary: "Telemetry history of a pool's nodes" },
  'GET /api/v1/pools/{id}/telemetry': { summary: "A pool's machines over time" },
  'GET /api/v1/admin/users': { summary: 'List accounts' },
  'GET /api/v1/admin/users/pending-count': { id: 'adminCountPendingUsers', summary: 'Count accounts awaiting approval' },
  'PATCH /api/v1/admin/users/{id}': { summary: "Change an account's name, email or role" },
  'DELETE /api/v1/admin/users/{id}': { summary: 'Delete an account and what it owns' },
  'POST /api/v1/admin/users/{id}/status': { id: 'adminSetUserStatus', summary: 'Disable or reactivate an account' },
  'POST /api/v1/admin/users/{id}/reset-password': { id: 'adminResetUserPassword', summary: 'Send or show a password reset link' },
  'POST /api/v1/admin/users/{id}/approve': { summary: 'Approve an account' },
  'POST /api/v1/admin/users/{id}/resend-verification': { id: 'adminResendVerification', summary: 'Mail a new verification link' },
  'GET /api/v1/admin/audit': { id: 'adminListAuditEntries', summary: 'Read the audit log' },
  'GET /api/v1/admin/mail': { id: 'adminGetMailStatus', summary: 'Mail status: outbox and recent failures' },
  'POST /api/v1/admin/mail/test': { id: 'adminSendTestMail', summary: 'Send a test mail to the caller' },
  'POST /api/v1/bootstrap/join-sessions': { id: 'createJoinSession', summary: 'Open a join session: a token and command for a new machine' },
  'DELETE /api/v1/bootstrap/join-sessions/{id}': { id: 'revokeJoinSession', summary: 'Revoke a join session' },
  'GET /api/v1/bootstrap/manifest.json': { id: 'getBootstrapManifest', summary: 'What a new machine needs to join' },
  'GET /api/v1/bootstrap/fellow.sh': { id: 'getInstallScript', summary: 'The fellow install script' },
  'GET /api/v1/bootstrap/svc': { id: 'downloadAgentBinary', summary: "Download the leader's executable (the fellow agent)" },
  'POST /api/v1/workers/register': { id: 'registerFellow', summary: 'Register a fellow' },
  'POST /api/v1/workers/heartbeat': { id: 'sendHeartbeat', summary: "Report a fellow's state; get its pending signals" },
  'POST /api/v1/workers/goodbye': { id: 'sayGoodbye', summary: 'Tell the leader the fellow is going offline' },
  'POST /api/v1/workers/{fellow_id}/logs': { id: 'appendFellowLogs', summary: "Append lines to a fellow's log" },
  'GET /ws/signals/{fellow_id}': { summary: "A fellow's signal WebSocket" },
  'GET /api/v1/workers': { id: 'listFellows', summary: 'List fellows' },
  'GET /api/v1/cluster/nodes': { id: 'listNodes', summary: 'List fellows (the cluster view)' },
  'GET /api/v1/cluster/devices': { id: 'listDevices', summary: "List the fellows' GPUs" },
  'DELETE /api/v1/workers/{fellow_id}': { id: 'removeFellow', summary: 'Remove a fellow' },
  'GET /api/v1/workers/{fellow_id}': { id: 'getFellow', summary: 'Get a fellow' },
  'POST /api/v1/workers/release': { id: 'releaseFellow', summary: 'Release a fellow: stop it and revoke its token' },
  'POST /api/v1/workers/update': { id: 'updateFellows', summary: 'Tell a fellow, or every fellow of a pool, to update' },
  'GET /api/v1/workers/{fellow_id}/telemetry': { id: 'getFellowTelemetry', summary: "A fellow's telemetry over time" },
  'GET /api/v1/workers/{fellow_id}/logs/stream': { id: 'streamFellowLogs', summary: "Follow a fellow's log (Server-Sent Events)" },
  'POST /api/v1/jobs': { id: 'submitJob', summary: 'Submit a job' },
  'GET /api/v1/jobs': { summary: "List the jobs of the caller's pools" },
  'DELETE /api/v1/jobs': { id: 'purgeJobs', summary: 'Purge every job' },
  'GET /api/v1/jobs/{job_id}': { summary: 'Get a job' },
  'DELETE /api/v1/jobs/{job_id}': { id: 'cancelJob', summary: 'Cancel a job' },
  'POST /api/v1/jobs/{job_id}/pause': { summary: 'Pause a job' },
  'POST /api/v1/jobs/{job_id}/resume': { summary: 'Resume a paused job' },
  'POST /api/v1/jobs/{job_id}/checkpoint': { summary: "Ask a job's fellows for a checkpoint" },
  'POST /api/v1/jobs/{job_id}/status': { id: 'reportJobStatus', summary: "Report a fellow's part of a job" },
  'GET /api/v1/jobs/{job_id}/metrics/stream': { id: 'streamJobMetrics', summary: "Follow a job's metrics (Server-Sent Events)" },
  'GET /ws/relay/{job_id}': { summary: "The relay WebSocket of a fellow's stage" },
  'POST /api/v1/relay/{job_id}/{channel}/push': { id: 'pushRelayFrames', summary: 'Push frames to the neighbouring stage' },
  'GET /api/v1/relay/{job_id}/{channel}/pop': { id: 'popRelayFrames', summary: 'Take frames from the neighbouring stage' },
  'POST /api/v1/servables': { id: 'publishServable', summary: 'Record a servable model manifest' },
  'GET /api/v1/servables': { summary: 'List servable model manifests' },
  'POST /api/v1/artifacts/uploads': { id: 'startUpload', summary: 'Start an artifact upload' },
  'GET /api/v1/artifacts/uploads/{upload_id}': { id: 'getUpload', summary: 'Where an upload stands' },
  'PUT /api/v1/artifacts/uploads/{upload_id}': { id: 'uploadBytes', summary: "Send an upload's next bytes" },
  'DELETE /api/v1/artifacts/uploads/{upload_id}': { id: 'cancelUpload', summary: 'Cancel an upload' },
  'GET /api/v1/artifacts': { summary: 'List artifacts' },
  'GET /api/v1/artifacts/{id}': { summary: 'Get an artifact' },
  'DELETE /api/v1/artifacts/{id}': { summary: 'Delete an artifact' },
  'GET /api/v1/artifacts/{id}/content': { id: 'downloadArtifact', summary: "Download an artifact's bytes" },
  'GET /api/v1/jobs/{job_id}/checkpoints/latest': { id: 'getLatestCheckpoint', summary: "The latest checkpoint of a job's stage" },
  'GET /api/v1/models': { summary: 'List models (OpenAI-compatible)' },
  'GET /api/v1/models/{model}': { summary: 'Get a model (OpenAI-compatible)' },
  'POST /api/v1/chat/completions': { summary: 'Create a chat completion (OpenAI-compatible)' },
  'POST /api/v1/embeddings': { summary: 'Create embeddings (OpenAI-compatible)' },
  'GET /ws/infer/{fellow_id}': { id: 'openInferenceSocket', summary: "A fellow's inference WebSocket" },
  'GET /api/v1/inference/serving': { id: 'listServing', summary: 'Which fellows serve which models' },
  'GET /api/v1/infer/requests/{fellow_id}': { id: 'pollInferenceRequest', summary: 'Wait for the next inference request' },
  'POST /api/v1/infer/responses/{request_id}': { id: 'sendInferenceFrames', summary: 'Send frames of an inference answer' },
  'GET /api/v1/public/stats': { summary: 'Public statistics of the leader' },
  'GET /api/v1/me/contribution': { id: 'getMyContribution', summary: "The caller's contribution" },
  'GET /metrics': { id: 'getMetrics' },
  'GET /api/v1/openapi.json': { id: 'getOpenApiDocument' },
  'GET /api/v1/docs': { id: 'getApiDocsPage' },
  'GET /': { id: 'getHomePage', summary: 'The landing page' },
  'GET /de': { id: 'getGermanHomePage', summary: 'The landing page in German' },
  'GET /en': { id: 'redirectEnglishHomePage', summary: 'Redirect to the English landing page' },
  'GET /lang/{code}': { id: 'setLanguage', summary: "Set the site's language" },
  'GET /robots.txt': { id: 'getRobotsTxt', summary: 'robots.txt' },
  'GET /sitemap.xml': { id: 'getSitemap', summary: 'The sitemap' },
  'GET /llms.txt': { id: 'getLlmsTxt', summary: 'llms.txt' },
  'GET /assets/{name}': { id: 'getAsset', summary: 'A stylesheet, script or icon' },
  'GET /favicon.svg': { id: 'getFavicon', summary: 'The site icon' },
  'GET /favicon.ico': { id: 'redirectFavicon', summary: 'Redirect to the site icon' },
}

const capital = (w: string) => w.charAt(0).toUpperCase() + w.slice(1)
/** Segment words as one PascalCase noun: `join-requests` -> JoinRequests, `manifest.json` -> ManifestJson. */
const pascal = (segment: string) => segment.split(/[-._]/).filter(Boolean).map(capital).join('')
/** English plural to singular, enough for path segments (pools, entries, boxes; status and metrics stay). */
const singular = (w: string) =>
  w.endsWith('ies') ? `${w.slice(0, -3)}y` : /(x|ch|sh|ss|us)es$/.test(w) ? w.slice(0, -2) : /(ss|us|is|ics)$/.test(w) ? w : w.endsWith('s') ? w.slice(0, -1) : w
const isParam = (segment: string | undefined) => segment !== undefined && segment.startsWith('{')

/**
 * The rule: the path's fixed segments are the noun (a segment before an id is one of many, so
 * singular), the method the verb: GET lists (when the answer is a list) or gets, POST creates (onto
 * a plural: `/pools` -> createPool) or does its last segment (`/jobs/{id}/pause` -> pauseJob),
 * PATCH updates, PUT replaces, DELETE deletes. Admin routes start with `admin`, WebSockets are opened, pages are got.
 */
export function operationIdFor(method: string, path: string, list: boolean): string {
  if (path.startsWith('/ws/')) return `open${nouns(path.slice(3).split('/').filter(Boolean), true)}Socket`
  if (!path.startsWith('/api/')) return `get${nouns(path.split('/').filter(Boolean), true) || 'Index'}Page`
  let segments = path.replace(/^\/api\/v\d+/, '').split('/').filter(Boolean)
  const admin = segments[0] === 'admin'
  if (admin) segments = segments.slice(1)
  const last = segments.length - 1
  let verb: string
  const plural = (w: string) => singular(w) !== w
  if (isParam(segments[last])) verb = { get: 'get', patch: 'update', put: 'replace', delete: 'delete' }[method] ?? method
  else if (method === 'get') verb = list ? 'list' : 'get'
  else if (method === 'post' && !plural(segments[last]!)) {
    // An action (`/jobs/{id}/pause`, `/workers/register`): its verb is the last segment.
    verb = pascal(segments[last]!).replace(/^./, (c) => c.toLowerCase())
    segments = segments.slice(0, last).map((s, i) => (i === last - 1 ? singular(s) : s))
  } else if (method === 'post') {
    verb = 'create'
    segments = [...segments.slice(0, last), singular(segments[last]!)]
  } else verb = { patch: 'update', put: 'replace', delete: 'delete' }[method] ?? method
  const id = `${verb}${nouns(segments, true)}`
  return admin ? `admin${capital(id)}` : id
}

/** The fixed segments as one noun; one followed by an id is singular. */
function nouns(segments: string[], singularBeforeId: boolean): string {
  return segments
    .map((s, i) => (isParam(s) ? '' : pascal(singularBeforeId && isParam(segments[i + 1]) ? singular(s) : s)))
    .join('')
}

/** `listPools` -> "List pools": the summary of an operation the table does not describe. */
const summaryOf = (id: string) => capital(id.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase())

/** The id and summary of one operation (method lower-case, path with {params}). */
export function namingOf(method: string, path: string, list: boolean): { operationId: string; summary: string } {
  const named = NAMES[`${method.toUpperCase()} ${path}`]
  const operationId = named?.id ?? operationIdFor(method, path, list)
  return { operationId, summary: named?.summary ?? summaryOf(operationId) }
}
