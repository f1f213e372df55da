// What every service needs, built once by `serve`, the CLI and the tests (createContext) and
// passed down explicitly.
import type { Database } from 'bun:sqlite'
import type { Config } from './config'
import type { Clock } from './time'
import { openDb, type Db } from './db/client'
import type { MigrationObserver } from './db/migrate'
import type { Logger } from './log'
import { createOutbox, type Outbox } from './mail/outbox'

export interface Ctx {
  cfg: Config
  clock: Clock
  db: Db
  sqlite: Database
  log: Logger
  mail: Outbox
  /**
   * Aborted when the leader begins to stop (beginStopping): what would wait or stream for as long
   * as its client stays (long polls, event streams, fellows' sockets) ends then, so that a stop
   * does not wait on it. See stopOrLeave for a request's own signal.
   */
  stopping: AbortSignal
}

export interface ContextOptions {
  /** Queue mail (default: when SMTP is configured). The CLI never sends; tests choose. */
  mailEnabled?: boolean
  /** Told when mail is queued, so the sender loop need not wait for its next tick. */
  onMailWake?: () => void
  /** Told before and after the state file's pending migrations run (`svc serve` logs them). */
  onMigrate?: MigrationObserver
  /** An existing file at other migrations than this binary's is refused, not migrated (svc admin). */
  refuseOtherVersion?: boolean
}

const stoppers = new WeakMap<Ctx, AbortController>()

/** Opens (and migrates) the state file named by the config and assembles the context on it. */
export function createContext(cfg: Config, log: Logger, clock: Clock, opts: ContextOptions = {}): Ctx {
  const store = openDb(cfg.dbPath, { onMigrate: opts.onMigrate, refuseOtherVersion: opts.refuseOtherVersion })
  const mail = createOutbox(opts.mailEnabled ?? cfg.smtp !== null, cfg.secretKey, clock, opts.onMailWake)
  const stopper = new AbortController()
  const ctx: Ctx = { cfg, clock, db: store.db, sqlite: store.sqlite, log, mail, stopping: stopper.signal }
  stoppers.set(ctx, stopper)
  return ctx
}

/** The leader begins to stop: ctx.stopping aborts. */
export function beginStopping(ctx: Ctx): void {
  stoppers.get(ctx)?.abort()
}

/**
 * A request's signal that also aborts when the leader begins to stop: for long polls and streams.
 * Per request, not a switch in the hubs: the relay and inference sockets pump from the same hubs
 * in a loop, and a hub that stopped waiting for everyone would spin them until the sockets close.
 */
export function stopOrLeave(ctx: Ctx, request: Request): AbortSignal {
  return AbortSignal.any([request.signal, ctx.stopping])
}

/** Closes the state file the context opened; PRAGMA optimize first, best effort, like openDb's close. */
export function closeContext(ctx: Ctx): void {
  try {
    ctx.sqlite.exec('PRAGMA optimize')
  } catch {
    // best effort on the way out
  }
  ctx.sqlite.close()
}
