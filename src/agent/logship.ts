// The agent's log lines, echoed to stdout and shipped to the leader in batches. The buffer is
// bounded and shipping never blocks work: when the leader is away the oldest lines give way
// (with a count of how many), instead of memory growing or the training loop waiting.
import { createLogger, stdoutLine, type Logger, type LogLevel } from '../log'
// The leader's per-line and per-request limits.
import { LOG_BATCH_MAX as MAX_BATCH, LOG_LINE_MAX as MAX_LINE } from '../wire/fellow'

/**
 * A batch's encoded size (`{"lines":[...]}`, UTF-8) stays well under the leader's default body
 * limit (SVC_MAX_BODY_BYTES, 1 MiB): 500 lines of 4096 characters are 2 MB and more once escaped,
 * and a leader that refuses a batch as too large would refuse it again on every retry.
 */
export const MAX_BATCH_BYTES = 256 * 1024

/** What the agent says when the leader refused a line as too large even alone (it is dropped). */
export type OnDropped = (info: { chars: number; error: string }) => void

const encodedSize = (line: string) => Buffer.byteLength(JSON.stringify(line)) + 1

export class LogBuffer {
  private lines: string[] = []
  private dropped = 0
  /** Lines per batch; a 413 halves it (a leader with a smaller body limit), down to one line. */
  private cap = MAX_BATCH

  constructor(
    private readonly max = 2000,
    private readonly maxBytes = MAX_BATCH_BYTES,
  ) {}

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

  /** The lines per batch now (MAX_BATCH, halved by each refusal as too large, doubled back by each batch that goes through). */
  get batchCap(): number {
    return this.cap
  }

  /**
   * Ships one batch (at most `batchCap` lines and MAX_BATCH_BYTES encoded, at least one line);
   * on failure the batch goes back to the front (still bounded), so lines arrive in order and at
   * least once. A batch the leader refuses as too large (413) is not sent again as it was: the cap
   * halves (and doubles back with each batch taken), and a line refused alone is dropped
   * (`onDropped` says so), so shipping never stalls.
   */
  async flush(ship: (lines: string[]) => Promise<void>, onDropped?: OnDropped): Promise<number> {
    if (this.lines.length === 0 && this.dropped === 0) return 0
    const note = this.dropped > 0 ? [`(${this.dropped} earlier log lines dropped while the leader was unreachable)`] : []
    let bytes = 12 + note.reduce((n, l) => n + encodedSize(l), 0)
    let count = 0
    const most = Math.min(this.lines.length, this.cap - note.length)
    while (count < most) {
      const size = encodedSize(this.lines[count]!)
      if (count > 0 && bytes + size > this.maxBytes) break
      bytes += size
      count++
    }
    const batch = this.lines.splice(0, count)
    const dropped = this.dropped
    this.dropped = 0
    try {
      await ship([...note, ...batch])
      // A cap halved by a refusal grows back as batches go through: one long line that walked it
      // down to 1 held every later batch to one line, one every 2 s, for the agent's life.
      this.cap = Math.min(MAX_BATCH, this.cap * 2)
      return batch.length
    } catch (e) {
      if (isTooLarge(e) && note.length + batch.length <= 1) {
        // One line the leader will never take: dropped, or it would hold up every later line.
        onDropped?.({ chars: (batch[0] ?? note[0] ?? '').length, error: (e as Error).message })
        return 0
      }
      if (isTooLarge(e)) this.cap = Math.max(1, Math.floor((note.length + batch.length) / 2))
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

/** The leader's answer to a body over its limit (SVC_MAX_BODY_BYTES): 413. */
const isTooLarge = (e: unknown) => typeof e === 'object' && e !== null && (e as { status?: unknown }).status === 413

/** One JSON line per event to stdout, each also queued for the leader. */
export function agentLogger(level: LogLevel, buffer: LogBuffer, write: (line: string) => void = stdoutLine): Logger {
  return createLogger(level, (line) => {
    write(line)
    buffer.add(line)
  })
}
