// Opens the state file with the pragmas every connection needs, and wraps it in drizzle.
import { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core'
import { chmodSync, mkdirSync, statSync } from 'node:fs'
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
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    sqlite = new Database(path, { create: true, strict: true })
    // The file holds password hashes, token hashes and mail: readable by its owner only. SQLite
    // gives the -wal and -shm files the database file's mode. An existing file is tightened too.
    if (path !== ':memory:' && (statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
    sqlite.exec('PRAGMA journal_mode = WAL')
    sqlite.exec('PRAGMA synchronous = NORMAL')
    sqlite.exec('PRAGMA busy_timeout = 5000')
    sqlite.exec('PRAGMA foreign_keys = ON')
  } catch (e) {
    throw new DbOpenError(`cannot open state database ${path}: ${(e as Error).message}`)
  }
  if (migrate) {
    try {
      runMigrations(sqlite)
    } catch (e) {
      sqlite.close()
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
