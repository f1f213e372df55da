// Sends what the outbox holds. A row is claimed, rendered and handed to SMTP; on failure it is
// retried with exponential backoff, and after the last attempt it is given up. Whatever the
// outcome, a finished row loses its payload: one-time links must not linger in the state file.
import type { Transporter } from 'nodemailer'
import type SMTPTransport from 'nodemailer/lib/smtp-transport'
import { and, asc, desc, eq, inArray, lt, lte, ne, sql } from 'drizzle-orm'
import { mailOutbox } from '../db/schema'
import { AppError } from '../errors'
import type { SmtpConfig } from '../config'
import type { Ctx } from '../context'
import type { LoopSpec } from '../loops'
import { MAIL_TEMPLATES, openPayload, type MailTemplate } from './outbox'
import { renderMail } from './templates'

export type SmtpTransport = Transporter<SMTPTransport.SentMessageInfo, SMTPTransport.Options>
/** What the sender needs of a transport; tests and future transports can pass their own. */
export type MailTransport = Pick<SmtpTransport, 'sendMail'>

export interface TransportOptions {
  /** PEM of a CA to trust in addition to the system ones (a private mail server). */
  ca?: string
}

export const MAX_ATTEMPTS = 5
export const BACKOFF_BASE_MS = 30_000
/** How long a claimed row stays invisible to other senders; a crash mid-send retries after it. */
const CLAIM_MS = 5 * 60_000
const MAX_ERROR_CHARS = 300

/**
 * nodemailer (and the node:net/tls/dns it brings) is loaded on first use, not at start: a leader
 * without SMTP never needs it, and it is about 3 MiB of a leader's idle memory.
 */
export async function createTransport(smtp: SmtpConfig, opts: TransportOptions = {}): Promise<SmtpTransport> {
  const { default: nodemailer } = await import('nodemailer')
  const options: SMTPTransport.Options = {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.tls === 'ssl',
    // starttls must not fall back to plain text when the server stops offering STARTTLS
    // (a downgrade by anyone on the path); none means the operator chose plain text on purpose.
    requireTLS: smtp.tls === 'starttls',
    ignoreTLS: smtp.tls === 'none',
    connectionTimeout: 15_000,
    greetingTimeout: 10_000,
    socketTimeout: 15_000,
    dnsTimeout: 10_000,
    // Certificate checks always stay on; a private server is trusted through its CA instead.
    tls: { minVersion: 'TLSv1.2', ...(opts.ca ? { ca: opts.ca } : {}) },
  }
  if (smtp.user !== null && smtp.password !== null) options.auth = { user: smtp.user, pass: smtp.password }
  return nodemailer.createTransport(options)
}

/** The server's reply when there is one (e.g. "451 4.3.0 try later"), else the error message. */
export function smtpErrorText(e: unknown): string {
  const err = e as { response?: unknown; message?: unknown }
  const raw = typeof err?.response === 'string' && err.response !== '' ? err.response : typeof err?.message === 'string' ? err.message : String(e)
  const flat = raw.replace(/\s+/g, ' ').trim()
  return flat.length > MAX_ERROR_CHARS ? flat.slice(0, MAX_ERROR_CHARS - 1) + '…' : flat
}

/** Delay before the next try after `attempts` failures: 30 s, 2 min, 8 min, 32 min. */
export function backoffMs(attempts: number): number {
  return BACKOFF_BASE_MS * 4 ** Math.max(0, attempts - 1)
}

export interface DeliveryResult {
  sent: number
  failed: number
  retried: number
}

// One batch per state database at a time: a wake and the interval tick must not both pick the
// same rows. Keyed on the connection so contexts rebuilt around it share the guard.
const inFlight = new WeakSet<object>()

type Row = typeof mailOutbox.$inferSelect

/** Picks the due rows and leases them, so a second sender (another leader) skips them. */
function claimDue(ctx: Ctx, now: number, limit: number): Row[] {
  return ctx.db.transaction((tx) => {
    const rows = tx
      .select()
      .from(mailOutbox)
      .where(and(eq(mailOutbox.status, 'pending'), lte(mailOutbox.nextAttemptAt, now)))
      .orderBy(asc(mailOutbox.nextAttemptAt))
      .limit(limit)
      .all()
    if (rows.length > 0) {
      tx.update(mailOutbox)
        .set({ nextAttemptAt: now + CLAIM_MS })
        .where(inArray(mailOutbox.id, rows.map((r) => r.id)))
        .run()
    }
    return rows
  })
}

function giveUp(ctx: Ctx, row: Row, error: string): void {
  ctx.db
    .update(mailOutbox)
    .set({ status: 'failed', payload: null, attempts: row.attempts + 1, lastError: error })
    .where(eq(mailOutbox.id, row.id))
    .run()
  ctx.log.warn('mail given up', { id: row.id, template: row.template, attempts: row.attempts + 1, error })
}

async function deliverRow(ctx: Ctx, transport: MailTransport, from: string, row: Row): Promise<keyof DeliveryResult> {
  let message: { subject: string; text: string; html: string }
  try {
    if (row.payload === null) throw new Error('payload is missing')
    if (!(MAIL_TEMPLATES as readonly string[]).includes(row.template)) throw new Error(`unknown template ${row.template}`)
    let vars
    try {
      vars = openPayload(ctx.cfg.secretKey, row.payload)
    } catch {
      // AES-GCM's own words ("unable to authenticate data") do not say what happened.
      throw new Error('queued under another SVC_SECRET_KEY (the key changed since): it cannot be opened')
    }
    message = renderMail(row.template as MailTemplate, vars, ctx.cfg.baseUrl)
  } catch (e) {
    // Retrying cannot fix a payload sealed under another key or a template bug.
    giveUp(ctx, row, `cannot render: ${smtpErrorText(e)}`)
    return 'failed'
  }
  const attempts = row.attempts + 1
  try {
    await transport.sendMail({
      from,
      to: row.toEmail,
      ...message,
      // RFC 3834: keeps vacation responders and ticket systems from answering a robot.
      headers: { 'Auto-Submitted': 'auto-generated' },
    })
  } catch (e) {
    const error = smtpErrorText(e)
    if (attempts >= MAX_ATTEMPTS) {
      giveUp(ctx, row, error)
      return 'failed'
    }
    ctx.db
      .update(mailOutbox)
      .set({ attempts, lastError: error, nextAttemptAt: ctx.clock.now() + backoffMs(attempts) })
      .where(eq(mailOutbox.id, row.id))
      .run()
    ctx.log.info('mail delivery deferred', { id: row.id, template: row.template, attempts, error })
    return 'retried'
  }
  ctx.db
    .update(mailOutbox)
    .set({ status: 'sent', payload: null, attempts, sentAt: ctx.clock.now() })
    .where(eq(mailOutbox.id, row.id))
    .run()
  ctx.log.info('mail sent', { id: row.id, template: row.template, attempts })
  return 'sent'
}

/**
 * Sends up to `limit` due mails. A call made while another batch runs on the same database
 * returns zeros at once; the running batch or the next tick picks the rows up.
 */
export async function deliverDue(ctx: Ctx, transport: MailTransport, limit = 20, stopping: () => boolean = () => false): Promise<DeliveryResult> {
  const result: DeliveryResult = { sent: 0, failed: 0, retried: 0 }
  const from = ctx.cfg.smtp?.from
  if (from === undefined || inFlight.has(ctx.sqlite)) return result
  inFlight.add(ctx.sqlite)
  try {
    const rows = claimDue(ctx, ctx.clock.now(), limit)
    for (const [i, row] of rows.entries()) {
      // A stopping leader sends no more of the batch: against a server that never answers each
      // row waited out its timeout (10-15 s), and the stop waited for all 20. The rows not tried
      // are due again at once, for the next start.
      if (stopping()) {
        const rest = rows.slice(i).map((r) => r.id)
        ctx.db.update(mailOutbox).set({ nextAttemptAt: ctx.clock.now() }).where(inArray(mailOutbox.id, rest)).run()
        break
      }
      result[await deliverRow(ctx, transport, from, row)]++
    }
  } finally {
    inFlight.delete(ctx.sqlite)
  }
  return result
}

export interface MailLoop extends LoopSpec {
  /** Run soon, e.g. right after a transaction that enqueued mail commits. */
  wake(): void
  /** Cancels a pending wake and waits for a running batch; call before the database closes. */
  close(): Promise<void>
}

export function mailLoop(ctx: Ctx, transport: MailTransport, batch = 20): MailLoop {
  let current: Promise<void> | null = null
  let again = false
  let closed = false
  let timer: ReturnType<typeof setTimeout> | null = null

  const drain = async () => {
    do {
      again = false
      const r = await deliverDue(ctx, transport, batch, () => closed)
      // A full batch means more may be due; a wake during the batch may have added a row.
      if (r.sent + r.failed + r.retried >= batch) again = true
    } while (again && !closed)
  }
  const run = (): Promise<void> => {
    if (closed) return Promise.resolve()
    if (current !== null) {
      again = true
      return current
    }
    current = drain().finally(() => {
      current = null
    })
    return current
  }
  return {
    name: 'mail-sender',
    intervalMs: 2_000,
    run,
    wake() {
      if (closed || timer !== null) return
      timer = setTimeout(() => {
        timer = null
        run().catch((e) => ctx.log.error('loop failed', { loop: 'mail-sender', error: String(e) }))
      }, 0)
    },
    async close() {
      closed = true
      if (timer !== null) clearTimeout(timer)
      timer = null
      await current?.catch(() => {})
    },
  }
}

/** How long a sent or given-up mail's row (address, template, the server's reply) is kept. */
export const FINISHED_MAIL_KEEP_MS = 30 * 24 * 60 * 60_000

/**
 * Deletes sent and given-up mail queued more than 30 days ago. The rows stayed for good: the
 * address of everyone ever mailed (invitees who never signed up among them), growing with every
 * mail. The per-address invite cap counts the last 24 hours only.
 */
export function purgeFinishedMail(ctx: Ctx): number {
  const cutoff = ctx.clock.now() - FINISHED_MAIL_KEEP_MS
  return ctx.db.delete(mailOutbox).where(and(ne(mailOutbox.status, 'pending'), lt(mailOutbox.createdAt, cutoff))).run().changes
}

/** `purgeFinishedMail` every ten minutes; runs with SMTP off too (rows from when it was on). */
export function mailPurgeLoop(ctx: Ctx): LoopSpec {
  return {
    name: 'mail-purge',
    intervalMs: 10 * 60_000,
    run() {
      const n = purgeFinishedMail(ctx)
      if (n > 0) ctx.log.debug('purged', { mails: n })
    },
  }
}

export interface MailStatus {
  configured: boolean
  pending: number
  failed: number
  sent: number
}

export function mailStatus(ctx: Ctx): MailStatus {
  const rows = ctx.db
    .select({ status: mailOutbox.status, n: sql<number>`count(*)` })
    .from(mailOutbox)
    .groupBy(mailOutbox.status)
    .all()
  const count = (s: Row['status']) => Number(rows.find((r) => r.status === s)?.n ?? 0)
  return { configured: ctx.cfg.smtp !== null, pending: count('pending'), failed: count('failed'), sent: count('sent') }
}

export interface FailedMail {
  to: string
  template: string
  attempts: number
  lastError: string | null
  queuedAt: number
}

/** The mails given up most recently (the last attempt first): whom, what, and the server's word. */
export function recentFailures(ctx: Ctx, limit = 10): FailedMail[] {
  return ctx.db
    .select({ to: mailOutbox.toEmail, template: mailOutbox.template, attempts: mailOutbox.attempts, lastError: mailOutbox.lastError, queuedAt: mailOutbox.createdAt })
    .from(mailOutbox)
    .where(eq(mailOutbox.status, 'failed'))
    .orderBy(desc(mailOutbox.nextAttemptAt))
    .limit(limit)
    .all()
}

/**
 * Sends the test template straight away (not through the outbox), so the admin sees the
 * server's answer in the response. Any failure becomes smtp_failed with that answer.
 */
export async function sendTestMail(smtp: SmtpConfig, to: string, baseUrl: string, ca?: string): Promise<void> {
  const transport = await createTransport(smtp, { ca })
  try {
    await transport.verify()
    const message = renderMail('test', {}, baseUrl)
    await transport.sendMail({ from: smtp.from, to, ...message, headers: { 'Auto-Submitted': 'auto-generated' } })
  } catch (e) {
    throw new AppError('smtp_failed', smtpErrorText(e))
  } finally {
    transport.close()
  }
}
