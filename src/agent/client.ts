// HTTP calls from a fellow to its leader. Every call has a timeout (a leader that accepts a
// connection and never answers must not wedge the heartbeat), and every failure is typed:
// LeaderError carries the HTTP status and problem code, NetworkError means no answer at all.
import type { HeartbeatInput, HeartbeatResult, RegisterInput, RegisterResult } from '../wire/fellow'
import type { StatusReport } from '../wire/jobs'
import type { InferFrame, InferRequest } from '../wire/inference'
import { decodeFrames, type Frame } from '../wire/frames'

export type { HeartbeatResult, InferFrame, RegisterResult }

export class LeaderError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly retryAfterS: number | null,
    /** A 422's problems, each with the JSON pointer of what it refused (`errors` of problem+json). */
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(`leader answered ${status}${code ? ` ${code}` : ''}${detail ? `: ${detail}` : ''}`)
  }
}

export class NetworkError extends Error {}

export const DEFAULT_TIMEOUT_MS = 10_000
// Relay frames may be large; the frame cap is the leader's (64 MiB by default).
const MAX_FRAME_BYTES = 1024 * 1024 * 1024

/** An artifact in the leader's store, as the agent reads it. */
export interface StoredArtifact {
  id: string
  kind: string
  name: string
  size_bytes: number
  sha256: string
  step: number | null
  stage: number | null
}

interface RequestOptions {
  json?: unknown
  body?: Uint8Array | Blob
  /** Overrides the node token (registration uses the join token). null: no credential. */
  bearer?: string | null
  timeoutMs?: number
  signal?: AbortSignal
}

export class LeaderClient {
  readonly leaderUrl: string

  constructor(
    leaderUrl: string,
    private readonly token: () => string | null,
  ) {
    this.leaderUrl = leaderUrl.replace(/\/+$/, '')
  }

  /**
   * The agent reaches the leader only at --leader. URLs the leader hands out (signals_url,
   * relay_url) are built from its SVC_BASE_URL, which may be a public name this machine cannot
   * use, so their route is kept and put onto --leader (which holds the base URL's path, if any).
   */
  rebase(url: string, ws = false): string {
    let path = url
    try {
      const u = new URL(url)
      path = u.pathname + u.search
    } catch {
      // already a path
    }
    const at = routeStart(path)
    const base = ws ? this.leaderUrl.replace(/^http/, 'ws') : this.leaderUrl
    return base + (at >= 0 ? path.slice(at) : path)
  }

  /** The relay's WebSocket data channel of a job, on the --leader origin (null: none to use). */
  relaySocketUrl(jobId: string): string | null {
    return `${this.leaderUrl.replace(/^http/, 'ws')}/ws/relay/${encodeURIComponent(jobId)}`
  }

  /** The inference channel of a fellow, on the --leader origin. */
  inferSocketUrl(fellowId: string): string {
    return `${this.leaderUrl.replace(/^http/, 'ws')}/ws/infer/${encodeURIComponent(fellowId)}`
  }

  /** The credential requests carry now (the node token once registered). */
  bearer(): string | null {
    return this.token()
  }

  async request(method: string, pathOrUrl: string, opts: RequestOptions = {}): Promise<Response> {
    const url = /^https?:\/\//.test(pathOrUrl) ? this.rebase(pathOrUrl) : this.leaderUrl + pathOrUrl
    const headers: Record<string, string> = {}
    const bearer = opts.bearer === undefined ? this.token() : opts.bearer
    if (bearer) headers.authorization = `Bearer ${bearer}`
    let body: RequestInit['body']
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(opts.json)
    } else if (opts.body) {
      headers['content-type'] = 'application/octet-stream'
      body = opts.body as Uint8Array<ArrayBuffer> | Blob
    }
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout
    let res: Response
    try {
      res = await fetch(url, { method, headers, body, signal })
    } catch (e) {
      const why = timeout.aborted ? `timed out after ${opts.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms` : (e as Error).message
      throw new NetworkError(`${method} ${new URL(url).pathname}: ${why}`)
    }
    if (res.status >= 400) throw await leaderError(res)
    return res
  }

  async register(bearer: string | null, input: RegisterInput): Promise<RegisterResult> {
    const res = await this.request('POST', '/api/v1/workers/register', { json: input, bearer })
    return (await res.json()) as RegisterResult
  }

  async heartbeat(input: HeartbeatInput): Promise<HeartbeatResult> {
    return (await (await this.request('POST', '/api/v1/workers/heartbeat', { json: input })).json()) as HeartbeatResult
  }

  /** A clean stop: the leader shows this fellow offline at once (204). */
  async goodbye(): Promise<void> {
    await this.request('POST', '/api/v1/workers/goodbye', { json: {} })
  }

  async jobStatus(jobId: string, report: StatusReport): Promise<void> {
    await drain(await this.request('POST', `/api/v1/jobs/${jobId}/status`, { json: report }))
  }

  async shipLogs(fellowId: string, lines: string[]): Promise<void> {
    await drain(await this.request('POST', `/api/v1/workers/${fellowId}/logs`, { json: { lines } }))
  }

  async announceServable(body: { name: string; version: string; format: string; size_bytes: number; artifact_id?: string }): Promise<void> {
    await drain(await this.request('POST', '/api/v1/servables', { json: body }))
  }

  /** Starts an artifact upload (the bytes follow with putUpload). */
  async beginUpload(body: { kind: string; name: string; size_bytes: number; sha256: string; job_id?: string; stage?: number; step?: number }): Promise<{ upload_id: string; offset: number; size_bytes: number }> {
    return (await (await this.request('POST', '/api/v1/artifacts/uploads', { json: body })).json()) as { upload_id: string; offset: number; size_bytes: number }
  }

  async uploadState(id: string): Promise<{ upload_id: string; offset: number; size_bytes: number }> {
    return (await (await this.request('GET', `/api/v1/artifacts/uploads/${id}`)).json()) as { upload_id: string; offset: number; size_bytes: number }
  }

  /** Sends bytes from `offset`; the artifact when they were the last, else null. */
  async putUpload(id: string, offset: number, bytes: Blob, signal?: AbortSignal): Promise<StoredArtifact | null> {
    const res = await this.request('PUT', `/api/v1/artifacts/uploads/${id}?offset=${offset}`, { body: bytes, timeoutMs: 30 * 60_000, signal })
    const body = (await res.json()) as { artifact?: StoredArtifact }
    return res.status === 201 && body.artifact ? body.artifact : null
  }

  /** The newest checkpoint of a job's stage in the leader's store, or null. */
  async latestCheckpoint(jobId: string, stage: number): Promise<StoredArtifact | null> {
    try {
      return (await (await this.request('GET', `/api/v1/jobs/${jobId}/checkpoints/latest?stage=${stage}`)).json()) as StoredArtifact
    } catch (e) {
      if (e instanceof LeaderError && e.status === 404) return null
      throw e
    }
  }

  /** An artifact's record (a fellow may read those of its own pool). */
  async artifact(id: string): Promise<StoredArtifact> {
    return (await (await this.request('GET', `/api/v1/artifacts/${id}`)).json()) as StoredArtifact
  }

  /** An artifact's bytes, as a stream (the caller checks the hash). */
  async artifactContent(id: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const res = await this.request('GET', `/api/v1/artifacts/${id}/content`, { timeoutMs: 30 * 60_000, signal })
    return res.body!
  }

  async relayPush(relayUrl: string, channel: string, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
    await drain(await this.request('POST', `${relayUrl}/${channel}/push`, { body: bytes, timeoutMs: 30_000, signal }))
  }

  /** Frames for this fellow's stage, or [] when the long poll ended empty (204). */
  async relayPop(relayUrl: string, channel: string, waitMs: number, signal?: AbortSignal): Promise<Frame[]> {
    const res = await this.request('GET', `${relayUrl}/${channel}/pop?wait_ms=${waitMs}&max=64`, { timeoutMs: waitMs + 10_000, signal })
    if (res.status === 204) return []
    return decodeFrames(new Uint8Array(await res.arrayBuffer()), { maxFrameBytes: MAX_FRAME_BYTES })
  }

  async inferPoll(fellowId: string, waitMs: number, signal?: AbortSignal): Promise<InferRequest | null> {
    const res = await this.request('GET', `/api/v1/infer/requests/${fellowId}?wait_ms=${waitMs}`, { timeoutMs: waitMs + 10_000, signal })
    if (res.status === 204) return null
    return (await res.json()) as InferRequest
  }

  async inferRespond(requestId: string, frames: InferFrame[], signal?: AbortSignal): Promise<void> {
    await drain(await this.request('POST', `/api/v1/infer/responses/${encodeURIComponent(requestId)}`, { json: { frames }, signal }))
  }
}

/**
 * Where the leader's route starts in a path it handed out: the LAST /ws/ or /api/v1/, since its
 * routes hold one of them once, near their start, and nothing after (ids, channel names, numbers).
 * Whatever comes before is SVC_BASE_URL's path, which may hold such a segment itself (/ws/gpu,
 * /svc/ws, /api/v1/x): cut at the first, it was kept and --leader's copy of it added again.
 */
function routeStart(path: string): number {
  const end = path.indexOf('?')
  const p = end >= 0 ? path.slice(0, end) : path
  return Math.max(p.lastIndexOf('/ws/'), p.lastIndexOf('/api/v1/'))
}

async function drain(res: Response): Promise<void> {
  await res.arrayBuffer().catch(() => undefined)
}

async function leaderError(res: Response): Promise<LeaderError> {
  let code = ''
  let detail = ''
  let issues: { path: string; message: string }[] = []
  try {
    const p = (await res.json()) as { code?: unknown; detail?: unknown; title?: unknown; errors?: unknown }
    if (typeof p.code === 'string') code = p.code
    if (typeof p.detail === 'string') detail = p.detail
    else if (typeof p.title === 'string') detail = p.title
    if (Array.isArray(p.errors)) issues = p.errors.filter((i): i is { path: string; message: string } => typeof i?.path === 'string' && typeof i?.message === 'string')
  } catch {
    // Not problem+json: a proxy's own page (its body limit, an auth gate, a timeout), not the leader.
    const type = res.headers.get('content-type')?.split(';')[0]?.trim()
    detail = `not an answer of the leader (${type || 'no content type'}): a proxy in front of it answered instead`
  }
  const ra = Number(res.headers.get('retry-after'))
  return new LeaderError(res.status, code, detail, Number.isFinite(ra) && ra > 0 ? ra : null, issues)
}

/** The token was refused: re-register (heartbeat 401, or 403 from a handshake). */
/**
 * The leader refused the credential: a 401 with its problem code. A proxy's own 401 page (an auth
 * gate in front) says nothing of the node token: re-registering for it rotated the token for naught.
 */
export const isAuthRefusal = (e: unknown): boolean => e instanceof LeaderError && e.status === 401 && e.code !== ''
export const isRetryable = (e: unknown): boolean => e instanceof NetworkError || (e instanceof LeaderError && (e.status >= 500 || e.status === 429 || e.status === 408))
