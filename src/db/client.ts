// Opens the state file with the pragmas every connection needs, and wraps it in drizzle.
import { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core'
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import * as schema from './schema'
import { runMigrations } from './migrate'

/** The database or a transaction on it: services accept either. */
// RunResult is bun:sqlite's Changes at run time; drizzle types it as void.
export type Db = BaseSQLiteDatabase<'sync', any, typeof schema>

export interface StateDb {
  sqlite: Database
  db: Db
  close(): void
}

export class DbOpenError extends Error {}

export function openDb(path: string, { migrate = true }: { migrate?: boolean } = {}): StateDb {
  let sqlite: Database
  try {
    if (path !== ':memory:') {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      if (existsSync(path) && !statSync(path).isFile()) throw new Error('it is a directory, not a file')
    }
    sqlite = new Database(path, { create: true, strict: true })
  } catch (e) {
    throw new DbOpenError(`cannot open state database ${path}: ${(e as Error).message}`)
  }
  try {
    // First: the checks below read and write, and a leader may be writing beside an admin command.
    sqlite.exec('PRAGMA busy_timeout = 5000')
    // Another program's database (tables, none of ours) would be migrated, and changed, in place:
    // found out before anything is written to it, its mode and journal included.
    if (migrate && !isLeaderStateOrEmpty(sqlite)) throw new DbOpenError(`${path} is not a leader's state file (it holds tables but no __migrations table): give the leader its own file (SVC_JOIN_STATE_DB, SVC_STATE_DIR)`)
    // The file holds password hashes, token hashes and mail: readable by its owner only. SQLite
    // gives the -wal and -shm files the database file's mode. An existing file is tightened too.
    if (path !== ':memory:' && (statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
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
      runMigrations(sqlite)
    } catch (e) {
      sqlite.close()
      if (e instanceof DbOpenError) throw e
      // SQLite's own words ("database or disk is full") do not say which file or step.
      if ((e as Error).name === 'SQLiteError') throw new DbOpenError(`cannot migrate state database ${path}: ${(e as Error).message}`)
      throw e
    }
  }
  const db = drizzle(sqlite, { schema })
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

/** Throws a one-line DbOpenError when `sqlite` cannot write its file (SQLite opened it read-only). */
export function refuseReadOnly(sqlite: Database, path: string): void {
  try {
    const { user_version } = sqlite.query('PRAGMA user_version').get() as { user_version: number }
    sqlite.exec(`PRAGMA user_version = ${Number(user_version)}`)
  } catch (e) {
    const code = (e as { code?: string }).code ?? ''
    if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_PERM')) {
      throw new DbOpenError(`cannot write the state database ${path} (read-only for this process, uid ${process.getuid?.() ?? '?'}): give the user the leader runs as write access to it and its directory`)
    }
    throw e
  }
}

/** A file with no tables (new) or with the leader's __migrations table. */
export function isLeaderStateOrEmpty(sqlite: Database): boolean {
  const names = (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").all() as { name: string }[]).map((r) => r.name)
  return names.length === 0 || names.includes('__migrations')
}

/**
 * Opens the state file for reading only, for checks that must not change what they check
 * (`svc admin doctor` without --fix): no directory made, no mode changed, no WAL switch, no
 * migration, no PRAGMA optimize on close.
 */
export function openDbReadOnly(path: string): StateDb {
  if (!existsSync(path)) throw new DbOpenError(`no state database at ${path}`)
  if (!statSync(path).isFile()) throw new DbOpenError(`${path} is a directory, not a state database`)
  let sqlite: Database
  try {
    sqlite = new Database(path, { readonly: true, strict: true })
    sqlite.exec('PRAGMA busy_timeout = 5000')
    sqlite.query('SELECT count(*) FROM sqlite_master').get()
  } catch (e) {
    throw new DbOpenError(`cannot read state database ${path}: ${(e as Error).message}`)
  }
  return { sqlite, db: drizzle(sqlite, { schema }), close: () => sqlite.close() }
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
