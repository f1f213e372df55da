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
// backup`, doctor) do not take them: they may run beside the leader. `svc admin restore` takes the
// state file's (not the directory's) while it works: a leader started meanwhile served the file
// that was then moved aside, and everything it acknowledged was written there.
import { Database } from 'bun:sqlite'
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { lockFileItself } from './file-lock'
import { realPath } from './paths'

/** The lock is held by another leader, or cannot be taken at all: one line for the operator. */
export class LeaderLockedError extends Error {
  constructor(
    message: string,
    /** Who holds it, when that is known (the lock on the file itself does not say). */
    readonly holder: { pid: number; restoring: boolean } | null = null,
    /** False when no one holds it but it cannot be taken (a directory that cannot be written). */
    readonly held = true,
  ) {
    super(message)
  }
}

export interface LeaderLock {
  release(): void
}

interface Holder {
  pid: number
  db: string
  /** '' for `svc admin restore`, which takes the state file's lock only. */
  stateDir: string
}

/** A leader's locks: its state file's, under every name of it, and its state directory's. */
export function lockLeader(dbPath: string, stateDir: string): LeaderLock {
  return lockStateFile(dbPath, stateDir)
}

/**
 * `svc admin restore`'s: the state file's only, and only under the names it has (a missing file is
 * not made to be locked: no other name of it can exist yet, and the restore makes a new one).
 */
export function lockForRestore(dbPath: string): LeaderLock {
  return lockStateFile(dbPath, null)
}

/** Release only after closing the state file (file-lock.ts says why). */
function lockStateFile(dbPath: string, stateDir: string | null): LeaderLock {
  if (dbPath === ':memory:') return { release() {} }
  const me: Holder = { pid: process.pid, db: realPath(dbPath), stateDir: stateDir === null ? '' : realPath(stateDir) }
  const byFile = takeLock(`${me.db}.leader-lock`, me)
  if ('busy' in byFile) throw nameLocked(dbPath, byFile.busy)
  const byDir = stateDir === null ? null : takeLock(join(me.stateDir, 'leader.lock'), me)
  if (byDir !== null && 'busy' in byDir) {
    byFile.db.close()
    const who = byDir.busy === null ? '' : ` (pid ${byDir.busy.pid}, state file ${byDir.busy.db})`
    throw new LeaderLockedError(`another leader${who} is running with the state directory ${stateDir}, whose secret key and artifact files it uses: stop it first, or give this one its own SVC_STATE_DIR`, byDir.busy && { pid: byDir.busy.pid, restoring: false })
  }
  // Last: a leader's makes a missing state file (empty, owner-only, as SQLite's first open would),
  // which a refused start should not leave behind.
  const itself = lockFileItself(me.db, stateDir !== null)
  const releaseNames = () => {
    byDir?.db.close()
    byFile.db.close()
  }
  if (itself === 'busy') {
    releaseNames()
    throw new LeaderLockedError(
      `another leader (or svc admin restore) has the state file ${dbPath} open under another name (a hard link to it, or the same file mounted at another path, in a container say): stop it first, or give this one its own state file`,
    )
  }
  return {
    release: () => {
      itself?.release()
      releaseNames()
    },
  }
}

function nameLocked(dbPath: string, holder: Holder | null): LeaderLockedError {
  if (holder !== null && holder.stateDir === '') {
    return new LeaderLockedError(`svc admin restore (pid ${holder.pid}) is putting a backup in place of the state file ${dbPath}: start the leader once it is done`, { pid: holder.pid, restoring: true })
  }
  const other = holder !== null && holder.db !== dbPath ? ` (as ${holder.db}, pid ${holder.pid})` : ''
  return new LeaderLockedError(`another leader is running on the state file ${dbPath}${other}: stop it first, or give this one its own SVC_STATE_DIR`, holder && { pid: holder.pid, restoring: false })
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
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`, null, false)
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
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`, null, false)
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
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`, null, false)
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
