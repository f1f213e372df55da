// `bun run bench`: every scenario against the built dist/svc, each beside its floor (bench/floor/)
// in the same run, so the ratios hold on a noisy machine even when the absolute figures move.
//
//   bun run build && bun run bench                 full run (100 / 10,000 / 100,000 fellows, 10,000 sockets)
//   bun run bench -- --quick                       under 2 minutes (at most 10,000 fellows, 1,000 sockets)
//   bun run bench -- --only heartbeat,relay        a subset (heartbeat signals relay inference engines artifacts startup admin)
//   bun run bench -- --bin /path/to/svc            measure another build (before/after comparisons)
//   bun run bench -- --profile [--only relay]      one scenario (default: heartbeats, --fellows 10000; or relay, signals, artifacts, startup) with the
//                                                  leader run from source under `bun --cpu-prof`; prints where time goes
//
// Prints a table and writes bench/results/latest.json (git-ignored).
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { WRK } from './lib/http-load'
import { leaderBinary, PINNING, profileLeadersInto, ROOT, SVC_BIN, tempDir, useBinary } from './lib/proc'
import { fmt, machine, median, table, type Row } from './lib/report'
import { seedState, type Seed } from './lib/seed'
import { heartbeats, type HeartbeatResult } from './scenarios/heartbeat'
import { telemetryCost } from './scenarios/telemetry'
import { manySockets, signals, socketsAllowed, type SignalsResult } from './scenarios/signals'
import { relay, type RelayResult } from './scenarios/relay'
import { startup, startupFigures, type StartupResult } from './scenarios/startup'
import { adminList, inference, type AdminListResult, type InferenceResult } from './scenarios/external'
import { engines, type EnginesResult } from './scenarios/engines'
import { artifacts, type ArtifactsResult } from './scenarios/artifacts'
import { summarize } from './profile'

const SCENARIOS = ['heartbeat', 'signals', 'relay', 'inference', 'engines', 'artifacts', 'startup', 'admin'] as const
type Scenario = (typeof SCENARIOS)[number]

const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    bin: { type: 'string' },
    profile: { type: 'boolean', default: false },
    fellows: { type: 'string', default: '10000' },
  },
})
const quick = args.quick!
const only = new Set((args.only ?? SCENARIOS.join(',')).split(',').map((s) => s.trim()) as Scenario[])
for (const s of only) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario "${s}"; choose from ${SCENARIOS.join(', ')}`)
if (args.bin) useBinary(args.bin)

const plan = quick
  ? { fleets: [100, 10_000], rounds: 3, seconds: 2, sockets: 10_000, wsRounds: 3, relayRounds: 1, relaySeconds: 3, artifactRounds: 2, startRuns: 3, idleSeconds: 2, adminRuns: 10 }
  : { fleets: [100, 10_000, 100_000], rounds: 5, seconds: 5, sockets: 10_000, wsRounds: 5, relayRounds: 2, relaySeconds: 5, artifactRounds: 3, startRuns: 5, idleSeconds: 3, adminRuns: 100 }
const CONNECTIONS = 64
const TARGET = { engineRatio: 0.9, engineFirstTokenAddedMs: 5, hbRps: 10_000, hbP99Ms: 50, hbRatio: 0.7, flat: 0.9, relayRatio: 0.8, relayWsRatio: 0.9, artifactRatio: 0.8, inferAddedMs: 1, inferAddedP99Ms: 25, inferFloodRatio: 0.6, signalOpenRatio: 0.7, socketKiB: 4, manySockets: 50_000, manySocketsRssBytes: 1024 ** 3, readyMs: 120, idleRssBytes: 55 * 1024 * 1024, adminP50Ms: 10, adminP99Ms: 25 }

const resultsDir = join(ROOT, 'bench/results')
mkdirSync(resultsDir, { recursive: true })
const log = (s: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${s}\n`)

// ---- profile mode -------------------------------------------------------------------------------

if (args.profile) {
  // One scenario (--only, default heartbeat) with every leader run from source under --cpu-prof.
  const name = (args.only ?? 'heartbeat') as Scenario
  const dir = join(resultsDir, `profile-${name}-${new Date().toISOString().replace(/[:.]/g, '-')}`)
  mkdirSync(dir, { recursive: true })
  profileLeadersInto(dir)
  log(`${name}, leader from source under bun --cpu-prof (profiles in ${dir})`)
  if (name === 'heartbeat') {
    const [r] = await heartbeats([seedState(tempDir('prof'), Number(args.fellows))], { rounds: 1, seconds: 10, connections: CONNECTIONS })
    if (!r) throw new Error('no heartbeat result')
    console.log(`heartbeats, ${fmt.int(r.fellows)} fellows: leader ${fmt.int(r.leader.rps)}/s (p99 ${fmt.ms(r.leader.p99Ms)}), floor ${fmt.int(r.floor.rps)}/s: ratio ${fmt.ratio(r.leader.rps / r.floor.rps)}`)
  } else if (name === 'relay') {
    const r = await relay({ rounds: 1, seconds: 8 })
    console.log(`relay: leader ${fmt.int(r.leaderMbPerS)} MB/s, floor ${fmt.int(r.floorMbPerS)} MB/s: ratio ${fmt.ratio(r.leaderMbPerS / r.floorMbPerS)}`)
  } else if (name === 'signals') {
    const r = await signals(seedState(tempDir('prof'), 10_000), 10_000, 5)
    console.log(`signals: p99 leader ${fmt.ms(r.leader.p99Ms)}, floor ${fmt.ms(r.floor.p99Ms)}`)
  } else if (name === 'startup') {
    const r = await startup(1, 1)
    console.log(`start to ready from source (not the binary): ${fmt.ms(r.leaderReadyMs[0]!)}`)
  } else if (name === 'artifacts') {
    const r = await artifacts({ rounds: 1 })
    console.log(`artifacts, 256 MiB: upload leader ${fmt.int(r.leaderUploadMbPerS)} MB/s, floor ${fmt.int(r.floorUploadMbPerS)} MB/s; download leader ${fmt.int(r.leaderDownloadMbPerS)} MB/s, floor ${fmt.int(r.floorDownloadMbPerS)} MB/s`)
  } else throw new Error(`--profile runs heartbeat, relay, signals, artifacts or startup, not ${name}`)
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const s = summarize(join(dir, file))
    console.log(`\n${join(dir, file)}: ${s.samples} busy samples (the whole process life: start, warm-up and measurement)`)
    console.log('inclusive time by file:')
    for (const x of s.files.sort((a, b) => b.totalPct - a.totalPct).slice(0, 15)) console.log(`${x.totalPct.toFixed(1).padStart(6)}%  ${x.name}`)
    console.log('self time by function:')
    for (const x of s.functions.sort((a, b) => b.selfPct - a.selfPct).slice(0, 25)) console.log(`${x.selfPct.toFixed(1).padStart(6)}%  ${x.name}`)
    console.log(`more: bun run bench/profile.ts ${join(dir, file)} --top 60`)
  }
  process.exit(0)
}

// ---- the run ------------------------------------------------------------------------------------

const started = Date.now()
const host = machine(WRK)
const bin = leaderBinary()
const git = Bun.spawnSync(['git', 'describe', '--always', '--dirty'], { cwd: ROOT }).stdout.toString().trim() || null
const built = statSync(args.bin ?? SVC_BIN)
const binInfo = { path: args.bin ?? 'dist/svc', built: built.mtime.toISOString(), bytes: built.size, git }
log(`${quick ? 'QUICK run (at most 10,000 fellows, 1,000 sockets, shorter rounds)' : 'full run'}; ${host.cpus} CPUs (${host.cpuModel}), bun ${host.bun}; load: ${WRK ? 'wrk' : 'Bun fetch (wrk not installed)'}; pinning: ${PINNING ? `server CPU ${PINNING.server}, load CPU ${PINNING.load}` : 'none'}`)
log(`leader binary: ${binInfo.path} (built ${binInfo.built}, tree ${git ?? 'unknown'}), run from a copy at ${bin}`)

const rows: Row[] = []
const details: Record<string, unknown> = {}
const failures: Record<string, string> = {}

async function scenario(name: Scenario, fn: () => Promise<void>): Promise<void> {
  if (!only.has(name)) return
  const t = performance.now()
  log(`${name}...`)
  try {
    await fn()
  } catch (e) {
    failures[name] = (e as Error).message
    rows.push({ scenario: `${name}: FAILED`, leader: (e as Error).message.split('\n')[0]!.slice(0, 80), floor: '', ratio: null, target: '', met: false })
    log(`${name} failed: ${(e as Error).stack}`)
  }
  log(`${name} done in ${((performance.now() - t) / 1000).toFixed(1)} s`)
}

const seeds = new Map<number, Seed>()
const seedOf = (n: number) => {
  let s = seeds.get(n)
  if (!s) {
    const t = performance.now()
    s = seedState(tempDir(`fleet-${n}`), n)
    log(`seeded ${fmt.int(n)} fellows in ${((performance.now() - t) / 1000).toFixed(1)} s`)
    seeds.set(n, s)
  }
  return s
}

await scenario('heartbeat', async () => {
  const results: HeartbeatResult[] = await heartbeats(plan.fleets.map(seedOf), { rounds: plan.rounds, seconds: plan.seconds, connections: CONNECTIONS })
  for (const r of results) {
    const n = r.fellows
    const ratio = r.leader.rps / r.floor.rps
    rows.push({
      scenario: `heartbeats/s, ${fmt.int(n)} fellows (p50 / p99)`,
      leader: `${fmt.int(r.leader.rps)} (${fmt.ms(r.leader.p50Ms)} / ${fmt.ms(r.leader.p99Ms)})`,
      floor: `${fmt.int(r.floor.rps)} (${fmt.ms(r.floor.p50Ms)} / ${fmt.ms(r.floor.p99Ms)})`,
      ratio,
      target: `>= ${fmt.int(TARGET.hbRps)}/s, p99 <= ${TARGET.hbP99Ms} ms, >= ${TARGET.hbRatio}x`,
      met: r.leader.rps >= TARGET.hbRps && r.leader.p99Ms <= TARGET.hbP99Ms && ratio >= TARGET.hbRatio,
    })
  }
  for (const r of results) {
    rows.push({
      scenario: `server CPU per heartbeat, ${fmt.int(r.fellows)} fellows (user + system)`,
      leader: `${r.leader.cpuUs.toFixed(0)} µs`,
      floor: `${r.floor.cpuUs.toFixed(0)} µs`,
      ratio: r.floor.cpuUs / r.leader.cpuUs,
      target: '—',
      met: null,
    })
  }
  const [small, big] = [results[0]!, results[results.length - 1]!]
  const flat = big.leader.rps / small.leader.rps
  rows.push({
    scenario: `heartbeat cost flat in fleet size (${fmt.int(big.fellows)} vs ${fmt.int(small.fellows)} fellows, throughput ratio)`,
    leader: flat.toFixed(2),
    floor: (big.floor.rps / small.floor.rps).toFixed(2),
    ratio: null,
    target: `>= ${TARGET.flat}`,
    met: flat >= TARGET.flat,
  })
  if (results.length > 2) {
    const mid = results[results.length - 2]!
    rows.push({
      scenario: `heartbeat cost flat in fleet size (${fmt.int(big.fellows)} vs ${fmt.int(mid.fellows)} fellows, throughput ratio)`,
      leader: (big.leader.rps / mid.leader.rps).toFixed(2),
      floor: (big.floor.rps / mid.floor.rps).toFixed(2),
      ratio: null,
      target: '—',
      met: null,
    })
  }
  rows.push({
    scenario: `start to ready with ${fmt.int(big.fellows)} fellows in the state file`,
    leader: fmt.ms(big.leaderReadyMs),
    floor: '—',
    ratio: null,
    target: '—',
    met: null,
  })
  // Issue 25: the telemetry history (buckets fed by every heartbeat, written by the flush) must not
  // cost heartbeat throughput: the same binary with it and without it (SVC_TELEMETRY_RETENTION_DAYS=0).
  const tc = await telemetryCost(seedOf(10_000), { rounds: plan.rounds * 2, seconds: plan.seconds, connections: CONNECTIONS })
  rows.push({
    scenario: `heartbeats/s with telemetry history vs without it, ${fmt.int(tc.fellows)} fellows (server CPU per heartbeat)`,
    leader: `${fmt.int(tc.on.rps)} (${tc.on.cpuUs.toFixed(0)} µs)`,
    floor: `${fmt.int(tc.off.rps)} (${tc.off.cpuUs.toFixed(0)} µs)`,
    ratio: tc.on.rps / tc.off.rps,
    target: '>= 0.95x without',
    met: tc.on.rps / tc.off.rps >= 0.95,
  })
  details.heartbeat = { connections: CONNECTIONS, tool: WRK ? 'wrk' : 'bun', results, telemetryHistory: tc }
})

await scenario('signals', async () => {
  const seed = seedOf(Math.max(plan.sockets, 10_000))
  const r: SignalsResult = await signals(seed, plan.sockets, plan.wsRounds)
  const kib = (s: { rssOpen: number; rssIdle: number; sockets: number }) => (s.rssOpen - s.rssIdle) / s.sockets / 1024
  const perSocket = (s: { rssOpen: number; rssIdle: number; sockets: number }) => `${fmt.mb(s.rssOpen)} (+${kib(s).toFixed(1)} KiB/socket)`
  rows.push({
    scenario: `RSS with ${fmt.int(r.sockets)} open signal sockets`,
    leader: perSocket(r.leader),
    floor: perSocket(r.floor),
    ratio: r.floor.rssOpen / r.leader.rssOpen,
    target: `<= ${TARGET.socketKiB} KiB/socket`,
    met: kib(r.leader) <= TARGET.socketKiB,
  })
  const openRatio = r.floor.openSeconds / r.leader.openSeconds
  rows.push({
    scenario: `time to open ${fmt.int(r.sockets)} signal sockets (256 handshakes at a time)`,
    leader: `${r.leader.openSeconds.toFixed(2)} s`,
    floor: `${r.floor.openSeconds.toFixed(2)} s`,
    ratio: openRatio,
    target: `>= ${TARGET.signalOpenRatio}x floor`,
    met: openRatio >= TARGET.signalOpenRatio,
  })
  rows.push({
    scenario: `signal to a ${fmt.int(r.poolSize)}-fellow pool, send to receive, warm, ${r.rounds} rounds (p50 / p99)`,
    leader: `${fmt.ms(r.leader.p50Ms)} / ${fmt.ms(r.leader.p99Ms)}`,
    floor: `${fmt.ms(r.floor.p50Ms)} / ${fmt.ms(r.floor.p99Ms)}`,
    ratio: r.floor.p99Ms / r.leader.p99Ms,
    target: '—',
    met: null,
  })
  rows.push({
    scenario: `first signal after start to a ${fmt.int(r.poolSize)}-fellow pool, until the last socket has it`,
    leader: fmt.ms(r.leader.coldMs),
    floor: fmt.ms(r.floor.coldMs),
    ratio: r.floor.coldMs / r.leader.coldMs,
    target: '—',
    met: null,
  })
  // One leader holding a large fleet's sockets. The open-file limit bounds it (each socket is a
  // descriptor in the leader and one in the client): below 50,000 + spare the row opens what fits
  // and says so, and the 1 GiB target stays unjudged rather than extrapolated.
  const many = socketsAllowed(TARGET.manySockets)
  const m = await manySockets(seedOf(many), TARGET.manySockets, many)
  const all = m.sockets === m.wanted
  rows.push({
    scenario: all
      ? `RSS with ${fmt.int(m.sockets)} open signal sockets on one leader (opened in ${m.openSeconds.toFixed(1)} s)`
      : `RSS with ${fmt.int(m.sockets)} open signal sockets on one leader (the open-file limit, ${fmt.int(m.openFileLimit)}, allows no more here; ${fmt.int(m.wanted)} not measured)`,
    leader: perSocket(m),
    floor: '—',
    ratio: null,
    target: `${fmt.int(m.wanted)} sockets < ${TARGET.manySocketsRssBytes / 1024 ** 3} GiB`,
    met: all ? m.rssOpen < TARGET.manySocketsRssBytes : null,
  })
  details.signals = { ...r, many: m }
})

await scenario('relay', async () => {
  const r: RelayResult = await relay({ rounds: plan.relayRounds, seconds: plan.relaySeconds })
  const ratio = r.leaderMbPerS / r.floorMbPerS
  rows.push({ scenario: `relay MB/s, 4 MiB frames, ${r.pushers} pushers + ${r.poppers} poppers`, leader: fmt.int(r.leaderMbPerS), floor: fmt.int(r.floorMbPerS), ratio, target: `>= ${TARGET.relayRatio}x floor`, met: ratio >= TARGET.relayRatio })
  rows.push({ scenario: 'server CPU per GB relayed (user + system)', leader: `${r.leaderCpuSPerGB.toFixed(2)} s`, floor: `${r.floorCpuSPerGB.toFixed(2)} s`, ratio: r.floorCpuSPerGB / r.leaderCpuSPerGB, target: '—', met: null })
  const wsRatio = r.ws.leaderMbPerS / r.ws.floorMbPerS
  rows.push({ scenario: `relay MB/s over the WebSocket channel, ${r.pushers} + ${r.poppers} sockets`, leader: fmt.int(r.ws.leaderMbPerS), floor: fmt.int(r.ws.floorMbPerS), ratio: wsRatio, target: `>= ${TARGET.relayWsRatio}x floor`, met: wsRatio >= TARGET.relayWsRatio })
  rows.push({ scenario: 'server CPU per GB relayed over the WebSocket channel', leader: `${r.ws.leaderCpuSPerGB.toFixed(2)} s`, floor: `${r.ws.floorCpuSPerGB.toFixed(2)} s`, ratio: r.ws.floorCpuSPerGB / r.ws.leaderCpuSPerGB, target: '—', met: null })
  details.relay = r
})

await scenario('inference', async () => {
  // The script's own default paced load (20 frames/s on each of 1,000 streams) is past the
  // transport's ceiling, so its added latency is queueing. Pacing 1 frame/s per stream (1,000
  // frames/s offered, which the leader keeps up with) gives the per-frame figure the target is
  // judged on; a quick run measures only that one, with 5 paced frames a stream.
  const light = ['--quick', '--pace-ms=1000', ...(quick ? ['--paced-frames=5'] : [])]
  const runs: InferenceResult[] = quick ? [await inference(light)] : [await inference([]), await inference(light)]
  const [main] = runs
  const floodRatio = main!.leaderFloodFps / main!.floorFloodFps
  rows.push({ scenario: 'inference frames/s, 1,000 streams, flood (up to 32 frames a message)', leader: fmt.int(main!.leaderFloodFps), floor: fmt.int(main!.floorFloodFps), ratio: floodRatio, target: `>= ${TARGET.inferFloodRatio}x floor`, met: floodRatio >= TARGET.inferFloodRatio })
  runs.forEach((r, i) => {
    const paced = r.added.paced
    rows.push({
      scenario: `inference added latency per frame, paced ${fmt.int(1000 / r.paceMs)} frame(s)/s per stream, all frames (p50 / p99)`,
      leader: paced ? `${fmt.ms(paced.p50)} / ${fmt.ms(paced.p99)}` : 'n/a',
      floor: '0 (direct SSE)',
      ratio: null,
      target: '—',
      met: null,
    })
    // The target is judged on the lightest load, once every stream has opened: the frames made
    // while 1,000 chat requests are being admitted wait behind that work (docs/benchmarks.md).
    if (i !== runs.length - 1) return
    const steady = r.added.steady
    rows.push({
      scenario: `inference added latency per frame, paced ${fmt.int(1000 / r.paceMs)} frame(s)/s per stream, after all streams opened (p50 / p99)`,
      leader: steady ? `${fmt.ms(steady.p50)} / ${fmt.ms(steady.p99)}` : 'n/a',
      floor: '0 (direct SSE)',
      ratio: null,
      target: `<= ${TARGET.inferAddedMs} ms / ${TARGET.inferAddedP99Ms} ms`,
      met: steady ? steady.p50 <= TARGET.inferAddedMs && steady.p99 <= TARGET.inferAddedP99Ms : false,
    })
  })
  details.inference = runs
})

await scenario('engines', async () => {
  const r: EnginesResult = await engines({ rounds: quick ? 2 : 5 })
  for (const s of r.byStreams) {
    const ratio = s.leader.tokensPerS / s.direct.tokensPerS
    const judged = s.streams === 1
    rows.push({
      scenario: `engine tokens/s, ${s.streams} stream(s), ${r.tokens} tokens each at ${r.tokenMs} ms/token (leader + agent vs the engine directly)`,
      leader: fmt.int(s.leader.tokensPerS),
      floor: fmt.int(s.direct.tokensPerS),
      ratio,
      target: judged ? `>= ${TARGET.engineRatio}x direct` : '—',
      met: judged ? ratio >= TARGET.engineRatio : null,
    })
    const added = median(s.leader.firstTokenMs) - median(s.direct.firstTokenMs)
    rows.push({
      scenario: `engine first-token latency, ${s.streams} stream(s), p50 (added: ${fmt.ms(added)})`,
      leader: fmt.ms(median(s.leader.firstTokenMs)),
      floor: fmt.ms(median(s.direct.firstTokenMs)),
      ratio: median(s.direct.firstTokenMs) / median(s.leader.firstTokenMs),
      target: judged ? `<= ${TARGET.engineFirstTokenAddedMs} ms added` : '—',
      met: judged ? added <= TARGET.engineFirstTokenAddedMs : null,
    })
  }
  details.engines = r
})

await scenario('artifacts', async () => {
  const r: ArtifactsResult = await artifacts({ rounds: plan.artifactRounds })
  const size = `${r.bytes / 1024 / 1024} MiB`
  for (const [what, leader, floor] of [
    ['upload', r.leaderUploadMbPerS, r.floorUploadMbPerS],
    ['download', r.leaderDownloadMbPerS, r.floorDownloadMbPerS],
  ] as const) {
    const ratio = leader / floor
    rows.push({ scenario: `artifact ${what} MB/s, ${size}`, leader: fmt.int(leader), floor: fmt.int(floor), ratio, target: `>= ${TARGET.artifactRatio}x floor`, met: ratio >= TARGET.artifactRatio })
  }
  details.artifacts = r
})

await scenario('startup', async () => {
  const r: StartupResult = await startup(plan.startRuns, plan.idleSeconds)
  const f = startupFigures(r)
  rows.push({ scenario: `cold start to ready, empty state (median of ${r.runs})`, leader: fmt.ms(f.leaderReadyMs), floor: fmt.ms(f.floorReadyMs), ratio: f.floorReadyMs / f.leaderReadyMs, target: `<= ${TARGET.readyMs} ms`, met: f.leaderReadyMs <= TARGET.readyMs })
  const split = (x: StartupResult['leaderRssSplit']) => (x ? ` (anon ${fmt.mb(x.anon)})` : '')
  rows.push({ scenario: `idle RSS, ${r.idleSeconds} s after ready`, leader: fmt.mb(f.leaderIdleRss) + split(r.leaderRssSplit), floor: fmt.mb(f.floorIdleRss) + split(r.floorRssSplit), ratio: f.floorIdleRss / f.leaderIdleRss, target: `<= ${TARGET.idleRssBytes / 1024 / 1024} MiB`, met: f.leaderIdleRss <= TARGET.idleRssBytes })
  // The same leader against the stack alone (Elysia, TypeBox, drizzle, as many routes): no target of its own.
  rows.push({ scenario: `start to ready and idle RSS of the stack alone (${r.stackRoutes} schema'd routes, bench/floor/stack.ts)`, leader: `${fmt.ms(f.leaderReadyMs)}, ${fmt.mb(f.leaderIdleRss)}`, floor: `${fmt.ms(f.stackReadyMs)}, ${fmt.mb(f.stackIdleRss)}${split(r.stackRssSplit)}`, ratio: f.stackIdleRss / f.leaderIdleRss, target: '—', met: null })
  details.startup = r
})

await scenario('admin', async () => {
  const r: AdminListResult = await adminList(plan.adminRuns)
  const worst = (cs: typeof r.cases, k: 'appP50' | 'appP99') => [...cs].sort((a, b) => b[k] - a[k])[0]!
  const p50 = worst(r.cases, 'appP50')
  const p99 = worst(r.cases, 'appP99')
  rows.push({ scenario: `admin user list, ${fmt.int(r.users)} users, slowest of ${r.cases.length} cases, p50 (${p50.name})`, leader: fmt.ms(p50.appP50), floor: fmt.ms(p50.floorP50), ratio: p50.floorP50 / p50.appP50, target: `<= ${TARGET.adminP50Ms} ms`, met: p50.appP50 <= TARGET.adminP50Ms })
  rows.push({ scenario: `admin user list, ${fmt.int(r.users)} users, slowest p99 (${p99.name})`, leader: fmt.ms(p99.appP99), floor: fmt.ms(p99.floorP99), ratio: p99.floorP99 / p99.appP99, target: `<= ${TARGET.adminP99Ms} ms`, met: p99.appP99 <= TARGET.adminP99Ms })
  const a50 = worst(r.auditCases, 'appP50')
  rows.push({ scenario: `audit list, ${fmt.int(r.auditEntries)} entries, slowest of ${r.auditCases.length} filters, p50 (${a50.name})`, leader: fmt.ms(a50.appP50), floor: fmt.ms(a50.floorP50), ratio: a50.floorP50 / a50.appP50, target: `<= ${TARGET.adminP50Ms} ms`, met: a50.appP50 <= TARGET.adminP50Ms })
  details.admin = r
})

// ---- report -------------------------------------------------------------------------------------

const command = `bun run bench${quick ? ' -- --quick' : ''}${args.only ? ` --only ${args.only}` : ''}${args.bin ? ` --bin ${args.bin}` : ''}`
const out = table(rows)
console.log(`\n${quick ? 'QUICK RUN (smaller fleets and socket counts; not the published figures)' : 'FULL RUN'}: ${command}`)
console.log(`${host.cpus} x ${host.cpuModel}, ${host.memTotalGiB} GiB, bun ${host.bun}, linux ${host.kernel}; load ${WRK ? host.wrk : 'Bun fetch'}; ${PINNING ? `server pinned to CPU ${PINNING.server}, load to CPU ${PINNING.load}` : 'no CPU pinning'}`)
console.log(`load average at start ${host.loadAvgAtStart.join(' ')}, at end ${loadavg().map((x) => x.toFixed(2)).join(' ')}: other work on the machine moves absolute figures; the ratios to the floor, measured in the same run, are the robust ones`)
console.log(`ratio: leader / floor, oriented so that 1.00x = as good as the floor (for latency and memory: floor / leader)\n`)
console.log(out)
if (Object.keys(failures).length > 0) console.log(`\nfailed: ${Object.keys(failures).join(', ')} (see the log above)`)
const file = join(resultsDir, 'latest.json')
writeFileSync(file, JSON.stringify({ date: new Date(started).toISOString(), seconds: Math.round((Date.now() - started) / 1000), command, quick, binary: binInfo, machine: { ...host, loadAvgAtEnd: loadavg() }, pinning: PINNING, plan, targets: TARGET, rows, failures, details }, null, 2) + '\n')
console.log(`\nwrote ${file} (${Math.round((Date.now() - started) / 1000)} s)`)
process.exit(Object.keys(failures).length > 0 ? 1 : 0)
