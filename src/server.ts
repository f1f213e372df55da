// `svc serve`: config -> state file -> app -> loops -> listen; SIGTERM/SIGINT stop it cleanly.
import { securityWarnings, type Config } from './config'
import { createLogger, stdoutIsTerminal, type Logger } from './log'
import { systemClock } from './time'
import { createApp, createServices } from './app'
import { startLoops, type LoopSpec } from './loops'
import { createTransport, mailLoop } from './mail/sender'
import { closeContext, createContext, type Ctx } from './context'
import { SERVER_IDLE_TIMEOUT_S } from './http/body'
import { socketBackpressureLimit } from './relay/socket'
import { dropStartupCode } from './memory'

export interface RunningServer {
  url: string
  port: number
  ctx: Ctx
  stop(): Promise<void>
}

export async function startServer(cfg: Config, log: Logger = createLogger(cfg.logLevel, undefined, stdoutIsTerminal())): Promise<RunningServer> {
  for (const w of securityWarnings(cfg)) log.warn(w)
  let wakeMail = () => {}
  const ctx = createContext(cfg, log, systemClock, { onMailWake: () => wakeMail() })
  const services = createServices(ctx)
  const app = createApp(ctx, services)
  const specs: LoopSpec[] = [...services.loops]
  const mailer = cfg.smtp ? mailLoop(ctx, await createTransport(cfg.smtp, { ca: cfg.smtp.ca ?? undefined })) : null
  if (mailer) {
    wakeMail = mailer.wake
    specs.push(mailer)
  }
  const loops = startLoops(ctx, specs)
  app.listen({
    hostname: cfg.host,
    port: cfg.port,
    // Relay pushes carry up to one frame cap, an artifact upload up to one artifact (streamed to
    // disk, never buffered); every route's body reader enforces its own, smaller, limit.
    maxRequestBodySize: Math.max(cfg.relayMaxFrameBytes + 1024 * 1024, cfg.artifactMaxBytes),
    idleTimeout: SERVER_IDLE_TIMEOUT_S,
    // A relay socket's message carries what a relay push does (one frame cap and its headers); Bun
    // closes a socket sending more with 1009 before buffering it. One limit for every socket.
    // Bun drops a message that would take a socket past its backpressure limit: the relay socket
    // waits at its high water, so one frame past it must still fit (src/relay/socket.ts).
    websocket: { maxPayloadLength: cfg.relayMaxFrameBytes + 1024 * 1024, backpressureLimit: socketBackpressureLimit(cfg.relayMaxFrameBytes + 1024 * 1024) },
  })
  const server = app.server!
  const url = `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${server.port}`
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
        await server.stop(false) // stop accepting; in-flight requests finish
        await loops.stop()
        await mailer?.close()
        await services.close()
        closeContext(ctx)
        log.info('leader stopped')
      })()
      return stopped
    },
  }
}
