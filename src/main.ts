#!/usr/bin/env bun
// Subcommand dispatch only. Each subcommand's code is imported when it runs, so `serve` does not
// load the fellow agent and `fellow` does not load the leader.
import { ConfigError, loadConfig } from './config'
import { DbOpenError } from './db/client'
import { BackupError } from './db/backup'
import { AppError } from './errors'
import { VERSION } from './version'
import { hostPort } from './http/ip'
import { CliError, UsageError } from './cli/usage'
import { helpFor, helpTopic, rootHelp, runCommand } from './cli/commands'
import { Ended, writeOut } from './cli/output'

async function serve(args: string[]): Promise<number> {
  if (args.length > 0) throw new UsageError(`serve takes no arguments (configure it with SVC_* variables), got: ${args.join(' ')}`)
  // Listening for SIGTERM/SIGINT before the server starts: one that arrives while it starts (or
  // just after it said it listens) stops it once it is up, instead of killing it half-started.
  // SIGHUP (the terminal it ran in closed) stops it the same way; its default would kill it
  // outright. A second signal ends the process at once (the handlers are gone by then).
  let stopAsked!: () => void
  const asked = new Promise<void>((resolve) => (stopAsked = resolve))
  const unlisten = () => {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    process.off('SIGHUP', onSignal)
  }
  const onSignal = () => {
    unlisten()
    stopAsked()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  process.on('SIGHUP', onSignal)
  try {
    const { startServer } = await import('./server')
    const server = await startServer(loadConfig())
    await asked
    await server.stop()
  } finally {
    unlisten()
  }
  return 0
}

/** `svc health`: exit 0 when the local leader answers its health route (the container's HEALTHCHECK). */
async function health(args: string[]): Promise<number> {
  if (args.length > 0) throw new UsageError('health takes no arguments')
  const cfg = loadConfig(process.env, { withoutSecret: true })
  const host = cfg.host === '0.0.0.0' || cfg.host === '::' ? '127.0.0.1' : cfg.host
  try {
    const res = await fetch(`http://${hostPort(host, cfg.port)}/api/v1/health`, { signal: AbortSignal.timeout(3000) })
    if (res.ok) return 0
    process.stderr.write(`svc: leader answered ${res.status}\n`)
  } catch (e) {
    process.stderr.write(`svc: leader unreachable: ${(e as Error).message}\n`)
  }
  return 1
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv
  // `svc fellow --help`, `svc admin backup -h`: help, not a refusal (before a `--`, which ends options).
  const options = rest.indexOf('--') === -1 ? rest : rest.slice(0, rest.indexOf('--'))
  if (cmd !== undefined && !cmd.startsWith('-') && (options.includes('--help') || options.includes('-h'))) {
    writeOut(helpFor(argv))
    return 0
  }
  switch (cmd) {
    case 'serve':
      return serve(rest)
    case 'fellow':
      return (await import('./cli/fellow')).runFellow(rest)
    case 'runner':
      // Started by the fellow agent for a stage of a job with runner `mlp` (docs/workloads.md).
      if (rest.length !== 1 || rest[0] !== 'mlp') throw new UsageError(`runner takes one name, mlp (the built-in runner), got: ${rest.join(' ') || 'nothing'}`)
      return (await import('./agent/mlp-runner')).runMlpRunner()
    case 'health':
      return health(rest)
    case '-h':
    case '--help':
    case 'help':
      // `svc help pools create` is `svc pools create --help`.
      writeOut(cmd === 'help' ? helpTopic(rest) : rootHelp())
      return 0
    case '-v':
    case '--version':
    case 'version':
      writeOut(`svc ${VERSION}\n`)
      return 0
    case undefined:
      throw new UsageError('missing command')
    default:
      // The operator CLI (pools, jobs, login, ...) and offline admin: src/cli/commands.ts.
      return runCommand(argv)
  }
}

/** node:util parseArgs explains positional arguments at length; one plain line is enough. */
function usageMessage(e: Error): string {
  const unknown = /^Unknown option '([^']+)'/.exec(e.message)
  if (unknown) return `unknown option ${unknown[1]}`
  const ambiguous = /^Option '(?:-\w, )?(--[\w-]+)[^']*' argument is ambiguous/.exec(e.message)
  if (ambiguous) return `option ${ambiguous[1]} needs a value (a value that starts with "-" is written ${ambiguous[1]}=-x)`
  return e.message.split('\n')[0]!
}

/** Errors print as one line, whatever their message holds. */
const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim()

function isUsage(e: unknown): boolean {
  if (e instanceof UsageError) return true
  const code = (e as { code?: string })?.code
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')
}

const argv = process.argv.slice(2)
main(argv).then(
  (code) => process.exit(code),
  (e: unknown) => {
    if (isUsage(e)) {
      // The usage of the command the mistake concerns (its own parser's, or the table's).
      const usage = (e instanceof UsageError ? e.usage : undefined) ?? helpFor(argv.slice(0, 2))
      process.stderr.write(`svc: ${oneLine(usageMessage(e as Error))}\n\n${usage}`)
      process.exit(2)
    }
    // Help or a version line whose reader went away (`svc --help | head -1`): quietly, as commands end.
    if (e instanceof Ended) process.exit(e.status)
    if (e instanceof CliError) {
      process.stderr.write(`svc: ${oneLine(e.message)}\n`)
      process.exit(1)
    }
    if (e instanceof ConfigError) {
      process.stderr.write(`svc: configuration error: ${e.message}\n`)
      process.exit(2)
    }
    if (e instanceof AppError || e instanceof DbOpenError || e instanceof BackupError) {
      process.stderr.write(`svc: ${e.message}\n`)
      process.exit(1)
    }
    process.stderr.write(`svc: ${oneLine((e as Error | null)?.message ?? String(e))}\n`)
    process.exit(1)
  },
)
