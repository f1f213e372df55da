// The state file and the files around it, on real SQLite files: restore keeps every file it
// replaces, copies are owner-only from their first byte, a file the process may not write is
// refused at open, another program's database is not migrated, and the leader's locks cover the
// state directory and every name of the state file.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDb, openDbReadOnly, refuseReadOnly, DbOpenError, StateVersionError } from '../../src/db/client'
import { runMigrations } from '../../src/db/migrate'
import { MIGRATIONS } from '../../src/db/migrations.gen'
import { backupDatabase } from '../../src/db/backup'
import { checkBackup, restoreDatabase } from '../../src/db/restore'
import { lockLeader } from '../../src/db/leader-lock'
import { ConfigError, loadConfig } from '../../src/config'

const dir = () => mkdtempSync(join(tmpdir(), 'svc-state-files-'))

function stateFile(d: string, name = 'join_state.sqlite3'): string {
  const path = join(d, name)
  openDb(path).close()
  return path
}

function configError(env: Record<string, string>): string {
  try {
    loadConfig({ SVC_STATE_DIR: dir(), ...env })
  } catch (e) {
    if (e instanceof ConfigError) return e.message
    throw e
  }
  throw new Error('expected a ConfigError')
}

describe('restore', () => {
  test('two restores in the same second keep both replaced files, under -2 for the second, and each says which name it used', () => {
    const d = dir()
    const db = stateFile(d)
    const backup = join(d, 'backup.sqlite3')
    backupDatabase(db, backup)
    const now = new Date('2026-01-02T03:04:05.678Z') // one fixed clock: both runs in one second
    writeFileSync(join(d, 'marker'), '')
    const before = readFileSync(db)
    const first = restoreDatabase(backup, db, now)
    const afterFirst = readFileSync(db)
    const second = restoreDatabase(backup, db, now)
    const third = restoreDatabase(backup, db, now)
    expect(first.previous).toBe(`${db}.pre-restore-20260102T030405Z`)
    expect(second.previous).toBe(`${db}.pre-restore-20260102T030405Z-2`)
    expect(third.previous).toBe(`${db}.pre-restore-20260102T030405Z-3`)
    expect(readFileSync(first.previous!).equals(before)).toBe(true)
    expect(readFileSync(second.previous!).equals(afterFirst)).toBe(true)
  })

  test('a directory as the target is refused and left where it is; a missing target is fine', () => {
    const d = dir()
    const db = stateFile(join(d, 'state'))
    const backup = join(d, 'backup.sqlite3')
    backupDatabase(db, backup)
    expect(() => restoreDatabase(backup, join(d, 'state'))).toThrow(`${join(d, 'state')} is not a file (--db names the state file, not its directory); nothing was changed`)
    expect(readdirSync(d).sort()).toEqual(['backup.sqlite3', 'state'])
    expect(readdirSync(join(d, 'state')).filter((n) => n.startsWith('join_state.sqlite3'))).toContain('join_state.sqlite3')
    const fresh = restoreDatabase(backup, join(d, 'new', 'db.sqlite3'))
    expect([fresh.previous, statSync(fresh.path).mode & 0o777]).toEqual([null, 0o600])
  })

  test('a corrupt backup is refused naming its first real problems, not SQLite\'s "*** in database main ***" header', () => {
    const d = dir()
    const db = new Database(join(d, 'bad.sqlite3'))
    db.exec('CREATE TABLE __migrations (tag TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)')
    db.exec('CREATE TABLE t (a TEXT, b TEXT)')
    db.exec('CREATE INDEX t_a ON t (a)')
    for (let i = 0; i < 20; i++) db.query('INSERT INTO t (a, b) VALUES (?, ?)').run(`a${i}`, `b${i}`)
    db.close()
    // The index is said to be on the other column: every row is then "missing from index". Bun's
    // SQLite refuses writable_schema edits (defensive mode); Python's does them.
    const edit = Bun.spawnSync(['python3', '-c', "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA writable_schema=ON'); c.execute(\"UPDATE sqlite_master SET sql='CREATE INDEX t_a ON t (b)' WHERE name='t_a'\"); c.commit()", join(d, 'bad.sqlite3')])
    expect(edit.exitCode).toBe(0)
    let message = ''
    try {
      checkBackup(join(d, 'bad.sqlite3'))
    } catch (e) {
      message = (e as Error).message
    }
    expect(message).toStartWith(`${join(d, 'bad.sqlite3')} fails its integrity check: `)
    expect(message).toBe(`${join(d, 'bad.sqlite3')} fails its integrity check: row 1 missing from index t_a; row 2 missing from index t_a; row 3 missing from index t_a (and 17 more)`)
  })
})

describe('backup', () => {
  test('a killed backup\'s partial copy is removed by the next backup of the same target; others\' files stay', () => {
    const d = dir()
    const db = stateFile(d)
    const target = join(d, 'copy.sqlite3')
    // A pid that is not running: a child that has exited.
    const gone = Bun.spawnSync(['true']).pid
    for (const name of [`.copy.sqlite3.partial-${gone}`, `.copy.sqlite3.partial-${gone}-journal`, '.other.sqlite3.partial-1']) writeFileSync(join(d, name), 'x')
    backupDatabase(db, target)
    expect(readdirSync(d).filter((n) => n.includes('partial')).sort()).toEqual(['.other.sqlite3.partial-1'])
  })

  test('a directory as the state file is named as such, not "disk I/O error"', () => {
    const d = dir()
    expect(() => backupDatabase(d, join(d, 'x.sqlite3'))).toThrow(`${d} is a directory, not a state database (--db names the state file)`)
  })
})

describe('opening the state file', () => {
  test('a connection that cannot write (SQLite opened the file read-only) is refused in one line naming the file', () => {
    const d = dir()
    const db = stateFile(d)
    const ro = new Database(db, { readonly: true })
    expect(() => refuseReadOnly(ro, db)).toThrow(new RegExp(`^cannot write the state database ${db.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(read-only for this process`))
    ro.close()
    const rw = new Database(db)
    refuseReadOnly(rw, db) // a writable one passes, and nothing changes
    expect((rw.query('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(0)
    rw.close()
  })

  test('beside a leader in the middle of a write, an open waits its turn (it failed at once: "database is locked")', async () => {
    const path = stateFile(dir())
    // Another process holds the write lock for a moment, as a leader does while it writes.
    const holder = Bun.spawn([process.execPath, '-e', `const { Database } = require('bun:sqlite'); const db = new Database(${JSON.stringify(path)}); db.exec('BEGIN IMMEDIATE'); db.exec('PRAGMA user_version = 0'); console.log('held'); setTimeout(() => { db.exec('COMMIT'); db.close() }, 400)`], { stdout: 'pipe', stderr: 'inherit' })
    const reader = holder.stdout.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('held')
    const opened = openDb(path)
    opened.close()
    expect(await holder.exited).toBe(0)
  })

  test("another program's database is refused and left as it was; an empty file becomes a state file", () => {
    const d = dir()
    const other = join(d, 'other.sqlite3')
    const o = new Database(other)
    o.exec('CREATE TABLE notes (body TEXT)')
    o.close()
    const before = readFileSync(other)
    expect(() => openDb(other)).toThrow(DbOpenError)
    expect(() => openDb(other)).toThrow(`${other} is not a leader's state file (it holds tables but no __migrations table)`)
    expect(readFileSync(other).equals(before)).toBe(true)
    const empty = join(d, 'empty.sqlite3')
    writeFileSync(empty, '')
    openDb(empty).close()
    expect(checkBackup(empty).missing).toBe(0)
  })
})

/** A state file as a release with only the first `n` migrations left it, in WAL mode like a leader's. */
function olderStateFile(d: string, n: number): string {
  const path = join(d, 'join_state.sqlite3')
  const s = new Database(path)
  s.exec('PRAGMA journal_mode = WAL')
  runMigrations(s, MIGRATIONS.slice(0, n))
  s.close()
  return path
}

describe('state files of another version', () => {
  test('an open that must not migrate refuses a file behind this binary, naming what it lacks, and leaves it byte for byte; a new file is made and migrated', () => {
    const d = dir()
    const path = olderStateFile(d, MIGRATIONS.length - 2)
    chmodSync(path, 0o644)
    const before = readFileSync(path)
    let err: unknown
    try {
      openDb(path, { refuseOtherVersion: true })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(StateVersionError)
    expect((err as StateVersionError).pending).toEqual(MIGRATIONS.slice(-2).map((m) => m.tag))
    expect((err as Error).message).toBe(
      `${path} is 2 migrations behind this svc (${MIGRATIONS.slice(-2).map((m) => m.tag).join(', ')}): \`svc serve\` of this version applies them when it starts (take a backup first: svc admin backup FILE), or use the older version's svc admin on it; nothing was changed`,
    )
    expect(readFileSync(path).equals(before)).toBe(true)
    expect(statSync(path).mode & 0o777).toBe(0o644)
    expect(readdirSync(d)).toEqual(['join_state.sqlite3'])
    const fresh = join(d, 'new.sqlite3')
    const made = openDb(fresh, { refuseOtherVersion: true })
    expect((made.sqlite.query('SELECT count(*) AS n FROM __migrations').get() as { n: number }).n).toBe(MIGRATIONS.length)
    made.close()
    openDb(fresh, { refuseOtherVersion: true }).close() // at this version: taken
  })

  test('a file a newer leader migrated is refused naming the migrations this binary does not know', () => {
    const path = stateFile(dir())
    const s = new Database(path)
    s.exec("INSERT INTO __migrations (tag, applied_at) VALUES ('9999_from_the_future', 1)")
    s.close()
    expect(() => openDb(path, { migrate: false, refuseOtherVersion: true })).toThrow(`${path} was migrated by a newer leader (unknown migrations: 9999_from_the_future): use that version's svc admin; nothing was changed`)
  })

  test('the migrations run are told before (which, on top of how many) and after (which, how long); none pending, nothing is told; a refusal before them applies none', () => {
    const path = olderStateFile(dir(), 3)
    const told: unknown[] = []
    const refusing = { starting: () => { throw new Error('cannot listen') }, finished: () => told.push('finished anyway') }
    expect(() => openDb(path, { onMigrate: refusing })).toThrow('cannot listen')
    const observer = { starting: (p: string[], n: number) => told.push(['starting', p, n]), finished: (a: string[], ms: number) => told.push(['finished', a, typeof ms]) }
    openDb(path, { onMigrate: observer }).close()
    const rest = MIGRATIONS.slice(3).map((m) => m.tag)
    expect(told).toEqual([['starting', rest, 3], ['finished', rest, 'number']])
    openDb(path, { onMigrate: observer }).close()
    expect(told).toHaveLength(2)
  })
})

describe('a read-only state file', () => {
  test('is refused before anything touches it: its mode stays, no -wal or -shm appears (it was made 0600, then refused)', () => {
    const d = dir()
    const path = stateFile(d)
    chmodSync(path, 0o444)
    const before = readFileSync(path)
    expect(() => openDb(path)).toThrow(DbOpenError)
    expect(() => openDb(path, { migrate: false })).toThrow(new RegExp(`^cannot write the state database ${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`))
    expect(statSync(path).mode & 0o777).toBe(0o444)
    expect(readFileSync(path).equals(before)).toBe(true)
    expect(readdirSync(d)).toEqual(['join_state.sqlite3'])
  })

  test('is read by the read-only open (doctor) without leaving -wal and -shm beside it', () => {
    const d = dir()
    const path = stateFile(d)
    chmodSync(path, 0o444)
    const ro = openDbReadOnly(path)
    expect((ro.sqlite.query('SELECT count(*) AS n FROM __migrations').get() as { n: number }).n).toBe(MIGRATIONS.length)
    ro.close()
    expect(readdirSync(d)).toEqual(['join_state.sqlite3'])
  })
})

describe('the leader locks', () => {
  test('a second leader on the same state directory with another state file is refused, naming the first one\'s file', () => {
    const d = dir()
    const first = lockLeader(join(d, 'join_state.sqlite3'), d)
    try {
      expect(() => lockLeader(join(dir(), 'other.sqlite3'), d)).toThrow(
        `another leader (pid ${process.pid}, state file ${join(d, 'join_state.sqlite3')}) is running with the state directory ${d}, whose secret key and artifact files it uses: stop it first, or give this one its own SVC_STATE_DIR`,
      )
    } finally {
      first.release()
    }
    lockLeader(join(dir(), 'other.sqlite3'), d).release() // free once the first is gone
  })

  test('a symlink to the state file, even before the file exists, meets the same lock', () => {
    const d = dir()
    const db = join(d, 'state', 'join_state.sqlite3')
    mkdirSync(join(d, 'state'))
    mkdirSync(join(d, 'other'))
    symlinkSync(db, join(d, 'other', 'db.sqlite3'))
    const first = lockLeader(db, join(d, 'state'))
    try {
      expect(() => lockLeader(join(d, 'other', 'db.sqlite3'), join(d, 'other'))).toThrow(`another leader is running on the state file ${join(d, 'other', 'db.sqlite3')} (as ${db}, pid ${process.pid})`)
    } finally {
      first.release()
    }
  })

  test('the lock files are owner-only', () => {
    const d = dir()
    const lock = lockLeader(join(d, 'join_state.sqlite3'), d)
    try {
      expect([statSync(join(d, 'join_state.sqlite3.leader-lock')).mode & 0o777, statSync(join(d, 'leader.lock')).mode & 0o777]).toEqual([0o600, 0o600])
    } finally {
      lock.release()
    }
  })
})

describe('settings that name files', () => {
  test('a directory, an oversized file or a missing one is refused in one line naming the variable', () => {
    expect(configError({ SVC_SECRET_KEY_FILE: tmpdir() })).toBe(`SVC_SECRET_KEY_FILE: ${tmpdir()} is a directory, not a file`)
    expect(configError({ SVC_SMTP_HOST: 'mail.example.org', SVC_SMTP_FROM: 'a@example.org', SVC_SMTP_CA_FILE: tmpdir() })).toBe(`SVC_SMTP_CA_FILE: ${tmpdir()} is a directory, not a file`)
    for (const name of ['SVC_IMPRINT_FILE', 'SVC_PRIVACY_FILE', 'SVC_ACCESSIBILITY_FILE']) {
      expect(configError({ [name]: tmpdir() })).toBe(`${name}: ${tmpdir()} is a directory, not a file`)
    }
    const big = join(dir(), 'big.html')
    writeFileSync(big, Buffer.alloc(1024 * 1024 + 1, 0x61))
    expect(configError({ SVC_IMPRINT_FILE: big })).toBe(`SVC_IMPRINT_FILE: ${big} is ${1024 * 1024 + 1} bytes, more than the 1048576 this setting takes`)
    const fine = join(dir(), 'imprint.html')
    writeFileSync(fine, '<p>Imprint</p>')
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_IMPRINT_FILE: fine }).imprintFile).toBe(fine)
  })

  test('a number too large is echoed as given; an upper-case scheme and host are a URL like any other', () => {
    expect(configError({ SVC_PORT: '99999999999999999999999' })).toBe('SVC_PORT: must be between 0 and 65535, got 99999999999999999999999')
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_BASE_URL: 'HTTP://Example.org/Svc' }).baseUrl).toBe('http://example.org/Svc')
  })

  test('an existing state directory open to others is tightened to owner-only', () => {
    const d = dir()
    chmodSync(d, 0o755)
    loadConfig({ SVC_STATE_DIR: d })
    expect(statSync(d).mode & 0o777).toBe(0o700)
    expect(existsSync(join(d, 'secret_key'))).toBe(true)
  })
})
