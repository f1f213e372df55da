// Bun load generator, used when `wrk` is not installed: N concurrent workers, each a keep-alive
// fetch loop sending heartbeats with the next fellow's node token (the same body as
// heartbeat.lua). Prints one JSON line shaped like the wrk script's.
//   BENCH_HTTP='{"url":..., "tokensFile":..., "connections":64, "seconds":10}' bun bench/load/http.ts
import { readFileSync } from 'node:fs'

interface Spec {
  url: string
  tokensFile: string
  connections: number
  seconds: number
  /** Where in the fleet to begin (see heartbeat.lua). */
  start?: number
}
const spec = JSON.parse(process.env.BENCH_HTTP!) as Spec
const tokens = readFileSync(spec.tokensFile, 'utf8').split('\n').filter(Boolean)
const gpus = Array.from({ length: 4 }, (_, index) => ({ index, name: 'NVIDIA A100-SXM4-80GB', memory_total_mb: 81920, memory_free_mb: 40960, utilization_pct: 87.5 }))
const rest = { loss: 1.2345, bytes_sent: 123456789, bytes_received: 987654321, hardware: { gpus, cpu_pct: 37.5, mem_free_mb: 120000 } }

let next = spec.start ?? 0
let step = 0
let bad = 0
let failed = 0
const latencies: number[] = []
const end = performance.now() + spec.seconds * 1000
const t0 = performance.now()
await Promise.all(
  Array.from({ length: spec.connections }, async () => {
    while (performance.now() < end) {
      const token = tokens[next++ % tokens.length]!
      const t = performance.now()
      try {
        const res = await fetch(`${spec.url}/api/v1/workers/heartbeat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ status: 'running', step: ++step, ...rest }),
        })
        await res.arrayBuffer()
        if (res.status !== 200) bad++
        latencies.push(performance.now() - t)
      } catch {
        failed++
      }
    }
  }),
)
const duration = performance.now() - t0
latencies.sort((a, b) => a - b)
const pct = (q: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? NaN) * 1000)
process.stdout.write(
  JSON.stringify({
    requests: latencies.length,
    duration_us: Math.round(duration * 1000),
    errors_connect: failed,
    errors_read: 0,
    errors_write: 0,
    errors_status: bad,
    errors_timeout: 0,
    p50_us: pct(0.5),
    p90_us: pct(0.9),
    p99_us: pct(0.99),
    max_us: pct(1),
  }) + '\n',
)
