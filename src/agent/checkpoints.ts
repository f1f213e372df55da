// Checkpoints through the leader's artifact store, so a stage survives its fellow: a runner's
// checkpoint directory is archived (tar.ts), uploaded with the node token (SHA-256, resumed from
// the leader's offset after a broken connection), and the fellow that takes the stage over
// downloads the stage's newest checkpoint, checks its hash and unpacks it for SVC_RESUME_FROM.
import { createWriteStream, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { tarDirectory, untarInto } from './tar'
import { LeaderError, NetworkError, type LeaderClient, type StoredArtifact } from './client'
import { Backoff } from './backoff'
import { monotonicNow, sleep, type TimerClock } from '../time'
import type { Logger } from '../log'

export interface CheckpointDeps {
  client: LeaderClient
  log: Logger
  clock: TimerClock
  signal: AbortSignal
}

async function sha256Of(file: string): Promise<string> {
  const h = new Bun.CryptoHasher('sha256')
  for await (const chunk of Bun.file(file).stream()) h.update(chunk)
  return h.digest('hex')
}

/** An artifact's bytes into `file`, checked against its SHA-256 (a mismatch throws, the file removed). */
export async function downloadVerified(d: CheckpointDeps, art: StoredArtifact, file: string): Promise<void> {
  const h = new Bun.CryptoHasher('sha256')
  const out = createWriteStream(file, { mode: 0o600 })
  try {
    const body = await d.client.artifactContent(art.id, d.signal)
    try {
      for await (const chunk of body) {
        h.update(chunk)
        if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()))
      }
    } catch (e) {
      // The connection broke mid-body (a leader restart, a store that failed under it): worth another try.
      throw new NetworkError(`the download of artifact ${art.id} broke off: ${(e as Error).message}`)
    }
  } finally {
    await new Promise<void>((resolve) => out.end(() => resolve()))
  }
  if (h.digest('hex') !== art.sha256) {
    rmSync(file, { force: true })
    throw new Error(`the download of artifact ${art.id} does not match its SHA-256`)
  }
}

/**
 * A leader that went away mid-upload (a restart, a short outage) is waited for this long, from the
 * last byte it took, before the checkpoint is given up; the upload then goes on from the offset
 * the leader has (docs/api.md, resumable uploads).
 */
export const UPLOAD_PATIENCE_MS = 5 * 60_000

/** A broken connection, a conflicting offset or a leader that is not itself yet: worth asking again. */
const resumable = (e: unknown) => e instanceof NetworkError || (e instanceof LeaderError && (e.status === 409 || e.status === 429 || e.status >= 500))

/** Archives `dir` and uploads it as the checkpoint of (job, stage) at `step`; the artifact, or null when it could not. */
export async function uploadCheckpoint(d: CheckpointDeps, o: { jobId: string; stage: number; step: number; dir: string; workDir: string; within?: string }): Promise<StoredArtifact | null> {
  mkdirSync(o.workDir, { recursive: true, mode: 0o700 })
  // Its own name: an upload goes on after its stage stops, and a new worker of the same stage may
  // archive the same step meanwhile (one archive truncated under the other, then deleted by it).
  const tar = join(o.workDir, `upload-${o.stage}-${o.step}-${randomBytes(6).toString('hex')}.tar`)
  const ids = { job_id: o.jobId, stage: o.stage, step: o.step }
  const backoff = new Backoff({ baseMs: 500, maxMs: 15_000 })
  /** When the leader last failed us after taking bytes (null: it has not failed since). */
  let failingSince: number | null = null
  /** After a failure that retrying can fix: waits, or throws once the leader was gone too long. */
  const waitOut = async (e: unknown): Promise<void> => {
    const now = monotonicNow(d.clock)
    failingSince ??= now
    if (!resumable(e) || d.signal.aborted || now - failingSince >= UPLOAD_PATIENCE_MS) throw e
    if (backoff.attempts === 0) d.log.warn('checkpoint upload interrupted; trying again', { ...ids, error: (e as Error).message })
    if (!(await sleep(d.clock, backoff.next(), d.signal))) throw e
  }
  const retrying = async <T>(call: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await call()
      } catch (e) {
        await waitOut(e)
      }
    }
  }
  try {
    const { bytes: size, skipped } = await tarDirectory(o.dir, tar, o.within)
    if (skipped.length > 0) d.log.warn('checkpoint entries left out: not files or directories (links are never followed)', { ...ids, skipped: skipped.slice(0, 20), count: skipped.length })
    const sha256 = await sha256Of(tar)
    const up = await retrying(() => d.client.beginUpload({ kind: 'checkpoint', name: `stage-${o.stage}-step-${o.step}.tar`, size_bytes: size, sha256, ...ids }))
    let offset = up.offset
    let best = offset
    for (;;) {
      let failed = false
      try {
        const done = await d.client.putUpload(up.upload_id, offset, Bun.file(tar).slice(offset), d.signal)
        if (done) {
          if (failingSince !== null) d.log.info('checkpoint upload resumed and finished', ids)
          return done
        }
      } catch (e) {
        failed = true
        await waitOut(e)
      }
      // Cut off, refused for its offset, or not the last bytes: the leader says where it stands.
      const sent = offset
      offset = (await retrying(() => d.client.uploadState(up.upload_id))).offset
      if (offset > best) {
        best = offset
        failingSince = null
        backoff.reset()
      } else if (!failed && offset <= sent) {
        // Answered without taking a byte: waited out like a failure, not sent again at once.
        await waitOut(new LeaderError(503, 'no_progress', `the leader took none of the bytes from offset ${sent}`, null))
      }
    }
  } catch (e) {
    d.log.warn('checkpoint not uploaded; it stays on this fellow only', { ...ids, error: (e as Error).message })
    return null
  } finally {
    rmSync(tar, { force: true })
  }
}

/**
 * A leader or store that fails for a moment (a 503 while its bucket is slow, a restart, a broken
 * connection) is asked again for this long before the stage starts afresh: starting afresh throws
 * away every step since the checkpoint, so a minute or two of waiting is cheap beside it.
 */
export const FETCH_PATIENCE_MS = 2 * 60_000

/** No answer, a 5xx or a 429: the leader or its store may serve the checkpoint shortly. */
const transient = (e: unknown) => e instanceof NetworkError || (e instanceof LeaderError && (e.status === 429 || e.status >= 500))

/**
 * The newest checkpoint of (job, stage) from the leader's store, unpacked into a new directory
 * below `workDir`; null when there is none, or it cannot be had (the stage starts afresh). A
 * transient failure is tried again with backoff for FETCH_PATIENCE_MS, or until the stage stops.
 */
export async function fetchCheckpoint(d: CheckpointDeps, o: { jobId: string; stage: number; workDir: string }): Promise<{ step: number; dir: string } | null> {
  const ids = { job_id: o.jobId, stage: o.stage }
  const backoff = new Backoff({ baseMs: 1_000, maxMs: 20_000 })
  const started = monotonicNow(d.clock)
  for (;;) {
    try {
      return await fetchOnce(d, o)
    } catch (e) {
      const waited = monotonicNow(d.clock) - started
      if (!transient(e) || d.signal.aborted || waited >= FETCH_PATIENCE_MS) {
        const why = !transient(e) ? 'checkpoint not usable' : d.signal.aborted ? 'checkpoint not fetched before the stage stopped' : `checkpoint could not be fetched for ${Math.round(waited / 1000)} s`
        d.log.warn(`${why}; starting afresh`, { ...ids, error: (e as Error).message })
        return null
      }
      // A leader that says when to come back is believed, within reason.
      const hinted = e instanceof LeaderError && e.retryAfterS !== null ? Math.min(e.retryAfterS * 1000, 30_000) : 0
      const pause = Math.min(Math.max(backoff.next(), hinted), FETCH_PATIENCE_MS - waited)
      d.log.warn('checkpoint fetch failed; trying again', { ...ids, error: (e as Error).message, attempt: backoff.attempts, retry_in_ms: pause })
      if (!(await sleep(d.clock, pause, d.signal))) {
        d.log.warn('checkpoint not fetched before the stage stopped; starting afresh', ids)
        return null
      }
    }
  }
}

/** One try: the stage's newest checkpoint, downloaded, checked and unpacked; null when there is none. */
async function fetchOnce(d: CheckpointDeps, o: { jobId: string; stage: number; workDir: string }): Promise<{ step: number; dir: string } | null> {
  const art = await d.client.latestCheckpoint(o.jobId, o.stage)
  if (!art || art.step === null) return null
  mkdirSync(o.workDir, { recursive: true, mode: 0o700 })
  const tar = join(o.workDir, `download-${art.id}.tar`)
  const dir = join(o.workDir, `resume-step-${art.step}`)
  try {
    await downloadVerified(d, art, tar)
    rmSync(dir, { recursive: true, force: true })
    await untarInto(tar, dir)
    d.log.info('checkpoint downloaded', { job_id: o.jobId, stage: o.stage, step: art.step, artifact_id: art.id, bytes: art.size_bytes })
    return { step: art.step, dir }
  } catch (e) {
    rmSync(dir, { recursive: true, force: true })
    throw e
  } finally {
    rmSync(tar, { force: true })
  }
}
