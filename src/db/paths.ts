// Plain words for paths that cannot be used: a file where a directory should be gave the system's
// own ("EEXIST: file already exists, mkdir", "EFAULT: bad address ... rm").
import { lstatSync, readdirSync, readlinkSync, realpathSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'

/**
 * The nearest existing ancestor of `path` when it is not a directory (a file in the way of the
 * directory `path` would live in), or null when the way is clear (or nothing of it exists yet).
 */
export function fileInTheWay(path: string): string | null {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    try {
      return statSync(dir).isDirectory() ? null : dir
    } catch (e) {
      const code = (e as { code?: string }).code
      if (code === 'ENOTDIR') continue // an ancestor of it is a file: found further up
      if (code !== 'ENOENT' || dirname(dir) === dir) return null
    }
  }
}

/**
 * Copies of `dest` that a killed backup (`tag` partial) or restore (`tag` restore) left beside it,
 * `.NAME.TAG-PID` and its `-journal`, whose process is gone: they hold password and token hashes
 * and the size of the whole state, and nothing else removes them.
 */
export function removeStaleCopies(dest: string, tag: 'partial' | 'restore'): void {
  const prefix = `.${basename(dest)}.${tag}-`
  let names: string[]
  try {
    names = readdirSync(dirname(dest))
  } catch {
    return
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue
    const m = /^(\d+)(-journal)?$/.exec(name.slice(prefix.length))
    if (m === null || Number(m[1]) === process.pid || alive(Number(m[1]))) continue
    try {
      rmSync(join(dirname(dest), name), { force: true })
    } catch {
      // A directory this process cannot write: the copy it then cannot make says so in words.
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as { code?: string }).code === 'EPERM'
  }
}

/** The real path of `p` (which may not exist yet: then its directory's real path and its name). */
export function realPath(p: string, depth = 0): string {
  try {
    return realpathSync(p)
  } catch {
    // A symlink to a file not made yet: where SQLite will make it.
    try {
      if (depth < 40 && lstatSync(p).isSymbolicLink()) return realPath(resolve(dirname(p), readlinkSync(p)), depth + 1)
    } catch {
      // not there at all
    }
    try {
      return join(realpathSync(dirname(p)), basename(p))
    } catch {
      return p
    }
  }
}
