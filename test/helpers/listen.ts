// The harness app on a real port (loopback, ephemeral), for WebSockets and streaming.
import { connect } from 'node:net'
import { makeHarness, seedUser, sessionClient, type Client, type Harness } from './harness'

export function listen(h: Harness): { url: string; port: number; stop(): Promise<void> } {
  h.app.listen({ hostname: '127.0.0.1', port: 0 })
  const port = h.app.server!.port!
  return { url: `http://127.0.0.1:${port}`, port, stop: async () => void (await h.app.server?.stop(true)) }
}

/**
 * A harness served on a real port with an admin (session client `A`), a private pool and a join
 * token for it: what fellows need to register. The caller stops the server and closes the harness.
 */
export async function servedPool(env: Record<string, string> = {}): Promise<{ h: Harness; server: ReturnType<typeof listen>; A: Client; pool: { id: string }; join: string }> {
  const h = makeHarness(env)
  const server = listen(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const A = sessionClient(h, admin.id)
  const pool = (await A.post('/api/v1/admin/pools', { name: 'Lab', visibility: 'private' })).body
  const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
  return { h, server, A, pool, join }
}

/** Sends a raw WebSocket upgrade request and returns the HTTP status line's code. */
export function rawUpgrade(port: number, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => {
      const lines = [
        `GET ${path} HTTP/1.1`,
        `Host: 127.0.0.1:${port}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Version: 13',
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
        '',
        '',
      ]
      sock.write(lines.join('\r\n'))
    })
    let buf = ''
    sock.on('data', (d) => {
      buf += d.toString()
      const m = /^HTTP\/1\.1 (\d{3})/.exec(buf)
      if (m) {
        sock.destroy()
        resolve(Number(m[1]))
      }
    })
    sock.on('error', reject)
  })
}

export function openSocket(url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; messages: unknown[]; closed: Promise<{ code: number; reason: string }> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers } as unknown as string[])
    const messages: unknown[] = []
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.addEventListener('close', (e) => r({ code: e.code, reason: e.reason })))
    ws.addEventListener('message', (e) => messages.push(JSON.parse(String(e.data))))
    ws.addEventListener('open', () => resolve({ ws, messages, closed }))
    ws.addEventListener('error', () => reject(new Error('websocket failed to open')))
  })
}

/** A free (base, base+1) pair below the ephemeral range (32768+), where client sockets do not land. */
export function freeBase(): number {
  for (;;) {
    const base = 20_000 + 2 * Math.floor(Math.random() * 6000)
    try {
      Bun.listen({ hostname: '127.0.0.1', port: base, socket: { data() {} } }).stop(true)
      Bun.listen({ hostname: '127.0.0.1', port: base + 1, socket: { data() {} } }).stop(true)
      return base
    } catch {
      // taken: try another
    }
  }
}
