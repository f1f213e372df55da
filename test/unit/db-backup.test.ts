// `svc admin backup`'s targets and sources, in-process on real files: each refusal is one line in
// plain words, and leaves no file behind.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDb } from '../../src/db/client'
import { backupDatabase, BackupError } from '../../src/db/backup'
import { lockLeader } from '../../src/db/leader-lock'

const dir = () => mkdtempSync(join(tmpdir(), 'svc-db-backup-'))

function stateFile(d: string): string {
  const path = join(d, 'join_state.sqlite3')
  openDb(path).close()
  return path
}

describe('backup targets', () => {
  test('FILE - is refused (it wrote a file named "-"), saying how to name such a file', () => {
    const d = dir()
    const db = stateFile(d)
    const cwd = process.cwd()
    process.chdir(d)
    try {
      expect(() => backupDatabase(db, '-')).toThrow(new BackupError('FILE - would be a file named "-", not standard output: the backup is written to a file and checked before it gets its name (write it to a file, then copy that; ./- names a file called -)'))
    } finally {
      process.chdir(cwd)
    }
    expect(existsSync(join(d, '-'))).toBe(false)
  })

  test('a directory as FILE is said to be one (it was "already exists; refusing to overwrite it")', () => {
    const d = dir()
    const db = stateFile(d)
    mkdirSync(join(d, 'backups'))
    expect(() => backupDatabase(db, join(d, 'backups'))).toThrow(new BackupError(`${join(d, 'backups')} is a directory: FILE names the backup file to write in it (${join(d, 'backups', 'leader-YYYY-MM-DD.sqlite3')}, say)`))
    expect(readdirSync(join(d, 'backups'))).toEqual([])
  })

  // A read-only bind mount of a directory: a ZFS or btrfs snapshot, a backup disk mounted ro.
  test.skipIf(process.platform !== 'linux' || process.getuid?.() !== 0)('a directory on a read-only file system is named in plain words (it was the raw "EROFS: read-only file system, rm ...partial-PID")', () => {
    const d = dir()
    const db = stateFile(d)
    const target = join(d, 'ro')
    mkdirSync(target)
    if (Bun.spawnSync(['mount', '--bind', target, target]).exitCode !== 0) return // no mounts here
    try {
      expect(Bun.spawnSync(['mount', '-o', 'remount,ro,bind', target]).exitCode).toBe(0)
      expect(() => backupDatabase(db, join(target, 'b.sqlite3'))).toThrow(new BackupError(`cannot write the backup in ${target}: read-only file system`))
    } finally {
      Bun.spawnSync(['umount', target])
    }
  })
})

describe('backup sources', () => {
  test("--db naming a file that is not a leader's state file is refused like restore and doctor refuse it, and no copy is written", () => {
    const d = dir()
    const db = stateFile(d)
    const lock = lockLeader(db, d) // the leader's lock files are SQLite files too
    lock.release()
    writeFileSync(join(d, 'empty.sqlite3'), '')
    writeFileSync(join(d, 'notes.txt'), 'not a database at all, just some words in a file that is long enough')
    const other = new Database(join(d, 'app.sqlite3'))
    other.exec('CREATE TABLE notes (body TEXT)')
    other.close()
    for (const src of [join(d, 'leader.lock'), `${db}.leader-lock`, join(d, 'empty.sqlite3'), join(d, 'app.sqlite3')]) {
      expect(() => backupDatabase(src, join(d, 'copy.sqlite3'))).toThrow(new BackupError(`${src} is not a leader's state file (no __migrations table); backup copies only those (--db names the state file)`))
    }
    expect(() => backupDatabase(join(d, 'notes.txt'), join(d, 'copy.sqlite3'))).toThrow(new BackupError(`${join(d, 'notes.txt')} is not an SQLite database (--db names the state file)`))
    expect(readdirSync(d).filter((n) => n.includes('copy'))).toEqual([])
    expect(backupDatabase(db, join(d, 'copy.sqlite3')).path).toBe(join(d, 'copy.sqlite3'))
  })
})
