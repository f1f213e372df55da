// `svc jobs ...` over /api/v1/jobs: submit, list, act on, and follow a job (its metrics stream
// and its fellows' logs).
import { readFileSync } from 'node:fs'
import type { Static } from '@sinclair/typebox'
import * as J from '../../jobs/model'
import type { NodeView } from '../../fellows/model'
import { LeaderRefused, checkInput, clientFor, type Client } from '../client'
import { Ended, ago, clean, modeOf, note, out, printDone, printJsonLine, printList, printRecord, writeOut, type Mode } from '../output'
import type { Invocation } from '../spec'
import { CliError, UsageError } from '../usage'
import { AwayNotice, backoffMs, isAway, waitFor } from './away'
import { onlyPool, poolLabel, resolveJob, resolvePool } from './refs'

type Job = J.Job

/** Where a parsed JSON value holds a number JSON cannot carry (Infinity from 1e400): its path, else null. */
function nonFinite(v: unknown, path = ''): string | null {
  if (typeof v === 'number') return Number.isFinite(v) ? null : path === '' ? 'the value' : `the value at ${path}`
  if (typeof v !== 'object' || v === null) return null
  for (const [k, x] of Object.entries(v)) {
    const found = nonFinite(x, Array.isArray(v) ? `${path}[${k}]` : path ? `${path}.${k}` : k)
    if (found !== null) return found
  }
  return null
}

/** --config JSON or @FILE, then each --set KEY=VALUE on top (VALUE as JSON when it parses, else text). */
function configOf(flags: Invocation['flags'], usage: string): Record<string, unknown> | undefined {
  let config: Record<string, unknown> | undefined
  const raw = flags.config as string | undefined
  if (raw !== undefined) {
    let text = raw
    if (raw.startsWith('@')) {
      try {
        text = readFileSync(raw.slice(1), 'utf8')
      } catch (e) {
        throw new UsageError(`--config ${raw}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, usage)
      }
    }
    try {
      config = JSON.parse(text) as Record<string, unknown>
    } catch {
      throw new UsageError('--config must be a JSON object (or @FILE holding one)', usage)
    }
    if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new UsageError('--config must be a JSON object (or @FILE holding one)', usage)
    const bad = nonFinite(config)
    if (bad !== null) throw new UsageError(`--config: ${bad} is a number too large for JSON (it would be sent as null)`, usage)
  }
  for (const kv of (flags.set as string[] | undefined) ?? []) {
    const eq = kv.indexOf('=')
    if (eq < 1) throw new UsageError(`--set wants KEY=VALUE; got ${JSON.stringify(kv)}`, usage)
    const v = kv.slice(eq + 1)
    let value: unknown = v
    try {
      value = JSON.parse(v)
    } catch {
      // plain text
    }
    // 1e400 parses to Infinity, which JSON sends as null: refused rather than sent as something else.
    if (nonFinite(value) !== null) {
      const shown = v.length > 40 ? `${v.slice(0, 40)}…` : v
      throw new UsageError(`--set ${kv.slice(0, eq)}: ${shown} ${typeof value === 'number' ? 'is' : 'holds'} a number too large for JSON (it would be sent as null)`, usage)
    }
    config = { ...config, [kv.slice(0, eq)]: value }
  }
  return config
}

export async function submit({ args, flags, usage }: Invocation): Promise<number> {
  const body: J.SubmitInput = { name: args.NAME! }
  if (flags.stages !== undefined) body.stages = flags.stages as number
  if (flags['min-free-vram-mb'] !== undefined) body.min_free_vram_mb = flags['min-free-vram-mb'] as number
  if (flags.runner !== undefined) body.runner = flags.runner as string
  const config = configOf(flags, usage)
  if (config !== undefined) body.config = config
  checkInput(J.SubmitBody, body, usage, { name: 'NAME' })
  const c = clientFor(flags)
  // Without --pool: the one pool the caller is in (a job naming no pool is never placed: the
  // default pool takes only jobs that name it, and a plain user's job there was 'Pool not found').
  body.pool_id = (flags.pool !== undefined ? await resolvePool(c, flags.pool as string) : await onlyPool(c, usage)).id
  const job = await c.call<Job>('POST', '/api/v1/jobs', { body })
  printDone(modeOf(flags), job, job.id, `submitted job ${job.name} (${job.id}): ${job.status}${job.reason ? `, ${job.reason}` : ''}\nfollow it with: svc jobs watch ${job.id}`)
  return 0
}

export async function list({ flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const poolId = flags.pool === undefined ? undefined : (await resolvePool(c, flags.pool as string)).id
  const query = { pool_id: poolId, status: flags.status as string | undefined, cursor: flags.cursor as string | undefined }
  checkInput(J.JobListQuery, JSON.parse(JSON.stringify(query)))
  const res = await c.get<J.JobList>('/api/v1/jobs', query)
  printList(
    modeOf(flags),
    res,
    res.items,
    [
      { head: 'ID', get: (j) => j.id },
      { head: 'NAME', get: (j) => j.name },
      { head: 'STATUS', get: (j) => j.status },
      { head: 'STAGES', get: (j) => j.stages },
      { head: 'STEP', get: (j) => j.step },
      { head: 'LOSS', get: (j) => (j.loss === null ? null : j.loss.toPrecision(4)) },
      { head: 'UPDATED', get: (j) => ago(j.updated_at) },
      { head: 'REASON', get: (j) => j.reason },
    ],
    (j) => j.id,
    'no jobs',
  )
  // On stderr, as `audit list` says its pages: stdout stays the table.
  if (modeOf(flags) === 'table' && res.next_cursor) note(`more jobs: --cursor ${res.next_cursor} for the next ${res.items.length}`)
  return 0
}

export async function show({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const j = await resolveJob(c, args.JOB!)
  printRecord(modeOf(flags), j, j.id, [
    ['id', j.id],
    ['name', j.name],
    ['pool', modeOf(flags) === 'table' ? await poolLabel(c, j.pool_id) : j.pool_id],
    ['status', j.status],
    ['reason', j.reason],
    ['runner', j.runner],
    ['stages', j.stages],
    ['min free VRAM', `${j.min_free_vram_mb} MiB per stage`],
    ['transport', j.transport],
    ['step', j.step],
    ['loss', j.loss],
    ...j.assignments.map((a): [string, unknown] => [`stage ${a.stage}`, a.fellow_id]),
    ['config', j.config],
    ['created', j.created_at],
    ['updated', `${j.updated_at} (${ago(j.updated_at)})`],
  ])
  return 0
}

/** cancel, pause, resume: a call on the job and its new state. */
function action(verb: string, method: string, suffix: string) {
  return async ({ args, flags }: Invocation): Promise<number> => {
    const c = clientFor(flags)
    const j = await resolveJob(c, args.JOB!)
    const after = await c.call<Job>(method, `/api/v1/jobs/${j.id}${suffix}`)
    printDone(modeOf(flags), after, after.id, `${verb} job ${after.name} (${after.id}): now ${after.status}`)
    return 0
  }
}
export const cancel = action('cancelled', 'DELETE', '')
export const pause = action('paused', 'POST', '/pause')
export const resume = action('resumed', 'POST', '/resume')

export async function checkpoint({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const j = await resolveJob(c, args.JOB!)
  const r = await c.call<{ job_id: string; signalled: number }>('POST', `/api/v1/jobs/${j.id}/checkpoint`)
  printDone(modeOf(flags), r, j.id, `asked ${r.signalled} fellow(s) of job ${j.name} to checkpoint`)
  return 0
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled'])

/** The number of steps the job will run, when its config says (the built-in mlp runner: 200 unless told). */
function totalSteps(j: Job): number | null {
  const s = j.config.steps
  if (typeof s === 'number' && Number.isInteger(s) && s > 0) return s
  return j.runner === 'mlp' ? 200 : null
}

function bar(step: number, total: number | null, loss: number | null, status: string): string {
  const lossText = loss === null ? '' : `  loss ${loss.toPrecision(4)}`
  if (total === null) return `step ${step}${lossText}  ${status}`
  const width = 30
  const done = Math.min(width, Math.round((step / total) * width))
  return `[${'#'.repeat(done)}${'-'.repeat(width - done)}] ${step}/${total} ${String(Math.min(100, Math.floor((step / total) * 100))).padStart(3)} %${lossText}  ${status}`
}

/** How a finished job ends a watch: 0 completed; 1 failed or cancelled, with the reason. */
function finish(j: Job, mode: Mode): number {
  if (mode === 'json') printJsonLine(j)
  else if (mode === 'quiet') out(j.id)
  else if (j.status === 'completed') out(`job ${j.name} completed at step ${j.step}${j.loss === null ? '' : `, loss ${j.loss.toPrecision(4)}`}`)
  if (j.status === 'completed') return 0
  note(`svc: job ${j.name} ${j.status}${j.reason ? `: ${j.reason}` : ''}`)
  return 1
}

type MetricEvent = { fellow_id: string; stage: number; step: number | null; loss: number | null; throughput: number | null; status: string; ts: string }

/**
 * 0 the job completed, 1 it failed or was cancelled; any other end is 3 (the token refused, the
 * job not found or deleted), so that a script's `watch || alert` never takes one for the other.
 */
export async function watch(inv: Invocation): Promise<number> {
  try {
    return await watchJob(inv)
  } catch (e) {
    if (e instanceof CliError && !(e instanceof Ended)) throw new Ended(WATCH_LOST, e.message)
    throw e
  }
}

/** `jobs watch` could not follow the job to its end. */
const WATCH_LOST = 3

async function watchJob({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  let job = await resolveJob(c, args.JOB!)
  const mode = modeOf(flags)
  if (TERMINAL.has(job.status)) return finish(job, mode)
  const tty = process.stdout.isTTY === true && mode === 'table'
  const total = totalSteps(job)
  let step = job.step
  let loss = job.loss
  let status = job.status as string
  let lastPrinted = ''
  const show = () => {
    const line = bar(step, total, loss, status)
    if (tty) writeOut(`\r\x1b[2K${line}`)
    else if (mode === 'table' && line !== lastPrinted) out(line)
    lastPrinted = line
  }
  const onSigint = () => {
    if (tty) writeOut('\n')
    process.exit(130)
  }
  process.on('SIGINT', onSigint)
  let lastId: string | null = null
  const notice = new AwayNotice()
  try {
    if (mode === 'table') show()
    // A run of reconnects that heard nothing; a stream that brought an event starts it again.
    for (let failures = 0; ; ) {
      let ended = false
      let heard = false
      try {
        await c.events(
          `/api/v1/jobs/${job.id}/metrics/stream`,
          (event, data, id) => {
            heard = true
            notice.back()
            if (id !== null) lastId = id
            if (event === 'end') return ((ended = true), false)
            if (event !== 'metrics') return
            const e = JSON.parse(data) as MetricEvent
            if (mode === 'json') return void printJsonLine(e)
            // Stages report the same step; the pipeline is as far as its furthest report.
            if (e.step !== null && e.step >= step) {
              step = e.step
              if (e.loss !== null) loss = e.loss
            }
            status = e.status
            show()
          },
          { headers: lastId === null ? {} : { 'last-event-id': lastId }, signal: AbortSignal.timeout(24 * 3600_000) },
        )
        job = await c.get<Job>(`/api/v1/jobs/${job.id}`)
        notice.back()
      } catch (e) {
        if (isGone(e)) throw gone(job)
        // A leader restarting (or a proxy answering for it) is waited out for as long as it takes.
        if (!isAway(e)) throw e
        notice.gone(e as Error)
        if (heard) failures = 0
        await waitFor(backoffMs(failures++))
        continue
      }
      if (ended || TERMINAL.has(job.status)) break
      // The stream ended early (a leader restart, a proxy): resume after the last event seen.
      if (heard) failures = 0
      await waitFor(backoffMs(failures++))
    }
    // The stream ends when the job does; its record may lag a moment behind the last report.
    for (let i = 0; i < 20 && !TERMINAL.has(job.status); i++) {
      await Bun.sleep(250)
      job = await c.get<Job>(`/api/v1/jobs/${job.id}`).catch((e) => {
        if (isAway(e)) return job
        throw isGone(e) ? gone(job) : e
      })
    }
  } finally {
    process.off('SIGINT', onSigint)
  }
  if (tty) {
    step = Math.max(step, job.step)
    status = job.status
    show()
    writeOut('\n')
  }
  return finish(job, mode)
}

type LogEvent = { ts: string; line: string }

export async function logs({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const job = await resolveJob(c, args.JOB!)
  let placed = job.assignments
  if (flags.stage !== undefined) placed = placed.filter((a) => a.stage === flags.stage)
  if (placed.length === 0) {
    if (job.assignments.length === 0) throw new CliError(`job ${job.name} is ${job.status} and placed on no fellow${job.reason ? ` (${job.reason})` : ''}: there are no logs to show`)
    throw new CliError(`job ${job.name} has no stage ${flags.stage} (stages 0 to ${job.stages - 1})`)
  }
  const nodes = (await c.get<{ items: Static<typeof NodeView>[] }>('/api/v1/cluster/nodes')).items
  const host = (id: string) => nodes.find((n) => n.fellow_id === id)?.hostname ?? id
  const follow = flags.follow === true
  const ctl = new AbortController()
  // Following ends with the job (or Ctrl-C); the log streams themselves never end.
  const watcher = follow ? followJobEnd(c, job.id, ctl) : null
  const notice = new AwayNotice()
  await Promise.all(
    placed.map((a) =>
      streamLogs(c, a.fellow_id, follow, ctl.signal, notice, (e) => {
        if (flags.json) printJsonLine({ stage: a.stage, fellow_id: a.fellow_id, ...e })
        else out(placed.length > 1 ? `[stage ${a.stage} ${clean(host(a.fellow_id))}] ${clean(e.line)}` : clean(e.line))
      }),
    ),
  )
  ctl.abort()
  await watcher
  return 0
}

/**
 * One fellow's log: what the leader kept, then (follow) new lines until `signal` aborts. A stream
 * that ends or breaks off while following is the leader going away (a restart): it is opened
 * again after the last line seen, waiting out a leader that does not answer for a while.
 */
async function streamLogs(c: Client, fellowId: string, follow: boolean, signal: AbortSignal, notice: AwayNotice, onLine: (e: LogEvent) => void): Promise<void> {
  let lastId: string | null = null
  for (let failures = 0; ; ) {
    let heard = false
    try {
      await c.events(
        `/api/v1/workers/${fellowId}/logs/stream`,
        (event, data, id) => {
          heard = true
          notice.back()
          if (id !== null) lastId = id
          if (event === 'log') onLine(JSON.parse(data) as LogEvent)
        },
        // The leader sends a keep-alive comment once it has nothing more: the backlog is done.
        { signal, onComment: () => ((heard = true), notice.back(), follow), headers: lastId === null ? {} : { 'last-event-id': lastId } },
      )
    } catch (e) {
      // A leader restarting is waited out for as long as it takes (the job's end or Ctrl-C ends it).
      if (!follow || signal.aborted || !isAway(e)) throw e
      notice.gone(e as Error)
    }
    if (!follow || signal.aborted) return
    if (heard) failures = 0
    await waitFor(backoffMs(failures++), signal)
    if (signal.aborted) {
      // The job ended while this stream waited for the leader: the lines shipped meanwhile, once.
      await c
        .events(`/api/v1/workers/${fellowId}/logs/stream`, (event, data) => void (event === 'log' && onLine(JSON.parse(data) as LogEvent)), {
          signal: AbortSignal.timeout(10_000),
          onComment: () => false,
          headers: lastId === null ? {} : { 'last-event-id': lastId },
        })
        .catch(() => undefined)
      return
    }
  }
}

async function followJobEnd(c: Client, jobId: string, ctl: AbortController): Promise<void> {
  while (!ctl.signal.aborted) {
    await Bun.sleep(2000)
    if (ctl.signal.aborted) return
    try {
      const j = await c.get<Job>(`/api/v1/jobs/${jobId}`)
      if (TERMINAL.has(j.status)) {
        await Bun.sleep(1000) // the last lines a fellow ships after the end
        return ctl.abort()
      }
    } catch (e) {
      // Deleted (with its pool, or by an admin's purge): nothing more will come; it was retried for good.
      if (isGone(e)) {
        note(`job ${jobId} no longer exists (deleted); stopped following`)
        return ctl.abort()
      }
      // any other failed poll is retried; the log streams report a lost leader themselves
    }
  }
}

/** The leader says the job is not there (any more). */
const isGone = (e: unknown) => e instanceof LeaderRefused && e.code === 'not_found'
const gone = (job: Job) => new CliError(`job ${job.name} no longer exists: it was deleted while it was watched (with its pool, or by an admin's purge)`)
