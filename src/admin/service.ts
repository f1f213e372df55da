// Admin features without HTTP: user management (users.ts, list.ts), the audit log and the mail
// status and test mail here. Routes, the CLI and tests call these with plain values.
// Service style: services are classes (`Admin` here, `AdminUsers` in users.ts) built once in app.ts
// `createServices` and handed to the routes; plain functions that take a `Db` (list.ts) are
// transaction helpers other code composes.
import { listAudit, recordAudit } from '../audit/service'
import { getUser } from '../accounts/service'
import { AppError } from '../errors'
import { iso } from '../time'
import { mailStatus, recentFailures, sendTestMail, smtpErrorText } from '../mail/sender'
import type { Ctx } from '../context'
import type { AuditQuery, MailState } from './model'
import type { AdminActor } from '../caller'

export { listUsers, pendingCount } from './list'

export class Admin {
  constructor(private readonly ctx: Ctx) {}

  /** One page of the audit log, newest first, as the query filters it. */
  listAudit(query: AuditQuery) {
    return listAudit(this.ctx.db, query)
  }

  /** `configured` follows the outbox, the switch every mail-sending feature obeys. */
  mailState(): MailState {
    const ctx = this.ctx
    const s = mailStatus(ctx)
    const configured = ctx.mail.enabled
    const recent_failures = recentFailures(ctx).map((f) => ({ to: f.to, template: f.template, attempts: f.attempts, last_error: f.lastError, queued_at: iso(f.queuedAt) }))
    return { configured, status: configured ? 'configured' : 'disabled', pending: s.pending, failed: s.failed, sent: s.sent, recent_failures }
  }

  /** Sends the test template to the calling admin, straight to SMTP, so the reply shows in the answer. */
  async sendTestMail(actor: AdminActor): Promise<{ sent: true; to: string }> {
    const ctx = this.ctx
    const me = getUser(ctx.db, actor.userId)
    if (!me) throw new AppError('unauthorized', 'Log in first.')
    const smtp = ctx.cfg.smtp
    if (smtp === null) throw new AppError('mail_disabled', 'SMTP is not configured: set SVC_SMTP_HOST and SVC_SMTP_FROM.')
    const entry = { kind: 'admin.mail.test', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'email', targetId: me.email }
    try {
      await sendTestMail(smtp, me.email, ctx.cfg.baseUrl, smtp.ca ?? undefined)
    } catch (e) {
      const error = e instanceof AppError ? e.message : smtpErrorText(e)
      recordAudit(ctx.db, ctx.clock, { ...entry, detail: { ok: false, error } })
      throw e instanceof AppError ? e : new AppError('smtp_failed', error)
    }
    recordAudit(ctx.db, ctx.clock, { ...entry, detail: { ok: true } })
    return { sent: true, to: me.email }
  }
}
