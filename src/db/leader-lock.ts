// One leader per state file, and per state directory. A second `svc serve` on the same file would
// run its own loops and its own in-memory view of the fellows beside the first's: jobs placed
// twice, fellows seen offline by the leader they do not talk to. A second one on the same state
// directory but another file would share the secret key and the artifact store, and its artifact
// collector would delete the first's blobs, which its own file does not name.
//
// Each lock is SQLite's own lock on a small file (beside the state file, and in the state
// directory), taken at start and held while the leader runs: the system drops it with the process
// however that ends (a SIGKILL leaves no stale lock). The holder writes its pid and paths into the
// file, then keeps a write transaction open (a RESERVED lock): others can still read who holds it,
// but not take it. Paths are resolved through symlinks first, so that another name for the same
// file or directory meets the same lock; a hard link or a mount of the file at another path is
// met by a third lock, on the state file itself (file-lock.ts). Offline commands (`svc admin
// backup`, doctor) do not take them: they may run beside the leader.
import { Database } from 'bun:sqlite'
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { lockFileItself } from './file-lock'

/** The lock is held by another leader, or cannot be taken at all: one line for the operator. */
export class LeaderLockedError extends Error {}

export interface LeaderLock {
  release(): void
}

interface Holder {
  pid: number
  db: string
  stateDir: string
}

/** The real path of `p` (which may not exist yet: then its directory's real path and its name). */
export function realPath(p: string, depth = 0): string {
  try {
    return realpathSync(p)
  } catch {
    // A symlink to a file not made yet: where SQLite will make it.
    try {
      if (depth < 40 && lstatSync(p).isSymbolicLink()) return realPath(resolve(dirname(p), readlinkSync(p)), depth + 1)
    } catch {
      // not there at all
    }
    try {
      return join(realpathSync(dirname(p)), basename(p))
    } catch {
      return p
    }
  }
}

/**
 * Takes the state file's locks, and the state directory's when one is given. `makeFile` makes a
 * missing state file (empty, owner-only: SQLite's first open would) so that it is locked from the
 * start; without it a missing file is not locked (no other name of it can exist yet). Release
 * only after closing the state file (file-lock.ts says why).
 */
export function lockLeader(dbPath: string, stateDir?: string, { makeFile = true }: { makeFile?: boolean } = {}): LeaderLock {
  if (dbPath === ':memory:') return { release() {} }
  const me: Holder = { pid: process.pid, db: realPath(dbPath), stateDir: stateDir === undefined ? '' : realPath(stateDir) }
  const byFile = takeLock(`${me.db}.leader-lock`, me)
  if ('busy' in byFile) {
    const other = byFile.busy !== null && byFile.busy.db !== dbPath ? ` (as ${byFile.busy.db}, pid ${byFile.busy.pid})` : ''
    throw new LeaderLockedError(`another leader is running on the state file ${dbPath}${other}: stop it first, or give this one its own SVC_STATE_DIR`)
  }
  const byDir = stateDir === undefined ? null : takeLock(join(me.stateDir, 'leader.lock'), me)
  if (byDir !== null && 'busy' in byDir) {
    byFile.db.close()
    const who = byDir.busy === null ? '' : ` (pid ${byDir.busy.pid}, state file ${byDir.busy.db})`
    throw new LeaderLockedError(`another leader${who} is running with the state directory ${stateDir}, whose secret key and artifact files it uses: stop it first, or give this one its own SVC_STATE_DIR`)
  }
  // Last: it may make the state file, which a refused start should not leave behind.
  const itself = lockFileItself(me.db, makeFile)
  const releaseNames = () => {
    byDir?.db.close()
    byFile.db.close()
  }
  if (itself === 'busy') {
    releaseNames()
    throw new LeaderLockedError(
      `another leader has the state file ${dbPath} open under another name (a hard link to it, or the same file mounted at another path, in a container say): stop it first, or give this one its own state file`,
    )
  }
  return {
    release: () => {
      itself?.release()
      releaseNames()
    },
  }
}

function takeLock(path: string, me: Holder): { db: Database } | { busy: Holder | null } {
  let db: Database
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    // Owner-only like the state file it guards (SQLite would make it 0644 under the usual umask).
    closeSync(openSync(path, 'a', 0o600))
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
    db = new Database(path, { create: true })
  } catch (e) {
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`)
  }
  const busy = (): { busy: Holder | null } => {
    const holder = readHolder(db)
    db.close()
    return { busy: holder }
  }
  try {
    db.exec('PRAGMA journal_mode = MEMORY')
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, db TEXT NOT NULL, state_dir TEXT NOT NULL)')
    db.exec('BEGIN IMMEDIATE')
  } catch (e) {
    if (isBusy(e)) return busy()
    db.close()
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`)
  }
  try {
    db.exec('DELETE FROM holder')
    db.query('INSERT INTO holder (pid, db, state_dir) VALUES (?, ?, ?)').run(me.pid, me.db, me.stateDir)
    db.exec('COMMIT')
    // Held from here on: a write transaction that stays open until the process closes the file.
    db.exec('BEGIN IMMEDIATE')
  } catch (e) {
    if (isBusy(e)) return busy()
    db.close()
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`)
  }
  // Another leader took it in the moment between the commit and the new transaction and wrote
  // itself in: it is starting too, and it is the one that stays (it finds its own row).
  const holder = readHolder(db)
  if (holder === null || holder.pid !== me.pid) return busy()
  return { db }
}

function readHolder(db: Database): Holder | null {
  try {
    const row = db.query('SELECT pid, db, state_dir AS stateDir FROM holder LIMIT 1').get() as Holder | null
    return row ?? null
  } catch {
    return null // an older leader holds it exclusively, or the file is not ours
  }
}

const isBusy = (e: unknown) => ((e as { code?: string }).code ?? '').startsWith('SQLITE_BUSY') || ((e as { code?: string }).code ?? '').startsWith('SQLITE_LOCKED')
