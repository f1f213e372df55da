// The shape of a CLI command, and the one parser every table command goes through. One table
// (commands.ts) drives parsing, `--help`, shell completion and docs/cli.md, so they cannot drift.
import { UsageError } from './usage'

export interface Flag {
  name: string
  short?: string
  /** `int`: a whole number; `string`: any text; `boolean`: a switch. */
  type: 'string' | 'int' | 'boolean'
  multiple?: boolean
  /** The placeholder shown in help: `--pool POOL`. */
  value?: string
  help: string
  choices?: readonly string[]
  min?: number
  max?: number
}

export interface Arg {
  name: string
  help: string
  optional?: boolean
}

export type Values = Record<string, string | number | boolean | string[] | undefined>

export interface Invocation {
  /** Positional arguments by name (an optional one is undefined when not given). */
  args: Record<string, string | undefined>
  flags: Values
  /** The command's usage text, for UsageErrors raised while it runs. */
  usage: string
}

export interface Command {
  path: string[]
  summary: string
  /** More sentences for `--help` and docs/cli.md. */
  description?: string
  args: Arg[]
  flags: Flag[]
  /** Which shared flags it takes: `remote` (--leader, --token), `output` (--json, --quiet), `db` (--db). */
  shared: ('remote' | 'output' | 'db')[]
  examples: string[]
  /** Handled outside the table (serve, fellow, runner, health): the table only documents it. */
  external?: boolean
  run?: (inv: Invocation) => Promise<number>
}

export interface Group {
  name: string
  summary: string
}

export const SHARED_FLAGS: Record<'remote' | 'output' | 'db', Flag[]> = {
  remote: [
    { name: 'leader', type: 'string', value: 'NAME|URL', help: 'the leader to talk to: a name from the config file or a URL (default: SVC_LEADER_URL, else the config file\'s default)' },
    { name: 'token', type: 'string', value: 'TOKEN', help: 'a personal API token, svc_pat_... (default: SVC_TOKEN, else the config file)' },
  ],
  output: [
    { name: 'json', type: 'boolean', help: 'print the API\'s JSON as it is' },
    { name: 'quiet', short: 'q', type: 'boolean', help: 'print ids only, one a line' },
  ],
  db: [{ name: 'db', type: 'string', value: 'PATH', help: 'the state database (default: SVC_JOIN_STATE_DB, else SVC_STATE_DIR/join_state.sqlite3 when SVC_STATE_DIR is set, else ./state/join_state.sqlite3)' }],
}
export const HELP_FLAG: Flag = { name: 'help', short: 'h', type: 'boolean', help: 'show this help' }

/** Every flag a command takes: its own, the shared ones it names, and --help. */
export function allFlags(cmd: Command): Flag[] {
  return [...cmd.flags, ...cmd.shared.flatMap((s) => SHARED_FLAGS[s]), HELP_FLAG]
}

const flagLabel = (f: Flag) => `--${f.name}${f.type === 'boolean' ? '' : ` ${f.value ?? (f.type === 'int' ? 'N' : f.name.toUpperCase())}`}`

export function synopsis(cmd: Command): string {
  const args = cmd.args.map((a) => (a.optional ? `[${a.name}]` : a.name)).join(' ')
  return ['svc', ...cmd.path, args, allFlags(cmd).length > 1 ? '[options]' : ''].filter(Boolean).join(' ')
}

function columns(rows: [string, string][], indent = '  '): string {
  const width = Math.min(Math.max(0, ...rows.map(([a]) => a.length)), 28)
  return rows.map(([a, b]) => (a.length > width ? `${indent}${a}\n${indent}${' '.repeat(width + 2)}${b}` : `${indent}${a.padEnd(width)}  ${b}`)).join('\n')
}

export function commandHelp(cmd: Command): string {
  const out = [`usage: ${synopsis(cmd)}`, '', cmd.summary + (cmd.description ? `\n${cmd.description}` : '')]
  if (cmd.args.length > 0) out.push('', 'arguments:', columns(cmd.args.map((a) => [a.name, a.help])))
  const label = (f: Flag) => (f.short ? `-${f.short}, ` : '') + flagLabel(f)
  const describe = (f: Flag) => f.help + (f.choices ? ` (${f.choices.join(', ')})` : '') + (f.multiple ? '; repeatable' : '')
  if (cmd.flags.length > 0) out.push('', 'options:', columns(cmd.flags.map((f) => [label(f), describe(f)])))
  const shared = [...cmd.shared.flatMap((s) => SHARED_FLAGS[s]), HELP_FLAG]
  out.push('', cmd.flags.length > 0 ? 'common options:' : 'options:', columns(shared.map((f) => [label(f), describe(f)])))
  if (cmd.examples.length > 0) out.push('', 'examples:', cmd.examples.map((e) => `  ${e}`).join('\n'))
  return out.join('\n') + '\n'
}

export function groupHelp(group: Group, cmds: Command[]): string {
  const rows = cmds.map((c): [string, string] => [c.path.slice(1).concat(c.args.map((a) => (a.optional ? `[${a.name}]` : a.name))).join(' '), c.summary])
  return `usage: svc ${group.name} <command> [options]\n\n${group.summary}\n\ncommands:\n${columns(rows)}\n\nRun \`svc ${group.name} <command> --help\` for a command's options and examples.\n`
}

/** A string flag's value that parseArgs took from the next argument although it is a flag. */
function parseError(e: unknown, usage: string): never {
  const msg = (e as Error).message
  const unknown = /^Unknown option '([^']+)'/.exec(msg)
  // A short one is most often an argument that starts with a dash ("-1 is ...", "-hello").
  if (unknown) {
    const name = unknown[1]!.startsWith('-') ? unknown[1]! : `-${unknown[1]}`
    throw new UsageError(`unknown option ${name}${name.startsWith('--') ? '' : ' (an argument that starts with "-" goes after "--": svc ... -- "-x")'}`, usage)
  }
  const ambiguous = /^Option '(?:-\w, )?(--[\w-]+)[^']*' argument is ambiguous/.exec(msg)
  if (ambiguous) throw new UsageError(`option ${ambiguous[1]} needs a value (a value that starts with "-" is written ${ambiguous[1]}=-x)`, usage)
  const missing = /^Option '(?:-\w, )?(--[\w-]+)[^']*' argument missing/.exec(msg)
  if (missing) throw new UsageError(`option ${missing[1]} needs a value`, usage)
  const bool = /^Option '(?:-\w, )?(--[\w-]+)' does not take an argument/.exec(msg)
  if (bool) throw new UsageError(`option ${bool[1]} takes no value`, usage)
  throw new UsageError(msg.split('\n')[0]!, usage)
}

/**
 * `--max-tokens -1`: parseArgs takes "-1" for an option and says --max-tokens needs a value. A
 * negative number after an option that takes a value is that value (joined: `--max-tokens=-1`),
 * so the option's own check can say what it allows.
 */
function negativeValuesJoined(argv: string[], flags: Flag[]): string[] {
  const valued = new Set(flags.filter((f) => f.type !== 'boolean').map((f) => `--${f.name}`))
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const next = argv[i + 1]
    if (a === '--') return [...out, ...argv.slice(i)]
    if (valued.has(a) && next !== undefined && /^-(\d|\.\d)/.test(next)) {
      out.push(`${a}=${next}`)
      i++
    } else out.push(a)
  }
  return out
}

/** Parses argv (after the command's path) against the command; bad input is a UsageError with its usage. */
export function parseInvocation(cmd: Command, argv: string[]): Invocation {
  const usage = commandHelp(cmd)
  const flags = allFlags(cmd)
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {}
  for (const f of flags) options[f.name] = { type: f.type === 'boolean' ? 'boolean' : 'string', ...(f.short ? { short: f.short } : {}), ...(f.multiple ? { multiple: true } : {}) }
  let parsed: { values: Record<string, unknown>; positionals: string[] }
  try {
    // node:util is loaded here, when a command line is parsed, not by every `svc serve`.
    const { parseArgs } = require('node:util') as typeof import('node:util')
    parsed = parseArgs({ args: negativeValuesJoined(argv, flags), options, allowPositionals: true, strict: true }) as typeof parsed
  } catch (e) {
    parseError(e, usage)
  }
  const values: Values = {}
  for (const f of flags) {
    const v = parsed.values[f.name]
    if (v === undefined) continue
    if (Array.isArray(v) && f.choices) {
      const bad = (v as string[]).find((x) => !f.choices!.includes(x))
      if (bad !== undefined) throw new UsageError(`--${f.name} must be one of ${f.choices.join(', ')}; got ${JSON.stringify(bad)}`, usage)
    }
    if (typeof v === 'string' && f.type !== 'boolean') {
      if (v.trim() === '') throw new UsageError(`option --${f.name} needs a value`, usage)
      if (f.choices && !f.choices.includes(v)) throw new UsageError(`--${f.name} must be one of ${f.choices.join(', ')}; got ${JSON.stringify(v)}`, usage)
      if (f.type === 'int') {
        if (!/^-?\d{1,15}$/.test(v.trim())) throw new UsageError(`--${f.name} must be a whole number; got ${JSON.stringify(v)}`, usage)
        const n = Number(v)
        if ((f.min !== undefined && n < f.min) || (f.max !== undefined && n > f.max)) throw new UsageError(`--${f.name} must be ${f.max === undefined ? `at least ${f.min}` : f.min === undefined ? `at most ${f.max}` : `from ${f.min} to ${f.max}`}; got ${n}`, usage)
        values[f.name] = n
        continue
      }
    }
    values[f.name] = v as Values[string]
  }
  const pos = parsed.positionals
  const args: Record<string, string | undefined> = {}
  cmd.args.forEach((a, i) => {
    const v = pos[i]
    if (v === undefined && !a.optional) throw new UsageError(`missing ${a.name}`, usage)
    if (v !== undefined && v.trim() === '') throw new UsageError(`${a.name} must not be empty`, usage)
    args[a.name] = v
  })
  if (pos.length > cmd.args.length) throw new UsageError(`unexpected argument: ${pos[cmd.args.length]}`, usage)
  return { args, flags: values, usage }
}
