// The one policy layer. Every route states a class through the `policy` macro, which records it in
// the route's `detail`; one global derive looks the class up by the matched route and enforces it
// before the body is validated or the handler runs. A route without a class, and any path no route
// matches, is treated as `admin` (default-deny), so forgetting the macro can only lock a route.
import { Elysia } from 'elysia'
import { AppError, invalid } from '../errors'
import { safeEqual } from '../crypto'
import { clientIpResolver } from './client-ip'
import { cookieFrom } from './cookies'
import { hostCheck, originCheck, requestUrl } from './host'
import { CSRF_COOKIE, CSRF_HEADER, csrfValid } from './csrf'
import type { Config } from '../config'
import type { AnonymousCaller, Caller, CredentialResolver, NodeCaller, UserCaller } from '../caller'
import type { Logger } from '../log'

export const POLICY_CLASSES = ['public', 'page', 'node', 'chat', 'session', 'operator', 'member', 'admin'] as const
export type PolicyClass = (typeof POLICY_CLASSES)[number]

export const SESSION_COOKIE = 'svc_session'

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export interface RouteMeta {
  policy: PolicyClass
  /** False for a route registered without the macro (it is then admin-only). */
  declared: boolean
  /** Takes application/octet-stream instead of JSON (declared with detail['x-body'] = 'binary'). */
  binary: boolean
  /** A binary body the handler reads itself, chunk by chunk (detail['x-body-stream']): never buffered whole. */
  stream: boolean
  /** Also open to `Authorization: Bearer <SVC_METRICS_TOKEN>` (declared with detail['x-metrics-token']). */
  metricsToken: boolean
  /** Declares no body: a JSON body with anything in it is refused, not ignored. */
  bodyless: boolean
  /** Its body is a JSON object: a list is refused as such (Elysia took it for an object with keys 0, 1, ...). */
  objectBody: boolean
  /** An API route that declares no query: a parameter sent to it is refused, not ignored. */
  queryless: boolean
}

declare module 'elysia' {
  interface DocumentDecoration {
    /** The route's policy class, recorded by the `policy` macro (and shown in the OpenAPI document). */
    'x-policy'?: PolicyClass
    'x-body'?: 'binary'
    'x-body-stream'?: boolean
    'x-metrics-token'?: boolean
  }
}

/**
 * The refusal of a route nobody declared: an unknown path is admin-only (a non-admin learns
 * nothing of what exists), but "Admins only." sent people looking for admin rights for a route
 * that is not there.
 */
export function asUnknownRoute(e: unknown): unknown {
  return e instanceof AppError && e.code === 'forbidden' ? new AppError('forbidden', 'No such route, or one for admins only.') : e
}

/** The OpenAI-compatible routes (Elysia's `:param` or OpenAPI's `{param}` paths alike). */
export const isOpenAiPath = (path: string) => path === '/api/v1/models' || path.startsWith('/api/v1/models/') || path.startsWith('/api/v1/chat/') || path === '/api/v1/embeddings'

const UNKNOWN_ROUTE: RouteMeta = { policy: 'admin', declared: false, binary: false, stream: false, metricsToken: false, bodyless: false, objectBody: false, queryless: false }

/** Route classes by "METHOD path", filled once the app is composed. */
export class PolicyIndex {
  private byRoute = new Map<string, RouteMeta>()

  load(routes: readonly { method: string; path: string; hooks?: { detail?: Record<string, unknown>; body?: unknown; query?: unknown } }[]): void {
    for (const r of routes) {
      const declared = r.hooks?.detail?.['x-policy']
      const ok = typeof declared === 'string' && (POLICY_CLASSES as readonly string[]).includes(declared)
      this.byRoute.set(`${r.method} ${r.path}`, {
        policy: ok ? (declared as PolicyClass) : 'admin',
        declared: ok,
        binary: r.hooks?.detail?.['x-body'] === 'binary',
        stream: r.hooks?.detail?.['x-body'] === 'binary' && r.hooks?.detail?.['x-body-stream'] === true,
        metricsToken: r.hooks?.detail?.['x-metrics-token'] === true,
        bodyless: r.hooks?.body === undefined && r.hooks?.detail?.['x-body'] !== 'binary',
        objectBody: (r.hooks?.body as { type?: unknown } | undefined)?.type === 'object',
        // OpenAI's clients add parameters of their own (Azure's ?api-version=): those routes take
        // what OpenAI's would, as they do extra body fields.
        queryless: r.path.startsWith('/api/') && !isOpenAiPath(r.path) && r.method !== 'WS' && r.hooks?.query === undefined,
      })
    }
  }

  lookup(method: string, route: string): RouteMeta {
    const m = method === 'HEAD' ? 'GET' : method
    return this.byRoute.get(`${m} ${route}`) ?? this.byRoute.get(`WS ${route}`) ?? UNKNOWN_ROUTE
  }

  undeclared(): string[] {
    return [...this.byRoute].filter(([, m]) => !m.declared).map(([k]) => k)
  }
}

type Presented =
  | { kind: 'none' }
  | { kind: 'invalid' }
  | { kind: 'valid'; caller: UserCaller | NodeCaller }

/** The token of an `Authorization: Bearer` header, or null when absent or malformed. */
export function bearerOf(authorization: string | null): string | null {
  if (authorization === null) return null
  const m = /^Bearer\s+([A-Za-z0-9._~+/=-]{1,512})\s*$/i.exec(authorization)
  return m ? m[1]! : null
}

export function presentedCredential(
  authorization: string | null,
  // unknown, not string: Elysia hands a bare `svc_session` over as null and JSON-parses values that
  // look like {..} or [..], so a hostile cookie can be any type (and must not reach .length or the resolver).
  sessionCookie: unknown,
  resolve: CredentialResolver,
): Presented {
  if (authorization !== null) {
    const token = bearerOf(authorization)
    if (token === null) return { kind: 'invalid' }
    const caller = resolve(token, 'bearer')
    return caller === null ? { kind: 'invalid' } : { kind: 'valid', caller }
  }
  if (sessionCookie !== undefined && sessionCookie !== null && sessionCookie !== '') {
    if (typeof sessionCookie !== 'string' || sessionCookie.length > 512) return { kind: 'invalid' }
    const caller = resolve(sessionCookie, 'cookie')
    return caller === null ? { kind: 'invalid' } : { kind: 'valid', caller }
  }
  return { kind: 'none' }
}

const unauthorized = (msg = 'A valid credential is required.') => new AppError('unauthorized', msg)
const forbidden = (msg: string) => new AppError('forbidden', msg)

/** Decides whether a caller may use a route of the given class. Pure: easy to test exhaustively. */
export function authorize(
  cls: PolicyClass,
  presented: Presented,
  flags: { requireNodeAuth: boolean; requireOperatorAuth: boolean },
  log?: Logger,
): Caller {
  const anonymous: AnonymousCaller = { kind: 'anonymous', open: false }
  switch (cls) {
    case 'public':
    case 'page':
      // A stale cookie or token must not break a public page: treat it as no credential.
      return presented.kind === 'valid' ? presented.caller : anonymous
    case 'node':
      if (presented.kind === 'invalid') throw unauthorized('The node token is wrong, revoked or unknown.')
      if (presented.kind === 'none') {
        if (flags.requireNodeAuth) throw unauthorized('A node token is required.')
        log?.debug('node call without a credential let through (SVC_REQUIRE_NODE_AUTH=0)')
        return anonymous
      }
      if (presented.caller.kind !== 'node') throw forbidden('This route is for fellows.')
      return presented.caller
    case 'chat':
      if (presented.kind !== 'valid') throw unauthorized('An API token is required.')
      if (presented.caller.kind !== 'user' || presented.caller.via !== 'api_token') {
        throw forbidden('This route takes a personal API token.')
      }
      return presented.caller
    case 'session':
      if (presented.kind !== 'valid') throw unauthorized('Log in first.')
      if (presented.caller.kind !== 'user') throw forbidden('This route is for people, not fellows.')
      if (presented.caller.via !== 'session') {
        throw new AppError('session_required', 'This action needs a browser session, not an API token.')
      }
      return presented.caller
    case 'operator':
      if (presented.kind === 'invalid') throw unauthorized('The credential is wrong, expired or revoked.')
      if (presented.kind === 'none') {
        if (flags.requireOperatorAuth) throw unauthorized()
        return { kind: 'anonymous', open: true }
      }
      if (presented.caller.kind !== 'user') throw forbidden('This route is for operators, not fellows.')
      return presented.caller
    case 'member':
      // What both a pool's people and its fellows read (an artifact: the operator downloads it, a
      // fellow taking over a stage resumes from it). The service scopes either by pool. Without a
      // credential it is an operator route: SVC_REQUIRE_OPERATOR_AUTH=0 opens it, nothing else does.
      if (presented.kind === 'invalid') throw unauthorized('The credential is wrong, expired or revoked.')
      if (presented.kind === 'none') {
        if (flags.requireOperatorAuth) throw unauthorized()
        return { kind: 'anonymous', open: true }
      }
      return presented.caller
    case 'admin':
      // The same words as the other routes for a bad token (it read as if none had been sent).
      if (presented.kind === 'invalid') throw unauthorized('The credential is wrong, expired or revoked.')
      if (presented.kind !== 'valid') throw unauthorized()
      if (presented.caller.kind !== 'user' || presented.caller.role !== 'admin') throw forbidden('Admins only.')
      return presented.caller
  }
}

export interface PolicyDeps {
  cfg: Config
  log: Logger
  resolve: CredentialResolver
  index: PolicyIndex
}

export function socketAddressOf(server: { requestIP(r: Request): { address: string } | null } | null, request: Request): string {
  return server?.requestIP(request)?.address ?? '127.0.0.1'
}

// A type, not an interface: Elysia's derive wants an object type it can index.
export type Admission = {
  caller: Caller
  clientIp: string
  routeClass: PolicyClass
  /**
   * The caller decided anew from the state file (throws the refusal): for a response that goes on
   * for long, an event stream, whose viewer may lose the right to it while it is open.
   */
  reauthorize: () => Caller
}

type GateServer = { requestIP(r: Request): { address: string } | null } | null

/**
 * Admits a request (decided once, kept per Request); `again` decides it anew from the state file,
 * for a request whose body took a while to arrive.
 */
export type RequestGate = ((request: Request, route: string, server: GateServer) => Admission) & {
  again(request: Request, route: string, server: GateServer): Admission
}

/**
 * A route that takes no query parameters refuses any it is sent: `?force=1` on a delete, `?page=2`
 * on an unpaged list or `?user_id=` on a list of one's own looked as if they had been applied. A
 * WebSocket handshake may carry its `token`.
 */
function refuseParameters(url: string, upgrade: boolean): void {
  const q = url.indexOf('?')
  if (q < 0 || q === url.length - 1) return
  const names = [...new Set(new URLSearchParams(url.slice(q + 1)).keys())].filter((k) => !(upgrade && k === 'token'))
  if (names.length === 0) return
  const shown = names.slice(0, 5).map((n) => (n.length > 40 ? `${n.slice(0, 40)}...` : n))
  throw invalid(`query: this request takes no parameters (got ${shown.join(', ')}).`, { errors: shown.map((n) => ({ path: `/${n}`, message: 'is not a parameter this request takes' })) })
}

/**
 * The credential and CSRF check of one request, decided once: the body parser calls it before it
 * reads a byte (so an anonymous caller cannot park a 65 MiB upload in memory), the derive after it
 * for the routes that have no body. The answer (or the refusal) is kept per Request.
 *
 * A body arrives at the sender's pace, and what the credential stood for when its first byte came
 * may be gone by its last: the session revoked by a password change, the API token revoked, the
 * account disabled or deleted, the admin demoted. A client holding a body back could otherwise
 * mint an API token with a session the victim's password change had ended. So the body parser
 * decides once more (`again`) when the body is in, and the handler acts for the caller as they
 * are then.
 */
export function requestGate({ cfg, log, resolve, index }: PolicyDeps): RequestGate {
  const decided = new WeakMap<Request, Admission | AppError>()
  const pickClientIp = clientIpResolver(cfg, log)
  const checkHost = hostCheck(cfg, log)
  const checkOrigin = originCheck(cfg, log)
  const decide = (request: Request, route: string, server: GateServer): Admission => {
    // Before anything is decided for the caller: a name this leader does not answer to is a page
    // of another site rebound to this address (src/http/host.ts), by the Host it names or, behind
    // a proxy that sets its own Host, by the Origin the browser names on a change or a socket.
    const misdirected = checkHost(request.headers.get('host'))
    if (misdirected !== null) throw misdirected
    const upgrade = request.headers.get('upgrade')?.toLowerCase() === 'websocket'
    if (upgrade || UNSAFE_METHODS.has(request.method)) {
      const foreign = checkOrigin(request.headers.get('origin'))
      if (foreign !== null) throw foreign
    }
    const ip = pickClientIp(request.headers.get('x-forwarded-for'), socketAddressOf(server, request))
    const meta = index.lookup(request.method, route)
    let authorization = request.headers.get('authorization')
    // Agents that cannot set headers on a WebSocket handshake may pass ?token= instead.
    if (upgrade && authorization === null) {
      const token = requestUrl(request).searchParams.get('token')
      if (token !== null) authorization = `Bearer ${token}`
    }
    if (meta.metricsToken && cfg.metricsToken !== null && authorization !== null && safeEqual(authorization, `Bearer ${cfg.metricsToken}`)) {
      return { caller: { kind: 'anonymous', open: false }, clientIp: ip, routeClass: meta.policy, reauthorize: () => decideAndKeep(request, route, server).caller }
    }
    const sessionCookie = authorization === null ? cookieFrom(request.headers.get('cookie'), SESSION_COOKIE) : undefined
    const presented = presentedCredential(authorization, sessionCookie, resolve)
    let caller: Caller
    try {
      caller = authorize(meta.policy, presented, cfg, log)
    } catch (e) {
      // A refused WebSocket handshake answers the upgrade with 403 (SPEC: close code 4401 is not
      // reachable before accept). A plain GET on a socket path is refused alike (src/app.ts).
      if ((upgrade || route.startsWith('/ws/')) && e instanceof AppError && e.code === 'unauthorized') throw new AppError('forbidden', e.message)
      throw meta.declared ? e : asUnknownRoute(e)
    }
    if (
      cfg.requireCsrf &&
      caller.kind === 'user' &&
      caller.fromCookie &&
      UNSAFE_METHODS.has(request.method) &&
      !csrfValid(cfg.secretKey, cookieFrom(request.headers.get('cookie'), CSRF_COOKIE), request.headers.get(CSRF_HEADER), typeof sessionCookie === 'string' ? sessionCookie : null)
    ) {
      throw new AppError('csrf_failed', 'Missing or wrong X-CSRF-Token header.')
    }
    if (meta.queryless) refuseParameters(request.url, upgrade)
    return { caller, clientIp: ip, routeClass: meta.policy, reauthorize: () => decideAndKeep(request, route, server).caller }
  }
  const decideAndKeep = (request: Request, route: string, server: GateServer): Admission => {
    try {
      const admission = decide(request, route, server)
      decided.set(request, admission)
      return admission
    } catch (e) {
      if (e instanceof AppError) decided.set(request, e)
      throw e
    }
  }
  const gate = (request: Request, route: string, server: GateServer): Admission => {
    const known = decided.get(request)
    if (known instanceof AppError) throw known
    if (known !== undefined) return known
    return decideAndKeep(request, route, server)
  }
  return Object.assign(gate, { again: decideAndKeep })
}

export function policyPlugin(gate: RequestGate) {
  return new Elysia({ name: 'policy' })
    .macro({
      policy: (cls: PolicyClass) => ({ detail: { 'x-policy': cls } }),
    })
    .derive({ as: 'global' }, ({ request, route, server }) => gate(request, route, server))
}
