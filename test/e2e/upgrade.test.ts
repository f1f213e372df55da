// Upgrading in place through the built dist/svc: a state file an older release wrote (built here
// by applying only that release's migrations) is migrated by `svc serve` alone, with a log line
// before and after, and only once it can listen; the offline admin commands refuse it, naming what
// is missing, and leave it byte for byte (one of them used to migrate it under the old leader,
// which then answered 503 and could not start again). Requires `bun run build` first.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runMigrations } from '../../src/db/migrate'
import { MIGRATIONS } from '../../src/db/migrations.gen'
import { runSvc, startLeader } from '../helpers/leader'
import { until } from '../helpers/until'

const PASSWORD = 'correct horse battery staple'
const sha = (p: string) => new Bun.CryptoHasher('sha256').update(readFileSync(p)).digest('hex')

/** A state file as the release before `firstMissing` left it (WAL, one admin), in `<dir>/state`. */
function olderState(firstMissing: string): { dir: string; db: string; missing: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-upgrade-'))
  mkdirSync(join(dir, 'state'), { mode: 0o700 })
  const db = join(dir, 'state', 'join_state.sqlite3')
  const at = MIGRATIONS.findIndex((m) => m.tag === firstMissing)
  expect(at).toBeGreaterThan(0)
  const s = new Database(db)
  s.exec('PRAGMA journal_mode = WAL')
  runMigrations(s, MIGRATIONS.slice(0, at))
  s.exec("INSERT INTO users (id, email, password_hash, display_name, role, status, created_at, updated_at) VALUES ('u1', 'root@example.org', 'x', NULL, 'admin', 'active', 1, 1)")
  s.close()
  return { dir, db, missing: MIGRATIONS.slice(at).map((m) => m.tag) }
}

function applied(db: string): string[] {
  const s = new Database(db, { readonly: true })
  try {
    return (s.query('SELECT tag FROM __migrations ORDER BY tag').all() as { tag: string }[]).map((r) => r.tag)
  } finally {
    s.close()
  }
}

function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(1)
  return lines[0]!
}

describe('a state file an older release wrote', () => {
  test('set-password and create-user refuse it in one line naming the missing migrations, and leave it byte for byte; serve then applies them, and the commands work', async () => {
    const { dir, db, missing } = olderState('0012_telemetry_history')
    const before = { sha: sha(db), mode: statSync(db).mode & 0o777, files: readdirSync(join(dir, 'state')).sort(), tags: applied(db) }
    const behind = `svc: ${db} is ${missing.length} migrations behind this svc (${missing.join(', ')}): \`svc serve\` of this version applies them when it starts (take a backup first: svc admin backup FILE), or use the older version's svc admin on it; nothing was changed`
    const set = await runSvc(['admin', 'set-password', 'root@example.org', '--password-stdin', '--db', db], { stdin: PASSWORD })
    expect([set.code, oneLine(set.stderr), set.stdout]).toEqual([1, behind, ''])
    const create = await runSvc(['admin', 'create-user', 'new@example.org', '--password-stdin', '--db', db], { stdin: PASSWORD })
    expect([create.code, oneLine(create.stderr), create.stdout]).toEqual([1, behind, ''])
    expect({ sha: sha(db), mode: statSync(db).mode & 0o777, files: readdirSync(join(dir, 'state')).sort(), tags: applied(db) }).toEqual(before)

    // The leader of this version applies them at its start; then the commands take the file.
    const leader = await startLeader({}, dir)
    expect(await leader.stop()).toBe(0)
    expect(applied(db)).toEqual(MIGRATIONS.map((m) => m.tag))
    const again = await runSvc(['admin', 'set-password', 'root@example.org', '--password-stdin', '--db', db], { stdin: PASSWORD })
    expect([again.code, again.stderr]).toEqual([0, ''])
  }, 60_000)

  test('serve logs the migrations it applies (how many, which) before, and how long they took after, at info level in JSON lines; a start with none to apply says nothing of them', async () => {
    const { dir, db, missing } = olderState('0011_admin_at_scale')
    const leader = await startLeader({}, dir)
    expect(await leader.stop()).toBe(0)
    const lines = leader.logs.map((l) => JSON.parse(l) as Record<string, unknown>)
    const at = (msg: string) => lines.findIndex((l) => l.msg === msg)
    expect(lines[at('applying migrations')]).toMatchObject({ level: 'info', db, count: missing.length, migrations: missing })
    expect(lines[at('migrations applied')]).toMatchObject({ level: 'info', db, count: missing.length })
    expect(typeof lines[at('migrations applied')]!.duration_ms).toBe('number')
    expect(at('applying migrations')).toBeGreaterThanOrEqual(0)
    expect(at('applying migrations')).toBeLessThan(at('migrations applied'))
    expect(at('migrations applied')).toBeLessThan(at('leader listening'))
    const second = await startLeader({}, dir)
    expect(await second.stop()).toBe(0)
    expect(second.logs.filter((l) => l.includes('migrations'))).toEqual([])
  }, 30_000)

  test('a start that cannot listen leaves it unmigrated, so the older release still takes it', async () => {
    const { dir, db } = olderState('0013_operator_uploads')
    const before = applied(db)
    const taken = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const r = await runSvc(['serve'], { cwd: dir, env: { SVC_PORT: String(taken.port), SVC_COOKIE_SECURE: '0', SVC_LOG_LEVEL: 'info' } })
      expect([r.code, oneLine(r.stderr)]).toEqual([1, `svc: cannot listen on 127.0.0.1:${taken.port} (SVC_HOST, SVC_PORT): the port is in use`])
      expect(r.stdout).not.toContain('migrations')
    } finally {
      taken.stop(true)
    }
    // Opened (its checks write a change of nothing), not migrated.
    expect(applied(db)).toEqual(before)
  }, 30_000)

  test('a start refuses to migrate it while another process has it open (a leader of a release from before the lock was migrated under, then answered 503 and could not start again)', async () => {
    const { dir, db } = olderState('0013_operator_uploads')
    const before = applied(db)
    // Stands in for the older leader: a process holding the file open.
    const holder = Bun.spawn(['sh', '-c', `exec 3<'${db}'; exec sleep 60`])
    try {
      await until(() => (existsSync(`/proc/${holder.pid}/fd/3`) && readlinkSync(`/proc/${holder.pid}/fd/3`) === db ? true : null), 'the file held open')
      const r = await runSvc(['serve'], { cwd: dir, env: { SVC_PORT: '0', SVC_COOKIE_SECURE: '0' } })
      expect([r.code, oneLine(r.stderr)]).toEqual([1, `svc: the state file ${db} is open in process ${holder.pid} (a leader of an earlier release, which takes no lock, or an svc admin command): stop it before this release migrates the file; nothing was changed`])
      expect(applied(db)).toEqual(before)
    } finally {
      holder.kill()
      await holder.exited
    }
    // Once it is gone, the start migrates.
    const leader = await startLeader({}, dir)
    await leader.stop()
    expect(applied(db)).toEqual(MIGRATIONS.map((m) => m.tag))
  }, 30_000)

  test("a file that looks new but was there, open in another process under another name (a hard link to an older leader's file whose writes are all in its -wal), is not served as a fresh install", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-upgrade-'))
    mkdirSync(join(dir, 'old'), { mode: 0o700 })
    mkdirSync(join(dir, 'state'), { mode: 0o700 })
    const theirs = join(dir, 'old', 'join_state.sqlite3')
    writeFileSync(theirs, '', { mode: 0o600 })
    const db = join(dir, 'state', 'join_state.sqlite3')
    linkSync(theirs, db)
    const holder = Bun.spawn(['sh', '-c', `exec 3<'${theirs}'; exec sleep 60`])
    try {
      await until(() => (existsSync(`/proc/${holder.pid}/fd/3`) && readlinkSync(`/proc/${holder.pid}/fd/3`) === theirs ? true : null), 'the file held open')
      const r = await runSvc(['serve'], { cwd: dir, env: { SVC_PORT: '0', SVC_COOKIE_SECURE: '0' } })
      expect([r.code, oneLine(r.stderr)]).toEqual([1, `svc: the state file ${db} is open in process ${holder.pid} (a leader of an earlier release, which takes no lock, or an svc admin command): stop it before this release migrates the file; nothing was changed`])
      // Nothing applied: no table, no account of a fresh install for the other leader to lose.
      expect(applied(theirs)).toEqual([])
    } finally {
      holder.kill()
      await holder.exited
    }
  }, 30_000)

  test('doctor reports it behind and skips the checks that need the newer schema, without SQL errors; --fix refuses in one line and changes nothing', async () => {
    const { db, missing } = olderState('0011_admin_at_scale')
    const before = sha(db)
    const r = await runSvc(['admin', 'doctor', '--db', db])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe('')
    expect(r.stdout.split('\n').filter((l) => l !== '')).toEqual([
      'ok     integrity',
      'ok     foreign-keys',
      `FAIL   migrations: not applied (the leader applies them when it starts): ${missing.join(', ')}`,
      `skip   user-counts: needs the upgrade (${missing.length} migrations not applied)`,
      `skip   user-search: needs the upgrade (${missing.length} migrations not applied)`,
      `${db} is ${missing.length} migrations behind this svc (${missing.join(', ')}): \`svc serve\` of this version applies them when it starts (take a backup first: svc admin backup FILE)`,
    ])
    const json = await runSvc(['admin', 'doctor', '--json', '--db', db])
    const report = JSON.parse(json.stdout) as { ok: boolean; pending_migrations: string[]; checks: { name: string; findings: string[]; fixable: boolean; skipped?: string }[] }
    expect([json.code, report.ok, report.pending_migrations]).toEqual([1, false, missing])
    expect(report.checks.filter((c) => c.skipped !== undefined).map((c) => [c.name, c.fixable, c.findings])).toEqual([
      ['user-counts', false, []],
      ['user-search', false, []],
    ])
    const fix = await runSvc(['admin', 'doctor', '--fix', '--db', db])
    expect([fix.code, fix.stdout, oneLine(fix.stderr)]).toEqual([
      1,
      '',
      `svc: ${db} is ${missing.length} migrations behind this svc (${missing.join(', ')}): doctor --fix repairs only a file this version has migrated; start \`svc serve\` of this version on it (after a backup) to apply them, then run it again; nothing was changed`,
    ])
    expect(sha(db)).toBe(before)
    expect(applied(db)).toHaveLength(MIGRATIONS.length - missing.length)
  }, 30_000)
})
