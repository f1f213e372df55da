// Signal sockets client: opens one WebSocket per fellow, tells the parent (stdout line "open"),
// waits for "go" on stdin (the parent reads the server's RSS meanwhile), then triggers a broadcast
// to one pool several times (after one cold round, reported apart) and measures, on every socket
// of that pool, the time from just before the trigger request was sent to the arrival of the
// signal. Prints one JSON line at the end, and exits when stdin closes.
import { readFileSync } from 'node:fs'

interface Spec {
  /** http://host:port of the server. */
  url: string
  kind: 'leader' | 'floor'
  tokensFile: string
  idsFile: string
  /** Sockets to open: fellows 0..sockets-1 of the seed. */
  sockets: number
  /** The first `poolSize` fellows form the pool the broadcast goes to. */
  poolSize: number
  poolId: string
  adminToken: string
  rounds: number
}

const spec = JSON.parse(process.env.BENCH_SOCKETS!) as Spec
const tokens = readFileSync(spec.tokensFile, 'utf8').split('\n').filter(Boolean)
const ids = readFileSync(spec.idsFile, 'utf8').split('\n').filter(Boolean)
const n = spec.sockets
const wsBase = spec.url.replace(/^http/, 'ws')
const arrived = new Float64Array(spec.poolSize)
let waiting = 0
let onAllArrived: (() => void) | null = null
const sockets: WebSocket[] = []

function open(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${wsBase}/ws/signals/${ids[i]}?token=${encodeURIComponent(tokens[i]!)}`)
    ws.addEventListener('open', () => resolve())
    ws.addEventListener('error', () => reject(new Error(`socket ${i} failed to open`)))
    if (i < spec.poolSize) {
      ws.addEventListener('message', () => {
        if (arrived[i] !== 0) return
        arrived[i] = performance.now()
        if (--waiting === 0) onAllArrived?.()
      })
    }
    sockets.push(ws)
  })
}

// Bounded concurrency: ten thousand simultaneous handshakes would overflow the listen backlog
// and measure SYN retries instead of the server.
const t0 = performance.now()
let next = 0
await Promise.all(
  Array.from({ length: 256 }, async () => {
    while (next < n) await open(next++)
  }),
)
const openSeconds = (performance.now() - t0) / 1000
process.stdout.write(`open ${n}\n`)

// Wait for the parent's "go".
const stdin = Bun.stdin.stream().getReader()
for (let said = ''; !said.includes('go'); ) {
  const r = await stdin.read()
  if (r.done) process.exit(1)
  said += new TextDecoder().decode(r.value)
}

const trigger = () =>
  spec.kind === 'leader'
    ? fetch(`${spec.url}/api/v1/workers/update`, {
        method: 'POST',
        headers: { authorization: `Bearer ${spec.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ pool_id: spec.poolId }),
      })
    : fetch(`${spec.url}/broadcast`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pool_id: spec.poolId }) })

const latencies: number[] = []
// Mean delivery time by position in the pool (tenths, in send order): tells a slow send loop
// (rising along the pool) from a pause that delays everything alike.
const byTenth = new Float64Array(10)
let lost = 0
// Round 0 warms the path up (a fresh keep-alive connection, the handler's first compile) and is
// reported on its own as the cold figure: the time until the last socket of the pool has it.
let coldMs = NaN
for (let r = 0; r <= spec.rounds; r++) {
  arrived.fill(0)
  waiting = spec.poolSize
  const all = new Promise<void>((resolve) => (onAllArrived = resolve))
  const sent = performance.now()
  const res = await trigger()
  const body = (await res.json()) as { signalled?: number }
  if (res.status !== 200 || body.signalled !== spec.poolSize) throw new Error(`trigger answered ${res.status} ${JSON.stringify(body)}`)
  await Promise.race([all, Bun.sleep(10_000)])
  if (r === 0) {
    coldMs = Math.max(...arrived) - sent
    if (arrived.includes(0)) lost++
    await Bun.sleep(200)
    continue
  }
  arrived.forEach((t, i) => {
    if (t === 0) return void lost++
    latencies.push(t - sent)
    byTenth[Math.floor((i * 10) / spec.poolSize)]! += (t - sent) / ((spec.poolSize / 10) * spec.rounds)
  })
  await Bun.sleep(200)
}
latencies.sort((a, b) => a - b)
const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? NaN
process.stdout.write(JSON.stringify({ sockets: n, openSeconds, deliveries: latencies.length, lost, coldMs, p50Ms: pct(0.5), p99Ms: pct(0.99), maxMs: pct(1), meanMsByTenth: [...byTenth].map((x) => Math.round(x * 10) / 10) }) + '\n')
// The sockets stay open until the parent has stopped the server and closes stdin: the server
// closing first leaves the TIME_WAITs on its side. Closed from here, 10,000 of them held this
// address's ephemeral ports for a minute, and the next run's sockets could not connect.
while (!(await stdin.read()).done) {}
process.exit(0)
