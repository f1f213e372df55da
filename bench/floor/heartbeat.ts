// Heartbeat floor: the least a leader can do and still keep a fleet's telemetry. Bun.serve and
// bun:sqlite only: hash the bearer token, parse the JSON body, one prepared UPDATE keyed by the
// token's digest (the unique index the leader's state file has), answer a fixed JSON object.
// No validation, no policy, no logging: what it costs is the price of HTTP + JSON + SQLite here.
import { Database } from 'bun:sqlite'

const db = new Database(process.env.FLOOR_DB!, { strict: true })
// The leader's pragmas (src/db/client.ts), so both pay the same for a write.
db.exec('PRAGMA journal_mode = WAL')
db.exec('PRAGMA synchronous = NORMAL')
const update = db.prepare(
  "UPDATE fellows SET last_seen_at = ?, status = ?, step = ?, loss = ?, bytes_sent = ?, bytes_received = ?, hardware = ? WHERE token_hash = ? AND state = 'active'",
)
const ok = JSON.stringify({ ok: true, next_heartbeat_s: 10 })
const json = { headers: { 'content-type': 'application/json' } }

interface Heartbeat {
  status: string
  step?: number
  loss?: number
  bytes_sent?: number
  bytes_received?: number
  hardware?: unknown
}

Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.FLOOR_PORT),
  async fetch(req) {
    const path = new URL(req.url).pathname
    if (path === '/ready') return new Response('ready')
    if (req.method !== 'POST' || path !== '/api/v1/workers/heartbeat') return new Response(null, { status: 404 })
    const token = (req.headers.get('authorization') ?? '').slice('Bearer '.length)
    const digest = new Bun.CryptoHasher('sha256').update(token).digest('hex')
    const hb = (await req.json()) as Heartbeat
    const r = update.run(Date.now(), hb.status, hb.step ?? null, hb.loss ?? null, hb.bytes_sent ?? null, hb.bytes_received ?? null, hb.hardware ? JSON.stringify(hb.hardware) : null, digest)
    if (r.changes === 0) return new Response(null, { status: 401 })
    return new Response(ok, json)
  },
})
