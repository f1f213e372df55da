// A lock on the state file itself, whatever name it is reached by. The leader's other locks are
// files beside a name of it: a hard link in another directory, or the same file mounted at another
// path (Docker's -v host.sqlite3:/data/join_state.sqlite3), had a lock of its own, and two leaders
// ran on one file. SQLite gives each name its own -wal, so each leader's checkpoints wrote over the
// other's pages: acknowledged writes were lost. A /proc scan for other holders sees neither
// another container's processes nor one started in the same moment; a lock of the kernel's on the
// file sees every open of it on this machine, in any container, and goes with the process however
// it ends.
//
// It is an open file description lock (Linux 3.15) on one byte SQLite never locks, taken through
// libc's fcntl (Node has none): SQLite's own locks on the file are classic POSIX locks, which
// belong to the process, and unlocking or closing them leaves this one alone. flock() would be
// simpler, but NFS turns it into a lock on the whole file, which would shut SQLite out of it.
import { dlopen, FFIType, ptr } from 'bun:ffi'
import { closeSync, constants, openSync } from 'node:fs'

export interface FileLock {
  /**
   * Call only once this process has closed its SQLite connections to the file: closing any
   * descriptor of a file drops every POSIX lock the process holds on it, SQLite's included.
   */
  release(): void
}

const F_OFD_GETLK = 36
const F_OFD_SETLK = 37
const F_WRLCK = 1
const F_UNLCK = 2
// SQLite locks bytes 0x40000000-0x400001ff of a database file (pending, reserved and shared bytes);
// this is the next one, which no SQLite lock covers.
const LOCK_BYTE = 0x40000200n

type Fcntl = (fd: number, cmd: number, arg: number) => number
let fcntl: Fcntl | null | undefined

/** libc's fcntl where its struct flock is the one below (64-bit Linux with glibc), else null. */
function libcFcntl(): Fcntl | null {
  if (fcntl !== undefined) return fcntl
  fcntl = null
  if (process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64')) {
    try {
      const libc = dlopen('libc.so.6', { fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.ptr], returns: FFIType.i32 } })
      fcntl = (fd, cmd, arg) => libc.symbols.fcntl(fd, cmd, arg as never) as number
    } catch {
      // musl, or no libc to load: the locks on names only
    }
  }
  return fcntl
}

/** struct flock on 64-bit Linux: l_type, l_whence (SEEK_SET), l_start, l_len, l_pid (0 for OFD locks). */
function flockOfByte(type: number): Uint8Array {
  const buf = new Uint8Array(32)
  const view = new DataView(buf.buffer)
  view.setInt16(0, type, true)
  view.setBigInt64(8, LOCK_BYTE, true)
  view.setBigInt64(16, 1n, true)
  return buf
}

/**
 * Takes the lock on the file at `path` (made, empty and owner-only, when `create` and missing).
 * 'busy' when another open of the file holds it, in this process or another; null when it cannot
 * be taken here (not Linux with glibc, a kernel without such locks, or a file this process cannot
 * open for writing, which opening the state file then refuses in its own words).
 */
export function lockFileItself(path: string, create: boolean): FileLock | 'busy' | null {
  const call = libcFcntl()
  if (call === null) return null
  let fd: number
  try {
    fd = openSync(path, constants.O_RDWR | (create ? constants.O_CREAT : 0), 0o600)
  } catch {
    return null
  }
  const want = flockOfByte(F_WRLCK)
  if (call(fd, F_OFD_SETLK, ptr(want)) === 0) return { release: () => closeSync(fd) }
  // Refused: held by another open, or not supported at all; asking who holds it tells them apart.
  const probe = flockOfByte(F_WRLCK)
  const held = call(fd, F_OFD_GETLK, ptr(probe)) === 0 && new DataView(probe.buffer).getInt16(0, true) !== F_UNLCK
  // Closed at once: this process has no SQLite connection to the file yet whose locks it would drop.
  closeSync(fd)
  return held ? 'busy' : null
}
