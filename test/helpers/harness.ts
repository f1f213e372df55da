// A leader app on a fresh state file, driven through app.handle (no port), with a fake clock.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig, type Config } from '../../src/config'
import { FakeClock } from './clock'
import { silentLogger } from '../../src/log'
import { createApp, createServices, type Services } from '../../src/app'
import { users } from '../../src/db/schema'
import { newId } from '../../src/crypto'
import { hashPassword } from '../../src/accounts/passwords'
import { createSession } from '../../src/accounts/sessions'
import { mintApiToken } from '../../src/accounts/api-tokens'
import { mintCsrfToken } from '../../src/http/csrf'
import { closeContext, createContext, type Ctx } from '../../src/context'

export const PASSWORD = 'correct-horse-battery'
let sharedHash: Promise<string> | null = null
/** One scrypt hash of PASSWORD per test process: seeding users must not pay 270 ms each. */
export const passwordHash = () => (sharedHash ??= hashPassword(PASSWORD))

export interface Harness {
  ctx: Ctx
  cfg: Config
  clock: FakeClock
  services: Services
  app: ReturnType<typeof createApp>
  dir: string
  client(opts?: ClientOptions): Client
  close(): void
}

export function makeHarness(env: Record<string, string> = {}, opts: { mailEnabled?: boolean } = {}): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'))
  const cfg = loadConfig({ SVC_STATE_DIR: dir, SVC_COOKIE_SECURE: '0', ...env })
  const clock = new FakeClock(Date.UTC(2026, 10, 1, 12))
  const ctx: Ctx = createContext(cfg, silentLogger, clock, { mailEnabled: opts.mailEnabled })
  const services = createServices(ctx)
  const app = createApp(ctx, services)
  return {
    ctx,
    cfg,
    clock,
    services,
    app,
    dir,
    client: (o) => new Client(app, o),
    close: () => closeContext(ctx),
  }
}

export interface ClientOptions {
  /** Sent as X-Forwarded-For (the harness's socket address is 127.0.0.1). */
  ip?: string
  bearer?: string
  /** Leave out the X-CSRF-Token header even when the CSRF cookie is held. */
  noCsrf?: boolean
}

export interface Res<T = any> {
  status: number
  body: T
  headers: Headers
}

/** A caller with its own cookie jar; sends the CSRF header from its cookie like the pages do. */
export class Client {
  cookies = new Map<string, string>()
  constructor(
    private app: { handle(r: Request): Promise<Response> },
    public opts: ClientOptions = {},
  ) {}

  async call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> {
    const h: Record<string, string> = { ...headers }
    if (body !== undefined && !('content-type' in h)) h['content-type'] = 'application/json'
    if (this.opts.ip) h['x-forwarded-for'] = this.opts.ip
    if (this.opts.bearer && !('authorization' in h)) h['authorization'] = `Bearer ${this.opts.bearer}`
    if (this.cookies.size > 0) h['cookie'] = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    const csrf = this.cookies.get('svc_csrf')
    if (csrf && !this.opts.noCsrf && !('x-csrf-token' in h)) h['x-csrf-token'] = csrf
    const init: RequestInit = { method, headers: h }
    if (body !== undefined) init.body = typeof body === 'string' || body instanceof Uint8Array ? (body as string | Uint8Array<ArrayBuffer>) : JSON.stringify(body)
    const res = await this.app.handle(new Request(`http://leader.test${path}`, init))
    for (const sc of res.headers.getSetCookie()) {
      const [pair, ...attrs] = sc.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      const expired = attrs.some((a) => /max-age=0\b/i.test(a.trim())) || value === ''
      if (expired) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    const ct = res.headers.get('content-type') ?? ''
    if (ct.includes('octet-stream')) return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) as T, headers: res.headers }
    const text = await res.text()
    let parsed: unknown = text
    if (ct.includes('json') && text !== '') parsed = JSON.parse(text)
    return { status: res.status, body: parsed as T, headers: res.headers }
  }
  get = <T = any>(path: string, headers?: Record<string, string>) => this.call<T>('GET', path, undefined, headers)
  post = <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => this.call<T>('POST', path, body, headers)
  patch = <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => this.call<T>('PATCH', path, body, headers)
  delete = <T = any>(path: string, headers?: Record<string, string>) => this.call<T>('DELETE', path, undefined, headers)
}

export interface SeededUser {
  id: string
  email: string
}

/** Inserts a user with the shared precomputed hash (password PASSWORD). */
export async function seedUser(
  h: Harness,
  email: string,
  over: Partial<{ role: 'user' | 'admin'; status: 'unverified' | 'pending_approval' | 'active' | 'disabled'; displayName: string; emailVerified: boolean }> = {},
): Promise<SeededUser> {
  const id = newId()
  const now = h.clock.now()
  h.ctx.db
    .insert(users)
    .values({
      id,
      email: email.toLowerCase(),
      passwordHash: await passwordHash(),
      displayName: over.displayName ?? null,
      role: over.role ?? 'user',
      status: over.status ?? 'active',
      createdAt: now,
      updatedAt: now,
      lastLoginAt: null,
      emailVerifiedAt: over.emailVerified ? now : null,
    })
    .run()
  return { id, email: email.toLowerCase() }
}

/** A client logged in as the user (session created directly, no scrypt). */
export function sessionClient(h: Harness, userId: string, opts: ClientOptions = {}): Client {
  const c = h.client(opts)
  const s = createSession(h.ctx, userId, '127.0.0.1')
  c.cookies.set('svc_session', s.token)
  c.cookies.set('svc_csrf', mintCsrfToken(h.cfg.secretKey, s.token))
  return c
}

export function tokenClient(h: Harness, userId: string, opts: ClientOptions = {}): Client & { tokenId: string } {
  const t = mintApiToken(h.ctx, userId, 'test')
  const c = h.client({ ...opts, bearer: t.token }) as Client & { tokenId: string }
  c.tokenId = t.id
  return c
}
