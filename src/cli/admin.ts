// `svc admin ...`: operates directly on the state database, through the same services as the API.
// Commands and their flags are declared in commands.ts; these are their bodies.
import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { artifactsBucket, loadConfig } from '../config'
import { backupDatabase } from '../db/backup'
import { discardRestore, finishRestore, prepareRestore, type Restored } from '../db/restore'
import { openDb, openDbReadOnly, StateVersionError } from '../db/client'
import { migrationState } from '../db/migrate'
import type { Database } from 'bun:sqlite'
import { localBlobsDir, s3BlobsLocation } from '../artifacts/store'
import { systemClock } from '../time'
import { createLogger } from '../log'
import { Accounts, displayNameProblem, normalizeEmail } from '../accounts/service'
import { passwordProblem } from '../accounts/passwords'
import { readPassword } from './prompt'
import { sendTestMail } from '../mail/sender'
import { AppError, invalid } from '../errors'
import { UsageError, CliError } from './usage'
import { Ended, writeOut } from './output'
import { createContext, type Ctx } from '../context'
import { CHECKS, runDoctor, type CheckResult } from '../admin/doctor'
import type { Invocation } from './spec'

/**
 * The leader's settings for an offline command. `--db FILE` names the state file; without
 * SVC_STATE_DIR the state directory is then the file's own (where the leader keeps it unless
 * SVC_JOIN_STATE_DB moved it), not ./state under wherever the command runs.
 */
function adminConfig(dbFlag: unknown, withSecret = false, without: string[] = []) {
  const base: Record<string, string | undefined> = { ...process.env }
  for (const name of without) delete base[name]
  if (typeof dbFlag !== 'string') return loadConfig(base, { withoutSecret: !withSecret })
  const env: Record<string, string | undefined> = { ...base, SVC_JOIN_STATE_DB: dbFlag }
  if ((env.SVC_STATE_DIR ?? '').trim() === '') env.SVC_STATE_DIR = dirname(resolve(dbFlag))
  return loadConfig(env, { withoutSecret: !withSecret })
}

function adminContext(dbFlag: string | undefined, withSecret: boolean): Ctx {
  const cfg = adminConfig(dbFlag, withSecret)
  const log = createLogger('warn', (l) => process.stderr.write(l + '\n'))
  // The version is checked again by the open that is used: a file swapped in since the first
  // check (a restore of an older backup) is refused, not migrated.
  return createContext(cfg, log, systemClock, { mailEnabled: false, refuseOtherVersion: true })
}

const dbPathOf = (dbFlag: unknown) => adminConfig(dbFlag).dbPath

/**
 * An existing state file is used only at this binary's migrations: an admin command never applies
 * them (StateVersionError, naming them, before anything is written). Applying them is the leader's
 * start, after its backup; a newer binary's admin command migrated a running older leader's file
 * under it (its writes failed "database is locked" meanwhile, then it answered 503 and could not
 * start again). A missing file is left to the command, which makes a new one.
 */
function refuseOtherVersion(path: string): void {
  if (existsSync(path)) openDb(path, { migrate: false, refuseOtherVersion: true }).close()
}

/** The password rule, checked before the state file is opened: a refused one used to leave a new file behind. */
function checkPassword(password: string, addr: string): void {
  const problem = passwordProblem(password, normalizeEmail(addr))
  if (problem) throw invalid(problem)
}

function email(v: string, usage: string): string {
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v) || v.length > 254) throw new UsageError(`not an email address: ${v}`, usage)
  return v
}

export async function createUser({ args, flags, usage }: Invocation): Promise<number> {
  const addr = email(args.EMAIL!, usage)
  const displayName = flags['display-name'] as string | undefined
  const nameProblem = displayName === undefined ? null : displayNameProblem(displayName)
  if (nameProblem) throw new UsageError(`--display-name ${nameProblem}`, usage)
  // A fresh install may be seeded before the leader first starts (its state directory is made as
  // the leader would), but --db naming a directory that is not there is a typo (it used to be
  // created, path and all).
  const path = dbPathOf(flags.db)
  const fresh = !existsSync(path)
  if (fresh && typeof flags.db === 'string' && !existsSync(dirname(path))) throw new CliError(`no directory ${dirname(path)} for the state database (--db PATH names another, or create it first)`)
  refuseOtherVersion(path)
  const password = await readPassword(flags['password-stdin'] === true, true)
  checkPassword(password, addr)
  const ctx = adminContext(flags.db as string | undefined, false)
  try {
    const user = await new Accounts(ctx).createAdminUser(addr, password, flags['display-name'] as string | undefined)
    writeOut(`created admin ${user.email} (${user.id})\n`)
    if (fresh) process.stderr.write(`svc: note: ${path} did not exist; it is a new, empty state database (the leader uses it when started with the same SVC_STATE_DIR / SVC_JOIN_STATE_DB)\n`)
  } finally {
    ctx.sqlite.close()
  }
  return 0
}

export async function setPassword({ args, flags, usage }: Invocation): Promise<number> {
  const addr = email(args.EMAIL!, usage)
  const path = dbPathOf(flags.db)
  if (!existsSync(path)) throw new CliError(`no state database at ${path} (--db PATH names another)`)
  refuseOtherVersion(path)
  const password = await readPassword(flags['password-stdin'] === true, true)
  checkPassword(password, addr)
  const ctx = adminContext(flags.db as string | undefined, false)
  try {
    const { revokedSessions, revokedApiTokens, revokedJoinTokens } = await new Accounts(ctx).setUserPassword(addr, password)
    writeOut(`password set for ${addr.toLowerCase()}; ${revokedSessions} session(s) revoked, ${revokedApiTokens} API token(s) revoked, ${revokedJoinTokens} join token(s) revoked\n`)
  } finally {
    ctx.sqlite.close()
  }
  return 0
}

export async function sendTestMailCmd({ args, usage }: Invocation): Promise<number> {
  const to = email(args.EMAIL!, usage)
  const cfg = loadConfig(process.env, { withoutSecret: true })
  if (cfg.smtp === null) throw new AppError('mail_disabled', 'SMTP is not configured: set SVC_SMTP_HOST and SVC_SMTP_FROM (see docs/operations.md)')
  const server = `${cfg.smtp.host}:${cfg.smtp.port} (${cfg.smtp.tls})`
  try {
    await sendTestMail(cfg.smtp, to, cfg.baseUrl, cfg.smtp.ca ?? undefined)
  } catch (e) {
    // The reason alone ("connect ECONNREFUSED 127.0.0.1:25") does not say it was the mail server.
    if (e instanceof AppError && e.code === 'smtp_failed') throw new CliError(`the SMTP server ${server} did not take the test mail: ${e.message}`)
    throw e
  }
  writeOut(`test mail sent to ${to} through ${server}\n`)
  return 0
}

export async function backup({ args, flags }: Invocation): Promise<number> {
  // The copy holds the artifacts' rows, not their bytes: the last line says where those are, so
  // they are kept too. SVC_ARTIFACTS_URL names the bucket; the store's keys are not needed for
  // that, nor to copy the state file, so they are not asked for.
  const bucket = artifactsBucket(process.env)
  const cfg = adminConfig(flags.db, false, ['SVC_ARTIFACTS_URL'])
  const { path, bytes } = backupDatabase(cfg.dbPath, args.FILE!)
  writeOut(`backup written to ${path} (${bytes} bytes, integrity ok)\n`)
  const how = '(docs/operations.md, Backup and restore)'
  if (bucket !== null) writeOut(`artifact bytes are not in this file: back up ${s3BlobsLocation(bucket)} alongside ${how}\n`)
  else if (existsSync(localBlobsDir(cfg.stateDir))) writeOut(`artifact bytes are not in this file: back up ${localBlobsDir(cfg.stateDir)} alongside ${how}\n`)
  else {
    // Nothing stored here yet, or a leader whose blobs are in a bucket run without its SVC_ARTIFACTS_URL.
    writeOut(`artifact bytes are not in this file; ${localBlobsDir(cfg.stateDir)} holds none (a leader that keeps them in S3: run this with its SVC_ARTIFACTS_URL to have the bucket named) ${how}\n`)
  }
  return 0
}

export async function restore({ args, flags }: Invocation): Promise<number> {
  // Ctrl-C or SIGTERM while the copy is written (one SQLite call that cannot be broken into): the
  // copy is finished, then removed, and the state file is left as it was; killed by default, the
  // process left `.join_state.sqlite3.restore-PID` behind for good.
  let stopped: NodeJS.Signals | null = null
  const onSignal = (s: NodeJS.Signals) => void (stopped ??= s)
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  let r: Restored
  try {
    const prepared = prepareRestore(args.FILE!, dbPathOf(flags.db))
    // A signal that came during the copy is delivered once the event loop runs again.
    await new Promise((resolve) => setTimeout(resolve, 0))
    if (stopped !== null) {
      discardRestore(prepared)
      throw new Ended(stopped === 'SIGINT' ? 130 : 143, `cancelled: nothing was restored (${prepared.dest} is as it was)`)
    }
    r = finishRestore(prepared)
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  writeOut(`restored ${args.FILE} to ${r.path} (${r.bytes} bytes, integrity ok)\n`)
  if (r.previous) writeOut(`the file it replaced is kept as ${r.previous}\n`)
  if (r.missing > 0) writeOut(`the backup lacks ${r.missing} migration(s); the leader applies them when it starts\n`)
  // A restore brings back every credential revoked since the backup: the operator restoring after a
  // break-in would otherwise open the door again without a word.
  const asOf = r.asOf === null ? '' : ` (its newest audit entry is from ${r.asOf.toISOString().replace(/\.\d+Z$/, 'Z')})`
  writeOut(`the state is now the backup's${asOf}: sessions, API tokens, join and node tokens revoked since are valid again, and so are passwords changed since and accounts disabled or deleted since; after a compromise, revoke them again (docs/operations.md, Backup and restore)\n`)
  writeOut('put the artifact blobs of the same time back too (docs/operations.md, Backup and restore), then start the leader\n')
  return 0
}

function hasMigrationsTable(sqlite: Database): boolean {
  return sqlite.query("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = '__migrations'").get() !== null
}

/** Checks that read only SQLite's own structures, or __migrations: they hold whatever the file's version. */
const SCHEMA_FREE_CHECKS = new Set(['integrity', 'foreign-keys', 'migrations'])

type DoctorResult = CheckResult & { skipped?: string }

export async function doctor({ flags, usage }: Invocation): Promise<number> {
  const only = flags.check as string[] | undefined
  const names = CHECKS.map((c) => c.name)
  for (const n of only ?? []) if (!names.includes(n)) throw new UsageError(`unknown check ${n}; the checks are ${names.join(', ')}`, usage)
  const path = dbPathOf(flags.db)
  if (!existsSync(path)) throw new CliError(`no state database at ${path} (--db PATH names another)`)
  // Only --fix writes: a check that changed what it checks (WAL switch, mode, PRAGMA optimize, a
  // new file's first page) would alter the backup copy it was run on. A file behind this binary is
  // not repaired: its fixes would write the newer schema's tables into the older one's.
  const readOnly = flags.fix === true ? null : openDbReadOnly(path)
  const state = readOnly ?? openForFix(path)
  let results: DoctorResult[]
  let pending: string[] = []
  let unknown: string[] = []
  try {
    if (!hasMigrationsTable(state.sqlite)) throw new CliError(`${path} is not a leader's state file (no __migrations table); doctor checks only those`)
    ;({ pending, unknown } = migrationState(state.sqlite))
    // An older release's file lacks the tables and columns the other checks read ("no such column:
    // u.pool_count"): they wait for the upgrade instead of failing on them. A newer release's may
    // keep them otherwise: what this binary's checks would find there is no finding of that file's.
    const skipped = schemaSkip(pending, unknown)
    const runs = (name: string) => skipped === null || SCHEMA_FREE_CHECKS.has(name)
    const ran = runDoctor(state, { fix: flags.fix === true, only, checks: CHECKS.filter((c) => runs(c.name)) })
    results = CHECKS.filter((c) => !only || only.includes(c.name)).map((c) => ran.find((r) => r.name === c.name) ?? { name: c.name, findings: [], fixed: [], fixable: false, skipped: skipped! })
    // A stopped leader's file is read without locks: one started meanwhile may have torn what was read.
    if (readOnly?.changed()) throw new CliError(`${path} changed while it was checked (a leader started on it?): run doctor again`)
  } finally {
    state.close()
  }
  const ok = results.every((r) => r.findings.length === 0 && r.skipped === undefined)
  if (flags.json) {
    writeOut(JSON.stringify({ db: path, ok, pending_migrations: pending, unknown_migrations: unknown, checks: results }, null, 2) + '\n')
  } else {
    for (const r of results) {
      for (const f of r.fixed) writeOut(`fixed  ${r.name}: ${f}\n`)
      if (r.skipped !== undefined) writeOut(`skip   ${r.name}: ${r.skipped}\n`)
      else if (r.findings.length === 0) writeOut(`ok     ${r.name}\n`)
      for (const f of r.findings) writeOut(`FAIL   ${r.name}: ${f}\n`)
    }
    // Only a file at this binary's migrations is repaired (openForFix): --fix is no advice for another.
    if (unknown.length > 0) writeOut(`${path} was migrated by a newer leader (unknown migrations: ${unknown.join(', ')}): this svc checks only what does not depend on its schema; run the newer version's svc admin doctor on it\n`)
    else if (pending.length > 0) writeOut(`${path} is ${pending.length} migration${pending.length === 1 ? '' : 's'} behind this svc (${pending.join(', ')}): \`svc serve\` of this version applies them when it starts (take a backup first: svc admin backup FILE)\n`)
    const bad = results.filter((r) => r.findings.length > 0)
    if (bad.length > 0 && !flags.fix && pending.length + unknown.length === 0 && bad.some((r) => r.fixable)) writeOut('svc admin doctor --fix repairs what it can (take a backup first: svc admin backup FILE)\n')
  }
  return ok ? 0 : 1
}

/** Why the checks of this binary's schema are not run on a file at other migrations, or null when they are. */
function schemaSkip(pending: string[], unknown: string[]): string | null {
  const n = (k: number) => `${k} migration${k === 1 ? '' : 's'}`
  if (unknown.length > 0) return `needs the newer svc (${n(unknown.length)} unknown to this one)`
  if (pending.length > 0) return `needs the upgrade (${n(pending.length)} not applied)`
  return null
}

/** The state file opened for --fix, refused (untouched) when its migrations are not this binary's. */
function openForFix(path: string) {
  try {
    return openDb(path, { migrate: false, refuseOtherVersion: true })
  } catch (e) {
    if (!(e instanceof StateVersionError)) throw e
    const n = e.pending.length
    if (e.unknown.length > 0) throw new CliError(`${path} was migrated by a newer leader (unknown migrations: ${e.unknown.join(', ')}): run that version's svc admin doctor --fix; nothing was changed`)
    throw new CliError(`${path} is ${n} migration${n === 1 ? '' : 's'} behind this svc (${e.pending.join(', ')}): doctor --fix repairs only a file this version has migrated; start \`svc serve\` of this version on it (after a backup) to apply them, then run it again; nothing was changed`)
  }
}
