// The state file and its neighbours through the built dist/svc: what `svc admin` and `svc serve`
// do with bad targets, copies in progress, shared directories, files they may not write, and
// files that are not theirs. Each refusal is one line and a non-zero exit, and leaves every file
// as it was. Requires `bun run build` first.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SVC_BIN, runSvc, startLeader } from '../helpers/leader'
import { track } from '../helpers/children'

const dir = () => mkdtempSync(join(tmpdir(), 'svc-state-safety-'))
const sha = (p: string) => new Bun.CryptoHasher('sha256').update(readFileSync(p)).digest('hex')
const PASSWORD = 'correct horse battery staple'

/** A state file made by the binary itself, with one admin in it. */
async function seeded(d: string): Promise<string> {
  const db = join(d, 'state', 'join_state.sqlite3')
  mkdirSync(join(d, 'state'), { recursive: true })
  const r = await runSvc(['admin', 'create-user', 'root@example.org', '--password-stdin', '--db', db], { stdin: PASSWORD })
  expect(r.code).toBe(0)
  return db
}

function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(1)
  return lines[0]!
}

/**
 * A leader's state file owned by nobody (65534) with `mode`, in a directory, beside a copy of the
 * binary, that user can reach: outside the run's owner-only temp root, since a checkout may lie
 * under an owner-only directory.
 */
async function nobodysStateFile(mode: number): Promise<{ d: string; bin: string; db: string }> {
  const d = mkdtempSync('/tmp/svc-ro-')
  chmodSync(d, 0o755)
  const bin = join(d, 'svc')
  copyFileSync(SVC_BIN, bin)
  chmodSync(bin, 0o755)
  const db = await seeded(d)
  chownSync(join(d, 'state'), 65534, 65534)
  chownSync(db, 65534, 65534)
  chmodSync(db, mode)
  return { d, bin, db }
}

describe('svc admin on state files', () => {
  test('a backup copy is owner-only while it is written, even under umask 022; one killed midway leaves no readable copy, and the next backup clears it', async () => {
    const d = dir()
    const db = join(d, 'big.sqlite3')
    const big = new Database(db)
    // A leader's state file to backup (one with __migrations), made large.
    big.exec('CREATE TABLE __migrations (tag TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)')
    big.exec('CREATE TABLE t (b BLOB)')
    big.exec('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500) INSERT INTO t SELECT randomblob(100000) FROM c')
    big.close()
    const out = join(d, 'copy.sqlite3')
    const proc = Bun.spawn(['sh', '-c', `umask 022; exec "$0" admin backup "$1" --db "$2"`, SVC_BIN, out, db], { stdout: 'pipe', stderr: 'pipe' })
    track(proc)
    let seen: { name: string; mode: number }[] = []
    while (seen.length === 0 && proc.exitCode === null) {
      for (const name of readdirSync(d)) {
        if (!name.includes('.partial-')) continue
        try {
          seen.push({ name, mode: statSync(join(d, name)).mode & 0o777 })
        } catch {
          // renamed meanwhile
        }
      }
    }
    proc.kill('SIGKILL')
    await proc.exited
    expect(seen.length).toBeGreaterThan(0) // the copy was caught in progress
    expect(seen.map((s) => s.mode)).toEqual(seen.map(() => 0o600))
    const left = readdirSync(d).filter((n) => n.includes('.partial-'))
    expect(left.length).toBeGreaterThan(0)
    for (const name of left) expect([name, statSync(join(d, name)).mode & 0o777]).toEqual([name, 0o600])
    expect(existsSync(out)).toBe(false)
    const again = await runSvc(['admin', 'backup', out, '--db', db])
    expect(again.code).toBe(0)
    expect(readdirSync(d).filter((n) => n.includes('.partial-'))).toEqual([])
    expect(statSync(out).mode & 0o777).toBe(0o600)
  }, 60_000)

  test('restore with --db naming a directory is refused in one line and moves nothing', async () => {
    const d = dir()
    const db = await seeded(d)
    const copy = join(d, 'copy.sqlite3')
    expect((await runSvc(['admin', 'backup', copy, '--db', db])).code).toBe(0)
    const before = readdirSync(d).sort()
    const r = await runSvc(['admin', 'restore', copy, '--db', join(d, 'state')])
    expect(r.code).toBe(1)
    expect(oneLine(r.stderr)).toBe(`svc: ${join(d, 'state')} is not a file (--db names the state file, not its directory); nothing was changed`)
    expect(readdirSync(d).sort()).toEqual(before)
    expect(statSync(join(d, 'state')).isDirectory()).toBe(true)
    const b = await runSvc(['admin', 'backup', join(d, 'b.sqlite3'), '--db', join(d, 'state')])
    expect([b.code, oneLine(b.stderr)]).toEqual([1, `svc: ${join(d, 'state')} is a directory, not a state database (--db names the state file)`])
  })

  test('doctor without --fix writes nothing to the file it checks: same bytes, same mode; a file that is not a leader\'s is said to be so, with no --fix hint', async () => {
    const d = dir()
    const db = await seeded(d)
    const copy = join(d, 'copy.sqlite3')
    expect((await runSvc(['admin', 'backup', copy, '--db', db])).code).toBe(0)
    chmodSync(copy, 0o644)
    const before = { sha: sha(copy), size: statSync(copy).size }
    const r = await runSvc(['admin', 'doctor', '--db', copy])
    expect([r.code, r.stderr]).toEqual([0, ''])
    expect({ sha: sha(copy), size: statSync(copy).size }).toEqual(before)
    expect(statSync(copy).mode & 0o777).toBe(0o644)
    expect(readdirSync(d).filter((n) => n.startsWith('copy.sqlite3'))).toEqual(['copy.sqlite3'])
    // An empty file stays empty.
    const empty = join(d, 'empty.sqlite3')
    writeFileSync(empty, '')
    const e = await runSvc(['admin', 'doctor', '--db', empty])
    expect([e.code, oneLine(e.stderr), e.stdout]).toEqual([1, `svc: ${empty} is not a leader's state file (no __migrations table); doctor checks only those`, ''])
    expect(statSync(empty).size).toBe(0)
    // Another program's database.
    const other = join(d, 'other.sqlite3')
    const o = new Database(other)
    o.exec('CREATE TABLE notes (body TEXT)')
    o.close()
    const x = await runSvc(['admin', 'doctor', '--db', other])
    expect([x.code, oneLine(x.stderr)]).toEqual([1, `svc: ${other} is not a leader's state file (no __migrations table); doctor checks only those`])
    expect(x.stdout).not.toContain('--fix')
  })

  test('create-user refuses a display name with control characters, as the API does, and stores nothing', async () => {
    const d = dir()
    const db = await seeded(d)
    const r = await runSvc(['admin', 'create-user', 'evil@example.org', '--display-name', '\u001b[31mEvil\u001b[0m\nX', '--password-stdin', '--db', db], { stdin: PASSWORD })
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe('svc: --display-name must not hold control characters')
    const s = new Database(db, { readonly: true })
    expect(s.query('SELECT email FROM users ORDER BY email').all()).toEqual([{ email: 'root@example.org' }])
    s.close()
  })
})

describe('svc admin refusals that leave things as they were', () => {
  test('create-user with a password it refuses makes no state file (it used to leave a new, empty one)', async () => {
    const d = dir()
    const db = join(d, 'fresh.sqlite3')
    const r = await runSvc(['admin', 'create-user', 'new@example.org', '--password-stdin', '--db', db], { stdin: 'short' })
    expect([r.code, oneLine(r.stderr)]).toEqual([1, 'svc: The password must have at least 10 characters.'])
    expect(readdirSync(d)).toEqual([])
    // The next one that succeeds still says the file is new.
    const ok = await runSvc(['admin', 'create-user', 'new@example.org', '--password-stdin', '--db', db], { stdin: PASSWORD })
    expect(ok.code).toBe(0)
    expect(ok.stderr).toContain(`svc: note: ${db} did not exist; it is a new, empty state database`)
  })

  test('backup and restore with a file where a directory should be say so in one line naming it (they gave "EFAULT: bad address" and "EEXIST ... mkdir")', async () => {
    const d = dir()
    const db = await seeded(d)
    const copy = join(d, 'copy.sqlite3')
    expect((await runSvc(['admin', 'backup', copy, '--db', db])).code).toBe(0)
    const file = join(d, 'a-file')
    writeFileSync(file, 'x')
    const before = readdirSync(d).sort()
    const b = await runSvc(['admin', 'backup', join(file, 'x.db'), '--db', db])
    expect([b.code, oneLine(b.stderr)]).toEqual([1, `svc: cannot write the backup to ${join(file, 'x.db')}: ${file} is a file, not a directory`])
    const r = await runSvc(['admin', 'restore', copy, '--db', join(file, 'x.db')])
    expect([r.code, oneLine(r.stderr)]).toEqual([1, `svc: cannot restore to ${join(file, 'x.db')}: ${file} is a file, not a directory; nothing was changed`])
    const deeper = await runSvc(['admin', 'restore', copy, '--db', join(file, 'sub', 'x.db')])
    expect([deeper.code, oneLine(deeper.stderr)]).toEqual([1, `svc: cannot restore to ${join(file, 'sub', 'x.db')}: ${file} is a file, not a directory; nothing was changed`])
    expect(readdirSync(d).sort()).toEqual(before)
    expect(readFileSync(file, 'utf8')).toBe('x')
  })

  // Root writes any file whatever its mode: the commands run as the file's owner, another user.
  test.skipIf(process.getuid?.() !== 0 || !existsSync('/usr/bin/setpriv'))('a read-only (0444) state file is refused by set-password, create-user and doctor --fix without changing its mode (it became 0600); doctor reads it and leaves no -wal or -shm beside it', async () => {
    const { d, bin, db } = await nobodysStateFile(0o444)
    try {
      const before = sha(db)
      const asNobody = (args: string[]) =>
        Bun.spawnSync(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'env', 'PATH=/usr/bin:/bin', bin, ...args, '--db', db], { cwd: d, stdin: new TextEncoder().encode(PASSWORD), stdout: 'pipe', stderr: 'pipe', timeout: 15_000 })
      const refused = `svc: cannot write the state database ${db} (read-only for this process, uid 65534): give the user the leader runs as write access to it and its directory`
      for (const args of [['admin', 'set-password', 'root@example.org', '--password-stdin'], ['admin', 'create-user', 'new@example.org', '--password-stdin'], ['admin', 'doctor', '--fix']]) {
        const r = asNobody(args)
        expect([args.join(' '), r.exitCode, oneLine(r.stderr.toString())]).toEqual([args.join(' '), 1, refused])
        expect([args.join(' '), statSync(db).mode & 0o777]).toEqual([args.join(' '), 0o444])
        expect(readdirSync(join(d, 'state')).filter((n) => n.startsWith('join_state.sqlite3'))).toEqual(['join_state.sqlite3'])
      }
      const check = asNobody(['admin', 'doctor'])
      expect([check.exitCode, check.stderr.toString()]).toEqual([0, ''])
      expect(check.stdout.toString()).toContain('ok     integrity')
      expect(readdirSync(join(d, 'state')).filter((n) => n.startsWith('join_state.sqlite3'))).toEqual(['join_state.sqlite3'])
      // Root too: the file was made read-only on purpose, and is not written.
      const root = await runSvc(['admin', 'set-password', 'root@example.org', '--password-stdin', '--db', db], { stdin: PASSWORD })
      expect([root.code, oneLine(root.stderr)]).toEqual([1, `svc: cannot write the state database ${db}: it is read-only (mode 0444); make it writable for the user the leader runs as (chmod 600) if it is meant to be used`])
      expect([statSync(db).mode & 0o777, sha(db)]).toEqual([0o444, before])
      expect(readdirSync(join(d, 'state')).filter((n) => n.startsWith('join_state.sqlite3'))).toEqual(['join_state.sqlite3'])
    } finally {
      rmSync(d, { recursive: true, force: true })
    }
  }, 60_000)
})

describe('svc serve on shared or foreign state', () => {
  test('a second leader on the same state directory with its own state file, or on a symlink to the first\'s file, is refused in one line naming the first', async () => {
    const first = await startLeader()
    const state = join(first.dir, 'state')
    const db = join(state, 'join_state.sqlite3')
    try {
      const other = join(first.dir, 'other.sqlite3')
      const second = await runSvc(['serve'], { cwd: first.dir, env: { SVC_PORT: '0', SVC_JOIN_STATE_DB: other } })
      expect(second.code).toBe(1)
      expect(oneLine(second.stderr)).toMatch(new RegExp(`^svc: another leader \\(pid ${first.proc.pid}, state file ${db.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\) is running with the state directory ${state.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`))
      const elsewhere = join(dir(), 'other')
      mkdirSync(elsewhere)
      symlinkSync(db, join(elsewhere, 'db.sqlite3'))
      const third = await runSvc(['serve'], { cwd: elsewhere, env: { SVC_PORT: '0', SVC_STATE_DIR: elsewhere, SVC_JOIN_STATE_DB: join(elsewhere, 'db.sqlite3') } })
      expect([third.code, oneLine(third.stderr)]).toEqual([1, `svc: another leader is running on the state file ${join(elsewhere, 'db.sqlite3')} (as ${db}, pid ${first.proc.pid}): stop it first, or give this one its own SVC_STATE_DIR`])
      expect((await fetch(`${first.url}/api/v1/ready`)).status).toBe(200)
      // Its files are owner-only, the state directory too.
      expect([statSync(state).mode & 0o777, statSync(`${db}.leader-lock`).mode & 0o777, statSync(join(state, 'leader.lock')).mode & 0o777]).toEqual([0o700, 0o600, 0o600])
    } finally {
      expect(await first.stop()).toBe(0)
    }
  })

  test("another program's SQLite database is refused at start and left unchanged", async () => {
    const d = dir()
    const other = join(d, 'app.sqlite3')
    const o = new Database(other)
    o.exec('CREATE TABLE notes (body TEXT)')
    o.close()
    const before = sha(other)
    const r = await runSvc(['serve'], { cwd: d, env: { SVC_PORT: '0', SVC_JOIN_STATE_DB: other } })
    expect([r.code, oneLine(r.stderr)]).toEqual([1, `svc: ${other} is not a leader's state file (it holds tables but no __migrations table): give the leader its own file (SVC_JOIN_STATE_DB, SVC_STATE_DIR)`])
    expect(sha(other)).toBe(before)
  })

  test('files and directories in the way stop serve in one line naming the variable, exit 2', async () => {
    const d = dir()
    const cases: [Record<string, string>, string][] = [
      [{ SVC_SECRET_KEY_FILE: d }, `svc: configuration error: SVC_SECRET_KEY_FILE: ${d} is a directory, not a file`],
      [{ SVC_SMTP_HOST: 'mail.example.org', SVC_SMTP_FROM: 'leader@example.org', SVC_SMTP_CA_FILE: d }, `svc: configuration error: SVC_SMTP_CA_FILE: ${d} is a directory, not a file`],
      [{ SVC_IMPRINT_FILE: d }, `svc: configuration error: SVC_IMPRINT_FILE: ${d} is a directory, not a file`],
      [{ SVC_PORT: '99999999999999999999999' }, 'svc: configuration error: SVC_PORT: must be between 0 and 65535, got 99999999999999999999999'],
    ]
    for (const [env, line] of cases) {
      const r = await runSvc(['serve'], { cwd: dir(), env: { SVC_PORT: '0', ...env } })
      expect([r.code, oneLine(r.stderr)]).toEqual([2, line])
    }
    const cwd = dir()
    mkdirSync(join(cwd, 'state'))
    writeFileSync(join(cwd, 'state', 'artifacts'), '')
    const r = await runSvc(['serve'], { cwd, env: { SVC_PORT: '0' } })
    expect([r.code, oneLine(r.stderr)]).toEqual([2, `svc: configuration error: SVC_STATE_DIR: cannot use the artifact directory ${join(cwd, 'state', 'artifacts', 'uploads')}: a file is in the way (artifacts must be a directory)`])
  })

  // Root writes any file whatever its mode: the leader runs as another user, as it would in production.
  test.skipIf(process.getuid?.() !== 0 || !existsSync('/usr/bin/setpriv'))('a state file the leader may only read, and a state directory it may not write, stop it in one line', async () => {
    const { d, bin, db } = await nobodysStateFile(0o400)
    try {
      const asNobody = (env: Record<string, string>) =>
        Bun.spawnSync(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'env', 'PATH=/usr/bin:/bin', 'SVC_PORT=0', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), bin, 'serve'], { cwd: d, stdout: 'pipe', stderr: 'pipe', timeout: 15_000 })
      const r = asNobody({ SVC_STATE_DIR: join(d, 'state'), SVC_SECRET_KEY: 'k'.repeat(40) })
      expect([r.exitCode, oneLine(r.stderr.toString())]).toEqual([1, `svc: cannot write the state database ${db} (read-only for this process, uid 65534): give the user the leader runs as write access to it and its directory`])
      expect(r.stdout.toString()).not.toContain('leader listening')
      // A state directory it cannot write: the secret key cannot be made there.
      const locked = join(d, 'locked')
      mkdirSync(locked, { mode: 0o755 })
      const k = asNobody({ SVC_STATE_DIR: locked })
      expect([k.exitCode, oneLine(k.stderr.toString())]).toEqual([2, `svc: configuration error: SVC_STATE_DIR: cannot create the secret key file ${join(locked, 'secret_key')}: permission denied (or set SVC_SECRET_KEY / SVC_SECRET_KEY_FILE)`])
    } finally {
      rmSync(d, { recursive: true, force: true })
    }
  }, 60_000)
})
