// Relay client: pushers and poppers running at the same time on one channel, 4 MiB frames.
// Leader: stage 0 pushes activations (binary frame format of src/wire/frames.ts), stage 1 pops
// them. Floor: the same bytes to /push and from /pop. Throughput is payload bytes popped per
// second over the measured window, after a warm-up. Prints one JSON line.
import { relaySpec } from './relay-spec'

const spec = relaySpec()

/** One frame: u32 meta_len | meta JSON | u64 data_len | data (all big-endian). */
function frameBody(bytes: number): Uint8Array<ArrayBuffer> {
  const meta = new TextEncoder().encode(JSON.stringify({ step: 1, micro_batch: 0 }))
  const out = new Uint8Array(4 + meta.byteLength + 8 + bytes)
  const view = new DataView(out.buffer)
  view.setUint32(0, meta.byteLength)
  out.set(meta, 4)
  view.setUint32(4 + meta.byteLength, 0)
  view.setUint32(8 + meta.byteLength, bytes)
  for (let i = 0; i < bytes; i += 4096) out[4 + meta.byteLength + 8 + i] = i & 0xff // not all zeros
  return out
}

const body = spec.kind === 'leader' ? frameBody(spec.frameBytes) : new Uint8Array(spec.frameBytes).map((_, i) => i & 0xff)
const pushUrl = spec.kind === 'leader' ? `${spec.url}/api/v1/relay/${spec.jobId}/activations/push` : `${spec.url}/push`
const popUrl = spec.kind === 'leader' ? `${spec.url}/api/v1/relay/${spec.jobId}/activations/pop?wait_ms=1000&max=1` : `${spec.url}/pop?wait_ms=1000`
const pushHeaders = { authorization: `Bearer ${spec.pushToken}`, 'content-type': 'application/octet-stream' }
const popHeaders = { authorization: `Bearer ${spec.popToken}` }

const start = performance.now()
const measureFrom = start + spec.warmupSeconds * 1000
const end = measureFrom + spec.seconds * 1000
let poppedBytes = 0
let popped = 0
let poppedTotal = 0
let pushed = 0
let full = 0
const popLatencies: number[] = []

const pusher = async () => {
  while (performance.now() < end) {
    const res = await fetch(pushUrl, { method: 'POST', headers: pushHeaders, body })
    await res.arrayBuffer()
    if (res.status === 202) pushed++
    else if (res.status === 429) (full++, await Bun.sleep(5)) // backpressure: the queue is full
    else throw new Error(`push answered ${res.status}`)
  }
}
const popper = async () => {
  while (performance.now() < end) {
    const t = performance.now()
    const res = await fetch(popUrl, { headers: popHeaders })
    const bytes = await res.arrayBuffer()
    if (res.status === 204) continue
    if (res.status !== 200) throw new Error(`pop answered ${res.status}`)
    const now = performance.now()
    poppedTotal++
    if (now >= measureFrom && now < end) {
      poppedBytes += bytes.byteLength
      popped++
      popLatencies.push(now - t)
    }
  }
}
await Promise.all([...Array.from({ length: spec.pushers }, pusher), ...Array.from({ length: spec.poppers }, popper)])
popLatencies.sort((a, b) => a - b)
process.stdout.write(
  JSON.stringify({
    mbPerS: poppedBytes / 1e6 / spec.seconds,
    framesPerS: popped / spec.seconds,
    pushed,
    popped,
    poppedTotal,
    full,
    popP50Ms: popLatencies[Math.floor(popLatencies.length / 2)] ?? NaN,
  }) + '\n',
)
