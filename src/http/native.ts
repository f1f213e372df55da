// WebSocket handshakes Bun's own router serves before Elysia sees the request. A fleet opens one
// signal socket per fellow, all at once after a leader restart: Elysia's per-request context,
// hooks and the garbage they leave behind were half the cost of a handshake and a third of the
// memory each open socket held (docs/benchmarks.md, signal sockets).
//
// Such a route is declared in Elysia as usual (the policy index, the OpenAPI document and every
// answer that is not a plain handshake come from that declaration) and runs the same three steps
// on its fast path: the same policy function (the request gate), the same params schema, the same
// handler. Whatever does not fit the fast path (no Upgrade header, params the schema refuses, a
// refused credential, a handler that refuses) is handed to Elysia, which answers exactly as it does
// for any route; the gate keeps its decision per Request, so nothing is decided twice.
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { TSchema, Static } from '@sinclair/typebox'
import type { Server } from 'bun'
import type { Caller } from '../caller'
import { AppError } from '../errors'
import type { RequestGate } from './policy'

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
  /** Counts and logs a handshake the fast path answered, as the observability plugin does. */
  record(request: Request, route: string, status: number, startedAt: number): void
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
