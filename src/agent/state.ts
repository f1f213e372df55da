// The fellow's identity on disk: fellow_id and node token, so a restart re-uses them instead of
// appearing as a new machine. The token is a credential: the file is 0600 in a 0700 directory,
// and every write is temp file + fsync + rename, so a crash mid-write never leaves a torn file
// that would cost the fellow its identity. Checkpoints live under the same directory.
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeSync, existsSync } from 'node:fs'
import { join } from 'node:path'

export interface FellowState {
  fellow_id: string
  node_token: string
  /** The leader that issued them: a token is never presented to another leader. */
  leader_url: string
  pool_id?: string
}

export const STATE_FILE = 'fellow.json'
let counter = 0

export function ensureStateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
}

/** Writes `data` to `path` atomically with `mode`; readers see the old or the new file, never half. */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): void {
  const tmp = `${path}.${process.pid}.${++counter}.tmp`
  // wx: never follow or reuse a file someone planted at the temp name.
  const fd = openSync(tmp, 'wx', mode)
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    let off = 0
    while (off < bytes.byteLength) off += writeSync(fd, bytes, off, bytes.byteLength - off)
    fsyncSync(fd)
  } catch (e) {
    closeSync(fd)
    rmSync(tmp, { force: true })
    throw e
  }
  closeSync(fd)
  // The umask can strip bits from the open() mode but never add them; chmod makes it exact.
  chmodSync(tmp, mode)
  renameSync(tmp, path)
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0

/** The saved identity, or null when there is none or it is unreadable (the caller re-registers). */
export function loadState(dir: string): FellowState | null {
  const path = join(dir, STATE_FILE)
  if (!existsSync(path)) return null
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as Partial<FellowState>
    if (!isString(v.fellow_id) || !isString(v.node_token) || !isString(v.leader_url)) return null
    return { fellow_id: v.fellow_id, node_token: v.node_token, leader_url: v.leader_url, ...(isString(v.pool_id) ? { pool_id: v.pool_id } : {}) }
  } catch {
    return null
  }
}

export function saveState(dir: string, state: FellowState): void {
  ensureStateDir(dir)
  writeFileAtomic(join(dir, STATE_FILE), JSON.stringify(state, null, 2) + '\n')
}

export function clearState(dir: string): void {
  try {
    unlinkSync(join(dir, STATE_FILE))
  } catch {
    // already gone
  }
}

export interface CheckpointMeta {
  job_id: string
  stage: number
  stages: number
  step: number
  ts: string
}

const safeName = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_')
export const checkpointsDir = (dir: string) => join(dir, 'checkpoints')

function checkpointPaths(dir: string, jobId: string, stage: number) {
  const base = join(checkpointsDir(dir), safeName(jobId))
  return { base, bin: join(base, `stage-${stage}.bin`), meta: join(base, `stage-${stage}.json`) }
}

/** Weights first, then the metadata that points at them: a crash between leaves no meta, so no resume from garbage. */
export function writeCheckpoint(dir: string, meta: CheckpointMeta, weights: Uint8Array): string {
  const p = checkpointPaths(dir, meta.job_id, meta.stage)
  mkdirSync(p.base, { recursive: true, mode: 0o700 })
  writeFileAtomic(p.bin, weights)
  writeFileAtomic(p.meta, JSON.stringify(meta) + '\n')
  return p.bin
}

export function readCheckpoint(dir: string, jobId: string, stage: number): { meta: CheckpointMeta; weights: Uint8Array } | null {
  const p = checkpointPaths(dir, jobId, stage)
  try {
    const meta = JSON.parse(readFileSync(p.meta, 'utf8')) as CheckpointMeta
    if (meta.job_id !== jobId || meta.stage !== stage || !Number.isSafeInteger(meta.step)) return null
    return { meta, weights: new Uint8Array(readFileSync(p.bin)) }
  } catch {
    return null
  }
}

/** The in-process MLP's checkpoints and every runner's job directories (their checkpoints). */
export function purgeCheckpoints(dir: string): void {
  rmSync(checkpointsDir(dir), { recursive: true, force: true })
  rmSync(join(dir, 'jobs'), { recursive: true, force: true })
}
