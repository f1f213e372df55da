// What every service needs, built once by `serve` (or the CLI) and passed down explicitly.
import type { Database } from 'bun:sqlite'
import type { Config } from './config'
import type { Clock } from './clock'
import type { Db } from './db/client'
import type { Logger } from './log'
import type { Outbox } from './mail/outbox'

export interface Ctx {
  cfg: Config
  clock: Clock
  db: Db
  sqlite: Database
  log: Logger
  mail: Outbox
}
