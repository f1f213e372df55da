// A child process's output, line by line: what the agent ships as log lines and reads progress
// from. A line longer than `maxChars` is passed on in pieces rather than held without bound.
import { monotonicNow, type TimerClock } from '../time'

export async function readLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void, maxChars = 64 * 1024): Promise<void> {
  const dec = new TextDecoder()
  let rest = ''
  try {
    for await (const chunk of stream) {
      rest += dec.decode(chunk, { stream: true })
      let nl: number
      while ((nl = rest.indexOf('\n')) >= 0) {
        const line = rest.slice(0, nl).replace(/\r$/, '')
        rest = rest.slice(nl + 1)
        if (line !== '') onLine(line)
      }
      if (rest.length > maxChars) {
        onLine(rest)
        rest = ''
      }
    }
  } catch {
    // the process went away
  }
  if (rest !== '') onLine(rest)
}

/**
 * At most `perSecond` lines a second go on; the rest are counted and said in one line when their
 * second is over, so a child that floods its output cannot flood the agent's log (and the
 * leader's) with it.
 */
export class LineLimiter {
  private windowStart = -Infinity
  private passed = 0
  private suppressed = 0
  private cancel: (() => void) | null = null

  constructor(
    private readonly perSecond: number,
    private readonly clock: TimerClock,
    private readonly onSuppressed: (count: number) => void,
  ) {}

  /** True when this line may be logged. On the monotonic clock: a step back of the wall clock dropped every line for the step's length. */
  allow(): boolean {
    const t = monotonicNow(this.clock)
    if (t - this.windowStart >= 1000) {
      this.flush()
      this.windowStart = t
      this.passed = 0
    }
    if (this.passed < this.perSecond) {
      this.passed++
      return true
    }
    if (this.suppressed++ === 0) this.cancel = this.clock.setTimeout(() => this.flush(), this.windowStart + 1000 - t)
    return false
  }

  /** Says what is counted so far (its second is over, or the child exited). */
  flush(): void {
    this.cancel?.()
    this.cancel = null
    if (this.suppressed > 0) this.onSuppressed(this.suppressed)
    this.suppressed = 0
  }
}

/**
 * Calls `send` at most every `everyMs` (on the monotonic clock), the last call always: a call
 * within that time is held until it is over, and the calls meanwhile fold into it, so `send` reads
 * the latest figures when it goes. A child printing status lines in a loop (progress, checkpoint
 * lines) makes one report per interval, not one per line.
 */
export class Throttle {
  private last = -Infinity
  private held: ReturnType<typeof setTimeout> | null = null

  constructor(
    private readonly clock: TimerClock,
    private readonly everyMs: number,
    private readonly send: () => void,
  ) {}

  request(): void {
    if (this.held) return
    const wait = this.last + this.everyMs - monotonicNow(this.clock)
    if (wait <= 0) this.fire()
    else this.held = setTimeout(() => this.fire(), wait)
  }

  /** Sends a held call now (the child exited). */
  flush(): void {
    if (this.held) this.fire()
  }

  /** Drops a held call (paused: it must not say "running" after "paused"). */
  cancel(): void {
    if (this.held) clearTimeout(this.held)
    this.held = null
  }

  private fire(): void {
    this.cancel()
    this.last = monotonicNow(this.clock)
    this.send()
  }
}

/**
 * The environment a child (an engine, a runner) inherits from the agent: everything but the
 * agent's own SVC_* settings, so a join token given as SVC_JOIN_TOKEN never reaches it. A runner
 * gets the SVC_* variables of its contract explicitly. MIMALLOC_PURGE_DELAY goes too when the
 * agent set it for itself (src/entry.ts marks that with SVC_ALLOCATOR_TUNED): a tuning of Bun's
 * allocator for the agent's own frames, not the operator's wish for a Bun or mimalloc runner.
 */
export function childEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const ours = env.SVC_ALLOCATOR_TUNED === '1'
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !k.startsWith('SVC_') && !(ours && k === 'MIMALLOC_PURGE_DELAY')) out[k] = v
  return out
}

/** util-linux's setpriv and setsid, looked up once (Linux only). */
let wrappers: { setpriv: string | null; setsid: string | null } | undefined
const wrappersOf = () => (wrappers ??= process.platform === 'linux' ? { setpriv: Bun.which('setpriv'), setsid: Bun.which('setsid') } : { setpriv: null, setsid: null })

/**
 * Starts a child of the agent (a runner, an engine) that does not outlive it. On Linux the
 * command goes through util-linux's `setpriv --pdeathsig TERM`, so the kernel sends the child
 * SIGTERM when the agent dies, however it dies (SIGKILL, the OOM killer): a runner or engine left
 * behind would hold the GPU and its port with nobody to stop it. And through `setsid` (which
 * execs in place: same pid): the child leads a process group of its own, so that signalChild
 * reaches what it started too (`sh -c`, a launcher's workers, an engine's GPU processes), and a
 * Ctrl-C at the agent's terminal is the agent's to handle. The command is looked up on PATH first,
 * so a missing one fails here as it would without the wrappers. Elsewhere (or without them) the
 * command runs as is; a runner then learns that the agent is gone from its stdin reaching end of
 * file (docs/workloads.md).
 */
export function spawnChild(argv: string[], env: Record<string, string>, stdin: 'pipe' | 'ignore') {
  const [cmd, ...args] = argv
  if (cmd === undefined || cmd === '') throw new Error('the command is empty (its first word, the program, is "")')
  const path = Bun.which(cmd, { PATH: env.PATH ?? '' })
  if (path === null) throw new Error(`${cmd}: not found (on PATH) or not executable`)
  const { setpriv, setsid } = wrappersOf()
  const wrapped = setpriv ? [setpriv, '--pdeathsig', 'TERM', '--', path, ...args] : [path, ...args]
  const full = setsid ? [setsid, '--', ...wrapped] : wrapped
  return Bun.spawn(full, { env, stdin, stdout: 'pipe', stderr: 'pipe' })
}

/**
 * Sends `sig` to a child spawnChild started and to every process of its group (what it started).
 * A group that is not there (no setsid, not yet made, all gone) falls back to the child alone.
 */
export function signalChild(p: { pid: number; kill(signal: NodeJS.Signals): void }, sig: NodeJS.Signals): void {
  if (wrappersOf().setsid) {
    try {
      process.kill(-p.pid, sig)
      return
    } catch {
      // no such group (yet, or any more)
    }
  }
  try {
    p.kill(sig)
  } catch {
    // gone already
  }
}
