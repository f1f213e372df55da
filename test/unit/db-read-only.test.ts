// Reading a state file without writing to it or beside it (`svc admin doctor`, and a restore's
// reading of its backup): a file under a symlink, and files on storage nobody may write.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDb, openDbReadOnly } from '../../src/db/client'

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
