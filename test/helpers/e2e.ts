// Small real-HTTP clients for the e2e suites that drive dist/svc (crash, backup/restore).
import { createServer } from 'node:net'

export interface Answer<T = any> {
  status: number
  body: T
}

/** fetch with a JSON body and a bearer token; the body is parsed when it is JSON. */
export async function call<T = any>(base: string, method: string, path: string, opts: { bearer?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.bearer) headers['authorization'] = `Bearer ${opts.bearer}`
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  const text = await res.text()
  let body: unknown = text
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') body = JSON.parse(text)
  return { status: res.status, body: body as T }
}

/** A browser-like session: cookie jar plus the CSRF header on state changes. */
export class Session {
  jar = new Map<string, string>()
  constructor(public base: string) {}

  cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  async call<T = any>(method: string, path: string, body?: unknown): Promise<Answer<T>> {
    const headers: Record<string, string> = {}
    if (this.jar.size > 0) headers['cookie'] = this.cookie()
    const csrf = this.jar.get('svc_csrf')
    if (csrf && method !== 'GET') headers['x-csrf-token'] = csrf
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${this.base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    for (const sc of res.headers.getSetCookie()) {
      const pair = sc.split(';')[0]!
      const eq = pair.indexOf('=')
      const v = pair.slice(eq + 1)
      if (v === '') this.jar.delete(pair.slice(0, eq))
      else this.jar.set(pair.slice(0, eq), v)
    }
    const text = await res.text()
    let parsed: unknown = text
    if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text)
    return { status: res.status, body: parsed as T }
  }
}

/** Registers a person through the API (one scrypt hash on the leader) and returns a logged-in session. */
export async function registerUser(base: string, email: string, password: string, displayName?: string): Promise<Session & { userId: string }> {
  const s = new Session(base) as Session & { userId: string }
  const r = await s.call('POST', '/api/v1/auth/register', { email, password, ...(displayName ? { display_name: displayName } : {}) })
  if (r.status !== 201) throw new Error(`register ${email}: ${r.status} ${JSON.stringify(r.body)}`)
  s.userId = r.body.user.id
  return s
}

export async function mintToken(s: Session, name = 'e2e'): Promise<string> {
  const r = await s.call('POST', '/api/v1/api-tokens', { name })
  if (r.status !== 201) throw new Error(`mint token: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.token
}

/** A TCP port nothing listens on (bound, then released): SMTP pointed there fails at once. */
export async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

/** A small seeded PRNG (mulberry32, the agent's), so a failing run can be replayed with its seed. */
export { mulberry32 as prng } from '../../src/agent/mlp'

export const GPU = { index: 0, name: 'NVIDIA A100-SXM4-80GB', memory_total_mb: 81920, memory_free_mb: 80000, utilization_pct: 3 }
