// Reading a state file without writing to it or beside it (`svc admin doctor`, and a restore's
// reading of its backup): a file under a symlink, and files on storage nobody may write.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDb, openDbReadOnly } from '../../src/db/client'
import { backupDatabase } from '../../src/db/backup'
import { checkBackup, restoreDatabase } from '../../src/db/restore'

const dir = () => mkdtempSync(join(tmpdir(), 'svc-db-read-only-'))

/**
 * A state file as a crashed leader leaves it: its last change only in the -wal beside it (copied
 * while the connection was open, so nothing was checkpointed), mode 0444.
 */
function crashedCopy(d: string): string {
  const live = join(d, 'live.sqlite3')
  const state = openDb(live)
  state.sqlite.exec('PRAGMA wal_autocheckpoint = 0')
  state.sqlite.exec('CREATE TABLE only_in_wal (x)')
  mkdirSync(join(d, 'data'))
  const copy = join(d, 'data', 'join_state.sqlite3')
  for (const ext of ['', '-wal', '-shm']) copyFileSync(live + ext, copy + ext)
  state.close()
  chmodSync(copy, 0o444)
  return copy
}

const tables = (s: { sqlite: Database }) => (s.sqlite.query("SELECT name FROM sqlite_master WHERE name = 'only_in_wal'").all() as { name: string }[]).map((r) => r.name)

describe('reading a state file through a symlink', () => {
  test('a read-only file with a -wal beside it, opened by a link elsewhere, is read with its WAL (it was read as if none were there)', () => {
    const d = dir()
    const copy = crashedCopy(d)
    mkdirSync(join(d, 'etc'))
    const link = join(d, 'etc', 'state.sqlite3')
    symlinkSync(copy, link)
    const direct = openDbReadOnly(copy)
    expect(tables(direct)).toEqual(['only_in_wal'])
    direct.close()
    const linked = openDbReadOnly(link)
    expect(tables(linked)).toEqual(['only_in_wal'])
    linked.close()
    expect(readdirSync(join(d, 'etc'))).toEqual(['state.sqlite3'])
  })
})

/** A cold backup as the docs describe it: the stopped leader's file copied as it is (it stays in WAL mode). */
function coldBackup(d: string): string {
  const live = join(d, 'live.sqlite3')
  openDb(live).close()
  mkdirSync(join(d, 'backups'))
  const cold = join(d, 'backups', 'cold.sqlite3')
  copyFileSync(live, cold)
  return cold
}

/**
 * Makes `d` read-only for this process as a snapshot is: a read-only bind mount as root, else no
 * write permission on the directory (SQLite can then make no -shm beside the file either).
 */
function readOnly(d: string): () => void {
  if (process.getuid?.() !== 0) {
    chmodSync(d, 0o555)
    return () => chmodSync(d, 0o755)
  }
  expect(Bun.spawnSync(['mount', '--bind', d, d]).exitCode).toBe(0)
  expect(Bun.spawnSync(['mount', '-o', 'remount,ro,bind', d]).exitCode).toBe(0)
  return () => void Bun.spawnSync(['umount', d])
}

describe('a cold backup, in WAL mode, with nothing beside it', () => {
  test.skipIf(process.platform !== 'linux')('on read-only storage it is checked, restored, backed up and doctored (it was "is not an SQLite database: unable to open database file")', () => {
    const d = dir()
    const cold = coldBackup(d)
    const writable = readOnly(join(d, 'backups'))
    try {
      expect(checkBackup(cold).missing).toBe(0)
      const r = restoreDatabase(cold, join(d, 'state', 'join_state.sqlite3'))
      expect(r.previous).toBeNull()
      expect(backupDatabase(cold, join(d, 'again.sqlite3')).path).toBe(join(d, 'again.sqlite3'))
      const ro = openDbReadOnly(cold)
      expect((ro.sqlite.query('SELECT count(*) AS n FROM __migrations').get() as { n: number }).n).toBeGreaterThan(0)
      ro.close()
    } finally {
      writable()
    }
    expect(readdirSync(join(d, 'backups'))).toEqual(['cold.sqlite3'])
  })

  test('on writable storage, restore, backup and doctor leave nothing beside it (they left -wal and -shm)', () => {
    const d = dir()
    const cold = coldBackup(d)
    checkBackup(cold)
    restoreDatabase(cold, join(d, 'state', 'join_state.sqlite3'))
    backupDatabase(cold, join(d, 'again.sqlite3'))
    openDbReadOnly(cold).close()
    expect(readdirSync(join(d, 'backups'))).toEqual(['cold.sqlite3'])
  })

  test('a writer that comes while it is read is noticed: what was read may be torn', () => {
    const d = dir()
    const cold = coldBackup(d)
    const ro = openDbReadOnly(cold)
    expect(ro.changed()).toBe(false)
    const writer = openDb(cold)
    writer.sqlite.exec('CREATE TABLE later (x)')
    expect(ro.changed()).toBe(true)
    writer.close()
    ro.close()
    expect(existsSync(cold)).toBe(true)
  })
})
