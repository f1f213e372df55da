// The remote commands' HTTP client: which leader and token (flag, then SVC_*, then the config
// file), JSON calls whose bodies are checked against the routes' own TypeBox schemas before they
// leave, and Server-Sent Events. Every failure becomes one plain line (CliError or UsageError).
import type { TSchema } from '@sinclair/typebox'
import { FormatRegistry, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { leaderBase, loadClientEnv } from '../config'
import { isEmailAddress } from '../accounts/email'
import { issueText } from '../wire/issue-text'
import { UUID_ANY_CASE } from '../wire/formats'
import { configPath, readConfigFile } from './config-file'
import type { Values } from './spec'
import { CliError, UsageError } from './usage'

/** An id as a person may type it, in either case (refs lower-case it before it is sent). */
export const isUuid = (s: string) => UUID_ANY_CASE.test(s)

// The formats the routes' schemas name (uuid, date-time and the query numbers: src/wire/formats.ts); Elysia
// registers its own only inside the server.
if (!FormatRegistry.Has('email')) FormatRegistry.Set('email', isEmailAddress)

/** Checks a request body or query against the route's schema, so a mistake is named before any call. */
export function checkInput(schema: TSchema, value: unknown, usage?: string, names: Record<string, string> = {}): void {
  const first = Value.Errors(schema, value).First()
  if (!first) return
  const field = first.path.replace(/^\//, '').split('/')[0]!
  const label = names[field] ?? (field ? `--${field.replace(/_/g, '-')}` : 'input')
  // The plain words the leader's 422 would use, else TypeBox's.
  const words = issueText(first.schema, first.type, first.message)
  throw new UsageError(`${label}: ${words} (got ${shown(first.value)})`, usage)
}

/** The refused value as it is echoed: JSON, and cut short when long (a pasted file is not repeated). */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value)
  return json.length <= 60 ? json : `${json.slice(0, 40)}... (${typeof value === 'string' ? `${value.length} characters` : `${json.length} characters of JSON`})`
}

// What every leader's answer to a read has at least, whatever its version: a list of records with
// ids, one record with its id. Only that much is checked (a newer leader may say more, or values
// this CLI does not know); an answer without it is another server's (`{}`, `{"items": [{}]}` from
// something else on the port), said as such instead of failing later on a missing field.
const Id = Type.Object({ id: Type.String() })
const LIST = Type.Object({ items: Type.Array(Id) })
const SHAPES: [RegExp, TSchema][] = [
  [/^\/api\/v1\/cluster\/nodes$/, Type.Object({ items: Type.Array(Type.Object({ fellow_id: Type.String() })) })],
  [/^\/api\/v1\/models$/, Type.Object({ data: Type.Array(Type.Object({ id: Type.String(), created: Type.Number() })) })],
  [/^\/api\/v1\/artifacts\/uploads\/[^/]+$/, Type.Object({ offset: Type.Integer() })],
  [/^\/api\/v1\/(pools|jobs|artifacts|api-tokens|admin\/users|admin\/audit)$/, LIST],
  [/^\/api\/v1\/(pools|jobs|artifacts)\/[^/]+$/, Id],
]

/** The least a leader's answer to `GET path` holds, or null when not checked. */
export function leaderShape(method: string, path: string): TSchema | null {
  if (method !== 'GET') return null
  return SHAPES.find(([re]) => re.test(path))?.[1] ?? null
}

export interface Target {
  url: string
  token: string | null
  /** How the leader was chosen, for messages: `leader "prod"`, `SVC_LEADER_URL`. */
  source: string
}

/** The leader and token of a remote command: --leader/--token, then SVC_LEADER_URL/SVC_TOKEN, then the config file. */
export function resolveTarget(flags: Values): Target {
  const env = loadClientEnv()
  const file = readConfigFile(env.configFile)
  const wanted = (flags.leader as string | undefined) ?? env.leader
  let url: string
  let source: string
  let fileToken: string | null = null
  if (wanted !== null && wanted !== undefined) {
    const named = file.leaders[wanted]
    if (named) {
      ;({ url, token: fileToken } = named)
      source = `leader "${wanted}"`
    } else if (/^https?:\/\//i.test(wanted)) {
      url = wanted
      source = flags.leader !== undefined ? '--leader' : 'SVC_LEADER_URL'
      // The same URL logged in under a name brings its token along.
      fileToken = Object.values(file.leaders).find((e) => sameUrl(e.url, wanted))?.token ?? null
    } else {
      const names = Object.keys(file.leaders)
      const from = flags.leader !== undefined ? '--leader' : 'SVC_LEADER_URL'
      // "ftp://x", "leader.example.org": a URL meant, but not one a leader answers on.
      const urlish = /^[a-z][a-z0-9+.-]*:\/\//i.test(wanted) || wanted.includes('.') || wanted.includes(':')
      if (urlish) throw new UsageError(`${from}: not a leader URL: ${JSON.stringify(wanted)} (want http://HOST:PORT or https://HOST, or the name of a leader you logged in to)`)
      throw new CliError(`no leader named "${wanted}" in ${configPath(env.configFile)}${names.length ? ` (known: ${names.join(', ')})` : ''} (${from}); give a URL (http://HOST:PORT) or run svc login`)
    }
  } else {
    const names = Object.keys(file.leaders)
    if (file.default && !file.leaders[file.default]) {
      throw new CliError(`the default leader "${file.default}" of ${env.configFile} is not among its leaders${names.length ? ` (${names.join(', ')})` : ''}: svc login URL --name ${file.default}, or pass --leader NAME`)
    }
    const name = file.default ?? (names.length === 1 ? names[0]! : null)
    const entry = name === null ? undefined : file.leaders[name]
    if (!entry && env.configFile === null) throw new CliError('no leader: pass --leader URL (or set SVC_LEADER_URL); there is no config file, as HOME is not set (SVC_CLI_CONFIG names one)')
    if (!entry) throw new CliError(names.length > 1 ? `several leaders in ${env.configFile} (${names.join(', ')}) and none is the default: pass --leader NAME` : 'no leader: run `svc login URL`, or pass --leader URL (or set SVC_LEADER_URL)')
    ;({ url, token: fileToken } = entry)
    source = `leader "${name}"`
  }
  try {
    const u = new URL(url)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error()
  } catch {
    throw new UsageError(`not a leader URL: ${JSON.stringify(url)} (want http://HOST:PORT or https://HOST)`)
  }
  const token = (flags.token as string | undefined) ?? env.token ?? fileToken
  return { url: leaderBase(url), token, source }
}

const sameUrl = (a: string, b: string) => leaderBase(a).toLowerCase() === leaderBase(b).toLowerCase()

export interface CallOptions {
  body?: unknown
  /** Bytes sent as application/octet-stream instead of a JSON body (an artifact upload). */
  raw?: Blob | ReadableStream<Uint8Array>
  /** How long the whole exchange may take (default 30 s); null: no limit (a large transfer). */
  timeoutMs?: number | null
  query?: Record<string, string | number | boolean | undefined>
  /** Extra headers (a session cookie, say). */
  headers?: Record<string, string>
  /** No bearer token, even when one is configured. */
  anonymous?: boolean
  signal?: AbortSignal
  /** The answer's schema: one that does not fit is no leader's answer (another server on the port). */
  shape?: TSchema
}

/** One line for a refusal: the problem's `detail` (or OpenAI's `error.message`), with a hint for 401. */
async function failure(res: Response, method: string, path: string, base: string): Promise<CliError> {
  let text = ''
  try {
    text = await res.text()
  } catch {
    // the body is a nicety
  }
  let o: { detail?: string; title?: string; code?: string; error?: { message?: string; code?: string } } | null = null
  try {
    o = JSON.parse(text)
  } catch {
    // not the leader's words
  }
  const status = `${res.status}${res.statusText ? ` ${res.statusText}` : ''}`
  // A proxy in front of a leader that is restarting (or gone) answers for it, in its own words: the
  // leader is away, which a follower waits out, not a refusal.
  const c = o?.code ?? o?.error?.code
  const code = typeof c === 'string' ? c : null
  if (res.status === 504 && code === null) {
    return new LeaderUnreachable(`${method} ${path}: the leader did not answer its proxy in time (${status}): it is away or busy, or the proxy waits less than the call takes (nginx: proxy_read_timeout)`)
  }
  if ((res.status === 502 || res.status === 503) && code === null) {
    return new LeaderUnreachable(`${method} ${path}: the leader did not answer its proxy (${status})`)
  }
  // The leader says every refusal in JSON; an HTML page is some other server's (a wrong port), or
  // the proxy's in front of it, which answers some requests itself.
  if (text.trim() !== '' && (typeof o !== 'object' || o === null)) {
    const retryAfter = res.headers.get('retry-after')
    return new CliError(`${method} ${path}: ${proxyPage(res.status, status, base, /^\d+$/.test(retryAfter ?? '') ? Number(retryAfter) : null)}`)
  }
  const members: Record<string, unknown> = o ?? {}
  const detail = (o?.detail ?? o?.error?.message ?? o?.title ?? '').replace(/\s+/g, ' ').trim() || res.statusText || 'no detail'
  // A wrong password (svc login, a password asked for again) is no token's fault.
  if (res.status === 401 && code === 'invalid_credentials') return new LeaderRefused(detail, code, members, res.status)
  if (res.status === 401) return new CliError(`${detail.replace(/\.$/, '')} (the leader refused the token: svc login with a new one, or check --token and SVC_TOKEN)`)
  if (res.status === 404 && detail === 'no detail') return new CliError(`${method} ${path}: not found`)
  return new LeaderRefused(detail, code, members, res.status)
}

/**
 * What a page that is not the leader's says, after `METHOD path: `. The statuses a reverse proxy
 * answers itself are its limits, not a missing leader: they say which limit and what to change.
 */
function proxyPage(code: number, status: string, base: string, retryAfterS: number | null): string {
  const proxy = `a proxy in front of ${base}`
  switch (code) {
    case 401:
    case 403:
      return `${proxy} refused the request (${status}); the leader never saw it: an auth proxy or an address rule, which svc's bearer token does not pass; let /api/ through to the leader (it checks the token itself), or use an address of the leader that does not go through it (or is ${base} no leader at all?)`
    case 404:
      return `the answer (${status}) is not a leader's: is ${base} a leader? (one served under a path by a proxy needs that path in the URL: https://HOST/PATH)`
    case 408:
      return `${proxy} stopped waiting for the request (${status}); the leader never saw all of it: try again, or give the proxy more time for a slow upload (nginx: client_body_timeout)`
    case 413:
      // nginx takes 1 MiB by default; an artifact upload is as large as its file.
      return `${proxy} refused the request as too large (${status}); the leader never saw it: raise the proxy's body limit (nginx: client_max_body_size 10g; proxy_request_buffering off; for artifacts, see docs/operations.md, Artifact storage)`
    case 429:
      return `${proxy} limits how often it is called (${status}${retryAfterS === null ? '' : `, try again in ${retryAfterS} s`}); the leader never saw the request: wait, or raise the proxy's rate limit for /api/ (nginx: limit_req)`
    default:
      return `the answer (${status}) is not a leader's: is ${base} a leader?`
  }
}

/** The leader answered with an error: its words, and its `code` and members for a command that says more. */
export class LeaderRefused extends CliError {
  constructor(
    message: string,
    readonly code: string | null,
    readonly members: Record<string, unknown>,
    /** The HTTP status: 5xx is the leader failing for now (a follower waits it out), 4xx a refusal. */
    readonly status = 0,
  ) {
    super(message)
  }
}

export class Client {
  constructor(readonly target: Target) {}

  get url(): string {
    return this.target.url
  }

  private headers(opts: CallOptions, json: boolean): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', ...opts.headers }
    if (json) h['content-type'] = 'application/json'
    if (this.target.token !== null && !opts.anonymous) h['authorization'] = `Bearer ${this.target.token}`
    return h
  }

  private pathWithQuery(path: string, query?: CallOptions['query']): string {
    const qs = new URLSearchParams()
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v))
    const s = qs.toString()
    return s ? `${path}?${s}` : path
  }

  /** The raw answer of a call; refusals (>= 400) and unreachable leaders are CliErrors. */
  async fetch(method: string, path: string, opts: CallOptions = {}): Promise<Response> {
    const full = this.pathWithQuery(path, opts.query)
    let res: Response
    try {
      // A caller with its own signal (a stream it ends itself) has no default limit.
      const timeoutMs = opts.timeoutMs !== undefined ? opts.timeoutMs : opts.signal ? null : 30_000
      const signals = [opts.signal, timeoutMs === null ? undefined : AbortSignal.timeout(timeoutMs)].filter((x) => x !== undefined)
      const headers = this.headers(opts, opts.body !== undefined)
      if (opts.raw !== undefined) headers['content-type'] = 'application/octet-stream'
      res = await fetch(`${this.target.url}${full}`, {
        method,
        headers,
        body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
        signal: signals.length === 0 ? undefined : AbortSignal.any(signals),
        redirect: 'manual',
      })
    } catch (e) {
      const err = e as { code?: string; name?: string; message?: string }
      // A leader that does not answer in time is away as much as one that refuses the connection.
      if (err.name === 'TimeoutError') throw new LeaderUnreachable(`the leader at ${this.target.url} did not answer within ${Math.round((opts.timeoutMs ?? 30_000) / 1000)} s`)
      if (err.name === 'AbortError') throw new CliError('cancelled')
      throw new LeaderUnreachable(`cannot reach the leader at ${this.target.url} (${this.target.source}): ${netReason(e)}`)
    }
    if (res.status >= 400) throw await failure(res, method, path, this.target.url)
    if (res.status >= 300) throw new CliError(`${method} ${path}: the leader answered ${res.status} (a redirect: is ${this.target.url} the leader's base URL?)`)
    return res
  }

  /** A JSON call; the answer's JSON (null for 204). */
  async call<T>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
    const res = await this.fetch(method, path, opts)
    if (res.status === 204) return null as T
    const text = await res.text()
    let value: unknown
    try {
      value = text === '' ? null : JSON.parse(text)
    } catch {
      throw new CliError(`${method} ${path}: the answer is not JSON (is ${this.target.url} a leader?)`)
    }
    const shape = opts.shape ?? leaderShape(method, path)
    if (shape && !Value.Check(shape, value)) throw new CliError(`${method} ${path}: the answer is not the one a leader gives (is ${this.target.url} a leader?)`)
    return value as T
  }

  get<T>(path: string, query?: CallOptions['query']): Promise<T> {
    return this.call<T>('GET', path, { query })
  }

  /**
   * Reads a Server-Sent Events answer, calling `onEvent` for each event until it returns false,
   * the stream ends, or `signal` aborts.
   */
  async events(path: string, onEvent: (event: string, data: string, id: string | null) => boolean | void | Promise<boolean | void>, opts: { signal?: AbortSignal; method?: string; body?: unknown; headers?: Record<string, string>; onComment?: () => boolean | void } = {}): Promise<void> {
    const ctl = new AbortController()
    const abort = () => ctl.abort()
    // A signal aborted already fires no more 'abort' event: the stream would never end.
    if (opts.signal?.aborted) return
    opts.signal?.addEventListener('abort', abort)
    try {
      const res = await this.fetch(opts.method ?? 'GET', path, { signal: ctl.signal, body: opts.body, headers: { accept: 'text/event-stream', ...opts.headers } })
      if (!res.body) return
      const decoder = new TextDecoder()
      let buf = ''
      try {
        for await (const chunk of res.body) {
          buf += decoder.decode(chunk as Uint8Array, { stream: true })
          let sep: number
          while ((sep = buf.search(/\r?\n\r?\n/)) !== -1) {
            const block = buf.slice(0, sep)
            buf = buf.slice(sep).replace(/^\r?\n\r?\n/, '')
            const lines = block.split(/\r?\n/)
            if (lines.every((l) => l.startsWith(':'))) {
              if (opts.onComment?.() === false) return
              continue
            }
            let event = 'message'
            let id: string | null = null
            const data: string[] = []
            for (const l of lines) {
              if (l.startsWith('event:')) event = l.slice(6).trim()
              else if (l.startsWith('data:')) data.push(l.slice(5).replace(/^ /, ''))
              else if (l.startsWith('id:')) id = l.slice(3).trim()
            }
            if ((await onEvent(event, data.join('\n'), id)) === false) return
          }
        }
      } catch (e) {
        if (e instanceof CliError || e instanceof UsageError) throw e
        if (ctl.signal.aborted) return
        throw new LeaderUnreachable(`the stream from ${this.target.url} broke off: ${netReason(e)}`)
      }
    } finally {
      opts.signal?.removeEventListener('abort', abort)
      ctl.abort()
    }
  }
}

/**
 * Why a connection failed, for a person: the error code (ECONNRESET) when there is one, else the
 * message without Bun's advice to its programmers ("pass `verbose: true` ... to fetch()").
 */
export function netReason(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown }
  if (typeof err?.code === 'string' && /^E[A-Z]+$/.test(err.code)) return err.code
  const message = typeof err?.message === 'string' ? err.message.replace(/\s*For more information, pass `verbose: true`[\s\S]*$/, '') : ''
  return message || 'connection failed'
}

/** The leader did not answer, or a stream from it broke off: a restart, say, which a follower may wait out. */
export class LeaderUnreachable extends CliError {}

/** The client of a remote command, refusing early when no token is known. */
export function clientFor(flags: Values, opts: { tokenOptional?: boolean } = {}): Client {
  const target = resolveTarget(flags)
  if (target.token === null && !opts.tokenOptional) throw new CliError(`no API token for ${target.url}: run svc login, or pass --token (or set SVC_TOKEN)`)
  if (target.token !== null && /\s/.test(target.token)) throw new UsageError('the token contains white space; copy it again')
  return new Client(target)
}
