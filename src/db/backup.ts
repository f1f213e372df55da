// Online backup: VACUUM INTO writes a consistent, compacted copy while the leader keeps serving
// (WAL readers never block the writer). The copy is written beside the target and renamed into
// place, so a failed backup never leaves a half-written file under the requested name.
import { Database } from 'bun:sqlite'
import { chmodSync, existsSync, renameSync, rmSync } from 'node:fs'
import { dirname, basename, join, resolve } from 'node:path'

export class BackupError extends Error {}

export function backupDatabase(dbPath: string, target: string): { path: string; bytes: number } {
  const dest = resolve(target)
  if (!existsSync(dbPath)) throw new BackupError(`no state database at ${dbPath}`)
  if (existsSync(dest)) throw new BackupError(`${dest} already exists; refusing to overwrite it`)
  if (!existsSync(dirname(dest))) throw new BackupError(`directory ${dirname(dest)} does not exist`)
  const tmp = join(dirname(dest), `.${basename(dest)}.partial-${process.pid}`)
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
  check.close()
  if (ok !== 'ok') {
    rmSync(tmp, { force: true })
    throw new BackupError(`backup copy failed its integrity check: ${ok}`)
  }
  chmodSync(tmp, 0o600) // a copy of the state file is as secret as the file
  renameSync(tmp, dest)
  return { path: dest, bytes: Bun.file(dest).size }
}
