// The operator CLI's config file: named leaders with their URL and API token, and which one is the
// default. TOML, written by `svc login` with mode 0600 (it holds tokens), replaced atomically.
//
//   default = "prod"
//
//   [leaders."prod"]
//   url = "https://leader.example.org"
//   token = "svc_pat_..."
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { CliError } from './usage'

export interface LeaderEntry {
  url: string
  token: string
}

export interface CliConfigFile {
  default: string | null
  leaders: Record<string, LeaderEntry>
}

export function readConfigFile(path: string): CliConfigFile {
  if (!existsSync(path)) return { default: null, leaders: {} }
  let raw: unknown
  try {
    raw = Bun.TOML.parse(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new CliError(`config file ${path} is not valid TOML: ${(e as Error).message.split('\n')[0]}`)
  }
  const bad = (what: string) => new CliError(`config file ${path}: ${what} (svc logout, then svc login, rewrites it)`)
  const o = raw as { default?: unknown; leaders?: unknown }
  if (o.default !== undefined && typeof o.default !== 'string') throw bad('`default` must be a string')
  if (o.leaders !== undefined && (typeof o.leaders !== 'object' || o.leaders === null)) throw bad('`leaders` must be a table')
  const leaders: Record<string, LeaderEntry> = {}
  for (const [name, v] of Object.entries((o.leaders ?? {}) as Record<string, unknown>)) {
    const e = v as { url?: unknown; token?: unknown }
    if (typeof e !== 'object' || e === null || typeof e.url !== 'string' || typeof e.token !== 'string') throw bad(`leader "${name}" needs a url and a token`)
    leaders[name] = { url: e.url, token: e.token }
  }
  // A token file others can read is a token others have: say so, every time, until it is fixed.
  if ((statSync(path).mode & 0o077) !== 0) process.stderr.write(`svc: warning: ${path} can be read by other users; run chmod 600 ${path}\n`)
  return { default: (o.default as string | undefined) ?? null, leaders }
}

const q = (s: string) => JSON.stringify(s) // a TOML basic string: JSON's escapes are TOML's

export function writeConfigFile(path: string, cfg: CliConfigFile): void {
  const lines = ['# Written by `svc login`; holds API tokens: keep it private (mode 0600).']
  if (cfg.default !== null) lines.push(`default = ${q(cfg.default)}`)
  for (const [name, e] of Object.entries(cfg.leaders)) lines.push('', `[leaders.${q(name)}]`, `url = ${q(e.url)}`, `token = ${q(e.token)}`)
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const tmp = `${path}.tmp-${process.pid}`
  writeFileSync(tmp, lines.join('\n') + '\n', { mode: 0o600 })
  chmodSync(tmp, 0o600)
  renameSync(tmp, path)
}

/** The name `svc login` files a leader under when none is given: its host and port. */
export function defaultLeaderName(url: string): string {
  return new URL(url).host
}
