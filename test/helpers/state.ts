// Looking at a state file from a test: a digest of what a refused request must not change, and the
// invariants no crash may break (multi-row changes are all-or-nothing).
import { Database } from 'bun:sqlite'

/** Written on purpose by refused requests (failed-login counters, the audit trail) or on every use. */
const VOLATILE_TABLES = new Set(['audit_log', 'login_failures'])
const VOLATILE_COLUMNS: Record<string, string[]> = {
  api_tokens: ['last_used_at'],
  sessions: ['last_used_at', 'last_seen_at'],
}

/** A deterministic dump of every table but the volatile ones: rows as sorted JSON lines per table. */
export function stateDump(sqlite: Database): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  const tables = (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map((t) => t.name)
  for (const t of tables) {
    if (VOLATILE_TABLES.has(t)) continue
    const skip = new Set(VOLATILE_COLUMNS[t] ?? [])
    const cols = (sqlite.query(`PRAGMA table_info("${t}")`).all() as { name: string }[]).map((c) => c.name).filter((c) => !skip.has(c))
    const rows = sqlite.query(`SELECT ${cols.map((c) => `"${c}"`).join(', ')} FROM "${t}"`).values() as unknown[][]
    out[t] = rows.map((r) => JSON.stringify(r, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))).sort()
  }
  return out
}

/** SHA-256 of a dump. */
export function digestOf(dump: Record<string, string[]>): string {
  const hasher = new Bun.CryptoHasher('sha256')
  for (const t of Object.keys(dump).sort()) hasher.update(`${t}\n${dump[t]!.join('\n')}\n`)
  return hasher.digest('hex')
}

/** SHA-256 over a deterministic dump of every table but the volatile ones. */
export function stateDigest(sqlite: Database): string {
  return digestOf(stateDump(sqlite))
}

/** Names the tables whose rows differ between two dumps, with a few of the differing rows. */
export function diffDumps(a: Record<string, string[]>, b: Record<string, string[]>): string[] {
  const out: string[] = []
  for (const t of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = new Set(a[t] ?? [])
    const y = new Set(b[t] ?? [])
    const gone = [...x].filter((r) => !y.has(r))
    const added = [...y].filter((r) => !x.has(r))
    if (gone.length + added.length > 0) out.push(`${t}: -${gone.slice(0, 2).join(' ')} +${added.slice(0, 2).join(' ')}`)
  }
  return out
}

/** Rows changed by this connection so far: a cheap "did anything write?" before hashing everything. */
export function totalChanges(sqlite: Database): number {
  return (sqlite.query('SELECT total_changes() AS n').get() as { n: number }).n
}

export function integrityCheck(sqlite: Database): string {
  return (sqlite.query('PRAGMA integrity_check').all() as { integrity_check: string }[]).map((r) => r.integrity_check).join('; ')
}

/**
 * Invariants of multi-row changes: each is written in one transaction, so no crash may leave half of
 * it. Returns one line per violation (empty when the file is consistent).
 */
export function consistencyProblems(sqlite: Database): string[] {
  const out: string[] = []
  const integrity = integrityCheck(sqlite)
  if (integrity !== 'ok') out.push(`integrity_check: ${integrity}`)
  const fk = sqlite.query('PRAGMA foreign_key_check').all() as { table: string; parent: string }[]
  for (const r of fk.slice(0, 5)) out.push(`foreign key broken: ${r.table} -> ${r.parent}`)
  const rows = (sql: string) => sqlite.query(sql).all() as Record<string, unknown>[]
  for (const r of rows(`SELECT p.id FROM pools p WHERE p.is_default = 0 AND NOT EXISTS
      (SELECT 1 FROM pool_members m WHERE m.pool_id = p.id AND m.user_id = p.owner_user_id AND m.role = 'owner')`)) {
    out.push(`pool ${r.id} has no owner member`)
  }
  for (const r of rows(`SELECT pool_id, COUNT(*) AS n FROM pool_members WHERE role = 'owner' GROUP BY pool_id HAVING n > 1`)) {
    out.push(`pool ${r.pool_id} has ${r.n} owner members`)
  }
  for (const r of rows(`SELECT m.pool_id, m.user_id FROM pool_members m JOIN pools p ON p.id = m.pool_id WHERE m.role = 'owner' AND p.owner_user_id IS NOT m.user_id`)) {
    out.push(`pool ${r.pool_id}: owner member ${r.user_id} is not the pool's owner`)
  }
  for (const r of rows('SELECT m.pool_id FROM pool_members m LEFT JOIN pools p ON p.id = m.pool_id WHERE p.id IS NULL')) {
    out.push(`pool_members row for missing pool ${r.pool_id}`)
  }
  for (const r of rows('SELECT n.fellow_id, n.pool_id FROM pool_nodes n LEFT JOIN pools p ON p.id = n.pool_id WHERE p.id IS NULL')) {
    out.push(`pool_nodes row of fellow ${r.fellow_id} for missing pool ${r.pool_id}`)
  }
  for (const r of rows('SELECT n.fellow_id FROM pool_nodes n LEFT JOIN fellows f ON f.id = n.fellow_id WHERE f.id IS NULL')) {
    out.push(`pool_nodes row for missing fellow ${r.fellow_id}`)
  }
  for (const r of rows('SELECT s.id FROM join_sessions s LEFT JOIN pools p ON p.id = s.pool_id WHERE p.id IS NULL')) {
    out.push(`join session ${r.id} for missing pool`)
  }
  return out
}

/** Opens a state file read-only (the leader may be running: WAL lets a reader in beside it). */
export function openReadOnly(path: string): Database {
  const db = new Database(path, { readonly: true })
  db.exec('PRAGMA busy_timeout = 5000')
  return db
}
