// Routes Bun's own router serves before Elysia sees the request: the hot paths where Elysia's
// per-request context, hooks and the garbage they leave behind were a large share of the cost.
// - WebSocket handshakes (the signal socket): a fleet opens one per fellow, all at once after a
//   leader restart; Elysia's context was half the cost of a handshake and a third of the memory
//   each open socket held (docs/benchmarks.md, signal sockets).
// - Data routes (the relay's push and pop): 4 MiB bodies in and out, many per second.
//
// Such a route is declared in Elysia as usual (the policy index, the OpenAPI document and every
// answer off the fast path come from that declaration) and runs the same steps on its fast path:
// the same policy function (the request gate), the same params and query schemas, the same body
// limits, the same handler. Whatever does not fit the fast path (no Upgrade header, params or a
// query the schema refuses, another content type, a refused credential, a handshake the handler
// refuses) is handed to Elysia before any body is read, which answers exactly as it does for any
// route; the gate keeps its decision per Request, so nothing is decided twice.
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Kind, OptionalKind, TransformKind, Type, type TSchema, type TObject, type Static } from '@sinclair/typebox'
import type { Server } from 'bun'
import type { Caller } from '../caller'
import { AppError } from '../errors'
import type { Logger } from '../log'
import type { RequestGate } from './policy'
import { readLimited, type BodyLimits } from './body'
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
export interface DataContext<P, Q> {
  caller: Caller
  params: P
  query: Q
  /** The whole body, for a route with `binary: true` (Elysia's path: whatever its parser made of it). */
  body: unknown
  request: Request
}

export interface DataRoute<P extends TSchema = TSchema, Q extends TObject = TObject> {
  method: 'GET' | 'POST'
  /** The Elysia path (also the policy index key). */
  path: string
  params: P
  query: Q
  /** The body is application/octet-stream, read whole within the binary body limits. */
  binary?: boolean
  /** The answer; an AppError thrown is answered as problem+json, as on any route. */
  handle(c: DataContext<Static<P>, Static<Q>>): Response | Promise<Response>
}

export function dataRoute<P extends TSchema, Q extends TObject>(r: DataRoute<P, Q>): DataRoute<P, Q> {
  return r
}

const INTEGER = /^-?\d{1,15}$/

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
      out[key] = (type === 'Integer' || type === 'Number') && INTEGER.test(value) ? Number(value) : value
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

/** Bun `routes` entries for the given data routes (several methods of one path share an entry). */
export function nativeDataRoutes(deps: NativeDeps & { limits: BodyLimits; log: Logger; requestId(request: Request): string }, routes: readonly DataRoute[]): Record<string, Partial<Record<'GET' | 'POST', Handler>>> {
  const table: Record<string, Partial<Record<'GET' | 'POST', Handler>>> = {}
  for (const route of routes) {
    const params = TypeCompiler.Compile(route.params)
    const querySchema = numbersDecoded(route.query)
    const query = TypeCompiler.Compile(querySchema)
    ;(table[route.path] ??= {})[route.method] = async (request, server) => {
      const startedAt = performance.now()
      const q = queryOf(request.url, querySchema, query)
      if (q === null || !params.Check(request.params)) return deps.fallback(request)
      if (route.binary && request.headers.get('content-type')?.trim().toLowerCase() !== 'application/octet-stream') return deps.fallback(request)
      let caller: Caller
      try {
        caller = deps.gate(request, route.path, server).caller
      } catch {
        return deps.fallback(request)
      }
      const id = deps.requestId(request)
      let res: Response
      try {
        const body = route.binary ? await readLimited(request, deps.limits.maxBinaryBytes, deps.limits.budget, deps.limits.timeoutMs) : undefined
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
