// makeHarness with a logger that writes into an array, for tests that read what the leader logs
// (secrets must never reach a log line; a 500 leaves its reason there).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { openDb } from '../../src/db/client'
import { FakeClock } from '../../src/clock'
import { createLogger } from '../../src/log'
import { createOutbox } from '../../src/mail/outbox'
import { createApp, createServices } from '../../src/http/app'
import { Client, type Harness } from './harness'
import type { Ctx } from '../../src/context'

export function makeLoggedHarness(env: Record<string, string> = {}, opts: { mailEnabled?: boolean } = {}): Harness & { lines: string[] } {
  const lines: string[] = []
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'))
  const cfg = loadConfig({ SVC_STATE_DIR: dir, SVC_COOKIE_SECURE: '0', ...env })
  const store = openDb(cfg.dbPath)
  const clock = new FakeClock(Date.UTC(2026, 10, 1, 12))
  const mail = createOutbox(opts.mailEnabled ?? cfg.smtp !== null, cfg.secretKey, clock)
  const log = createLogger('debug', (l) => lines.push(l))
  const ctx: Ctx = { cfg, clock, db: store.db, sqlite: store.sqlite, log, mail }
  const services = createServices(ctx)
  const app = createApp(ctx, services)
  return { ctx, cfg, clock, services, app, dir, lines, client: (o) => new Client(app, o), close: () => store.close() }
}
