// Applies the embedded migrations in order, each in its own transaction, once.
import type { Database } from 'bun:sqlite'
import { MIGRATIONS } from './migrations.gen'

export function runMigrations(sqlite: Database, migrations = MIGRATIONS): string[] {
  sqlite.exec('CREATE TABLE IF NOT EXISTS __migrations (tag TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)')
  const applied = new Set(
    (sqlite.query('SELECT tag FROM __migrations').all() as { tag: string }[]).map((r) => r.tag),
  )
  const known = new Set(migrations.map((m) => m.tag))
  const unknown = [...applied].filter((t) => !known.has(t))
  if (unknown.length > 0) {
    throw new Error(`state database was migrated by a newer leader (unknown migrations: ${unknown.join(', ')}); refusing to start`)
  }
  const done: string[] = []
  for (const m of migrations) {
    if (applied.has(m.tag)) continue
    sqlite.transaction(() => {
      for (const stmt of m.sql.split('--> statement-breakpoint')) {
        if (stmt.trim() !== '') sqlite.exec(stmt)
      }
      sqlite.query('INSERT INTO __migrations (tag, applied_at) VALUES (?, ?)').run(m.tag, Date.now())
    }).immediate()
    done.push(m.tag)
  }
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
