// Composition: every feature adds its routes to one Elysia app, then the policy index is built from them.
import { Elysia, type AnyElysia } from 'elysia'
import { bodyLimits, createBase, type AppBase } from './http/base'
import { compressionPlugin } from './http/compress'
import { errorPlugin, problemFrom } from './http/problem'
import { PolicyIndex, asUnknownRoute, authorize, presentedCredential, requestGate, SESSION_COOKIE } from './http/policy'
import { nativeDataRoutes, nativeUpgradeRoutes } from './http/native'
import { cookieFrom } from './http/cookies'
import type { CredentialResolver } from './caller'
import { AppError } from './errors'
import { TOKEN_PREFIX } from './crypto'
import { healthRoutes } from './health/routes'
import { accountRoutes } from './accounts/routes'
import { poolRoutes } from './pools/routes'
import { Pools } from './pools/service'
import { Memberships } from './pools/membership'
import { adminRoutes } from './admin/routes'
import { Admin } from './admin/service'
import { AdminUsers } from './admin/users'
import { pageRoutes } from './pages/routes'
import { isBrowserNavigation, notFoundResponse } from './pages/not-found'
import type { PoolTelemetry } from './pools/telemetry'
import { fellowRoutes, heartbeatRoute, signalSocketRoute } from './fellows/routes'
import { Fellows } from './fellows/service'
import { FellowRegistry } from './fellows/live'
import { MemorySignalHub } from './fellows/signals'
import { FellowViews } from './fellows/views'
import { LogRings } from './fellows/logs'
import { JobService } from './jobs/service'
import { JobMetrics } from './jobs/metrics'
import { jobRoutes } from './jobs/routes'
import { registerFormats } from './wire/formats'
import { MemoryRelayHub, type RelayHub } from './relay/hub'
import { relayDataRoutes, relayRoutes } from './relay/routes'
import { ContributionMeter, ContributionRollup } from './stats/contribution'
import { PublicStatsService } from './stats/public'
import { statsRoutes } from './stats/routes'
import { Counters } from './observability/metrics'
import { idOf, observabilityPlugin, recordRequest } from './observability/plugin'
import { observabilityRoutes } from './observability/routes'
import { Servables } from './servables/service'
import { Inference } from './inference/service'
import { inferenceRoutes } from './inference/routes'
import { servableRoutes } from './servables/routes'
import { ArtifactService } from './artifacts/service'
import { artifactRoutes } from './artifacts/routes'
import { blobStoreFor } from './artifacts/store'
import { Accounts } from './accounts/service'
import type { Ctx } from './context'
import type { LoopSpec } from './loops'
import { hostCheck, requestUrl } from './http/host'

export interface Services {
  accounts: Accounts
  pools: Pools
  memberships: Memberships
  admin: Admin
  adminUsers: AdminUsers
  fellows: Fellows
  views: FellowViews
  logs: LogRings
  jobs: JobService
  relay: RelayHub
  rollup: ContributionRollup
  publicStats: PublicStatsService
  counters: Counters
  poolTelemetry: PoolTelemetry
  servables: Servables
  inference: Inference
  artifacts: ArtifactService
  /** Background loops of the features (liveness, scheduling, roll-up...), started by `serve`. */
  loops: LoopSpec[]
  /** Flushes buffered state and closes hubs before the database closes. */
  close(): Promise<void>
}

export function createServices(ctx: Ctx): Services {
  const meter = new ContributionMeter()
  const registry = new FellowRegistry(ctx, { onUptime: (f, now, onlineMs, gpus) => meter.uptime(f.ownerUserId, now, onlineMs, gpus) })
  const signals = new MemorySignalHub(ctx.clock)
  // Fellows' signal sockets stay open for as long as the fellow runs: a stop closes them (1001)
  // and the fellows come back to the next leader.
  ctx.stopping.addEventListener('abort', () => signals.closeAll(), { once: true })
  const relay = new MemoryRelayHub({ maxQueueBytes: ctx.cfg.relayMaxQueueBytes, maxTotalBytes: ctx.cfg.relayMaxTotalBytes, maxPoolBytes: ctx.cfg.relayMaxPoolBytes })
  const jobs = new JobService(ctx, registry, signals, relay, new JobMetrics(() => ctx.clock.now()))
  const fellows = new Fellows(ctx, registry, signals, {
    onOffline: (id, why) => {
      jobs.onFellowOffline(id, why)
      inference.hub.abandon(id, why ?? 'went offline')
    },
    onRestarted: (id) => jobs.onFellowRestarted(id),
    onBack: (id, jobId) => jobs.onFellowBack(id, jobId),
  })
  const views = new FellowViews(ctx.db, registry, signals, () => ctx.clock.now())
  const rollup = new ContributionRollup(ctx, meter)
  const servables = new Servables(ctx)
  const inference = new Inference(ctx, registry, servables, { onServed: (id, usage, now) => meter.served(registry.get(id)?.ownerUserId ?? null, now, usage.prompt_tokens + usage.completion_tokens) })
  const accounts = new Accounts(ctx)
  const artifacts = new ArtifactService(ctx, blobStoreFor(ctx.cfg.artifactStore, ctx.cfg.stateDir))
  return {
    accounts,
    pools: new Pools(ctx),
    memberships: new Memberships(ctx),
    admin: new Admin(ctx),
    adminUsers: new AdminUsers(ctx),
    fellows,
    views,
    logs: new LogRings(ctx.cfg.logMaxTotalBytes, () => ctx.clock.now(), (id) => registry.get(id)?.poolId ?? null),
    jobs,
    relay,
    rollup,
    publicStats: new PublicStatsService(ctx, registry, rollup),
    counters: new Counters(),
    poolTelemetry: views,
    servables,
    inference,
    artifacts,
    loops: [...accounts.loops(), ...fellows.loops(), ...jobs.loops(), ...rollup.loops(), ...inference.loops(), ...artifacts.loops()],
    close: async () => {
      registry.flush({ all: true })
      rollup.tick()
      signals.closeAll()
      inference.close()
    },
  }
}

export function createApp(ctx: Ctx, services: Services = createServices(ctx)) {
  // Again here: a module loaded since may have set its own (src/wire/formats.ts).
  registerFormats()
  const index = new PolicyIndex()
  const resolve: CredentialResolver = (token, source) => {
    if (token.startsWith(TOKEN_PREFIX.apiToken)) return source === 'bearer' ? services.accounts.resolveApiToken(token) : null
    if (token.startsWith(TOKEN_PREFIX.nodeToken)) return source === 'bearer' ? services.fellows.resolveNodeToken(token) : null
    if (token.startsWith('svc_')) return null
    return services.accounts.resolveSession(token, source === 'cookie')
  }
  const checkHost = hostCheck(ctx.cfg)
  const notFoundGate = (request: Request): Response | Promise<Response> | null => {
    const misdirected = checkHost(request.headers.get('host'))
    if (misdirected !== null) return problemFrom(misdirected)
    let presented
    try {
      presented = presentedCredential(request.headers.get('authorization'), cookieFrom(request.headers.get('cookie'), SESSION_COOKIE), resolve)
      // A person who mistypes a URL in a browser gets a readable 404 page; API clients (and any
      // Accept that does not prefer HTML) keep the admin-only answer below.
      if (isBrowserNavigation(request)) return notFoundResponse(ctx, request, authorize('page', presented, ctx.cfg))
      try {
        authorize('admin', presented, ctx.cfg)
      } catch (e) {
        throw asUnknownRoute(e)
      }
      return null
    } catch (e) {
      // Socket paths answer a refused credential with 403, upgrade or plain GET (docs/api.md, Signals).
      if (e instanceof AppError && e.code === 'unauthorized' && requestUrl(request).pathname.startsWith('/ws/')) return problemFrom(new AppError('forbidden', e.message))
      if (e instanceof AppError) return problemFrom(e)
      throw e
    }
  }
  const onDetached = (ids: string[], reason: string) => services.fellows.detach(ids, reason)
  const onPoolsDeleted = (ids: string[]) => services.fellows.registry.forgetPools(ids)
  // The OpenAPI route describes the app it is part of; it reads it once composition is done.
  let composed: AnyElysia | null = null
  const policy = { cfg: ctx.cfg, log: ctx.log, resolve, index }
  const gate = requestGate(policy)
  const limits = bodyLimits(ctx.cfg)
  const base = createBase(policy, limits, gate)
  // Handshakes and data routes Bun's router takes on their fast path; Elysia answers everything
  // else of theirs (src/http/native.ts).
  const signalSocket = signalSocketRoute(services.fellows)
  const heartbeat = heartbeatRoute(services.fellows, services.counters)
  const relayData = relayDataRoutes(ctx, services.relay, services.jobs, services.counters)
  const nativeDeps = {
    gate,
    fallback: (request: Request): Response | Promise<Response> => app.fetch(request),
    record: (request: Request, route: string, status: number, startedAt: number, id?: string) => recordRequest(ctx.log, services.counters, index, request, route, status, startedAt, id),
  }
  const native = {
    ...nativeUpgradeRoutes(nativeDeps, [signalSocket]),
    ...nativeDataRoutes({ ...nativeDeps, limits, log: ctx.log, requestId: idOf }, [heartbeat, relayData.push, relayData.pop]),
  }
  // normalize: false makes additionalProperties: false a refusal (422) instead of silently
  // stripping unknown fields, and makes a response that carries an undeclared field an error.
  const app = new Elysia({ normalize: false, serve: { routes: native } })
    .use(errorPlugin(ctx.log, notFoundGate))
    .use(observabilityPlugin(ctx.log, services.counters, index))
    .use(compressionPlugin(index))
    .use(base)
  // Each feature adds its routes to this app, not to a plugin of its own: Elysia builds a plugin's
  // routes twice (in the plugin, then again as the app takes them over), 6-10 ms of every start
  // for 137 routes. The features are typed against the base (its policy macro and derive), which
  // this app carries besides the error, observability and compression plugins. The inference
  // routes stay a plugin: their OpenAI error mapping is a hook of their own, which on the app
  // would apply to every route added after it.
  const routes = app as unknown as AppBase
  healthRoutes(routes, ctx)
  accountRoutes(routes, ctx, services.accounts)
  poolRoutes(routes, services.pools, services.memberships, { telemetry: services.poolTelemetry, onDetached, onPoolsDeleted })
  adminRoutes(routes, services.admin, services.adminUsers, { onDetached, onPoolsDeleted })
  fellowRoutes(routes, ctx, { ...services, signalSocket, heartbeat })
  jobRoutes(routes, ctx, services.jobs)
  relayRoutes(routes, ctx, services.relay, services.jobs, services.counters, relayData)
  servableRoutes(routes, services.servables)
  artifactRoutes(routes, services.artifacts)
  app.use(inferenceRoutes(base, ctx, services))
  statsRoutes(routes, ctx, services.publicStats, services.rollup)
  observabilityRoutes(routes, ctx, {
    counters: services.counters,
    registry: services.fellows.registry,
    signals: services.fellows.signals,
    relay: services.relay,
    extra: () => services.inference.metrics(),
    app: () => composed!,
  })
  pageRoutes(routes, ctx)
  composed = app as AnyElysia
  index.load(app.routes)
  return app as AnyElysia
}
