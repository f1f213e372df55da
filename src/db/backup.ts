// Online backup: VACUUM INTO writes a consistent, compacted copy while the leader keeps serving
// (WAL readers never block the writer). The copy is written beside the target and renamed into
// place, so a failed backup never leaves a half-written file under the requested name.
import { Database } from 'bun:sqlite'
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, basename, join, resolve } from 'node:path'
import { integrityProblems } from './restore'
import { fileInTheWay, removeStaleCopies } from './paths'

export class BackupError extends Error {}

export function backupDatabase(dbPath: string, target: string): { path: string; bytes: number } {
  const dest = resolve(target)
  if (!existsSync(dbPath)) throw new BackupError(`no state database at ${dbPath}`)
  if (!statSync(dbPath).isFile()) throw new BackupError(`${dbPath} is a directory, not a state database (--db names the state file)`)
  const blocker = fileInTheWay(dest)
  if (blocker !== null) throw new BackupError(`cannot write the backup to ${dest}: ${blocker} is a file, not a directory`)
  if (existsSync(dest)) throw new BackupError(`${dest} already exists; refusing to overwrite it`)
  if (!existsSync(dirname(dest))) throw new BackupError(`directory ${dirname(dest)} does not exist`)
  removeStaleCopies(dest, 'partial')
  const tmp = join(dirname(dest), `.${basename(dest)}.partial-${process.pid}`)
  rmSync(tmp, { force: true })
  rmSync(`${tmp}-journal`, { force: true })
  // The copy holds password and token hashes: owner-only from its first byte (VACUUM INTO takes an
  // empty file, and SQLite gives its journal the file's mode), not only once it is complete, so a
  // backup that is read while written, or killed and left behind, shows nothing to others.
  try {
    closeSync(openSync(tmp, 'wx', 0o600))
  } catch (e) {
    throw new BackupError(`cannot write in ${dirname(dest)}: ${(e as Error).message}`)
  }
  const src = new Database(dbPath, { readonly: true })
  try {
    src.exec('PRAGMA busy_timeout = 5000')
    src.query('VACUUM INTO ?').run(tmp)
  } catch (e) {
    rmSync(tmp, { force: true })
    throw new BackupError(`backup failed: ${(e as Error).message}`)
  } finally {
    src.close()
  }
  const check = new Database(tmp, { readonly: true })
  const ok = (check.query('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check
  const problems = ok === 'ok' ? '' : integrityProblems(check)
  check.close()
  if (ok !== 'ok') {
    rmSync(tmp, { force: true })
    throw new BackupError(`backup copy failed its integrity check: ${problems}`)
  }
  renameSync(tmp, dest)
  return { path: dest, bytes: Bun.file(dest).size }
}

