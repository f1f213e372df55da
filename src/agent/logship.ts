// The agent's log lines, echoed to stdout and shipped to the leader in batches. The buffer is
// bounded and shipping never blocks work: when the leader is away the oldest lines give way
// (with a count of how many), instead of memory growing or the training loop waiting.
import { createLogger, stdoutLine, type Logger, type LogLevel } from '../log'
// The leader's per-line and per-request limits.
import { LOG_BATCH_MAX as MAX_BATCH, LOG_LINE_MAX as MAX_LINE } from '../wire/fellow'

export class LogBuffer {
  private lines: string[] = []
  private dropped = 0

  constructor(private readonly max = 2000) {}

  add(line: string): void {
    this.lines.push(line.length > MAX_LINE ? line.slice(0, MAX_LINE - 1) + '…' : line)
    if (this.lines.length > this.max) {
      this.dropped += this.lines.length - this.max
      this.lines.splice(0, this.lines.length - this.max)
    }
  }

  get size(): number {
    return this.lines.length
  }

  /** Ships one batch; on failure the batch goes back to the front (still bounded). */
  async flush(ship: (lines: string[]) => Promise<void>): Promise<number> {
    if (this.lines.length === 0 && this.dropped === 0) return 0
    const batch = this.lines.splice(0, MAX_BATCH - (this.dropped > 0 ? 1 : 0))
    const note = this.dropped > 0 ? [`(${this.dropped} earlier log lines dropped while the leader was unreachable)`] : []
    const dropped = this.dropped
    this.dropped = 0
    try {
      await ship([...note, ...batch])
      return batch.length
    } catch {
      this.lines.unshift(...batch)
      this.dropped += dropped
      if (this.lines.length > this.max) {
        this.dropped += this.lines.length - this.max
        this.lines.splice(0, this.lines.length - this.max)
      }
      return 0
    }
  }
}

/** One JSON line per event to stdout, each also queued for the leader. */
export function agentLogger(level: LogLevel, buffer: LogBuffer, write: (line: string) => void = stdoutLine): Logger {
  return createLogger(level, (line) => {
    write(line)
    buffer.add(line)
  })
}
