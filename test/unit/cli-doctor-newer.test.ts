// `svc admin doctor` on a state file a newer leader migrated: this binary does not know its schema,
// so the checks written for this binary's schema are not run on it (their findings would be wrong,
// and --fix refuses such a file anyway); it says so, and to use the newer svc. Run as the CLI runs,
// from source in a subprocess: what it prints and its exit status are the behaviour.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { openDb } from '../../src/db/client'

const MAIN = resolve(import.meta.dir, '../../src/main.ts')

async function doctor(args: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, 'admin', 'doctor', ...args], { env: { PATH: process.env.PATH ?? '' }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

/**
 * A state file migrated by this binary, then by a newer one: an extra row in __migrations, and a
 * user whose pool count this binary's user-counts check reads as drifted (a newer schema may keep
 * it differently).
 */
function newerStateFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'svc-doctor-newer-')), 'join_state.sqlite3')
  openDb(path).close()
  const s = new Database(path)
  s.exec("INSERT INTO __migrations (tag, applied_at) VALUES ('9999_from_the_future', 1)")
  s.exec("INSERT INTO users (id, email, password_hash, role, status, created_at, updated_at, pool_count) VALUES ('u1', 'ada@example.org', 'x', 'admin', 'active', 0, 0, 3)")
  s.close()
  return path
}

describe('svc admin doctor on a file a newer leader migrated', () => {
  test('skips the checks of this binary\'s schema, saying why, names the unknown migrations, suggests the newer svc and not --fix, and exits 1; nothing is written', async () => {
    const db = newerStateFile()
    const before = readFileSync(db)
    const r = await doctor(['--db', db])
    expect([r.code, r.stderr]).toEqual([1, ''])
    expect(r.stdout.split('\n').filter((l) => l !== '')).toEqual([
      'ok     integrity',
      'ok     foreign-keys',
      'FAIL   migrations: applied by a newer leader, unknown to this binary: 9999_from_the_future',
      'skip   user-counts: needs the newer svc (1 migration unknown to this one)',
      'skip   user-search: needs the newer svc (1 migration unknown to this one)',
      `${db} was migrated by a newer leader (unknown migrations: 9999_from_the_future): this svc checks only what does not depend on its schema; run the newer version's svc admin doctor on it`,
    ])
    expect(readFileSync(db).equals(before)).toBe(true)
  }, 30_000)

  test('--json names the unknown migrations and the skipped checks; --check of a skipped check alone still fails', async () => {
    const db = newerStateFile()
    const json = await doctor(['--json', '--db', db])
    const report = JSON.parse(json.stdout) as { ok: boolean; pending_migrations: string[]; unknown_migrations: string[]; checks: { name: string; findings: string[]; skipped?: string }[] }
    expect([json.code, report.ok, report.pending_migrations, report.unknown_migrations]).toEqual([1, false, [], ['9999_from_the_future']])
    expect(report.checks.filter((c) => c.skipped !== undefined).map((c) => [c.name, c.findings, c.skipped])).toEqual([
      ['user-counts', [], 'needs the newer svc (1 migration unknown to this one)'],
      ['user-search', [], 'needs the newer svc (1 migration unknown to this one)'],
    ])
    const only = await doctor(['--check', 'user-counts', '--db', db])
    expect([only.code, only.stdout.split('\n')[0]]).toEqual([1, 'skip   user-counts: needs the newer svc (1 migration unknown to this one)'])
  }, 30_000)
})
