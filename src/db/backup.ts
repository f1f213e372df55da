// Online backup: VACUUM INTO writes a consistent, compacted copy while the leader keeps serving
// (WAL readers never block the writer). The copy is written beside the target and renamed into
// place, so a failed backup never leaves a half-written file under the requested name.
import { Database } from 'bun:sqlite'
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, basename, join, resolve } from 'node:path'
import { integrityProblems } from './restore'
import { fileInTheWay, removeStaleCopies } from './paths'
import { openForReading, type ReadOnlyFile } from './client'

export class BackupError extends Error {}

export function backupDatabase(dbPath: string, target: string): { path: string; bytes: number } {
  // `-` is standard output to most tools; here it made a file named "-" where the command ran. A
  // stream could not be checked before the reader has it, nor taken back when the copy fails.
  if (target === '-') throw new BackupError('FILE - would be a file named "-", not standard output: the backup is written to a file and checked before it gets its name (write it to a file, then copy that; ./- names a file called -)')
  const dest = resolve(target)
  if (!existsSync(dbPath)) throw new BackupError(`no state database at ${dbPath}`)
  if (!statSync(dbPath).isFile()) throw new BackupError(`${dbPath} is a directory, not a state database (--db names the state file)`)
  const blocker = fileInTheWay(dest)
  if (blocker !== null) throw new BackupError(`cannot write the backup to ${dest}: ${blocker} is a file, not a directory`)
  if (existsSync(dest)) {
    if (statSync(dest).isDirectory()) throw new BackupError(`${dest} is a directory: FILE names the backup file to write in it (${join(dest, 'leader-YYYY-MM-DD.sqlite3')}, say)`)
    throw new BackupError(`${dest} already exists; refusing to overwrite it`)
  }
  if (!existsSync(dirname(dest))) throw new BackupError(`directory ${dirname(dest)} does not exist`)
  const src = openStateFile(dbPath)
  let tmp: string
  try {
    tmp = startCopy(dest)
    try {
      src.sqlite.query('VACUUM INTO ?').run(tmp)
    } catch (e) {
      rmSync(tmp, { force: true })
      throw new BackupError(`backup failed: ${(e as Error).message}`)
    }
    // Read without locks (a stopped leader's file, with no -wal beside it) and a leader started meanwhile.
    if (src.changed()) {
      rmSync(tmp, { force: true })
      throw new BackupError(`${dbPath} changed while it was copied (a leader started on it): run the backup again`)
    }
  } finally {
    src.sqlite.close()
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

/**
 * The state file, opened to be copied. Anything else --db may name (the leader's lock files, which
 * are SQLite files too, an empty file, another program's database) was copied and called a backup,
 * "integrity ok", as restore, doctor and serve refuse it.
 */
function openStateFile(dbPath: string): ReadOnlyFile {
  let src: ReadOnlyFile | undefined
  try {
    src = openForReading(dbPath)
    src.sqlite.exec('PRAGMA busy_timeout = 5000')
    if (src.sqlite.query("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = '__migrations'").get() === null) {
      throw new BackupError(`${dbPath} is not a leader's state file (no __migrations table); backup copies only those (--db names the state file)`)
    }
    return src
  } catch (e) {
    src?.sqlite.close()
    if (e instanceof BackupError) throw e
    if ((e as { code?: string }).code === 'SQLITE_NOTADB') throw new BackupError(`${dbPath} is not an SQLite database (--db names the state file)`)
    throw new BackupError(`cannot read ${dbPath}: ${(e as Error).message}`)
  }
}

/**
 * The empty, owner-only file the copy goes to, `.NAME.partial-PID` beside the target. The copy holds
 * password and token hashes: owner-only from its first byte (VACUUM INTO takes an empty file, and
 * SQLite gives its journal the file's mode), not only once it is complete, so a backup that is read
 * while written, or killed and left behind, shows nothing to others.
 */
function startCopy(dest: string): string {
  removeStaleCopies(dest, 'partial')
  const tmp = join(dirname(dest), `.${basename(dest)}.partial-${process.pid}`)
  try {
    rmSync(tmp, { force: true })
    rmSync(`${tmp}-journal`, { force: true })
    closeSync(openSync(tmp, 'wx', 0o600))
  } catch (e) {
    // In words: the system's named the partial copy ("EROFS: read-only file system, rm '.../.b.sqlite3.partial-PID'").
    throw new BackupError(`cannot write the backup in ${dirname(dest)}: ${plainWords(e)}`)
  }
  return tmp
}

function plainWords(e: unknown): string {
  switch ((e as { code?: string }).code) {
    case 'EROFS':
      return 'read-only file system'
    case 'EACCES':
    case 'EPERM':
      return 'permission denied'
    case 'ENOSPC':
      return 'no space left on the device'
    case 'EDQUOT':
      return 'disk quota exceeded'
  }
  return (e as Error).message
}
