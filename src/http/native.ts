// Routes Bun's own router serves before Elysia sees the request: the hot paths where Elysia's
// per-request context, hooks and the garbage they leave behind were a large share of the cost.
// - WebSocket handshakes (the signal socket): a fleet opens one per fellow, all at once after a
//   leader restart; Elysia's context was half the cost of a handshake and a third of the memory
//   each open socket held (docs/benchmarks.md, signal sockets).
// - Data routes: the relay's push and pop (4 MiB bodies in and out, many per second) and the
//   heartbeat (every fellow, every interval: the leader's most frequent request).
//
// Such a route is declared in Elysia as usual (the policy index, the OpenAPI document and every
// answer off the fast path come from that declaration) and runs the same steps on its fast path:
// the same policy function (the request gate), the same params and query schemas, the same body
// limits, the same handler. Whatever does not fit the fast path (no Upgrade header, params or a
// query the schema refuses, another content type, a refused credential, a handshake the handler
// refuses) is handed to Elysia before any body is read, which answers exactly as it does for any
// route; the gate keeps its decision per Request, so nothing is decided twice.
import { DECIMAL_INTEGER } from '../wire/formats'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Kind, OptionalKind, TransformKind, Type, type TSchema, type TObject, type Static } from '@sinclair/typebox'
import type { Server } from 'bun'
import type { Caller } from '../caller'
import { AppError } from '../errors'
import type { Logger } from '../log'
import type { RequestGate } from './policy'
import { foreignCharset, isJsonType, parseJsonBody, readLimited, type BodyLimits } from './body'
import { internalProblem, problemFrom } from './problem'

/** What an upgrade route's handler is given, on either path. */
export interface UpgradeContext<P> {
  caller: Caller
  params: P
  request: Request
  server: Server<unknown> | null
}

export interface UpgradeRoute<S extends TSchema = TSchema> {
  /** The Elysia path, e.g. `/ws/signals/:fellow_id` (also the policy index key). */
  path: string
  params: S
  /** Upgrades the request, or throws an AppError that says why not (see upgradeOrRefuse). */
  upgrade(c: UpgradeContext<Static<S>>): void
}

export function upgradeRoute<S extends TSchema>(r: UpgradeRoute<S>): UpgradeRoute<S> {
  return r
}

/** The last step of every upgrade handler: a request Bun cannot upgrade is a plain GET (400). */
export function upgradeOrRefuse(server: Server<unknown> | null, request: Request, data: unknown): void {
  if (server?.upgrade(request, { data })) return
  throw new AppError('bad_request', 'This route is a WebSocket: send an Upgrade: websocket request.')
}

type BunRequest = Request & { params: Record<string, string> }
type Handler = (request: BunRequest, server: Server<unknown>) => Response | Promise<Response> | undefined

export interface NativeDeps {
  gate: RequestGate
  /** Elysia's own handling of the request, for everything off the fast path. */
  fallback(request: Request): Response | Promise<Response>
  /** Counts and logs a request the fast path answered, as the observability plugin does. */
  record(request: Request, route: string, status: number, startedAt: number, requestId?: string): void
}

/** Bun `routes` entries (`{ [path]: { GET } }`, merged over Elysia's own) for the given upgrade routes. */
export function nativeUpgradeRoutes(deps: NativeDeps, routes: readonly UpgradeRoute[]): Record<string, { GET: Handler }> {
  const table: Record<string, { GET: Handler }> = {}
  for (const route of routes) {
    const valid = TypeCompiler.Compile(route.params)
    table[route.path] = {
      GET(request, server) {
        const startedAt = performance.now()
        if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket' || !valid.Check(request.params)) return deps.fallback(request)
        try {
          const { caller } = deps.gate(request, route.path, server)
          route.upgrade({ caller, params: request.params, request, server })
        } catch {
          // A refusal (or anything else): Elysia answers it, with the gate's decision kept.
          return deps.fallback(request)
        }
        deps.record(request, route.path, 101, startedAt)
        return undefined
      },
    }
  }
  return table
}

/** What a data route's handler is given, on either path. */
export interface DataContext<P, Q, B> {
  caller: Caller
  params: P
  query: Q
  body: B
  request: Request
}

type BodyKind = TSchema | 'binary' | undefined
type BodyOf<B extends BodyKind> = B extends TSchema ? Static<B> : unknown

export interface DataRoute<P extends TSchema = TSchema, Q extends TObject = TObject, B extends BodyKind = BodyKind> {
  method: 'GET' | 'POST'
  /** The Elysia path (also the policy index key). */
  path: string
  /** Unset: not checked (as on an Elysia route that declares none). */
  params?: P
  query?: Q
  /**
   * 'binary': application/octet-stream, read whole within the binary body limit (the handler
   * gets the bytes on the fast path, whatever Elysia's parser made of them on the other). A schema:
   * a JSON body within the JSON limit that matches it; it must be plain TypeBox (no transforms, no
   * defaults), since the fast path only checks a body, Elysia would also decode it.
   */
  body?: B
  /** The answer; an AppError thrown is answered as problem+json, as on any route. */
  handle(c: DataContext<Static<P>, Static<Q>, BodyOf<B>>): Response | Promise<Response>
}

/** Refuses a schema the fast path would not treat as Elysia does (a transform or a default in it). */
function assertPlain(schema: unknown, where: string): void {
  if (schema === null || typeof schema !== 'object') return
  const s = schema as { [Kind]?: string; default?: unknown }
  if (Kind in s && (TransformKind in s || s.default !== undefined)) throw new Error(`${where}: a data route's body schema must be plain TypeBox (no transforms, no defaults)`)
  for (const v of Object.values(schema)) assertPlain(v, where)
}

export function dataRoute<P extends TSchema, Q extends TObject, B extends BodyKind = undefined>(r: DataRoute<P, Q, B>): DataRoute<P, Q, B> {
  if (r.body !== undefined && r.body !== 'binary') assertPlain(r.body, r.path)
  return r
}

/**
 * The query as the route's schema has it, or null when it is not plainly valid (a repeated key, a
 * number that is not a plain integer, an unknown or refused field): Elysia answers those, so its
 * decoding rules and its 422 stay the only ones.
 */
function queryOf(url: string, schema: TObject, valid: { Check(v: unknown): boolean }): Record<string, unknown> | null {
  const q = url.indexOf('?')
  const out: Record<string, unknown> = {}
  if (q >= 0) {
    for (const [key, value] of new URLSearchParams(url.slice(q + 1))) {
      if (Object.hasOwn(out, key)) return null
      const type = schema.properties[key]?.[Kind]
      out[key] = (type === 'Integer' || type === 'Number') && DECIMAL_INTEGER.test(value) ? Number(value) : value
    }
  }
  return valid.Check(out) ? out : null
}

/**
 * The query schema the fast path checks: Elysia's t.Integer and t.Numeric are transforms of "a
 * numeric string or a number" that Elysia decodes; queryOf has already turned plain digits into
 * numbers, so it checks their number branch (with its bounds) instead.
 */
function numbersDecoded(schema: TObject): TObject {
  const properties: Record<string, TSchema> = {}
  for (const [key, p] of Object.entries(schema.properties)) {
    const branches = TransformKind in p && p[Kind] === 'Union' ? (p.anyOf as TSchema[]) : []
    const number = branches.find((b) => b.type === 'integer' || b.type === 'number')
    properties[key] = number === undefined ? p : OptionalKind in p ? Type.Optional(number) : number
  }
  return Type.Object(properties, { additionalProperties: schema.additionalProperties })
}

/** The request's content type as Elysia's parser sees it: without parameters, lower case. */
function contentTypeOf(request: Request): string {
  const ct = request.headers.get('content-type') ?? ''
  const semi = ct.indexOf(';')
  return (semi >= 0 ? ct.slice(0, semi) : ct).trim().toLowerCase()
}

/** Bun `routes` entries for the given data routes (several methods of one path share an entry). */
export function nativeDataRoutes(deps: NativeDeps & { limits: BodyLimits; log: Logger; requestId(request: Request): string }, routes: readonly DataRoute<TSchema, TObject, BodyKind>[]): Record<string, Partial<Record<'GET' | 'POST', Handler>>> {
  const table: Record<string, Partial<Record<'GET' | 'POST', Handler>>> = {}
  const { limits } = deps
  for (const route of routes) {
    const params = route.params ? TypeCompiler.Compile(route.params) : null
    const querySchema = route.query ? numbersDecoded(route.query) : null
    const query = querySchema ? TypeCompiler.Compile(querySchema) : null
    const json = route.body !== undefined && route.body !== 'binary' ? TypeCompiler.Compile(route.body) : null
    ;(table[route.path] ??= {})[route.method] = async (request, server) => {
      const startedAt = performance.now()
      const q = querySchema && query ? queryOf(request.url, querySchema, query) : {}
      if (q === null || (params && !params.Check(request.params))) return deps.fallback(request)
      if (route.body !== undefined) {
        const ct = contentTypeOf(request)
        if (route.body === 'binary' ? ct !== 'application/octet-stream' : !isJsonType(ct) || foreignCharset(request) !== null) return deps.fallback(request)
      }
      let caller: Caller
      try {
        caller = deps.gate(request, route.path, server).caller
      } catch {
        return deps.fallback(request)
      }
      const id = deps.requestId(request)
      let res: Response
      try {
        let body: unknown
        if (route.body !== undefined) {
          const bytes = await readLimited(request, json ? limits.maxJsonBytes : limits.maxBinaryBytes, limits.budget, limits.timeoutMs)
          body = json ? parseJsonBody(bytes) : bytes
          // A body the schema refuses: Elysia answers it (its 422 names what is wrong), from the
          // same bytes in a new Request, since this one's body is read. The gate decides it again
          // alike; nothing else comes of it than that answer. An empty body goes as none, as it came
          // (Content-Length: 0): Elysia took an empty one for a body it could not parse (400).
          if (json && !json.Check(body)) return deps.fallback(new Request(request.url, { method: request.method, headers: request.headers, body: bytes.byteLength > 0 ? bytes : null }))
        }
        res = await route.handle({ caller, params: request.params, query: q, body, request })
      } catch (e) {
        res = e instanceof AppError ? problemFrom(e) : internalProblem(deps.log, request, e)
      }
      res.headers.set('x-request-id', id)
      deps.record(request, route.path, res.status, startedAt, id)
      return res
    }
  }
  return table
}
