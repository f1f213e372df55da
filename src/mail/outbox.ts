// The mail outbox: enqueue inside the caller's transaction, so a mail exists if and only if the
// change that caused it was committed.
import { and, eq, inArray } from 'drizzle-orm'
import { mailOutbox } from '../db/schema'
import { newId, nodeCrypto, randomBytes } from '../crypto'
import type { Db } from '../db/client'
import type { Clock } from '../time'

export const MAIL_TEMPLATES = [
  'verify-email',
  'pending-approval',
  'account-approved',
  'account-deactivated',
  'password-reset',
  'password-changed',
  'pool-invite',
  'test',
] as const
export type MailTemplate = (typeof MAIL_TEMPLATES)[number]

export type MailVars = Record<string, string>

/**
 * The mails a new one makes out of date, while they still wait in the outbox (an SMTP outage):
 * sent after it, they told a deactivated person "approved, log in now", or carried a link a
 * later one had already voided. Not yet sent, they are dropped when the new one is queued.
 */
const SUPERSEDES: Partial<Record<MailTemplate, readonly MailTemplate[]>> = {
  'verify-email': ['verify-email'],
  'password-reset': ['password-reset'],
  'pending-approval': ['pending-approval', 'account-approved', 'account-deactivated'],
  'account-approved': ['pending-approval', 'account-approved', 'account-deactivated'],
  // Deactivation also voids every mailed link.
  'account-deactivated': ['pending-approval', 'account-approved', 'account-deactivated', 'verify-email', 'password-reset'],
}

function payloadKey(secret: Buffer): Buffer {
  return Buffer.from(new Bun.CryptoHasher('sha256', secret).update('svc mail outbox payload v1').digest())
}

export function sealPayload(secret: Buffer, vars: MailVars): string {
  const iv = randomBytes(12)
  const c = nodeCrypto().createCipheriv('aes-256-gcm', payloadKey(secret), iv)
  const body = Buffer.concat([c.update(JSON.stringify(vars), 'utf8'), c.final()])
  return [iv, c.getAuthTag(), body].map((b) => b.toString('base64url')).join('.')
}

export function openPayload(secret: Buffer, sealed: string): MailVars {
  const [iv, tag, body] = sealed.split('.').map((s) => Buffer.from(s, 'base64url'))
  const d = nodeCrypto().createDecipheriv('aes-256-gcm', payloadKey(secret), iv!)
  d.setAuthTag(tag!)
  return JSON.parse(Buffer.concat([d.update(body!), d.final()]).toString('utf8')) as MailVars
}

/** Whether a sealed payload opens and `test` holds for it (one sealed under another key never does). */
function opensTo(secret: Buffer, sealed: string, test: (vars: MailVars) => boolean): boolean {
  try {
    return test(openPayload(secret, sealed))
  } catch {
    return false
  }
}

export interface Outbox {
  /** True when SMTP is configured; without it nothing is queued (features degrade per SPEC.md). */
  readonly enabled: boolean
  enqueue(db: Db, template: MailTemplate, to: string, vars: MailVars): void
  /**
   * Drops mail to `to` still waiting to go out (an SMTP outage) whose variables `voided` says the
   * caller's change made pointless, e.g. the link of an invite withdrawn since. Returns how many.
   */
  drop(db: Db, template: MailTemplate, to: string, voided: (vars: MailVars) => boolean): number
  /** Called after the enqueuing transaction commits, to wake the sender early. */
  wake(): void
}

export function createOutbox(enabled: boolean, secret: Buffer, clock: Clock, onWake: () => void = () => {}): Outbox {
  return {
    enabled,
    enqueue(db, template, to, vars) {
      if (!enabled) return
      const now = clock.now()
      const stale = SUPERSEDES[template]
      if (stale) db.delete(mailOutbox).where(and(eq(mailOutbox.toEmail, to), eq(mailOutbox.status, 'pending'), inArray(mailOutbox.template, [...stale]))).run()
      db.insert(mailOutbox)
        .values({
          id: newId(),
          template,
          toEmail: to,
          payload: sealPayload(secret, vars),
          status: 'pending',
          attempts: 0,
          nextAttemptAt: now,
          createdAt: now,
        })
        .run()
    },
    drop(db, template, to, voided) {
      if (!enabled) return 0
      const waiting = db
        .select({ id: mailOutbox.id, payload: mailOutbox.payload })
        .from(mailOutbox)
        .where(and(eq(mailOutbox.toEmail, to), eq(mailOutbox.status, 'pending'), eq(mailOutbox.template, template)))
        .all()
      const ids = waiting.filter((r) => r.payload !== null && opensTo(secret, r.payload, voided)).map((r) => r.id)
      if (ids.length > 0) db.delete(mailOutbox).where(inArray(mailOutbox.id, ids)).run()
      return ids.length
    },
    wake: () => onWake(),
  }
}
