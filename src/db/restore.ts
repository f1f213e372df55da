// `svc admin restore FILE`: puts a backup in place of the state file. Refuses while any process
// (a leader) has the state file open, since swapping a file under a running SQLite connection
// loses writes and can corrupt it, and holds the state file's leader lock until the swap, so that
// no leader starts on the file meanwhile; checks the backup's integrity and migrations before
// touching anything; keeps the file it replaces beside it.
import { Database } from 'bun:sqlite'
import { closeSync, existsSync, linkSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, unlinkSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { MIGRATIONS } from './migrations.gen'
import { openForReading, type ReadOnlyFile } from './client'
import { fileInTheWay, realPath, removeStaleCopies } from './paths'
import { LeaderLockedError, lockForRestore, type LeaderLock } from './leader-lock'

export class RestoreError extends Error {}

/** Pids of other processes that have `path` open (Linux: /proc; elsewhere: lsof), or null when it cannot tell. */
export function processesHolding(path: string): number[] | null {
  let target: { dev: number; ino: number }
  try {
    target = statSync(path)
  } catch {
    return []
  }
  if (existsSync('/proc/self/fd')) {
    const pids: number[] = []
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
      let fds: string[]
      try {
        fds = readdirSync(`/proc/${entry}/fd`)
      } catch {
        continue // gone, or another user's: that user's leader could not open our 0600 file anyway
      }
      for (const fd of fds) {
        try {
          const s = statSync(`/proc/${entry}/fd/${fd}`)
          if (s.dev === target.dev && s.ino === target.ino) {
            pids.push(Number(entry))
            break
          }
        } catch {
          // closed meanwhile
        }
      }
    }
    return pids
  }
  try {
    const r = Bun.spawnSync(['lsof', '-t', '--', path], { stdout: 'pipe', stderr: 'ignore' })
    if (r.exitCode !== 0 && r.exitCode !== 1) return null
    return r.stdout.toString().split('\n').filter(Boolean).map(Number).filter((p) => p !== process.pid)
  } catch {
    return null
  }
}

/** What a backup file holds, checked: integrity, and migrations this binary knows. */
export function checkBackup(file: string): { migrations: number; missing: number; asOf: Date | null } {
  if (!existsSync(file) || !statSync(file).isFile()) throw new RestoreError(`no such file: ${file}`)
  let read: ReadOnlyFile
  try {
    read = openForReading(file)
  } catch (e) {
    throw new RestoreError(`${file} is not an SQLite database: ${(e as Error).message}`)
  }
  const db = read.sqlite
  try {
    let ok: string
    try {
      ok = (db.query('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check
    } catch (e) {
      throw new RestoreError(`${file} is not an SQLite database: ${(e as Error).message}`)
    }
    if (ok !== 'ok') throw new RestoreError(`${file} fails its integrity check: ${integrityProblems(db)}`)
    let tags: string[]
    try {
      tags = (db.query('SELECT tag FROM __migrations').all() as { tag: string }[]).map((r) => r.tag)
    } catch {
      throw new RestoreError(`${file} is not a leader's state file (no __migrations table)`)
    }
    const known = new Set(MIGRATIONS.map((m) => m.tag))
    const unknown = tags.filter((t) => !known.has(t))
    if (unknown.length > 0) throw new RestoreError(`${file} was written by a newer leader (unknown migrations: ${unknown.join(', ')}); restore it with that version`)
    const asOf = newestAuditEntry(db)
    if (read.changed()) throw changedWhileRead(file)
    return { migrations: tags.length, missing: MIGRATIONS.length - tags.length, asOf }
  } finally {
    db.close()
  }
}

/**
 * The time of the backup's newest audit entry (logins, job submissions, revocations all write one):
 * about when its state is from, or null when it has none.
 */
function newestAuditEntry(db: Database): Date | null {
  try {
    const { ts } = db.query('SELECT max(ts) AS ts FROM audit_log').get() as { ts: number | null }
    return ts === null ? null : new Date(ts)
  } catch {
    return null // a backup from before the audit log
  }
}

export interface Restored {
  path: string
  bytes: number
  /** About when the restored state is from (checkBackup), or null when that is not known. */
  asOf: Date | null
  /** Where the file it replaced now is, or null when there was none. */
  previous: string | null
  /** Migrations the backup lacks: the leader applies them when it starts. */
  missing: number
}

export function restoreDatabase(file: string, dbPath: string, now = new Date()): Restored {
  return finishRestore(prepareRestore(file, dbPath), now)
}

/** A restore whose copy is made and checked, beside the state file, not yet put in its place. */
export interface PreparedRestore {
  source: string
  dest: string
  /** The compacted copy, `.<name>.restore-<pid>` beside the state file. */
  tmp: string
  missing: number
  asOf: Date | null
  /** The state file's leader lock, held from the first check to the swap. */
  lock: LeaderLock
}

/**
 * Checks everything and writes the copy beside the state file; nothing the leader reads is touched
 * yet. A caller that was interrupted meanwhile (Ctrl-C) calls discardRestore instead of finishRestore.
 */
export function prepareRestore(file: string, dbPath: string): PreparedRestore {
  const source = resolve(file)
  // The file a symlink points to, where SQLite keeps its -wal: the link itself was moved aside and
  // replaced, and a leader started on the real path served the old state.
  const dest = realPath(dbPath)
  if (realPath(source) === dest) throw new RestoreError('the backup is the state file itself')
  // A directory (the state directory, say) would be moved aside whole, under a running leader's feet.
  if (existsSync(dest) && !statSync(dest).isFile()) throw new RestoreError(`${dest} is not a file (--db names the state file, not its directory); nothing was changed`)
  const blocker = fileInTheWay(dest)
  if (blocker !== null) throw new RestoreError(`cannot restore to ${dest}: ${blocker} is a file, not a directory; nothing was changed`)
  const { missing, asOf } = checkBackup(source)
  const lock = takeLock(dest)
  try {
    refuseHolders(dest)
    return { source, dest, tmp: writeCopy(source, dest), missing, asOf, lock }
  } catch (e) {
    lock.release()
    throw e
  }
}

/**
 * The leader lock of the state file: a leader that holds it is running; one that starts while it
 * is held here is refused (it served the file that was then moved aside, and its writes went there).
 */
function takeLock(dest: string): LeaderLock {
  try {
    return lockForRestore(dest)
  } catch (e) {
    if (!(e instanceof LeaderLockedError) || !e.held) throw e
    if (e.holder?.restoring) throw new RestoreError(`${dest} is being restored by process ${e.holder.pid} (another svc admin restore): let it finish first`)
    if (e.holder) throw new RestoreError(`${dest} is in use by process ${e.holder.pid} (a running leader): stop it first, then restore`)
    throw new RestoreError(`${dest} is in use by a leader (or svc admin restore) under another name of the file (a hard link to it, or the same file mounted at another path): stop it first, then restore`)
  }
}

/** Refuses while another process has the file open: a leader of a release that takes no lock, or another program. */
function refuseHolders(dest: string): void {
  for (const p of [dest, `${dest}-wal`, `${dest}-shm`]) {
    const holders = processesHolding(p)
    if (holders === null) throw new RestoreError(`cannot tell whether a leader has ${dest} open on this system (no /proc, no lsof); stop it and move the file aside by hand`)
    if (holders.length > 0) throw new RestoreError(`${dest} is in use by process ${holders.join(', ')} (a running leader?): stop it first, then restore`)
  }
}

/** A compacted, WAL-free copy of `source` beside `dest`, to be renamed into place: never a half-written state file. */
function writeCopy(source: string, dest: string): string {
  mkdirSync(dirname(dest), { recursive: true, mode: 0o700 })
  removeStaleCopies(dest, 'restore')
  const tmp = join(dirname(dest), `.${basename(dest)}.restore-${process.pid}`)
  removeCopy(tmp)
  // Made empty and owner-only first (VACUUM INTO takes an empty file, and its journal gets the
  // file's mode): the copy holds password and token hashes, never readable by others, not even
  // while it is written or when a killed restore leaves it behind.
  closeSync(openSync(tmp, 'wx', 0o600))
  const src = openForReading(source)
  try {
    src.sqlite.query('VACUUM INTO ?').run(tmp)
    if (src.changed()) throw changedWhileRead(source)
  } catch (e) {
    removeCopy(tmp)
    if (e instanceof RestoreError) throw e
    throw new RestoreError(`copying ${source} failed: ${(e as Error).message}`)
  } finally {
    src.sqlite.close()
  }
  try {
    forgetBlobCandidates(tmp)
  } catch (e) {
    removeCopy(tmp)
    throw new RestoreError(`preparing the copy of ${source} failed: ${(e as Error).message}`)
  }
  return tmp
}

/**
 * The blobs the backup says the leader let go of (a deleted artifact's, an unfinished write's) may
 * have been uploaded again since and named by a newer state: the restored leader's collector
 * deleted them from a bucket, and going back to the newer backup then found its artifacts' bytes
 * gone (410). The restored file starts with none; a local store's sweep still finds unnamed blobs,
 * and on S3 they stay (docs/operations.md, Backup and restore).
 */
function forgetBlobCandidates(copy: string): void {
  const db = new Database(copy, { strict: true })
  try {
    // The copy is renamed into place whole: a -wal beside it would be left behind.
    db.exec('PRAGMA journal_mode = DELETE')
    const has = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'artifact_blob_candidates'").get()
    if (has) db.exec('DELETE FROM artifact_blob_candidates')
  } finally {
    db.close()
  }
}

const changedWhileRead = (file: string) => new RestoreError(`${file} changed while it was read (a leader started on it?): nothing was changed; restore a backup no leader runs on`)

/** Puts the prepared copy in place of the state file, keeping the file it replaces beside it. */
export function finishRestore(prepared: PreparedRestore, now = new Date()): Restored {
  const { dest, tmp, missing, asOf, lock } = prepared
  try {
    // Again: the lock keeps out this release's leaders only, and the copy may have taken minutes.
    refuseHolders(dest)
  } catch (e) {
    discardRestore(prepared)
    throw e
  }
  try {
    let previous: string | null = null
    if (existsSync(dest)) {
      previous = keepAside(dest, now)
      // A crashed leader's WAL belongs to the file it wrote: it goes along, under the name SQLite looks for.
      for (const ext of ['-wal', '-shm']) if (existsSync(dest + ext)) renameSync(dest + ext, previous + ext)
    }
    renameSync(tmp, dest)
    return { path: dest, bytes: statSync(dest).size, previous, missing, asOf }
  } finally {
    lock.release()
  }
}

/** Removes a prepared copy (and its journal) and lets go of the lock: the restore was stopped, nothing was changed. */
export function discardRestore({ tmp, lock }: Pick<PreparedRestore, 'tmp' | 'lock'>): void {
  removeCopy(tmp)
  lock.release()
}

function removeCopy(tmp: string): void {
  rmSync(tmp, { force: true })
  rmSync(`${tmp}-journal`, { force: true })
}

/**
 * Moves the state file to `<dest>.pre-restore-<UTC second>` (then -2, -3, ...), never over an
 * existing file: two restores in one second would otherwise lose the first kept copy. A hard link
 * claims the name atomically (it fails when the name is taken); where links are not supported,
 * the name is checked first.
 */
function keepAside(dest: string, now: Date): string {
  const stamp = `${dest}.pre-restore-${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}`
  for (let n = 1; ; n++) {
    const name = n === 1 ? stamp : `${stamp}-${n}`
    if ([name, `${name}-wal`, `${name}-shm`].some((p) => existsSync(p))) continue
    try {
      linkSync(dest, name)
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code === 'EEXIST') continue
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV' && code !== 'EMLINK') throw e
      if (existsSync(name)) continue
      renameSync(dest, name)
      return name
    }
    unlinkSync(dest)
    return name
  }
}

/** The first problems integrity_check names, without SQLite's "*** in database main ***" header. */
export function integrityProblems(db: Database, max = 3): string {
  let lines: string[]
  try {
    lines = (db.query('PRAGMA integrity_check').all() as { integrity_check: string }[]).flatMap((r) => r.integrity_check.split('\n'))
  } catch (e) {
    return (e as Error).message
  }
  const real = lines.map((l) => l.trim()).filter((l) => l !== '' && l !== 'ok' && !/^\*\*\* in database \w+ \*\*\*$/.test(l))
  if (real.length === 0) return lines.join('; ')
  return real.slice(0, max).join('; ') + (real.length > max ? ` (and ${real.length - max} more)` : '')
}
