// Relay WebSocket floor: a bare Bun.serve WebSocket byte relay speaking the leader's socket
// protocol (src/wire/relay-socket.ts) at its minimum. A socket opened with ?role=pop receives;
// every other socket sends. Each binary message a sender sends is answered with a short text ack
// and forwarded as it is to a receiver (round robin), or queued (up to the leader's default queue
// cap) while none is connected or all are past the same 8 MiB send high water. No frame parsing,
// no policy, no job: the cost of moving the bytes through Bun's WebSockets, which the leader's
// relay socket cannot beat.
import type { ServerWebSocket } from 'bun'

const MAX_QUEUE_BYTES = 256 * 1024 * 1024
const HIGH_WATER = 8 * 1024 * 1024
const ACK = JSON.stringify({ ok: true, queued_frames: 1, depth_bytes: 0 })
const FULL = JSON.stringify({ ok: false, code: 'rate_limited', detail: 'full', retry_after_s: 1 })
type Data = { pop: boolean }
const receivers: ServerWebSocket<Data>[] = []
const queue: Uint8Array[] = []
let queued = 0
let turn = 0

function deliver(): void {
  while (queue.length > 0) {
    const ready = receivers.filter((r) => r.getBufferedAmount() <= HIGH_WATER)
    if (ready.length === 0) return
    const r = ready[turn++ % ready.length]!
    const m = queue.shift()!
    queued -= m.byteLength
    r.send(m)
  }
}

Bun.serve<Data>({
  hostname: '127.0.0.1',
  port: Number(process.env.FLOOR_PORT),
  fetch(req, server) {
    const url = new URL(req.url)
    if (url.pathname === '/ready') return new Response('ready')
    if (server.upgrade(req, { data: { pop: url.searchParams.get('role') === 'pop' } })) return
    return new Response(null, { status: 404 })
  },
  websocket: {
    maxPayloadLength: 65 * 1024 * 1024,
    open(ws) {
      if (ws.data.pop) receivers.push(ws)
      deliver()
    },
    message(ws, message) {
      const m = message as Uint8Array
      if (queued + m.byteLength > MAX_QUEUE_BYTES) return void ws.send(FULL)
      queue.push(m)
      queued += m.byteLength
      ws.send(ACK)
      deliver()
    },
    drain() {
      deliver()
    },
    close(ws) {
      const i = receivers.indexOf(ws)
      if (i >= 0) receivers.splice(i, 1)
    },
  },
})
