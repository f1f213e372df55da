// makeHarness with a logger that writes into an array, for tests that read what the leader logs
// (secrets must never reach a log line; a 500 leaves its reason there).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { FakeClock } from './clock'
import { createLogger } from '../../src/log'
import { createApp, createServices } from '../../src/app'
import { Client, type Harness } from './harness'
import { closeContext, createContext, type Ctx } from '../../src/context'

export function makeLoggedHarness(env: Record<string, string> = {}, opts: { mailEnabled?: boolean } = {}): Harness & { lines: string[] } {
  const lines: string[] = []
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'))
  const cfg = loadConfig({ SVC_STATE_DIR: dir, SVC_COOKIE_SECURE: '0', ...env })
  const clock = new FakeClock(Date.UTC(2026, 10, 1, 12))
  const log = createLogger('debug', (l) => lines.push(l))
  const ctx: Ctx = createContext(cfg, log, clock, { mailEnabled: opts.mailEnabled })
  const services = createServices(ctx)
  const app = createApp(ctx, services)
  return { ctx, cfg, clock, services, app, dir, lines, client: (o) => new Client(app, o), close: () => closeContext(ctx) }
}
