// A complete runner (runner contract v1, docs/workloads.md) in plain TypeScript, no packages:
// a toy two-or-more-stage pipeline that learns y = 3x. Each stage holds one weight; stage 0 makes
// the batches and sends activations forward; the last stage computes the loss and sends the
// gradient back. Frames go through the agent at SVC_DATA_URL in the relay's encoding
// (u32 meta length, meta JSON, u64 data length, data; big-endian lengths).
//
//   svc fellow ... --runner "toy=bun /path/to/pipeline.ts"
//   job config: {"steps": 200, "lr": 0.5}
import { fstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const env = (k: string) => process.env[k] ?? ''
const DATA = env('SVC_DATA_URL')
const STAGE = Number(env('SVC_STAGE'))
const STAGES = Number(env('SVC_STAGES'))
const config = JSON.parse(env('SVC_JOB_CONFIG') || '{}') as { steps?: number; lr?: number; step_ms?: number }
const STEPS = config.steps ?? 200
const LR = config.lr ?? 0.5
const BATCH = 8
const first = STAGE === 0
const last = STAGE === STAGES - 1

let w = 0.5 + 0.1 * STAGE // this stage's weight
let step = 0
let wantCheckpoint = false
let stopping = false
process.on('SIGUSR1', () => (wantCheckpoint = true))
process.on('SIGTERM', () => (stopping = true))
// stdin is a pipe (or socket) from the agent that nobody writes to: its end means the agent is gone.
function agentPipe(): boolean {
  const s = fstatSync(0)
  return s.isFIFO() || s.isSocket()
}
if (agentPipe()) void (async () => {
  for await (const _ of Bun.stdin.stream()) void _
  stopping = true
})()

// Resume: the newest checkpoint in SVC_RESUME_FROM.
const resume = env('SVC_RESUME_FROM')
if (resume) {
  const files = readdirSync(resume).filter((f) => /^ckpt-\d+\.json$/.test(f)).sort((a, b) => Number(a.slice(5, -5)) - Number(b.slice(5, -5)))
  if (files.length > 0) ({ w, step } = JSON.parse(readFileSync(join(resume, files.at(-1)!), 'utf8')) as { w: number; step: number })
}

function saveCheckpoint(): void {
  const dir = env('SVC_CHECKPOINT_DIR')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, `ckpt-${step}.json`), JSON.stringify({ w, step }))
  console.log(JSON.stringify({ checkpoint: dir, step }))
  wantCheckpoint = false
}

interface Frame {
  meta: Record<string, unknown>
  data: Float32Array
}

function encode(frames: Frame[]): Uint8Array {
  const parts: Uint8Array[] = []
  for (const f of frames) {
    const meta = new TextEncoder().encode(JSON.stringify(f.meta))
    const head = new DataView(new ArrayBuffer(4))
    head.setUint32(0, meta.length)
    const len = new DataView(new ArrayBuffer(8))
    len.setBigUint64(0, BigInt(f.data.byteLength))
    parts.push(new Uint8Array(head.buffer), meta, new Uint8Array(len.buffer), new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength))
  }
  return new Uint8Array(Buffer.concat(parts))
}

function decode(body: Uint8Array): Frame[] {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  const out: Frame[] = []
  for (let at = 0; at < body.length; ) {
    const metaLen = view.getUint32(at)
    const meta = JSON.parse(new TextDecoder().decode(body.subarray(at + 4, at + 4 + metaLen))) as Record<string, unknown>
    const dataLen = Number(view.getBigUint64(at + 4 + metaLen))
    const start = at + 12 + metaLen
    out.push({ meta, data: new Float32Array(body.slice(start, start + dataLen).buffer) })
    at = start + dataLen
  }
  return out
}

/**
 * One call to SVC_DATA_URL; null when the stage is stopping: the agent answers 410 once it sent
 * SIGTERM, and an endpoint that refuses or resets the connection while this runner is being
 * stopped (or its agent is gone) is the end too, not an error to crash on.
 */
async function call(url: string, init?: RequestInit): Promise<Response | null> {
  try {
    const res = await fetch(url, init)
    if (res.status !== 410) return res
    await res.arrayBuffer()
  } catch (e) {
    // SIGTERM or the end of stdin may come a moment after the endpoint went away.
    for (let i = 0; i < 40 && !stopping; i++) await Bun.sleep(50)
    if (!stopping) throw e
  }
  stopping = true
  return null
}

async function send(channel: 'activations' | 'gradients', f: Frame): Promise<void> {
  while (!stopping) {
    const res = await call(`${DATA}/${channel}`, { method: 'POST', body: encode([f]) })
    if (!res) return
    await res.arrayBuffer()
    if (res.status === 202) return
    await Bun.sleep(200) // 503: the neighbour is not reachable yet
  }
}

/** The frame of `want` step from `channel` (older frames, from before a resend, are skipped). */
async function receive(channel: 'activations' | 'gradients', want: number | null, timeoutMs: number): Promise<Frame | null> {
  const end = Date.now() + timeoutMs
  while (!stopping && Date.now() < end) {
    const res = await call(`${DATA}/${channel}?wait_ms=1000&max=1`)
    if (!res) return null
    if (res.status !== 200) {
      await res.arrayBuffer()
      continue
    }
    for (const f of decode(new Uint8Array(await res.arrayBuffer()))) if (want === null || f.meta.step === want) return f
  }
  return null
}

const batch = (s: number) => Float32Array.from({ length: BATCH }, (_, i) => ((s * 7 + i * 13) % 17) / 17 - 0.5)

while (!stopping && step < STEPS) {
  if (wantCheckpoint) saveCheckpoint()
  if (first) {
    const s = step + 1
    const x = batch(s)
    const y = x.map((v) => w * v)
    if (last) {
      // One stage: the whole model here.
      const g = y.map((v, i) => (2 * (v - 3 * x[i]!)) / BATCH)
      w -= LR * g.reduce((a, v, i) => a + v * x[i]!, 0)
      step = s
      console.log(JSON.stringify({ step, loss: y.reduce((a, v, i) => a + (v - 3 * x[i]!) ** 2, 0) / BATCH }))
    } else {
      await send('activations', { meta: { step: s }, data: y })
      const g = await receive('gradients', s, 5000)
      if (!g) continue // lost on the way (a neighbour moved): send this step again (or stopping)
      w -= LR * g.data.reduce((a, v, i) => a + v * x[i]!, 0)
      step = s
      console.log(JSON.stringify({ step }))
    }
  } else {
    const a = await receive('activations', null, 60_000)
    if (!a) continue
    const s = a.meta.step as number
    const x = a.data
    const y = x.map((v) => w * v)
    let dx: Float32Array
    if (last) {
      const target = batch(s).map((v) => 3 * v)
      const g = y.map((v, i) => (2 * (v - target[i]!)) / BATCH)
      dx = g.map((v) => v * w)
      w -= LR * g.reduce((acc, v, i) => acc + v * x[i]!, 0)
      step = s
      console.log(JSON.stringify({ step, loss: y.reduce((acc, v, i) => acc + (v - target[i]!) ** 2, 0) / BATCH }))
    } else {
      await send('activations', { meta: { step: s }, data: y })
      const g = await receive('gradients', s, 5000)
      if (!g) continue
      dx = g.data.map((v) => v * w)
      w -= LR * g.data.reduce((acc, v, i) => acc + v * x[i]!, 0)
      step = s
    }
    await send('gradients', { meta: { step: s }, data: dx })
  }
  // Also gives SIGTERM, SIGUSR1 and the end of stdin their turn.
  await Bun.sleep(config.step_ms ?? 0)
}
if (wantCheckpoint) saveCheckpoint()
// Stopped (SIGTERM, the agent gone): 143 (128 + SIGTERM), quietly. Not 0: a stopped stage has not
// finished, and the last stage's exit 0 would say the job completed.
process.exit(stopping ? 143 : 0)
