// Artifact store throughput: one 256 MiB model uploaded to the leader (POST the declaration, then
// one PUT of the bytes, which the leader hashes, syncs and publishes) and downloaded back (GET
// .../content), beside a bare Bun.serve file store (bench/floor/artifacts.ts) taking and serving
// the same file. The payload is generated once into a temp file and sent as `Bun.file(path)` to
// both. Each transfer runs in a child on the load side of the machine (this file, run as a script),
// timed from the request to the last byte of the answer. Rounds alternate leader and floor.
//
// MB/s here is bytes / 1e6 per second (like the relay's); 256 MiB is 268.4 MB.
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { runLoad, startFloor, startLeader, tempDir, type Server } from '../lib/proc'

const BYTES = 256 * 1024 * 1024

export interface Transfer {
  seconds: number
  mbPerS: number
  /** Server CPU seconds (user + system, all threads) the transfer cost, per GB moved. */
  serverCpuSPerGB: number
}
export interface ArtifactsRound {
  upload: Transfer
  download: Transfer
}
export interface ArtifactsResult {
  bytes: number
  rounds: number
  /** The best round of each (a noisy machine only ever slows a transfer down). */
  leaderUploadMbPerS: number
  floorUploadMbPerS: number
  leaderDownloadMbPerS: number
  floorDownloadMbPerS: number
  leader: ArtifactsRound[]
  floor: ArtifactsRound[]
}

// ---- the load side: one transfer, run as a child -------------------------------------------------

interface Spec {
  op: 'upload' | 'download'
  url: string
  headers: Record<string, string>
  /** The payload to upload. */
  file?: string
  bytes: number
}
interface Done {
  seconds: number
  bytes: number
  status: number
  /** The answer to an upload (JSON), for the artifact's id. */
  answer?: unknown
}

async function transfer(s: Spec): Promise<Done> {
  const t0 = performance.now()
  if (s.op === 'upload') {
    const res = await fetch(s.url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', ...s.headers }, body: Bun.file(s.file!) })
    const text = await res.text()
    const seconds = (performance.now() - t0) / 1000
    if (res.status !== 201) throw new Error(`PUT ${s.url}: ${res.status} ${text.slice(0, 300)}`)
    return { seconds, bytes: s.bytes, status: res.status, answer: JSON.parse(text) }
  }
  const res = await fetch(s.url, { headers: s.headers })
  if (res.status !== 200) throw new Error(`GET ${s.url}: ${res.status} ${(await res.text()).slice(0, 300)}`)
  let bytes = 0
  for await (const chunk of res.body!) bytes += chunk.byteLength
  const seconds = (performance.now() - t0) / 1000
  if (bytes !== s.bytes) throw new Error(`GET ${s.url}: ${bytes} bytes, expected ${s.bytes}`)
  return { seconds, bytes, status: res.status }
}

if (import.meta.main) {
  console.log(JSON.stringify(await transfer(JSON.parse(process.env.BENCH_ARTIFACTS!) as Spec)))
  process.exit(0)
}

// ---- the runner side ------------------------------------------------------------------------------

/** BYTES of random bytes into a file, hashed (SHA-256) as they are written. */
async function payload(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  const sink = Bun.file(path).writer()
  for (let at = 0; at < BYTES; at += 1024 * 1024) {
    const chunk = randomBytes(1024 * 1024)
    hasher.update(chunk)
    sink.write(chunk)
    await sink.flush()
  }
  await sink.end()
  if (Bun.file(path).size !== BYTES) throw new Error(`payload ${path}: ${Bun.file(path).size} bytes, expected ${BYTES}`)
  return hasher.digest('hex')
}

async function timed(server: Server, spec: Spec): Promise<{ transfer: Transfer; answer?: unknown }> {
  // Every transfer starts with no dirty pages of the ones before it (256 MiB each, kept): else the
  // kernel's writeback of earlier rounds throttles whichever server writes next.
  Bun.spawnSync(['sync'])
  const cpu0 = server.cpu()
  const d = await runLoad<Done>([process.execPath, import.meta.path], { BENCH_ARTIFACTS: JSON.stringify(spec) })
  const cpu = server.cpu() - cpu0
  return { transfer: { seconds: d.seconds, mbPerS: d.bytes / 1e6 / d.seconds, serverCpuSPerGB: cpu / (d.bytes / 1e9) }, answer: d.answer }
}

/** A pool, a fellow in it, and the fellow's node token, on a fresh leader. */
async function nodeToken(leader: Server): Promise<string> {
  const reg = await fetch(`${leader.url}/api/v1/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.com', password: 'bench artifacts password' }) })
  if (reg.status >= 300) throw new Error(`register: ${reg.status} ${await reg.text()}`)
  const cookie = reg.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  const csrf = /svc_csrf=([^;]+)/.exec(cookie)![1]!
  const post = async (path: string, body: unknown, headers: Record<string, string>) => {
    const res = await fetch(`${leader.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as Record<string, string>
  }
  const session = { cookie, 'x-csrf-token': csrf }
  const pool = await post('/api/v1/admin/pools', { name: 'artifacts bench', description: 'bench', visibility: 'private' }, session)
  const join_ = await post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id }, session)
  const fellow = await post('/api/v1/workers/register', { hostname: 'bench' }, { authorization: `Bearer ${join_.join_token}` })
  return fellow.node_token!
}

export async function artifacts(o: { rounds: number }): Promise<ArtifactsResult> {
  const work = tempDir('artifacts')
  const file = join(work, 'payload.bin')
  const stateDir = tempDir('artifacts-state')
  const floorDir = tempDir('artifacts-floor')
  let leader: Server | null = null
  let floor: Server | null = null
  try {
    const sha256 = await payload(file)
    leader = await startLeader({ stateDir })
    floor = await startFloor('artifacts.ts', { FLOOR_DIR: floorDir })
    const auth = { authorization: `Bearer ${await nodeToken(leader)}` }
    const l: ArtifactsRound[] = []
    const f: ArtifactsRound[] = []
    for (let r = 0; r < o.rounds; r++) {
      // Leader: the declaration (not timed: one small JSON request), then the bytes in one PUT.
      const open = await fetch(`${leader.url}/api/v1/artifacts/uploads`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ kind: 'model', name: `bench-${r}.bin`, size_bytes: BYTES, sha256 }),
      })
      if (open.status !== 201) throw new Error(`POST /api/v1/artifacts/uploads: ${open.status} ${await open.text()}`)
      const { upload_id } = (await open.json()) as { upload_id: string }
      const up = await timed(leader, { op: 'upload', url: `${leader.url}/api/v1/artifacts/uploads/${upload_id}?offset=0`, headers: auth, file, bytes: BYTES })
      const artifact = (up.answer as { artifact?: { id: string; sha256: string; size_bytes: number } }).artifact
      if (!artifact || artifact.sha256 !== sha256 || artifact.size_bytes !== BYTES) throw new Error(`upload answered ${JSON.stringify(up.answer).slice(0, 300)}`)
      const down = await timed(leader, { op: 'download', url: `${leader.url}/api/v1/artifacts/${artifact.id}/content`, headers: auth, bytes: BYTES })
      l.push({ upload: up.transfer, download: down.transfer })
      // Floor: the same file, PUT and GET back.
      const fup = await timed(floor, { op: 'upload', url: `${floor.url}/blobs/bench-${r}.bin`, headers: {}, file, bytes: BYTES })
      const fdown = await timed(floor, { op: 'download', url: `${floor.url}/blobs/bench-${r}.bin`, headers: {}, bytes: BYTES })
      f.push({ upload: fup.transfer, download: fdown.transfer })
    }
    const best = (xs: ArtifactsRound[], k: keyof ArtifactsRound) => Math.max(...xs.map((x) => x[k].mbPerS))
    return {
      bytes: BYTES,
      rounds: o.rounds,
      leaderUploadMbPerS: best(l, 'upload'),
      floorUploadMbPerS: best(f, 'upload'),
      leaderDownloadMbPerS: best(l, 'download'),
      floorDownloadMbPerS: best(f, 'download'),
      leader: l,
      floor: f,
    }
  } finally {
    await Promise.all([leader?.stop(), floor?.stop()])
    for (const d of [work, stateDir, floorDir]) rmSync(d, { recursive: true, force: true })
  }
}
