// A job stage's directory on the fellow: <state-dir>/jobs/<job>/stage-<n>, holding the runner's
// SVC_CHECKPOINT_DIR (checkpoints) and the agent's archives and downloads (transfer). Checkpoints
// of gigabytes pile up there job after job, so once a job is over on this fellow and the leader
// holds its stage's newest checkpoint, the directory goes (Work.tidy); what the leader may not
// hold stays, and PURGE clears the rest.
import { rmSync, rmdirSync } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'

/** A job id that names one directory below jobs/ (the leader's UUIDs): nothing else is ever removed. */
const PLAIN = /^[A-Za-z0-9_-]{1,128}$/

export function stageDirOf(stateDir: string, jobId: string, stage: number): string {
  return join(stateDir, 'jobs', jobId, `stage-${stage}`)
}

/**
 * Files below `dir` (relative paths, links not followed) last changed after `since` (wall time in
 * ms, as file times are): written after the newest checkpoint the leader holds, so not in it. A
 * directory that is not there has none.
 */
export async function filesChangedSince(dir: string, since: number, at = ''): Promise<string[]> {
  let names: string[]
  try {
    names = await readdir(join(dir, at))
  } catch {
    return []
  }
  const out: string[] = []
  for (const name of names) {
    const rel = at ? `${at}/${name}` : name
    const st = await lstat(join(dir, rel)).catch(() => null)
    if (st?.isDirectory()) out.push(...(await filesChangedSince(dir, since, rel)))
    // `since` is whole milliseconds (Date.now()), a file's time is finer: one written in the same
    // millisecond the runner said it was checkpointed is in the checkpoint (counted newer, a job's
    // directory stayed after half its ends).
    else if (st && Math.floor(st.mtimeMs) > since) out.push(rel)
  }
  return out
}

/** Removes the stage's directory, and the job's once no stage is left in it; false for a job id that is not plain. */
export function removeStageDir(stateDir: string, jobId: string, stage: number): boolean {
  if (!PLAIN.test(jobId)) return false
  rmSync(stageDirOf(stateDir, jobId, stage), { recursive: true, force: true })
  try {
    rmdirSync(join(stateDir, 'jobs', jobId)) // only when empty: another stage of the job may be here
  } catch {
    // not empty, or gone
  }
  return true
}
