// The leader's lock on its state file holds for every name of the file: a hard link in another
// directory, or the same file mounted at another path (a single-file bind mount, as Docker's -v
// host.sqlite3:/data/join_state.sqlite3 makes), is the same file to SQLite's data but not to its
// WAL (each name gets its own -wal), so two leaders on it overwrote each other's writes.
import { describe, expect, test } from 'bun:test'
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDb } from '../../src/db/client'
import { backupDatabase } from '../../src/db/backup'
import { LeaderLockedError, lockLeader } from '../../src/db/leader-lock'
import { startServer } from '../../src/server'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { track } from '../helpers/children'

const dir = () => mkdtempSync(join(tmpdir(), 'svc-db-lock-'))

/** A state file in `d`/A and a hard link to it in `d`/B. */
function linked(d: string): { a: string; b: string } {
  mkdirSync(join(d, 'A'))
  mkdirSync(join(d, 'B'))
  const a = join(d, 'A', 'join_state.sqlite3')
  openDb(a).close()
  const b = join(d, 'B', 'join_state.sqlite3')
  linkSync(a, b)
  return { a, b }
}

const refusal = (path: string) =>
  `another leader (or svc admin restore) has the state file ${path} open under another name (a hard link to it, or the same file mounted at another path, in a container say): stop it first, or give this one its own state file`

describe('the leader lock and other names of the state file', () => {
  test('a hard link to the state file in another directory meets the same lock, taken by another process; it is free again once that process is killed', async () => {
    const d = dir()
    const { a, b } = linked(d)
    // A real second process: the lock must hold between processes, not only between two opens of one.
    const holder = track(
      Bun.spawn(['bun', '-e', `const { lockLeader } = await import(${JSON.stringify(join(import.meta.dir, '../../src/db/leader-lock.ts'))}); lockLeader(${JSON.stringify(a)}, ${JSON.stringify(join(d, 'A'))}); console.log('held'); await new Promise(() => {})`], {
        stdout: 'pipe',
        stderr: 'inherit',
      }),
    )
    try {
      const reader = holder.stdout.getReader()
      expect(new TextDecoder().decode((await reader.read()).value)).toBe('held\n')
      expect(() => lockLeader(b, join(d, 'B'))).toThrow(new LeaderLockedError(refusal(b)))
    } finally {
      holder.kill('SIGKILL')
      await holder.exited
    }
    lockLeader(b, join(d, 'B')).release() // the system dropped it with the process
  })

  test('a second leader on a hard link is refused before it opens the file: no -wal or -shm under its name, the file unchanged', async () => {
    const d = dir()
    const { a, b } = linked(d)
    const log = createLogger('error', () => {})
    const first = await startServer(loadConfig({ SVC_STATE_DIR: join(d, 'A'), SVC_PORT: '0' }), log)
    try {
      const before = readFileSync(a)
      await expect(startServer(loadConfig({ SVC_STATE_DIR: join(d, 'B'), SVC_PORT: '0' }), log)).rejects.toThrow(refusal(b))
      expect([existsSync(`${b}-wal`), existsSync(`${b}-shm`)]).toEqual([false, false])
      expect(readFileSync(a).equals(before)).toBe(true)
    } finally {
      await first.stop()
    }
  })

  test('holding it leaves the file to SQLite: the leader writes through its own connection and a backup reads beside it', () => {
    const d = dir()
    const { a } = linked(d)
    const lock = lockLeader(a, join(d, 'A'))
    try {
      const state = openDb(a)
      state.sqlite.exec('PRAGMA user_version = 7')
      backupDatabase(a, join(d, 'copy.sqlite3'))
      state.close()
      const copy = openDb(join(d, 'copy.sqlite3'))
      expect((copy.sqlite.query('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(7)
      copy.close()
    } finally {
      lock.release()
    }
  })

  // Docker's -v host.sqlite3:/data/join_state.sqlite3 is such a mount; a leader in the container
  // cannot see the host's processes, but the lock is the kernel's, on the file.
  test.skipIf(process.platform !== 'linux' || process.getuid?.() !== 0)('the same file bind-mounted at another path meets the same lock', () => {
    const d = dir()
    mkdirSync(join(d, 'A'))
    mkdirSync(join(d, 'B'))
    const a = join(d, 'A', 'join_state.sqlite3')
    openDb(a).close()
    const b = join(d, 'B', 'join_state.sqlite3')
    writeFileSync(b, '')
    const mount = Bun.spawnSync(['mount', '--bind', a, b], { stderr: 'pipe' })
    if (mount.exitCode !== 0) return // no mounts here (a container without the capability)
    try {
      const first = lockLeader(a, join(d, 'A'))
      try {
        expect(() => lockLeader(b, join(d, 'B'))).toThrow(refusal(b))
      } finally {
        first.release()
      }
    } finally {
      Bun.spawnSync(['umount', b])
    }
  })
})
