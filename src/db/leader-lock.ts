// One leader per state file. A second `svc serve` on the same file would run its own loops and
// its own in-memory view of the fellows beside the first's: jobs placed twice, fellows seen
// offline by the leader they do not talk to. The lock is SQLite's own exclusive lock on a small
// file beside the state file, taken at start and held while the leader runs: the system drops it
// with the process however that ends (a SIGKILL leaves no stale lock). Offline commands
// (`svc admin backup`, doctor) do not take it: they may run beside the leader.
import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'

/** The lock is held by another leader, or cannot be taken at all: one line for the operator. */
export class LeaderLockedError extends Error {}

export interface LeaderLock {
  release(): void
}

export function lockLeader(dbPath: string): LeaderLock {
  if (dbPath === ':memory:') return { release() {} }
  const path = `${dbPath}.leader-lock`
  let db: Database
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    db = new Database(path, { create: true })
  } catch (e) {
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`)
  }
  try {
    db.exec('PRAGMA journal_mode = OFF')
    // In this mode a connection keeps the exclusive lock its first write takes, until it closes.
    db.exec('PRAGMA locking_mode = EXCLUSIVE')
    db.exec('CREATE TABLE IF NOT EXISTS leader (pid INTEGER NOT NULL)')
    db.exec('DELETE FROM leader')
    db.query('INSERT INTO leader (pid) VALUES (?)').run(process.pid)
  } catch (e) {
    db.close()
    if ((e as { code?: string }).code === 'SQLITE_BUSY') {
      throw new LeaderLockedError(`another leader is running on the state file ${dbPath}: stop it first, or give this one its own SVC_STATE_DIR`)
    }
    throw new LeaderLockedError(`cannot take the leader lock ${path}: ${(e as Error).message}`)
  }
  return { release: () => db.close() }
}
