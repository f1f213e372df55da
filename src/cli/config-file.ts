// The operator CLI's config file: named leaders with their URL and API token, and which one is the
// default. TOML, written by `svc login` with mode 0600 (it holds tokens), replaced atomically.
//
//   default = "prod"
//
//   [leaders."prod"]
//   url = "https://leader.example.org"
//   token = "svc_pat_..."
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { CliError } from './usage'

export interface LeaderEntry {
  url: string
  token: string
  /** The token's id when `svc login --email` minted it: revoked when the entry is replaced or logged out. */
  tokenId?: string
}

export interface CliConfigFile {
  default: string | null
  leaders: Record<string, LeaderEntry>
}

/** The config file's path; null (HOME unset) is refused where the file is needed, never the current directory. */
export function configPath(path: string | null): string {
  if (path === null) throw new CliError('no config file: HOME is not set; set HOME, or SVC_CLI_CONFIG to the file to use')
  return path
}

/** An errno in words, for the file errors a person can act on. */
const why = (e: unknown): string => {
  const code = (e as NodeJS.ErrnoException).code
  const words: Record<string, string> = { EACCES: 'permission denied', EPERM: 'permission denied', EISDIR: 'it is a directory', ENOTDIR: 'a part of its path is a file, not a directory', EEXIST: 'a part of its path is a file, not a directory', EROFS: 'read-only file system', ENOSPC: 'no space left on the device' }
  return (code && words[code]) ?? (e as Error).message
}

export function readConfigFile(path: string | null): CliConfigFile {
  if (path === null || !existsSync(path)) return { default: null, leaders: {} }
  // The way out of a broken file: svc login and logout refuse to guess which leaders it held.
  const bad = (what: string) => new CliError(`config file ${path} ${what}; fix it, or remove it and svc login again`)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (e) {
    throw new CliError(`cannot read the config file ${path}: ${why(e)}`)
  }
  let raw: unknown
  try {
    raw = Bun.TOML.parse(text)
  } catch (e) {
    throw bad(`is not valid TOML (${(e as Error).message.split('\n')[0]})`)
  }
  const o = raw as { default?: unknown; leaders?: unknown }
  if (o.default !== undefined && typeof o.default !== 'string') throw bad('has a `default` that is not a string')
  // An array is an object too (`leaders = []`): not the table of named leaders.
  if (o.leaders !== undefined && (typeof o.leaders !== 'object' || o.leaders === null || Array.isArray(o.leaders))) throw bad('has `leaders` that is not a table')
  const leaders: Record<string, LeaderEntry> = {}
  for (const [name, v] of Object.entries((o.leaders ?? {}) as Record<string, unknown>)) {
    const e = v as { url?: unknown; token?: unknown; token_id?: unknown }
    if (typeof e !== 'object' || e === null || typeof e.url !== 'string' || typeof e.token !== 'string') throw bad(`has a leader "${name}" without a url and a token`)
    if (e.token_id !== undefined && typeof e.token_id !== 'string') throw bad(`has a leader "${name}" whose token_id is not a string`)
    leaders[name] = { url: e.url, token: e.token, ...(e.token_id === undefined ? {} : { tokenId: e.token_id }) }
  }
  // A token file others can read is a token others have: say so, every time, until it is fixed.
  if ((statSync(path).mode & 0o077) !== 0) process.stderr.write(`svc: warning: ${path} can be read by other users; run chmod 600 ${path}\n`)
  return { default: (o.default as string | undefined) ?? null, leaders }
}

/** A TOML basic string. JSON.stringify is not one: it leaves U+007F raw, which TOML refuses. */
const q = (s: string) => `"${s.replace(/["\\\x00-\x1f\x7f]/g, (c) => (c === '"' || c === '\\' ? `\\${c}` : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))}"`

/**
 * Where the file really is: a symlinked config file (dotfiles) is written through, not replaced,
 * also when the link's target does not exist yet.
 */
function realPath(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    try {
      return lstatSync(path).isSymbolicLink() ? resolve(dirname(path), readlinkSync(path)) : path
    } catch {
      return path // not there at all: a new file
    }
  }
}

/** Refuses early, before a token is minted for it, when the file cannot be written. */
export function checkWritable(path: string): void {
  const probe = `${realPath(path)}.tmp-${process.pid}`
  try {
    mkdirSync(dirname(probe), { recursive: true, mode: 0o700 })
    closeSync(openSync(probe, 'w', 0o600))
    rmSync(probe)
  } catch (e) {
    throw new CliError(`cannot write the config file ${path}: ${why(e)}`)
  }
}

export function writeConfigFile(path: string, cfg: CliConfigFile): void {
  const lines = ['# Written by `svc login`; holds API tokens: keep it private (mode 0600).']
  if (cfg.default !== null) lines.push(`default = ${q(cfg.default)}`)
  for (const [name, e] of Object.entries(cfg.leaders)) {
    lines.push('', `[leaders.${q(name)}]`, `url = ${q(e.url)}`, `token = ${q(e.token)}`)
    if (e.tokenId !== undefined) lines.push(`token_id = ${q(e.tokenId)}`)
  }
  const real = realPath(path)
  const tmp = `${real}.tmp-${process.pid}`
  try {
    mkdirSync(dirname(real), { recursive: true, mode: 0o700 })
    writeFileSync(tmp, lines.join('\n') + '\n', { mode: 0o600 })
    chmodSync(tmp, 0o600)
    renameSync(tmp, real)
  } catch (e) {
    if (existsSync(tmp)) rmSync(tmp)
    throw new CliError(`cannot write the config file ${path}: ${why(e)}`)
  }
}

/** What a change of the config file returns when it changed nothing. */
export const UNCHANGED: unique symbol = Symbol('unchanged')

/** How long a lock is waited for before the command gives up and names it. */
const LOCK_WAIT_MS = 10_000

/**
 * Reads the config file, changes it and writes it back under an exclusive lock (FILE.lock, created
 * with O_EXCL, holding the pid), so that commands run at the same time (parallel `svc login`s) each
 * keep the others' entries instead of writing back what they read before the others wrote. A lock
 * whose process is gone (killed mid-write) is taken over. `change` returning UNCHANGED writes nothing.
 */
export function updateConfigFile<T>(path: string, change: (file: CliConfigFile) => T | typeof UNCHANGED): T | typeof UNCHANGED {
  const lock = `${realPath(path)}.lock`
  try {
    mkdirSync(dirname(lock), { recursive: true, mode: 0o700 })
  } catch (e) {
    throw new CliError(`cannot write the config file ${path}: ${why(e)}`)
  }
  const deadline = Date.now() + LOCK_WAIT_MS
  for (let waitMs = 2; ; waitMs = Math.min(waitMs * 2, 50)) {
    try {
      const fd = openSync(lock, 'wx', 0o600)
      writeFileSync(fd, `${process.pid}\n`)
      closeSync(fd)
      break
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new CliError(`cannot lock the config file ${path}: ${why(e)}`)
    }
    const holder = lockHolder(lock)
    if (holder !== null && typeof holder === 'object') {
      // Only the stale lock itself: another svc may have taken it over and made a new one meanwhile.
      if (inodeOf(lock) === holder.stale) rmSync(lock, { force: true })
      continue
    }
    if (Date.now() > deadline) throw new CliError(`the config file ${path} is locked by another svc${holder === null ? '' : ` (pid ${holder})`}; if none runs, remove ${lock}`)
    Bun.sleepSync(waitMs)
  }
  try {
    const file = readConfigFile(path)
    const result = change(file)
    // Nothing to change (logout of a leader not saved): no file is made.
    if (result !== UNCHANGED) writeConfigFile(path, file)
    return result
  } finally {
    rmSync(lock, { force: true })
  }
}

const inodeOf = (path: string): number | null => {
  try {
    return statSync(path).ino
  } catch {
    return null
  }
}

/** The pid holding a lock; {stale: its inode} when that process is gone (or the lock was left empty long ago); null when not known yet. */
function lockHolder(lock: string): number | { stale: number } | null {
  let text: string
  let age: number
  let ino: number
  try {
    const st = statSync(lock)
    ino = st.ino
    age = Date.now() - st.mtimeMs
    text = readFileSync(lock, 'utf8')
  } catch {
    return null // released meanwhile: try again
  }
  const pid = Number(text.trim())
  // Created, its pid not written yet: a moment; left so (the writer killed in between): stale.
  if (!Number.isInteger(pid) || pid <= 0) return age > 5000 ? { stale: ino } : null
  try {
    process.kill(pid, 0)
    return pid
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH' ? { stale: ino } : pid
  }
}

/** The name `svc login` files a leader under when none is given: its host and port. */
export function defaultLeaderName(url: string): string {
  return new URL(url).host
}
