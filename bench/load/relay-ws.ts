// Relay WebSocket client: sockets of stage 0 push 4 MiB activation frames (at most two messages
// unanswered each, as the agent does), sockets of stage 1 receive them. Leader: /ws/relay/{job}
// with each stage's node token; floor: the same protocol at its minimum (bench/floor/relay-ws.ts).
// Throughput is payload bytes received per second over the measured window. Prints one JSON line.
import { relaySpec } from './relay-spec'

const spec = relaySpec()
const WINDOW = 2

/** One message: the activations tag byte, then one frame (u32 meta_len | meta | u64 data_len | data). */
function message(bytes: number): Uint8Array {
  const meta = new TextEncoder().encode(JSON.stringify({ step: 1, micro_batch: 0 }))
  const out = new Uint8Array(1 + 4 + meta.byteLength + 8 + bytes)
  const view = new DataView(out.buffer)
  out[0] = 0
  view.setUint32(1, meta.byteLength)
  out.set(meta, 5)
  view.setUint32(5 + meta.byteLength + 4, bytes)
  for (let i = 0; i < bytes; i += 4096) out[5 + meta.byteLength + 8 + i] = i & 0xff
  return out
}

const msg = message(spec.frameBytes)
const base = spec.url.replace(/^http/, 'ws')
const urlOf = (role: 'push' | 'pop') => (spec.kind === 'leader' ? `${base}/ws/relay/${spec.jobId}` : `${base}/relay?role=${role}`)
const open = (role: 'push' | 'pop', token: string) =>
  new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(urlOf(role), { headers: { authorization: `Bearer ${token}` } } as unknown as string[])
    ws.binaryType = 'arraybuffer'
    ws.onopen = () => resolve(ws)
    ws.onerror = () => reject(new Error(`${role} socket did not open`))
  })

const start = performance.now()
const measureFrom = start + spec.warmupSeconds * 1000
const end = measureFrom + spec.seconds * 1000
let receivedBytes = 0
let received = 0
let receivedTotal = 0
let pushed = 0
let full = 0

const poppers = await Promise.all(Array.from({ length: spec.poppers }, () => open('pop', spec.popToken)))
for (const ws of poppers) {
  ws.onmessage = (ev) => {
    if (typeof ev.data === 'string') return
    const now = performance.now()
    receivedTotal++
    if (now >= measureFrom && now < end) {
      receivedBytes += (ev.data as ArrayBuffer).byteLength - 1
      received++
    }
  }
}
const pushers = await Promise.all(Array.from({ length: spec.pushers }, () => open('push', spec.pushToken)))
await Promise.all(
  pushers.map(
    (ws) =>
      new Promise<void>((resolve) => {
        let inFlight = 0
        const fill = () => {
          while (inFlight < WINDOW && performance.now() < end) {
            ws.send(msg)
            inFlight++
          }
          if (inFlight === 0) resolve()
        }
        ws.onmessage = (ev) => {
          inFlight--
          const ack = JSON.parse(ev.data as string) as { ok: boolean; retry_after_s?: number }
          if (ack.ok) pushed++
          else full++
          if (!ack.ok) setTimeout(fill, 5)
          else fill()
        }
        fill()
      }),
  ),
)
for (const ws of [...pushers, ...poppers]) ws.close()
process.stdout.write(JSON.stringify({ mbPerS: receivedBytes / 1e6 / spec.seconds, framesPerS: received / spec.seconds, pushed, popped: received, poppedTotal: receivedTotal, full, popP50Ms: NaN }) + '\n')
