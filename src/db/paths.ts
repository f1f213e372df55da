// Plain words for paths that cannot be used: a file where a directory should be gave the system's
// own ("EEXIST: file already exists, mkdir", "EFAULT: bad address ... rm").
import { statSync } from 'node:fs'
import { dirname } from 'node:path'

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
