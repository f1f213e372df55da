// Signal floor: Bun.serve WebSockets and bun:sqlite only. The handshake checks the token's digest
// with one prepared SELECT; a broadcast reads the pool's fellows with one prepared SELECT and sends
// each open socket one JSON signal. Nothing else: it is what holding N sockets costs in Bun.
import { Database } from 'bun:sqlite'
import type { ServerWebSocket } from 'bun'

const db = new Database(process.env.FLOOR_DB!, { strict: true })
db.exec('PRAGMA journal_mode = WAL')
const byToken = db.prepare("SELECT id FROM fellows WHERE token_hash = ? AND state = 'active'")
const inPool = db.prepare('SELECT fellow_id FROM pool_nodes WHERE pool_id = ?')
const sockets = new Map<string, ServerWebSocket<{ id: string }>>()

const server = Bun.serve<{ id: string }, never>({
  hostname: '127.0.0.1',
  port: Number(process.env.FLOOR_PORT),
  async fetch(req, srv) {
    const url = new URL(req.url)
    if (url.pathname === '/ready') return new Response('ready')
    if (url.pathname.startsWith('/ws/signals/')) {
      const id = url.pathname.slice('/ws/signals/'.length)
      const token = url.searchParams.get('token') ?? ''
      const row = byToken.get(new Bun.CryptoHasher('sha256').update(token).digest('hex')) as { id: string } | null
      if (!row || row.id !== id) return new Response(null, { status: 403 })
      return srv.upgrade(req, { data: { id } }) ? undefined : new Response(null, { status: 400 })
    }
    if (req.method === 'POST' && url.pathname === '/broadcast') {
      const { pool_id } = (await req.json()) as { pool_id: string }
      const ts = new Date().toISOString()
      let n = 0
      for (const { fellow_id } of inPool.all(pool_id) as { fellow_id: string }[]) {
        const ws = sockets.get(fellow_id)
        if (!ws) continue
        ws.send(JSON.stringify({ id: Bun.randomUUIDv7(), signal: 'UPDATE', ts, payload: {} }))
        n++
      }
      return Response.json({ signalled: n })
    }
    return new Response(null, { status: 404 })
  },
  websocket: {
    open(ws) {
      sockets.set(ws.data.id, ws)
    },
    close(ws) {
      if (sockets.get(ws.data.id) === ws) sockets.delete(ws.data.id)
    },
    message() {},
  },
})
void server
