// Many signal sockets held open on one leader: raw TCP handshakes (the upgrade request, then the
// "101" status line), each connection then left open and idle, as a fellow's socket is between
// signals. Bun's WebSocket client cannot choose a source address, and one source address reaches
// one listening address:port from at most ~28,000 ephemeral ports; these connections spread over
// 127.0.0.2..127.0.0.k instead. Prints "open <n> <seconds>" once all are open, then holds them until
// stdin closes (the parent reads the server's RSS meanwhile, then stops the leader).
import { connect, type Socket } from 'node:net'
import { readFileSync } from 'node:fs'

interface Spec {
  port: number
  tokensFile: string
  idsFile: string
  sockets: number
}

const PER_SOURCE = 20_000
const spec = JSON.parse(process.env.BENCH_MANY_SOCKETS!) as Spec
const tokens = readFileSync(spec.tokensFile, 'utf8').split('\n').filter(Boolean)
const ids = readFileSync(spec.idsFile, 'utf8').split('\n').filter(Boolean)
if (ids.length < spec.sockets) throw new Error(`the seed has ${ids.length} fellows, fewer than ${spec.sockets} sockets`)
const held: Socket[] = []

function open(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    // Not 127.0.0.1: the other scenarios' clients connect from there, and the TIME_WAITs these
    // connections leave for a minute would take their ephemeral ports.
    const localAddress = `127.0.0.${2 + Math.floor(i / PER_SOURCE)}`
    const sock = connect({ host: '127.0.0.1', port: spec.port, localAddress }, () => {
      sock.write(
        `GET /ws/signals/${ids[i]}?token=${encodeURIComponent(tokens[i]!)} HTTP/1.1\r\nHost: 127.0.0.1:${spec.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      )
    })
    let head = ''
    const onData = (d: Buffer) => {
      head += d.toString('latin1')
      if (!head.includes('\r\n')) return
      sock.off('data', onData)
      if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(`socket ${i}: ${head.split('\r\n')[0]}`))
      held.push(sock)
      resolve()
    }
    sock.on('data', onData)
    sock.on('error', (e) => reject(new Error(`socket ${i}: ${e.message}`)))
  })
}

// 256 handshakes at a time, as the signal scenario does: more would overflow the listen backlog.
const t0 = performance.now()
let next = 0
await Promise.all(
  Array.from({ length: 256 }, async () => {
    while (next < spec.sockets) await open(next++)
  }),
)
process.stdout.write(`open ${held.length} ${((performance.now() - t0) / 1000).toFixed(2)}\n`)
// Held until the parent has stopped the leader and closes stdin (the server closes first, so the
// TIME_WAITs stay on its side and not on these ephemeral ports).
for await (const _ of Bun.stdin.stream());
process.exit(0)
