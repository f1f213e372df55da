// `svc admin restore` on real SQLite files, in-process: what it leaves alone while it swaps the
// state file, which file it replaces, and what it reads the backup with.
import { describe, expect, test } from 'bun:test'
import { existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { openDb } from '../../src/db/client'
import { backupDatabase } from '../../src/db/backup'
import { discardRestore, finishRestore, prepareRestore, restoreDatabase, RestoreError } from '../../src/db/restore'
import { lockLeader } from '../../src/db/leader-lock'
import { track } from '../helpers/children'

const dir = () => mkdtempSync(join(tmpdir(), 'svc-db-restore-'))

/** A state file with a marker in it, and a backup of it taken before the marker changed. */
function stateAndBackup(d: string): { db: string; backup: string } {
  const db = join(d, 'join_state.sqlite3')
  const state = openDb(db)
  state.sqlite.exec('PRAGMA user_version = 1')
  state.close()
  const backup = join(d, 'backup.sqlite3')
  backupDatabase(db, backup)
  const later = openDb(db)
  later.sqlite.exec('PRAGMA user_version = 2')
  later.close()
  return { db, backup }
}

const userVersion = (path: string) => {
  const s = openDb(path, { migrate: false })
  try {
    return (s.sqlite.query('PRAGMA user_version').get() as { user_version: number }).user_version
  } finally {
    s.close()
  }
}

describe('restore and a leader starting', () => {
  test('a leader cannot start between the copy and the swap (its writes went to the file kept aside); it can once the restore is done or stopped', () => {
    const d = dir()
    const { db, backup } = stateAndBackup(d)
    const prepared = prepareRestore(backup, db)
    expect(() => lockLeader(db, d)).toThrow(`svc admin restore (pid ${process.pid}) is putting a backup in place of the state file ${db}: start the leader once it is done`)
    finishRestore(prepared)
    expect(userVersion(db)).toBe(1)
    lockLeader(db, d).release()
    const again = prepareRestore(backup, db)
    discardRestore(again)
    lockLeader(db, d).release()
  })

  test('a restore is refused while a leader holds the state file, under its name or another', () => {
    const d = dir()
    const { db, backup } = stateAndBackup(d)
    const leader = lockLeader(db, d)
    try {
      expect(() => prepareRestore(backup, db)).toThrow(new RestoreError(`${db} is in use by process ${process.pid} (a running leader): stop it first, then restore`))
    } finally {
      leader.release()
    }
    mkdirSync(join(d, 'other'))
    const link = join(d, 'other', 'state.sqlite3')
    linkSync(db, link)
    const elsewhere = lockLeader(link, join(d, 'other'))
    try {
      expect(() => prepareRestore(backup, db)).toThrow(
        new RestoreError(`${db} is in use by a leader (or svc admin restore) under another name of the file (a hard link to it, or the same file mounted at another path): stop it first, then restore`),
      )
    } finally {
      elsewhere.release()
    }
    expect(userVersion(db)).toBe(2)
  })

  test('a process that opened the state file during the copy (a leader of a release that takes no lock) stops the swap; the copy is removed', async () => {
    const d = dir()
    const { db, backup } = stateAndBackup(d)
    const prepared = prepareRestore(backup, db)
    const holder = track(Bun.spawn(['bun', '-e', `require('node:fs').openSync(${JSON.stringify(db)}, 'r'); console.log('open'); await new Promise(() => {})`], { stdout: 'pipe' }))
    try {
      expect(new TextDecoder().decode((await holder.stdout.getReader().read()).value)).toBe('open\n')
      const before = readFileSync(db)
      expect(() => finishRestore(prepared)).toThrow(new RestoreError(`${db} is in use by process ${holder.pid} (a running leader?): stop it first, then restore`))
      expect(readFileSync(db).equals(before)).toBe(true)
      expect(() => openSync(prepared.tmp, 'r')).toThrow('ENOENT')
    } finally {
      holder.kill('SIGKILL')
      await holder.exited
    }
    lockLeader(db, d).release() // the refused restore let go of the lock
  })
})

describe('restore through a symlink', () => {
  test('replaces the file the link points to and keeps that file aside beside it, with its WAL; the link stays a link', () => {
    const d = dir()
    const { db, backup } = stateAndBackup(d)
    // A crashed leader's WAL, beside the real file (SQLite puts it there whatever name it was opened by).
    writeFileSync(`${db}-wal`, 'wal of a crashed leader')
    mkdirSync(join(d, 'etc'))
    const link = join(d, 'etc', 'state.sqlite3')
    symlinkSync(db, link)
    const r = restoreDatabase(backup, link, new Date('2026-01-02T03:04:05Z'))
    expect([r.path, r.previous]).toEqual([db, `${db}.pre-restore-20260102T030405Z`])
    expect([lstatSync(link).isSymbolicLink(), readlinkSync(link)]).toEqual([true, db])
    expect(readdirSync(join(d, 'etc'))).toEqual(['state.sqlite3'])
    expect(lstatSync(r.previous!).isFile()).toBe(true)
    expect(readFileSync(`${r.previous}-wal`, 'utf8')).toBe('wal of a crashed leader')
    expect(existsSync(`${db}-wal`)).toBe(false)
    expect(userVersion(link)).toBe(1)
  })
})

describe('what a restore undoes', () => {
  test('svc admin restore says that what was revoked since the backup is valid again, naming the time of its newest audit entry', () => {
    const d = dir()
    const { db, backup } = stateAndBackup(d)
    const at = Date.parse('2026-11-20T08:30:15.250Z')
    const b = new Database(backup)
    b.query("INSERT INTO audit_log (id, ts, kind) VALUES ('a1', ?, 'auth.login'), ('a2', ?, 'auth.logout')").run(at - 60_000, at)
    b.close()
    expect(restoreDatabase(backup, db).asOf).toEqual(new Date(at))
    const r = Bun.spawnSync(['bun', join(import.meta.dir, '../../src/entry.ts'), 'admin', 'restore', backup, '--db', db], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
    expect([r.exitCode, r.stderr.toString()]).toEqual([0, ''])
    expect(r.stdout.toString()).toContain(
      "\nthe state is now the backup's (its newest audit entry is from 2026-11-20T08:30:15Z): sessions, API tokens, join and node tokens revoked since are valid again, and so are passwords changed since and accounts disabled or deleted since; after a compromise, revoke them again (docs/operations.md, Backup and restore)\n",
    )
    // A backup with no audit entry (taken before anyone logged in) names no time.
    const empty = join(d, 'empty.sqlite3')
    openDb(empty).close()
    expect(restoreDatabase(empty, db).asOf).toBeNull()
  })
})

describe('restore and the artifact store', () => {
  test('the restored file names no blob as let go of: one the backup listed may have been uploaded again since, and a newer state names it', () => {
    const d = dir()
    const db = join(d, 'join_state.sqlite3')
    const state = openDb(db)
    const sha = 'a'.repeat(64)
    state.sqlite.query('INSERT INTO artifact_blob_candidates (sha256, since) VALUES (?, ?)').run(sha, Date.now())
    state.close()
    const backup = join(d, 'backup.sqlite3')
    backupDatabase(db, backup)
    restoreDatabase(backup, db)
    const restored = openDb(db, { migrate: false })
    try {
      expect(restored.sqlite.query('SELECT count(*) AS n FROM artifact_blob_candidates').get()).toEqual({ n: 0 })
    } finally {
      restored.close()
    }
    // Nothing left beside the state file but what a restore keeps aside.
    expect(readdirSync(d).filter((n) => n.includes('-wal') && !n.includes('pre-restore'))).toEqual([])
  })
})
