// `svc serve`: config -> state file -> app -> loops -> listen; SIGTERM/SIGINT/SIGHUP stop it cleanly.
import { ConfigError, securityWarnings, type Config } from './config'
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createLogger, stdoutIsTerminal, type Logger } from './log'
import { systemClock } from './time'
import { createApp, createServices } from './app'
import { startLoops, type LoopSpec } from './loops'
import { createTransport, mailLoop, mailPurgeLoop } from './mail/sender'
import { beginStopping, closeContext, createContext, type Ctx } from './context'
import { SERVER_IDLE_TIMEOUT_S } from './http/body'
import { socketBackpressureLimit } from './relay/socket'
import { dropStartupCode } from './memory'
import { LeaderLockedError, lockLeader } from './db/leader-lock'
import { processesHolding } from './db/restore'
import type { MigrationObserver } from './db/migrate'
import { hostPort, ipVersion } from './http/ip'
import { CliError } from './cli/usage'

export interface RunningServer {
  url: string
  port: number
  ctx: Ctx
  stop(): Promise<void>
}

/** Seconds a WebSocket may be silent: Bun pings it a little before, so proxies' idle timeouts of 50-60 s see traffic. */
export const WS_IDLE_TIMEOUT_S = 40

export async function startServer(cfg: Config, log: Logger = createLogger(cfg.logLevel, undefined, stdoutIsTerminal())): Promise<RunningServer> {
  for (const w of securityWarnings(cfg)) log.warn(w)
  let wakeMail = () => {}
  // Before the lock makes it: a file that was there may be another leader's, however bare it looks.
  const existed = existsSync(cfg.dbPath)
  const lock = lockLeader(cfg.dbPath, cfg.stateDir)
  let ctx: Ctx
  try {
    prepareArtifactDirs(cfg)
    ctx = createContext(cfg, log, systemClock, { onMailWake: () => wakeMail(), onMigrate: migrationsLogged(cfg, log, existed) })
  } catch (e) {
    lock.release()
    throw e
  }
  const services = createServices(ctx)
  const app = createApp(ctx, services)
  const specs: LoopSpec[] = [...services.loops, mailPurgeLoop(ctx)]
  const mailer = cfg.smtp ? mailLoop(ctx, await createTransport(cfg.smtp, { ca: cfg.smtp.ca ?? undefined })) : null
  if (mailer) {
    wakeMail = mailer.wake
    specs.push(mailer)
  }
  const loops = startLoops(ctx, specs)
  const teardown = async () => {
    await loops.stop()
    await mailer?.close()
    await services.close()
    closeContext(ctx)
    lock.release()
  }
  try {
    app.listen({
      hostname: cfg.host,
      port: cfg.port,
      // Bun sets SO_REUSEPORT by default on Linux: a second leader on the same port would start
      // and take half the connections, with its own state file. A taken port ends the start.
      reusePort: false,
      // Relay pushes carry up to one frame cap, an artifact upload up to one artifact (streamed to
      // disk, never buffered); every route's body reader enforces its own, smaller, limit.
      maxRequestBodySize: Math.max(cfg.relayMaxFrameBytes + 1024 * 1024, cfg.artifactMaxBytes),
      idleTimeout: SERVER_IDLE_TIMEOUT_S,
      // A relay socket's message carries what a relay push does (one frame cap and its headers); Bun
      // closes a socket sending more with 1009 before buffering it. One limit for every socket.
      // Bun drops a message that would take a socket past its backpressure limit: the relay socket
      // waits at its high water, so one frame past it must still fit (src/relay/socket.ts).
      websocket: {
        maxPayloadLength: cfg.relayMaxFrameBytes + 1024 * 1024,
        backpressureLimit: socketBackpressureLimit(cfg.relayMaxFrameBytes + 1024 * 1024),
        // A socket with nothing to say is pinged shortly before this (and closed when no pong comes
        // by then). At Bun's default, 120 s, the first ping came after 100 s of silence: nginx (60 s
        // proxy_read_timeout) and HAProxy (50 s) cut every idle signal and inference socket of every
        // fellow behind them once a minute. A ping every half a minute keeps them open.
        idleTimeout: WS_IDLE_TIMEOUT_S,
        sendPings: true,
      },
    })
  } catch (e) {
    await teardown()
    throw new ListenError(cfg.host, cfg.port, e)
  }
  const server = app.server!
  const url = `http://${hostPort(cfg.host, server.port ?? cfg.port)}`
  // SVC_PORT=0 picks a free port: links and join commands must name the one we got.
  if (!cfg.baseUrlExplicit && cfg.port === 0) cfg.baseUrl = cfg.baseUrl.replace(/:0$/, `:${server.port}`)
  log.info('leader listening', { url, base_url: cfg.baseUrl, db: cfg.dbPath })
  const cancelDrop = dropStartupCode({ release: () => ctx.sqlite.exec('PRAGMA shrink_memory') })
  let stopped: Promise<void> | null = null
  return {
    url,
    port: server.port ?? cfg.port,
    ctx,
    stop() {
      stopped ??= (async () => {
        cancelDrop()
        // No new connections. Long polls, event streams and fellows' signal sockets end now (they
        // would hold the stop for as long as their clients stay); the other requests under way
        // get the grace period to finish, and what is left then (relay and inference sockets,
        // a request past the grace) is closed.
        void server.stop(false)
        beginStopping(ctx)
        const deadline = performance.now() + cfg.shutdownGraceMs
        while (server.pendingRequests > 0 && performance.now() < deadline) await Bun.sleep(20)
        if (server.pendingRequests > 0) {
          log.warn('requests cut at shutdown', { requests: server.pendingRequests, grace_s: cfg.shutdownGraceMs / 1000 })
          services.inference.close() // answers still streaming end with an error, not mid-token
          await Bun.sleep(20)
        }
        await server.stop(true)
        await teardown()
        log.info('leader stopped')
      })()
      return stopped
    },
  }
}

/**
 * Logs the migrations a start applies, a line before (how many, which) and one after (how long):
 * on a large file they take a while (0011 took 15 s on 200,000 users), and a start that said
 * nothing looked hung. Before the first one runs on an existing file, the listen address is tried:
 * a start that could not listen used to migrate the file first, and the release it came from then
 * refused it (migrations it does not know) although this one never served. A file that was there
 * before the start is checked so even when it has no migrations yet: a leader of a release from
 * before the lock, young or quiet, has all of its writes in its -wal, and through a hard link (whose
 * -wal is another) its file looked new here; this one served it as a fresh install, and the other's
 * next checkpoint wrote over what this one had written.
 */
function migrationsLogged(cfg: Config, log: Logger, existed: boolean): MigrationObserver {
  return {
    starting(pending, applied) {
      if (applied > 0 || existed) {
        checkListen(cfg)
        checkNoOtherHolder(cfg.dbPath)
      }
      log.info('applying migrations', { db: cfg.dbPath, count: pending.length, migrations: pending })
    },
    finished(applied, ms) {
      log.info('migrations applied', { db: cfg.dbPath, count: applied.length, duration_ms: Math.round(ms) })
    },
  }
}

/**
 * Whether the listen address can be taken, found out by taking it and letting it go at once (the
 * socket is closed before stop returns). The listen that serves comes after the state file is
 * open (the app needs it) and keeps its own error. SVC_PORT=0 takes any free port: nothing to try.
 */
function checkListen(cfg: Config): void {
  if (cfg.port === 0) return
  let probe: ReturnType<typeof Bun.serve>
  try {
    probe = Bun.serve({ hostname: cfg.host, port: cfg.port, reusePort: false, fetch: () => new Response(null, { status: 503 }) })
  } catch (e) {
    throw new ListenError(cfg.host, cfg.port, e)
  }
  void probe.stop(true)
}

/**
 * Before an upgrade migrates an existing file: no other process may have it open. The state-file
 * lock only keeps out leaders that take it; a leader of a release from before the lock (before
 * 2026-11-27) on the same file was migrated under, answered 503 from then on, and could not start
 * again. An `svc admin` command holding it (a backup) is waited out by starting again.
 */
function checkNoOtherHolder(dbPath: string): void {
  const others = processesHolding(dbPath)
  if (others === null || others.length === 0) return
  const who = others.length === 1 ? `process ${others[0]}` : `processes ${others.join(', ')}`
  throw new LeaderLockedError(`the state file ${dbPath} is open in ${who} (a leader of an earlier release, which takes no lock, or an svc admin command): stop it before this release migrates the file; nothing was changed`)
}

/**
 * The directories artifact uploads (and, without S3, their blobs) go to, made now: a file or an
 * unwritable directory in their place would otherwise show as a 500 on the first upload.
 */
function prepareArtifactDirs(cfg: Config): void {
  const dirs = [join(cfg.stateDir, 'artifacts', 'uploads')]
  if (cfg.artifactStore.kind === 'local') dirs.push(join(cfg.stateDir, 'artifacts', 'blobs'))
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      if (!statSync(dir).isDirectory()) throw new Error('not a directory')
      accessSync(dir, constants.W_OK | constants.X_OK)
    } catch (e) {
      const code = (e as { code?: string }).code
      const why = code === 'ENOTDIR' || code === 'EEXIST' ? 'a file is in the way (artifacts must be a directory)' : code === 'EACCES' ? 'permission denied' : (e as Error).message
      throw new ConfigError('SVC_STATE_DIR', `cannot use the artifact directory ${dir}: ${why}`)
    }
  }
}

/** serve could not listen: one line that names the address, the variables that set it and why. */
export class ListenError extends CliError {
  constructor(host: string, port: number, cause: unknown) {
    super(`cannot listen on ${hostPort(host, port)} (SVC_HOST, SVC_PORT): ${listenFailure(host, port, cause)}`, { cause })
  }
}

function listenFailure(host: string, port: number, cause: unknown): string {
  const code = (cause as { code?: unknown } | null)?.code
  switch (code) {
    case 'EADDRINUSE':
      return 'the port is in use'
    case 'EADDRNOTAVAIL':
      return 'no interface of this machine has that address'
    case 'EACCES':
      return port < 1024 ? 'permission denied (a port below 1024 needs privileges)' : 'permission denied'
  }
  // Bun answers EINVAL for a host name its resolver did not find, ENOTFOUND for some others.
  if (ipVersion(host) === 0 && (code === 'EINVAL' || code === 'ENOTFOUND' || (typeof code === 'string' && code.startsWith('EAI_')))) {
    return 'the host name does not resolve to an address'
  }
  return (cause as Error | null)?.message ?? String(cause)
}
