// Runners a previous agent instance left behind. A runner the agent paused (SIGSTOP) does not die
// with the agent: the kernel's parent-death SIGTERM stays pending on a stopped process and the
// end of its stdin is never read, so it would keep its memory (a GPU's) for ever, and the next
// agent would start a second runner for the same stage beside it. Every runner the agent starts
// is recorded in <state-dir>/runners/<pid>.json with what identifies that very process (boot id,
// pid and start time, /proc/PID/stat); at start the agent stops each recorded runner that is still
// that process: SIGCONT, SIGTERM, SIGKILL after its grace. A pid reused by another process since
// (another start time, another boot) is never signalled. What the runner started goes too, also
// when the runner itself is gone: a launcher shell dies of the parent-death SIGTERM, but its
// worker did not inherit that signal and runs on in the runner's process group (re-parented).
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from './state'
import { signalChild } from './lines'
import { monotonicNow, sleep, systemClock } from '../time'
import type { Logger } from '../log'

export const RUNNERS_DIR = 'runners'

interface RunnerRecord {
  pid: number
  /** Field 22 of /proc/PID/stat: clock ticks since boot; with the boot id, one process. */
  start_time: string
  boot_id: string
  /** The agent that started it: a record of an agent still alive (a second agent on this state dir) is left alone. */
  agent_pid: number
  agent_start_time: string
  job_id: string
  stage: number
  stop_grace_s: number
}

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return null
  }
}

const bootId = () => read('/proc/sys/kernel/random/boot_id')?.trim() ?? null

/** A process's start time, state letter, process group and session from /proc/PID/stat; null when there is no such process. */
function stat(pid: number | string): { startTime: string; state: string; pgrp: number; session: number } | null {
  const s = read(`/proc/${pid}/stat`)
  if (s === null) return null
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const rest = s.slice(s.lastIndexOf(')') + 2).split(' ')
  return { state: rest[0] ?? '', startTime: rest[19] ?? '', pgrp: Number(rest[2]), session: Number(rest[3]) }
}

/** True while `pid` is still the process that started at `startTime` (and has not exited). */
function sameProcess(pid: number, startTime: string): boolean {
  const st = stat(pid)
  return st !== null && st.startTime === startTime && st.state !== 'Z' && st.state !== 'X'
}

/**
 * The live processes (zombies not counted) left in the process group and session a runner led
 * (spawnChild's setsid makes it lead both), whether or not the runner itself is still there.
 * Linux gives no process a pid that is still a group's or a session's id, so while any of them is
 * left, that id is still the runner's: they are what it started (a launcher's workers). The
 * ones started before the runner cannot be its own and are never counted. Without setsid the runner
 * led no group, and nothing is found.
 */
function groupLeft(r: Pick<RunnerRecord, 'pid' | 'start_time'>): number[] {
  let pids: string[]
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n))
  } catch {
    return []
  }
  const since = Number(r.start_time)
  return pids.flatMap((pid) => {
    const st = stat(pid)
    const member = st !== null && st.pgrp === r.pid && st.session === r.pid && st.state !== 'Z' && st.state !== 'X' && Number(st.startTime) >= since
    return member ? [Number(pid)] : []
  })
}

/** The runner, or something it started in its process group, still runs. */
const stillThere = (r: RunnerRecord) => sameProcess(r.pid, r.start_time) || groupLeft(r).length > 0

/**
 * Records a runner the agent started; the function returned forgets it (call it once the runner
 * has exited). Without /proc (not Linux) nothing is recorded.
 */
export function recordRunner(stateDir: string, pid: number, o: { jobId: string; stage: number; stopGraceS: number }): () => void {
  const st = stat(pid)
  const me = stat(process.pid)
  const boot = bootId()
  if (!st || !me || !boot) return () => {}
  const dir = join(stateDir, RUNNERS_DIR)
  const file = join(dir, `${pid}.json`)
  const rec: RunnerRecord = { pid, start_time: st.startTime, boot_id: boot, agent_pid: process.pid, agent_start_time: me.startTime, job_id: o.jobId, stage: o.stage, stop_grace_s: o.stopGraceS }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    writeFileAtomic(file, JSON.stringify(rec) + '\n')
  } catch {
    return () => {}
  }
  return () => rmSync(file, { force: true })
}

function parse(text: string | null): RunnerRecord | null {
  if (text === null) return null
  try {
    const r = JSON.parse(text) as Partial<RunnerRecord>
    const int = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 1
    const str = (v: unknown): v is string => typeof v === 'string' && /^[\w-]+$/.test(v)
    if (!int(r.pid) || !str(r.start_time) || !str(r.boot_id) || !int(r.agent_pid) || !str(r.agent_start_time)) return null
    const grace = typeof r.stop_grace_s === 'number' && Number.isFinite(r.stop_grace_s) ? Math.min(3600, Math.max(0, r.stop_grace_s)) : 10
    return { ...(r as RunnerRecord), stop_grace_s: grace }
  } catch {
    return null
  }
}

/** Stops one leftover runner: SIGCONT (a stopped one must run to hear SIGTERM), SIGTERM, SIGKILL after its grace. */
async function stopLeftover(r: RunnerRecord, log: Logger): Promise<void> {
  // Real time, whatever clock the agent runs on: a process is waited for, not a timer of ours.
  const clock = systemClock
  const signal = (sig: NodeJS.Signals) => {
    // Checked right before each signal: a pid is only ever signalled while it is that very runner,
    // a group only while it is still that runner's.
    if (sameProcess(r.pid, r.start_time)) {
      // Its process group too (spawnChild made it lead one): what it started goes with it.
      signalChild({ pid: r.pid, kill: (s) => process.kill(r.pid, s) }, sig)
      return true
    }
    if (groupLeft(r).length === 0) return false
    try {
      process.kill(-r.pid, sig)
      return true
    } catch {
      return false // gone meanwhile
    }
  }
  const runnerGone = !sameProcess(r.pid, r.start_time)
  const left = groupLeft(r)
  if (runnerGone && left.length === 0) return
  log.warn('a runner of a previous agent instance was still there; stopping it', { pid: r.pid, job_id: r.job_id, stage: r.stage, was_paused: stat(r.pid)?.state === 'T', stop_grace_s: r.stop_grace_s, ...(runnerGone ? { runner_exited: true, group_left: left } : {}) })
  // Once continued, a runner may end at once on the parent-death SIGTERM it was holding.
  signal('SIGCONT')
  signal('SIGTERM')
  const deadline = monotonicNow(clock) + r.stop_grace_s * 1000
  while (stillThere(r) && monotonicNow(clock) < deadline) await sleep(clock, 100)
  if (signal('SIGKILL')) {
    log.warn('the leftover runner did not stop within its grace; killed it', { pid: r.pid, job_id: r.job_id })
    // A process the kernel holds (a hung driver, a dead NFS server) may never go: not waited for forever.
    const killedBy = monotonicNow(clock) + KILL_WAIT_MS
    while (stillThere(r) && monotonicNow(clock) < killedBy) await sleep(clock, 50)
    if (stillThere(r)) log.error('a leftover runner did not go even when killed (stuck in the kernel?); starting without waiting for it', { pid: r.pid, job_id: r.job_id, state: stat(r.pid)?.state ?? null })
  }
}

/** How long a killed leftover runner is waited for before the new one starts anyway. */
const KILL_WAIT_MS = 30_000

const reaping = new Map<string, Promise<void>>()

/**
 * Stops every runner recorded under `stateDir` by an agent that is gone and whose process still
 * runs, and forgets the records. Called once at the agent's start; runners started afterwards wait
 * for it (leftoversGone), so the old runner's memory is free before the new one starts.
 */
export function reapLeftoverRunners(stateDir: string, log: Logger): Promise<void> {
  const dir = join(stateDir, RUNNERS_DIR)
  let names: string[]
  try {
    names = readdirSync(dir).filter((n) => /^\d+\.json$/.test(n))
  } catch {
    names = []
  }
  const boot = bootId()
  // This agent is its pid and its start time: a dead agent's pid may have been given to this one.
  const me = stat(process.pid)?.startTime ?? null
  const ours = (r: RunnerRecord) => r.agent_pid === process.pid && r.agent_start_time === me
  const work = names.map(async (name) => {
    const file = join(dir, name)
    const r = parse(read(file))
    if (r && !ours(r) && sameProcess(r.agent_pid, r.agent_start_time) && r.boot_id === boot) return // its agent still runs
    try {
      if (r && r.boot_id === boot && !ours(r)) await stopLeftover(r, log)
      rmSync(file, { force: true })
    } catch (e) {
      log.warn('could not stop a leftover runner', { record: name, error: (e as Error).message })
    }
  })
  const done = Promise.all(work).then(() => undefined)
  reaping.set(stateDir, done)
  return done
}

/** Resolves once the leftovers found at this agent's start are gone (at once when there were none). */
export function leftoversGone(stateDir: string): Promise<void> {
  return reaping.get(stateDir) ?? Promise.resolve()
}
