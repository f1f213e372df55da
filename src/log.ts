// One JSON object per line on stdout (human-readable on a TTY). Callers pass fields, never secrets.
// A leaf: the agent loads it too, so it imports nothing of the leader.
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

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stdout.write(l + '\n'), pretty = false): Logger {
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
