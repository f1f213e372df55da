// How remote commands print: an aligned table (or key: value lines for one record) for people,
// the API's JSON as it is with --json, ids only with --quiet.
import { writeSync } from 'node:fs'
import type { Values } from './spec'
import { CliError } from './usage'

export type Mode = 'table' | 'json' | 'quiet'

export function modeOf(flags: Values): Mode {
  if (flags.json === true) return 'json'
  if (flags.quiet === true) return 'quiet'
  return 'table'
}

/** A command ended by its user (Ctrl-C at a prompt) or its reader, not failed: runCommand exits with `status`, saying `message` (if any). */
export class Ended extends CliError {
  constructor(
    readonly status: number,
    message = '',
  ) {
    super(message)
  }
}

/**
 * Writes to standard output at once, so that a failure is known where it happens: process.stdout
 * turns a reader gone (`| head -1`) into an uncaught error with a stack trace, and loses a full
 * disk without a word (a shown-once token with it). A reader gone ends the command quietly with
 * 141, as SIGPIPE ends other tools; any other failure is one line and exit 1.
 */
export function writeOut(data: string | Uint8Array): void {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data
  for (let at = 0, waitMs = 1; at < bytes.byteLength; ) {
    try {
      at += writeSync(1, bytes, at)
      waitMs = 1
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      // A pipe Bun made non-blocking is full: its reader is slow, or paused (a pager): wait longer each time.
      if (code === 'EAGAIN') Bun.sleepSync((waitMs = Math.min(waitMs * 2, 50)))
      else if (code === 'EPIPE') throw new Ended(141)
      else throw new CliError(`cannot write the output: ${(e as Error).message.replace(/, write$/, '')}`)
    }
  }
}

export const out = (s: string): void => writeOut(s.endsWith('\n') ? s : s + '\n')
export const note = (s: string): void => void process.stderr.write(s.endsWith('\n') ? s : s + '\n')
export const printJson = (v: unknown): void => out(JSON.stringify(v, null, 2))
/** One JSON value a line: what streams print with --json. */
export const printJsonLine = (v: unknown): void => out(JSON.stringify(v))

/** Control characters from the leader (hostnames, names) must not drive the terminal. */
export const clean = (v: unknown): string => {
  if (v === null || v === undefined) return '-'
  return String(v).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')
}

/**
 * Running text from the leader (a model's answer): line breaks and tabs kept, carriage returns
 * dropped (they would let a line overwrite itself), every other control character replaced, so
 * that a fellow's engine cannot send escape sequences to the terminal (OSC 52 writes the clipboard).
 */
export const cleanText = (s: string): string => s.replace(/\r/g, '').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?')

export interface Column<T> {
  head: string
  get(row: T): unknown
}

export function table<T>(rows: T[], cols: Column<T>[]): string {
  const cells = rows.map((r) => cols.map((c) => clean(c.get(r))))
  const widths = cols.map((c, i) => Math.max(c.head.length, ...cells.map((r) => r[i]!.length)))
  const line = (vals: string[]) => vals.map((v, i) => (i === vals.length - 1 ? v : v.padEnd(widths[i]!))).join('  ').trimEnd()
  return [line(cols.map((c) => c.head)), ...cells.map(line)].join('\n') + '\n'
}

/** Prints a list in the chosen mode: `whole` is the API's answer, `rows` what the table shows. */
export function printList<T>(mode: Mode, whole: unknown, rows: T[], cols: Column<T>[], id: (r: T) => string, empty = 'nothing to show'): void {
  if (mode === 'json') return printJson(whole)
  if (mode === 'quiet') {
    if (rows.length > 0) out(rows.map(id).join('\n'))
    return
  }
  if (rows.length === 0) return note(empty)
  out(table(rows, cols))
}

/** Prints one record: `key: value` lines in the table mode. */
export function printRecord(mode: Mode, record: unknown, id: string, fields: [string, unknown][]): void {
  if (mode === 'json') return printJson(record)
  if (mode === 'quiet') return out(id)
  const w = Math.max(...fields.map(([k]) => k.length))
  out(fields.map(([k, v]) => `${(k + ':').padEnd(w + 1)} ${typeof v === 'object' && v !== null ? JSON.stringify(v) : clean(v)}`).join('\n'))
}

/** Prints what an action did: a sentence for people, the record with --json, the id with --quiet. */
export function printDone(mode: Mode, record: unknown, id: string | null, sentence: string): void {
  if (mode === 'json') return printJson(record)
  if (mode === 'quiet') {
    if (id !== null) out(id)
    return
  }
  out(sentence)
}

/** "3 min ago" for times in tables; ISO stays in --json. */
export function ago(iso: string | null, now = Date.now()): string {
  if (!iso) return '-'
  const s = Math.round((now - Date.parse(iso)) / 1000)
  if (s < 0) return `in ${humanSeconds(-s)}`
  return s < 2 ? 'just now' : `${humanSeconds(s)} ago`
}

function humanSeconds(s: number): string {
  if (s < 90) return `${s} s`
  if (s < 90 * 60) return `${Math.round(s / 60)} min`
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`
  return `${Math.round(s / 86400)} d`
}

export const mib = (mb: number | null | undefined): string => (mb === null || mb === undefined ? '-' : mb >= 10240 ? `${(mb / 1024).toFixed(0)} GiB` : `${mb} MiB`)
