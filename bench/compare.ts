// Before/after on the heartbeat path: several leader builds and the floor, all running at once on
// copies of one seeded state file, measured round-robin (build A, build B, ..., floor, again), so
// every build sees the same moments of the machine. How src/ changes are credited in
// docs/benchmarks.md.
//
//   bun run bench/compare.ts [--fellows 10000] [--rounds 5] [--seconds 4] BINARY...
//   (build each with the command in build.ts, e.g. from a checkout of the commit before a change)
import { parseArgs } from 'node:util'
import { heartbeatLoad, WRK, type LoadResult } from './lib/http-load'
import { startFloor, startLeader, tempDir, useBinary, type Server } from './lib/proc'
import { fmt, median } from './lib/report'
import { copyState, dbPathOf, seedState } from './lib/seed'
import { BENCH_HEARTBEAT_INTERVAL_S } from './scenarios/heartbeat'
import { cpSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'

const { values, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  allowPositionals: true,
  options: { fellows: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '5' }, seconds: { type: 'string', default: '4' } },
})
if (positionals.length === 0) throw new Error('usage: bun run bench/compare.ts [--fellows N] [--rounds R] [--seconds S] BINARY...')
const n = Number(values.fellows)
const seed = seedState(tempDir('compare'), n)
const connections = 64

interface Entry {
  name: string
  server: Server
  rounds: (LoadResult & { cpuUs: number })[]
  /** Where the next round starts in the fleet. */
  next: number
}
const entries: Entry[] = []
try {
  for (const bin of positionals) {
    useBinary(bin)
    // Each build gets its own copy of the state, so none sees another's writes.
    const dir = tempDir('compare-state')
    mkdirSync(dir, { recursive: true })
    cpSync(seed.dbPath, dbPathOf(dir))
    entries.push({ name: bin, server: await startLeader({ stateDir: dir, env: { SVC_HEARTBEAT_INTERVAL_S: BENCH_HEARTBEAT_INTERVAL_S } }), rounds: [], next: 0 })
  }
  entries.push({ name: 'floor (bench/floor/heartbeat.ts)', server: await startFloor('heartbeat.ts', { FLOOR_DB: copyState(seed, join(tempDir('compare-floor'))) }), rounds: [], next: 0 })
  const run = async (e: Entry, seconds: number) => {
    const cpu0 = e.server.cpu()
    const res = await heartbeatLoad(e.server.url, seed.tokensFile, connections, seconds, e.next)
    if (res.errors > 0) throw new Error(`${e.name}: ${res.errors} failed heartbeats`)
    e.next = (e.next + res.requests) % n
    return { ...res, cpuUs: ((e.server.cpu() - cpu0) / res.requests) * 1e6 }
  }
  const warm = Math.max(2, Math.ceil(n / 6000))
  for (const e of entries) await run(e, warm)
  for (let r = 0; r < Number(values.rounds); r++) for (const e of entries) e.rounds.push(await run(e, Number(values.seconds)))
} finally {
  await Promise.all(entries.map((e) => e.server.stop()))
}
const floor = entries[entries.length - 1]!
const floorRps = median(floor.rounds.map((r) => r.rps))
console.log(`heartbeats, ${fmt.int(n)} fellows, ${connections} connections (${WRK ? 'wrk' : 'Bun fetch'}), ${values.rounds} rounds of ${values.seconds} s round-robin; medians\n`)
console.log('| build | heartbeats/s | p50 | p99 | server CPU per heartbeat | vs floor |')
console.log('|---|---:|---:|---:|---:|---:|')
for (const e of entries) {
  const rps = median(e.rounds.map((r) => r.rps))
  console.log(`| ${e.name} | ${fmt.int(rps)} | ${fmt.ms(median(e.rounds.map((r) => r.p50Ms)))} | ${fmt.ms(median(e.rounds.map((r) => r.p99Ms)))} | ${median(e.rounds.map((r) => r.cpuUs)).toFixed(0)} µs | ${fmt.ratio(rps / floorRps)} |`)
}
