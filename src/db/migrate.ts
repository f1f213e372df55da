// Applies the embedded migrations in order, each in its own transaction, once.
import type { Database } from 'bun:sqlite'
import { MIGRATIONS } from './migrations.gen'

/** Where a state file stands against the migrations this binary carries. */
export interface MigrationState {
  /** Tags recorded in __migrations (none: a new file, or not yet a leader's). */
  applied: string[]
  /** This binary's migrations the file lacks, in the order they would run. */
  pending: string[]
  /** Tags the file has that this binary does not know: a newer leader wrote it. */
  unknown: string[]
}

/** Reads only: a file without a __migrations table has every migration pending. */
export function migrationState(sqlite: Database, migrations = MIGRATIONS): MigrationState {
  const hasTable = sqlite.query("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = '__migrations'").get() !== null
  const applied = hasTable ? (sqlite.query('SELECT tag FROM __migrations ORDER BY tag').all() as { tag: string }[]).map((r) => r.tag) : []
  const done = new Set(applied)
  const known = new Set(migrations.map((m) => m.tag))
  return { applied, pending: migrations.filter((m) => !done.has(m.tag)).map((m) => m.tag), unknown: applied.filter((t) => !known.has(t)) }
}

/** Told before the first pending migration runs and after the last: `svc serve` logs both. */
export interface MigrationObserver {
  /**
   * `pending` are about to run on a file that has `applied` migrations already (0: a new file).
   * May throw to stop: nothing has been applied then.
   */
  starting(pending: string[], applied: number): void
  finished(applied: string[], ms: number): void
}

export function runMigrations(sqlite: Database, migrations = MIGRATIONS, observer?: MigrationObserver): string[] {
  sqlite.exec('CREATE TABLE IF NOT EXISTS __migrations (tag TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)')
  const applied = new Set(
    (sqlite.query('SELECT tag FROM __migrations').all() as { tag: string }[]).map((r) => r.tag),
  )
  const known = new Set(migrations.map((m) => m.tag))
  const unknown = [...applied].filter((t) => !known.has(t))
  if (unknown.length > 0) {
    throw new Error(`state database was migrated by a newer leader (unknown migrations: ${unknown.join(', ')}); refusing to start`)
  }
  const todo = migrations.filter((m) => !applied.has(m.tag))
  if (todo.length === 0) return []
  observer?.starting(todo.map((m) => m.tag), applied.size)
  const started = performance.now()
  const done: string[] = []
  for (const m of todo) {
    sqlite.transaction(() => {
      for (const stmt of m.sql.split('--> statement-breakpoint')) {
        if (stmt.trim() !== '') sqlite.exec(stmt)
      }
      sqlite.query('INSERT INTO __migrations (tag, applied_at) VALUES (?, ?)').run(m.tag, Date.now())
    }).immediate()
    done.push(m.tag)
  }
  observer?.finished(done, performance.now() - started)
  return done
}

export function isMigrated(sqlite: Database): boolean {
  try {
    const row = sqlite.query('SELECT count(*) AS n FROM __migrations').get() as { n: number }
    return row.n === MIGRATIONS.length
  } catch {
    return false
  }
}
