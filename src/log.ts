// One JSON object per line on stdout (human-readable on a TTY). Callers pass fields, never secrets.
// A leaf: the agent loads it too, so it imports nothing of the leader.
import { fstatSync, statSync, writeSync } from 'node:fs'
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
  /** Whether a line at this level would be written (to skip building fields nobody reads). */
  enabled(level: LogLevel): boolean
}

const encoder = new TextEncoder()

/**
 * A line on standard output, written at once (as Node writes to files and pipes on Linux). Not
 * through process.stdout: that is a Node stream, and creating it loads Node's stream modules,
 * about a MiB of an idle leader (docs/benchmarks.md). A descriptor someone made non-blocking
 * is waited on, a millisecond at a time, rather than a line lost.
 */
export function stdoutLine(line: string): void {
  let bytes = encoder.encode(line + '\n')
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(1, bytes))
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return // stdout closed: nowhere to log to
      Bun.sleepSync(1)
    }
  }
}

/** Whether standard output is a terminal (pretty lines instead of JSON), also without process.stdout. */
export function stdoutIsTerminal(): boolean {
  try {
    const out = fstatSync(1)
    return out.isCharacterDevice() && out.rdev !== statSync('/dev/null').rdev
  } catch {
    return false
  }
}

export function createLogger(level: LogLevel, write: (line: string) => void = stdoutLine, pretty = false): Logger {
  const min = ORDER[level]
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return
    if (pretty) {
      const extra = fields && Object.keys(fields).length > 0 ? ' ' + JSON.stringify(fields) : ''
      write(`${new Date().toISOString()} ${lvl.toUpperCase().padEnd(5)} ${msg}${extra}`)
    } else {
      write(JSON.stringify({ level: lvl, time: new Date().toISOString(), msg, ...fields }))
    }
  }
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    enabled: (lvl) => ORDER[lvl] >= min,
  }
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, enabled: () => false }
