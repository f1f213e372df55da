// Opens the state file with the pragmas every connection needs, and wraps it in drizzle.
import { Database, constants as sqliteFlags } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core'
import { accessSync, chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import * as schema from './schema'
import { migrationState, runMigrations, type MigrationObserver } from './migrate'
import { fileInTheWay, realPath } from './paths'

/** The database or a transaction on it: services accept either. */
// RunResult is bun:sqlite's Changes at run time; drizzle types it as void.
export type Db = BaseSQLiteDatabase<'sync', any, typeof schema>

export interface StateDb {
  sqlite: Database
  db: Db
  close(): void
}

export class DbOpenError extends Error {}

/**
 * An existing state file whose migrations are not this binary's: behind it (an older release
 * wrote it) or ahead (a newer one did). Thrown by openDb with `refuseOtherVersion` before
 * anything is written to the file.
 */
export class StateVersionError extends DbOpenError {
  constructor(
    readonly path: string,
    readonly pending: string[],
    readonly unknown: string[],
  ) {
    super(
      unknown.length > 0
        ? `${path} was migrated by a newer leader (unknown migrations: ${unknown.join(', ')}): use that version's svc admin; nothing was changed`
        : `${path} is ${pending.length} migration${pending.length === 1 ? '' : 's'} behind this svc (${pending.join(', ')}): \`svc serve\` of this version applies them when it starts (take a backup first: svc admin backup FILE), or use the older version's svc admin on it; nothing was changed`,
    )
  }
}

export interface OpenOptions {
  /** Apply the pending migrations (default). */
  migrate?: boolean
  /**
   * Refuse, with a StateVersionError and before anything is written, an existing state file that
   * is behind this binary or ahead of it; a new (missing or empty) file is still made and migrated.
   * For offline admin commands: migrating is the leader's start, after its backup. An admin command
   * of a newer binary migrated the file under a running older leader, which then held its writes
   * ("database is locked") while the migration ran, answered 503 (not fully migrated) ever after
   * and could not start again (it refuses migrations it does not know).
   */
  refuseOtherVersion?: boolean
  /** Told before and after the pending migrations run (svc serve logs them). */
  onMigrate?: MigrationObserver
}

export function openDb(path: string, { migrate = true, refuseOtherVersion = false, onMigrate }: OpenOptions = {}): StateDb {
  let sqlite: Database
  try {
    if (path !== ':memory:') {
      const file = fileInTheWay(path)
      if (file !== null) throw new Error(`${file} is a file, not a directory`)
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      if (existsSync(path) && !statSync(path).isFile()) throw new Error('it is a directory, not a file')
      // Before SQLite opens it: a file this process may not write is opened read-only without a
      // word, and its mode was then made 0600 (writable) by the tightening below before the
      // refusal, and the read left -wal and -shm files beside it.
      if (existsSync(path)) refuseUnwritableFile(path)
    }
    sqlite = new Database(path, { create: true, strict: true })
  } catch (e) {
    if (e instanceof DbOpenError) throw e
    throw new DbOpenError(`cannot open state database ${path}: ${(e as Error).message}`)
  }
  try {
    // First: the checks below read and write, and a leader may be writing beside an admin command.
    sqlite.exec('PRAGMA busy_timeout = 5000')
    // Another program's database (tables, none of ours) would be migrated, and changed, in place:
    // found out before anything is written to it, its mode and journal included.
    if ((migrate || refuseOtherVersion) && !isLeaderStateOrEmpty(sqlite)) throw new DbOpenError(`${path} is not a leader's state file (it holds tables but no __migrations table): give the leader its own file (SVC_JOIN_STATE_DB, SVC_STATE_DIR)`)
    if (refuseOtherVersion) {
      const state = migrationState(sqlite)
      if (state.applied.length > 0 && (state.pending.length > 0 || state.unknown.length > 0)) throw new StateVersionError(path, state.pending, state.unknown)
    }
    // The file holds password hashes, token hashes and mail: readable by its owner only. SQLite
    // gives the -wal and -shm files the database file's mode. An existing file is tightened too,
    // never given a permission it lacked.
    if (path !== ':memory:') {
      const mode = statSync(path).mode & 0o777
      if ((mode & 0o077) !== 0) chmodSync(path, mode & 0o700)
    }
    // SQLite opens a file it may not write read-only without a word: the leader would say it
    // listens and answer every write with a 500. A write that changes nothing finds out now.
    refuseReadOnly(sqlite, path)
    sqlite.exec('PRAGMA journal_mode = WAL')
    sqlite.exec('PRAGMA synchronous = NORMAL')
    sqlite.exec('PRAGMA foreign_keys = ON')
  } catch (e) {
    sqlite.close()
    if (e instanceof DbOpenError) throw e
    throw new DbOpenError(`cannot open state database ${path}: ${(e as Error).message}`)
  }
  if (migrate) {
    try {
      runMigrations(sqlite, undefined, onMigrate)
    } catch (e) {
      sqlite.close()
      if (e instanceof DbOpenError) throw e
      // SQLite's own words ("database or disk is full") do not say which file or step.
      if ((e as Error).name === 'SQLiteError') throw new DbOpenError(`cannot migrate state database ${path}: ${(e as Error).message}`)
      throw e
    }
  }
  const db = drizzle(sqlite, { schema })
  // Transactions begin IMMEDIATE: one begun DEFERRED that reads and then writes fails at once with
  // SQLITE_BUSY when another process (an svc admin command) wrote meanwhile, whatever the busy
  // timeout, since it would have to give up its snapshot (500s beside a running admin command).
  // Begun IMMEDIATE it takes the write lock first and waits for it like any write.
  // A transaction that only reads passes READ_ONLY: it reads a snapshot at once, where IMMEDIATE
  // would wait (the whole process, synchronously) for another process's write.
  const deferred = db.transaction.bind(db)
  db.transaction = ((fn, config) => deferred(fn, { behavior: 'immediate', ...config })) as typeof db.transaction
  return {
    sqlite,
    db,
    close() {
      try {
        sqlite.exec('PRAGMA optimize')
      } catch {
        // best effort on the way out
      }
      sqlite.close()
    },
  }
}

/** The behaviour of a transaction that only reads (its statements see one snapshot); see openDb. */
export const READ_ONLY = { behavior: 'deferred' } as const

const readOnlyError = (path: string) =>
  new DbOpenError(`cannot write the state database ${path} (read-only for this process, uid ${process.getuid?.() ?? '?'}): give the user the leader runs as write access to it and its directory`)

/** Throws a one-line DbOpenError when `sqlite` cannot write its file (SQLite opened it read-only). */
export function refuseReadOnly(sqlite: Database, path: string): void {
  try {
    const { user_version } = sqlite.query('PRAGMA user_version').get() as { user_version: number }
    sqlite.exec(`PRAGMA user_version = ${Number(user_version)}`)
  } catch (e) {
    const code = (e as { code?: string }).code ?? ''
    if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_PERM')) throw readOnlyError(path)
    throw e
  }
}

/**
 * Refuses an existing file this process may not write, or that nobody may (no write bit: made
 * read-only on purpose, which root would otherwise write anyway), touching nothing.
 */
function refuseUnwritableFile(path: string): void {
  try {
    accessSync(path, constants.W_OK)
  } catch (e) {
    const code = (e as { code?: string }).code
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') throw readOnlyError(path)
    throw e
  }
  const mode = statSync(path).mode & 0o777
  if ((mode & 0o222) === 0) throw new DbOpenError(`cannot write the state database ${path}: it is read-only (mode 0${mode.toString(8)}); make it writable for the user the leader runs as (chmod 600) if it is meant to be used`)
}

const { SQLITE_OPEN_READONLY, SQLITE_OPEN_URI } = sqliteFlags

/** The file's header says WAL mode (bytes 18 and 19 are 2), read without SQLite. */
function isWalFile(path: string): boolean {
  const fd = openSync(path, 'r')
  try {
    const head = Buffer.alloc(20)
    return readSync(fd, head, 0, 20, 0) === 20 && head[18] === 2 && head[19] === 2
  } finally {
    closeSync(fd)
  }
}

/** A file with no tables (new) or with the leader's __migrations table. */
export function isLeaderStateOrEmpty(sqlite: Database): boolean {
  const names = (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").all() as { name: string }[]).map((r) => r.name)
  return names.length === 0 || names.includes('__migrations')
}

/** An SQLite file opened to be read (openForReading). */
export interface ReadOnlyFile {
  sqlite: Database
  /**
   * Whether a writer opened the file since, when it is read as immutable (without locks): what was
   * read may then be torn. A plain read-only open is kept consistent by SQLite's locks: never.
   */
  changed(): boolean
}

/**
 * Opens an SQLite file to read it without making anything beside it. SQLite opening a WAL file
 * read-only makes -wal and -shm beside it and, read-only, cannot remove them; on storage nobody may
 * write (a snapshot, a read-only mount) it cannot make them, and the file did not open at all
 * ("unable to open database file": a cold backup there could not be restored or checked). A WAL
 * file with neither beside it has no writer (one in WAL mode keeps both while it runs): it is read
 * as it is, and changed() tells whether one came meanwhile. They are looked for beside the file a
 * symlink points to, where SQLite keeps them: beside the link, a crashed leader's -wal was missed
 * and the file read without its last changes.
 */
export function openForReading(path: string): ReadOnlyFile {
  const real = realPath(path)
  const companions = () => existsSync(`${real}-wal`) || existsSync(`${real}-shm`)
  if (companions() || !isWalFile(path)) return { sqlite: new Database(path, { readonly: true, strict: true }), changed: () => false }
  const before = statSync(path)
  const sqlite = new Database(`file:${encodeURI(path).replace(/[?#]/g, encodeURIComponent)}?immutable=1`, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
  return {
    sqlite,
    changed: () => {
      if (companions()) return true
      const now = statSync(path, { throwIfNoEntry: false })
      return now === undefined || now.ino !== before.ino || now.size !== before.size || now.mtimeMs !== before.mtimeMs
    },
  }
}

/**
 * Opens the state file for reading only, for checks that must not change what they check
 * (`svc admin doctor` without --fix): no directory made, no mode changed, no WAL switch, no
 * migration, no PRAGMA optimize on close, no -wal or -shm left beside it (openForReading).
 */
export function openDbReadOnly(path: string): StateDb & Pick<ReadOnlyFile, 'changed'> {
  if (!existsSync(path)) throw new DbOpenError(`no state database at ${path}`)
  if (!statSync(path).isFile()) throw new DbOpenError(`${path} is a directory, not a state database`)
  let file: ReadOnlyFile | undefined
  try {
    file = openForReading(path)
    file.sqlite.exec('PRAGMA busy_timeout = 5000')
    file.sqlite.query('SELECT count(*) FROM sqlite_master').get()
  } catch (e) {
    file?.sqlite.close()
    throw new DbOpenError(`cannot read state database ${path}: ${(e as Error).message}`)
  }
  const { sqlite, changed } = file
  return { sqlite, db: drizzle(sqlite, { schema }), close: () => sqlite.close(), changed }
}

/**
 * A statement (or several) built through drizzle and prepared once per database, for lookups on a
 * hot path that are free functions of the Db: `const byHash = perDb((db) => db.select()...prepare())`,
 * then `byHash(ctx.db).get({ hash })`. Building a query through drizzle per call cost more than
 * running it (a sixth of the leader's CPU while 1,000 chat streams opened, issue 22).
 */
export function perDb<T>(build: (db: Db) => T): (db: Db) => T {
  const made = new WeakMap<Db, T>()
  return (db) => {
    let t = made.get(db)
    if (t === undefined) made.set(db, (t = build(db)))
    return t
  }
}
