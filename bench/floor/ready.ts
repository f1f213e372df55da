// Start-up floor: open (and create) a SQLite file with the leader's pragmas, listen, and answer
// /ready with one SELECT 1. Compiled with `bun build --compile` by the runner, like dist/svc, so
// both pay the same executable start-up; the difference is what the leader does before it listens.
import { Database } from 'bun:sqlite'

const db = new Database(process.env.FLOOR_DB!, { create: true, strict: true })
db.exec('PRAGMA journal_mode = WAL')
db.exec('PRAGMA synchronous = NORMAL')
const one = db.prepare('SELECT 1')

Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.FLOOR_PORT),
  fetch(req) {
    if (new URL(req.url).pathname !== '/ready') return new Response(null, { status: 404 })
    one.get()
    return new Response('ready')
  },
})
