// 0013_operator_uploads rebuilds artifact_uploads (SQLite cannot drop NOT NULL from fellow_id): an
// upload under way on a state file of the version before keeps its row, and resumes; the new
// columns carry the foreign keys the schema declares.
import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runMigrations } from '../../src/db/migrate'
import { MIGRATIONS } from '../../src/db/migrations.gen'

test('an upload begun before the migration survives it, with no user; the new columns cascade and set null as declared', () => {
  const db = new Database(join(mkdtempSync(join(tmpdir(), 'svc-migrate-')), 'state.sqlite3'))
  db.exec('PRAGMA foreign_keys = ON')
  const at = MIGRATIONS.findIndex((m) => m.tag === '0013_operator_uploads')
  expect(at).toBeGreaterThan(0)
  runMigrations(db, MIGRATIONS.slice(0, at))
  // The rows an upload under way hangs from, as the version before wrote them.
  db.exec(`INSERT INTO pools (id, name, slug, description, visibility, open_join, is_default, created_at, updated_at) VALUES ('p1', 'lab', 'lab', '', 'private', 0, 0, 1, 1)`)
  db.exec(`INSERT INTO fellows (id, hostname, token_hash, state, registered_at) VALUES ('f1', 'gpu', 'h', 'online', 1)`)
  db.exec(`INSERT INTO artifact_uploads (id, pool_id, kind, name, size_bytes, sha256, fellow_id, received_bytes, created_at, updated_at) VALUES ('up1', 'p1', 'file', 'w.bin', 10, '${'a'.repeat(64)}', 'f1', 4, 1, 2)`)

  expect(runMigrations(db)).toEqual(MIGRATIONS.slice(at).map((m) => m.tag))
  expect(db.query('SELECT id, fellow_id, user_id, received_bytes FROM artifact_uploads').all()).toEqual([{ id: 'up1', fellow_id: 'f1', user_id: null, received_bytes: 4 }])
  const fks = (table: string) => (db.query(`PRAGMA foreign_key_list(${table})`).all() as { from: string; table: string; on_delete: string }[]).map((f) => `${f.from} -> ${f.table} ${f.on_delete}`).sort()
  expect(fks('artifact_uploads')).toEqual(['fellow_id -> fellows CASCADE', 'job_id -> jobs CASCADE', 'pool_id -> pools CASCADE', 'user_id -> users CASCADE'])
  expect(fks('artifacts')).toContain('user_id -> users SET NULL')
  expect((db.query('PRAGMA foreign_key_check').all() as unknown[]).length).toBe(0)
  expect(db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'artifact_uploads' AND sql IS NOT NULL ORDER BY name").all()).toEqual([
    { name: 'artifact_uploads_job_idx' },
    { name: 'artifact_uploads_pool_idx' },
    { name: 'artifact_uploads_updated_idx' },
  ])
  db.close()
})
