// What this machine's operator lets the fellow run: its inference engines and its training
// runners, declared with flags (`--engine NAME=URL`, `--engine-cmd 'NAME=COMMAND'`,
// `--runner 'NAME=COMMAND'`) or in a config file (`--config fellow.toml`). Only the operator
// declares these; nothing the leader or a pool member sends becomes a URL or a command line here
// (a request names a model and a job names a runner; each maps to a declared one or to nothing).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { issueText as plainIssueText } from '../wire/issue-text'
import { redactUrl } from './redact'

/** The built-in Markov model, served when no engine is declared (or declared as NAME=builtin). */
export const BUILTIN_MODEL = 'tiny-llm'
export const DEFAULT_MAX_CONCURRENT = 4
/** Relative to the engine's base URL: GET {url}/models answers on every OpenAI-compatible server. */
export const DEFAULT_HEALTH_PATH = 'models'
export const DEFAULT_REQUEST_TIMEOUT_S = 60
export const DEFAULT_START_TIMEOUT_S = 300
export const DEFAULT_STOP_GRACE_S = 10

export interface EngineSpec {
  /** The engine's name (the flag's NAME, the file's table name): logs and pages show it. */
  name: string
  /** The model announced to the leader: what chat clients put in `model`. */
  model: string
  /** The `model` sent to the engine (vLLM insists on its served name); default `model`. */
  upstreamModel: string
  /** 'builtin', or the OpenAI-compatible base URL (…/v1); `{port}` is replaced for a started engine. */
  url: string
  /** Words of the command the agent starts and supervises (no shell); null: already running. */
  command: string[] | null
  env: Record<string, string>
  maxConcurrent: number
  /** Relative to the base URL, or absolute from its origin when it starts with '/'. */
  healthPath: string
  /** Sent as a bearer token to the engine (vLLM --api-key, llama-server --api-key). */
  apiKey: string | null
  /** The longest wait for the engine's first byte, and between two chunks. */
  requestTimeoutS: number
  /** How long a started engine may take to answer its health check (loading weights). */
  startTimeoutS: number
  /** After SIGTERM, how long a started engine has to exit before SIGKILL. */
  stopGraceS: number
  /**
   * A model file in the leader's artifact store (its id), downloaded before the engine starts;
   * `{model_file}` in the command (and SVC_MODEL_FILE) is its local path.
   */
  modelArtifact: string | null
}

export class FellowConfigError extends Error {}

const NAME = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'
const COMMAND_MAX = 8000
const COMMAND_WORDS_MAX = 500
const COMMAND_WORD_MAX = 4000
const MODEL = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$'

const EngineTable = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    command: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: COMMAND_MAX }), Type.Array(Type.String({ maxLength: COMMAND_WORD_MAX }), { minItems: 1, maxItems: COMMAND_WORDS_MAX })])),
    model: Type.Optional(Type.String({ pattern: MODEL })),
    upstream_model: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    max_concurrent: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
    health_path: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    env: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String({ maxLength: 100_000 }), { additionalProperties: false })),
    api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
    request_timeout_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
    start_timeout_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
    stop_grace_s: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
    model_artifact: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' })),
  },
  { additionalProperties: false },
)
const RunnerTable = Type.Object(
  {
    command: Type.Union([Type.String({ minLength: 1, maxLength: COMMAND_MAX }), Type.Array(Type.String({ maxLength: COMMAND_WORD_MAX }), { minItems: 1, maxItems: COMMAND_WORDS_MAX })]),
    env: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String({ maxLength: 100_000 }), { additionalProperties: false })),
    stop_grace_s: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
  },
  { additionalProperties: false },
)
const FileShape = Type.Object(
  {
    engines: Type.Optional(Type.Record(Type.String({ pattern: NAME }), EngineTable)),
    runners: Type.Optional(Type.Record(Type.String({ pattern: NAME }), RunnerTable)),
  },
  { additionalProperties: false },
)

/** The built-in runner (the MLP of src/agent/mlp.ts): offered by every fellow. */
export const BUILTIN_RUNNER = 'mlp'

/**
 * The built-in runner is this program itself: `svc runner mlp` from the compiled binary, or
 * `bun src/main.ts runner mlp` when the agent runs from source (tests, development).
 */
export function builtinRunner(): RunnerSpec {
  const compiled = Bun.main.startsWith('/$bunfs/') || Bun.main.includes('~BUN')
  const self = compiled ? [process.execPath] : [process.execPath, join(import.meta.dir, '..', 'main.ts')]
  return { name: BUILTIN_RUNNER, command: [...self, 'runner', BUILTIN_RUNNER], env: {}, stopGraceS: DEFAULT_STOP_GRACE_S }
}

export interface RunnerSpec {
  /** What a job names in `runner`. */
  name: string
  /** Words of the command started for each of a job's stages on this fellow (no shell). */
  command: string[]
  env: Record<string, string>
  /** After SIGTERM (STOP), how long the runner has to exit before SIGKILL. */
  stopGraceS: number
}
type EngineTable = Static<typeof EngineTable>

/**
 * A command line split into words the way a POSIX shell splits a simple command: whitespace
 * separates, single quotes keep everything, double quotes keep all but \" and \\, a backslash
 * escapes the next character. No variables, globs, pipes or redirections: the words are run as
 * they are (write `sh -c '...'` for a shell).
 */
export function splitWords(line: string): string[] {
  const words: string[] = []
  let word = ''
  let inWord = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (c === "'") {
      const end = line.indexOf("'", i + 1)
      if (end < 0) throw new FellowConfigError('unterminated single quote')
      word += line.slice(i + 1, end)
      i = end
      inWord = true
    } else if (c === '"') {
      let j = i + 1
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && (line[j + 1] === '"' || line[j + 1] === '\\')) j++
        word += line[j]
      }
      if (j >= line.length) throw new FellowConfigError('unterminated double quote')
      i = j
      inWord = true
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw new FellowConfigError('a backslash at the end')
      word += line[++i]
      inWord = true
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    } else {
      word += c
      inWord = true
    }
  }
  if (inWord) words.push(word)
  return words
}

function checkUrl(url: string, where: string, allowPort: boolean): void {
  if (url === 'builtin') return
  let u: URL
  try {
    u = new URL(allowPort ? url.replaceAll('{port}', '1') : url)
  } catch {
    throw new FellowConfigError(`${where}: not a URL: ${JSON.stringify(redactUrl(url))}`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new FellowConfigError(`${where}: the URL must be http or https, got ${u.protocol}`)
}

function spec(name: string, t: EngineTable, where: string): EngineSpec {
  if (!new RegExp(NAME).test(name)) throw new FellowConfigError(`${where}: the engine name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit, got ${JSON.stringify(name)}`)
  let command: string[] | null = null
  if (t.command !== undefined) {
    if (typeof t.command === 'string' && t.command.length > COMMAND_MAX) throw new FellowConfigError(`${where}: the command line is too long: ${t.command.length} characters, at most ${COMMAND_MAX}`)
    try {
      command = typeof t.command === 'string' ? splitWords(t.command) : t.command
    } catch (e) {
      throw new FellowConfigError(`${where}: the command cannot be split into words: ${(e as Error).message}`)
    }
    if (command.length === 0 || command[0] === '') throw new FellowConfigError(`${where}: the command is empty${command.length > 0 ? ' (its first word, the program, is "")' : ''}`)
  }
  if (command === null && t.url === undefined) throw new FellowConfigError(`${where}: give a url (an engine already running) or a command (one the agent starts)`)
  if (command !== null && !command.some((w) => w.includes('{port}')) && t.url === undefined) {
    throw new FellowConfigError(`${where}: the command must take {port} (the free loopback port the agent picks), or give the url it listens on`)
  }
  const url = t.url ?? 'http://127.0.0.1:{port}/v1'
  // Before the URL is parsed: without a command, {port} would only read as "not a URL".
  if (url.includes('{port}') && command === null) throw new FellowConfigError(`${where}: {port} in the url needs a command that listens on it (--engine-cmd, or command = ... in the config file)`)
  checkUrl(url, where, command !== null)
  if (url === 'builtin' && command !== null) throw new FellowConfigError(`${where}: the built-in engine takes no command`)
  if (t.model_artifact !== undefined && command === null) throw new FellowConfigError(`${where}: model_artifact needs a command (the engine the agent starts with the file)`)
  if (command?.some((w) => w.includes('{model_file}')) && t.model_artifact === undefined) throw new FellowConfigError(`${where}: {model_file} in the command needs model_artifact = "<artifact id>"`)
  const model = t.model ?? (url === 'builtin' ? BUILTIN_MODEL : name)
  if (!new RegExp(MODEL).test(model)) throw new FellowConfigError(`${where}: the model name must be 1 to 200 characters: letters, digits and . _ : / @ + -, starting with a letter or digit (set model = "...")`)
  return {
    name,
    model,
    upstreamModel: t.upstream_model ?? model,
    url: url.replace(/\/+$/, ''),
    command,
    env: t.env ?? {},
    maxConcurrent: t.max_concurrent ?? DEFAULT_MAX_CONCURRENT,
    healthPath: t.health_path ?? DEFAULT_HEALTH_PATH,
    apiKey: t.api_key ?? null,
    requestTimeoutS: t.request_timeout_s ?? DEFAULT_REQUEST_TIMEOUT_S,
    startTimeoutS: t.start_timeout_s ?? DEFAULT_START_TIMEOUT_S,
    stopGraceS: t.stop_grace_s ?? DEFAULT_STOP_GRACE_S,
    modelArtifact: t.model_artifact?.toLowerCase() ?? null,
  }
}

/** `NAME=VALUE` of a repeated flag. */
function nameValue(flag: string, arg: string): [string, string] {
  const at = arg.indexOf('=')
  // An engine URL may carry credentials: shown as *** like in every log line (redact.ts).
  if (at <= 0 || at === arg.length - 1) throw new FellowConfigError(`${flag} takes NAME=${flag === '--engine' ? 'URL' : 'COMMAND'}, got ${JSON.stringify(flag === '--engine' ? arg.slice(0, at + 1) + redactUrl(arg.slice(at + 1)) : arg)}`)
  return [arg.slice(0, at), arg.slice(at + 1)]
}

function runnerSpec(name: string, t: Static<typeof RunnerTable>, where: string): RunnerSpec {
  if (!new RegExp(NAME).test(name)) throw new FellowConfigError(`${where}: the runner name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit, got ${JSON.stringify(name)}`)
  if (name === BUILTIN_RUNNER) throw new FellowConfigError(`${where}: '${BUILTIN_RUNNER}' is the built-in runner's name; give yours another`)
  if (typeof t.command === 'string' && t.command.length > COMMAND_MAX) throw new FellowConfigError(`${where}: the command line is too long: ${t.command.length} characters, at most ${COMMAND_MAX}`)
  let command: string[]
  try {
    command = typeof t.command === 'string' ? splitWords(t.command) : t.command
  } catch (e) {
    throw new FellowConfigError(`${where}: the command cannot be split into words: ${(e as Error).message}`)
  }
  if (command.length === 0 || command[0] === '') throw new FellowConfigError(`${where}: the command is empty${command.length > 0 ? ' (its first word, the program, is "")' : ''}`)
  return { name, command, env: t.env ?? {}, stopGraceS: t.stop_grace_s ?? DEFAULT_STOP_GRACE_S }
}

/** A config file's text (TOML), checked; `file` names it in errors. */
function parseFile(text: string, file: string): Static<typeof FileShape> {
  let data: unknown
  try {
    data = Bun.TOML.parse(text)
  } catch (e) {
    throw new FellowConfigError(`${file}: not valid TOML: ${(e as Error).message}`)
  }
  const first = Value.Errors(FileShape, data).First()
  if (first) {
    const path = first.path.replace(/^\//, '').replaceAll('/', '.') || '(top level)'
    throw new FellowConfigError(`${file}: ${path}: ${issueText(first)}`)
  }
  return data as Static<typeof FileShape>
}

/** Plain words for what the file's schema refused (TypeBox's read "Expected union value"). */
function issueText(e: ValueError): string {
  if (/\/env\/[^/]*$/.test(e.path) && e.type !== ValueErrorType.String) return 'environment variable names are letters, digits and _, not starting with a digit'
  if (e.type === ValueErrorType.ObjectAdditionalProperties) {
    const known = Object.keys((e.schema as { properties?: object }).properties ?? {})
    return known.length > 0 && e.schema !== FileShape ? `unknown setting (the settings are ${known.join(', ')})` : 'unknown setting (the file holds [engines.NAME] and [runners.NAME] tables)'
  }
  if (e.schema === RunnerTable.properties.command || e.schema === EngineTable.properties.command) {
    const v = e.value as unknown
    if (typeof v === 'string' && v.length > COMMAND_MAX) return `the command line is too long: ${v.length} characters, at most ${COMMAND_MAX}`
    if (Array.isArray(v) && v.length > COMMAND_WORDS_MAX) return `the command has too many words: ${v.length}, at most ${COMMAND_WORDS_MAX}`
    if (Array.isArray(v) && v.some((w) => typeof w === 'string' && w.length > COMMAND_WORD_MAX)) return `a word of the command is too long: at most ${COMMAND_WORD_MAX} characters each`
    return 'must be a command line (a string) or its words (a list of strings), not empty'
  }
  if (e.schema === EngineTable.properties.model) return 'the model name must be 1 to 200 characters: letters, digits and . _ : / @ + -, starting with a letter or digit'
  if (e.schema === EngineTable.properties.model_artifact) return 'must be an artifact id, a UUID like 0b6f3c1e-5d2a-4c8e-9f10-2a3b4c5d6e7f (svc artifacts list shows them)'
  return plainIssueText(e.schema, e.type, e.message)
}

/** The engines of a config file's text (TOML); `file` names it in errors. */
export function enginesFromToml(text: string, file: string): EngineSpec[] {
  return Object.entries(parseFile(text, file).engines ?? {}).map(([name, t]) => spec(name, t, `${file}: engines.${name}`))
}

export interface EngineFlags {
  engine?: string[]
  engineCmd?: string[]
  config?: string
}

export interface WorkloadFlags extends EngineFlags {
  runner?: string[]
}

function readConfig(path: string, readFile: (path: string) => string): string {
  try {
    return readFile(path)
  } catch (e) {
    throw new FellowConfigError(`--config ${path}: cannot read it: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
}

/**
 * The runners this fellow offers besides the built-in `mlp`: the config file's, then the flags'
 * (`--runner 'NAME=COMMAND'`). A name declared twice is refused.
 */
export function loadRunners(flags: WorkloadFlags, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): RunnerSpec[] {
  const out: RunnerSpec[] = []
  if (flags.config !== undefined) {
    const file = parseFile(readConfig(flags.config, readFile), flags.config)
    out.push(...Object.entries(file.runners ?? {}).map(([name, t]) => runnerSpec(name, t, `${flags.config}: runners.${name}`)))
  }
  for (const arg of flags.runner ?? []) {
    const [name, command] = nameValue('--runner', arg)
    out.push(runnerSpec(name, { command }, `--runner ${name}`))
  }
  const names = new Set<string>()
  for (const r of out) {
    if (names.has(r.name)) throw new FellowConfigError(`the runner ${r.name} is declared twice`)
    names.add(r.name)
  }
  return out
}

/**
 * The engines this fellow serves: the config file's, then the flags'. A name or model declared
 * twice is refused. None declared: the built-in tiny-llm, the zero-setup default.
 */
export function loadEngines(flags: EngineFlags, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): EngineSpec[] {
  const out: EngineSpec[] = []
  if (flags.config !== undefined) out.push(...enginesFromToml(readConfig(flags.config, readFile), flags.config))
  for (const arg of flags.engine ?? []) {
    const [name, url] = nameValue('--engine', arg)
    out.push(spec(name, { url }, `--engine ${name}`))
  }
  for (const arg of flags.engineCmd ?? []) {
    const [name, command] = nameValue('--engine-cmd', arg)
    out.push(spec(name, { command }, `--engine-cmd ${name}`))
  }
  const names = new Set<string>()
  const models = new Set<string>()
  for (const e of out) {
    if (names.has(e.name)) throw new FellowConfigError(`the engine ${e.name} is declared twice`)
    if (models.has(e.model)) throw new FellowConfigError(`the model ${e.model} is served by two engines; give one of them another model = "..."`)
    names.add(e.name)
    models.add(e.model)
  }
  if (out.length === 0) out.push(spec('builtin', { url: 'builtin' }, 'the built-in engine'))
  return out
}

/**
 * Refuses a declared command whose program is not there: a fellow would otherwise offer a runner
 * every job placed on it fails with, or retry an engine forever. Looked up as the child will be
 * started (src/agent/lines.ts: the command's PATH, its own env's if it sets one).
 */
export function checkPrograms(workloads: { engines: EngineSpec[]; runners: RunnerSpec[] }, env: Record<string, string | undefined>): void {
  const declared = [...workloads.runners.map((r) => ({ what: `runner ${r.name}`, ...r })), ...workloads.engines.map((e) => ({ what: `engine ${e.name}`, ...e }))]
  for (const { what, command, env: own } of declared) {
    const program = command?.[0]
    if (program === undefined) continue
    if (Bun.which(program, { PATH: own.PATH ?? env.PATH ?? '' }) === null) {
      throw new FellowConfigError(`${what}: ${program}: ${program.includes('/') ? 'no such file, or not executable' : 'not found on PATH, or not executable'}`)
    }
  }
}

/** Engines and runners together, the config file read once (what `svc fellow` starts with). */
export function loadWorkloads(flags: WorkloadFlags, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): { engines: EngineSpec[]; runners: RunnerSpec[] } {
  const text = flags.config !== undefined ? readConfig(flags.config, readFile) : ''
  const once = () => text
  return { engines: loadEngines(flags, once), runners: loadRunners(flags, once) }
}
