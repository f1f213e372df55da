import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { SMTPServer, type SMTPServerOptions } from 'smtp-server'
import { eq } from 'drizzle-orm'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { closedPort } from '../helpers/e2e'
import { runSvc } from '../helpers/leader'
import { openDb } from '../../src/db/client'
import { mailOutbox } from '../../src/db/schema'
import { FakeClock } from '../helpers/clock'
import { until } from '../helpers/until'
import { silentLogger } from '../../src/log'
import { AppError } from '../../src/errors'
import { issueActionToken } from '../../src/accounts/service'
import { createOutbox, MAIL_TEMPLATES, type MailTemplate } from '../../src/mail/outbox'
import { renderMail } from '../../src/mail/templates'
import { createTransport, deliverDue, mailStatus, sendTestMail, backoffMs, mailLoop, mailPurgeLoop } from '../../src/mail/sender'
import { DAY_MS } from '../../src/time'
import type { Ctx } from '../../src/context'

const BASE = 'https://leader.example.org'
const VARS: Record<MailTemplate, Record<string, string>> = {
  'verify-email': { name: 'Ada', link: '/verify-email?token=tok-verify' },
  'pending-approval': { name: 'Ada' },
  'account-approved': { name: 'Ada' },
  'account-deactivated': { name: 'Ada' },
  'password-reset': { name: 'Ada', link: '/reset-password?token=tok-reset' },
  'password-changed': { name: 'Ada' },
  'pool-invite': { pool_name: 'Lab GPUs', inviter: 'Grace', link: '/pools/invites/inv-1' },
  test: {},
}

// A real SMTP server that keeps every message it accepts.
interface Inbox {
  port: number
  messages: { to: string[]; raw: string }[]
  close(): Promise<void>
}

async function startSmtp(opts: SMTPServerOptions = {}): Promise<Inbox> {
  const messages: Inbox['messages'] = []
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: opts.secure || opts.key ? [] : ['STARTTLS'],
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        messages.push({ to: session.envelope.rcptTo.map((a) => a.address), raw: Buffer.concat(chunks).toString('utf8') })
        cb()
      })
    },
    ...opts,
  })
  // A client refusing the certificate hangs up mid-handshake; unheard, that error would throw.
  server.on('error', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as AddressInfo).port
  return { port, messages, close: () => new Promise<void>((r) => server.close(() => r())) }
}

const smtpError = (code: number, text: string) => Object.assign(new Error(text), { responseCode: code })

// Just enough MIME to read what nodemailer writes: multipart bodies, base64 and quoted-printable.
function decodeWords(s: string): string {
  return s.replace(/=\?utf-8\?([bq])\?([^?]*)\?=/gi, (_, enc: string, data: string) =>
    enc.toLowerCase() === 'b'
      ? Buffer.from(data, 'base64').toString('utf8')
      : Buffer.from(data.replace(/_/g, ' ').replace(/=([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8'),
  )
}

function parseMime(raw: string): { headers: Record<string, string>; texts: string[] } {
  const cut = raw.indexOf('\r\n\r\n')
  const headers: Record<string, string> = {}
  for (const line of raw.slice(0, cut).replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const i = line.indexOf(':')
    headers[line.slice(0, i).toLowerCase()] = decodeWords(line.slice(i + 1).trim()).replace(/\?=\s+=\?/g, '')
  }
  const body = raw.slice(cut + 4)
  const boundary = /boundary="?([^";]+)"?/i.exec(headers['content-type'] ?? '')?.[1]
  if (boundary) {
    const parts = body.split(`--${boundary}`).slice(1, -1)
    return { headers, texts: parts.flatMap((p) => parseMime(p.replace(/^\r\n/, '')).texts) }
  }
  const cte = (headers['content-transfer-encoding'] ?? '7bit').toLowerCase()
  let text = body
  if (cte === 'base64') text = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
  if (cte === 'quoted-printable') {
    const bin = body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
    text = Buffer.from(bin, 'latin1').toString('utf8')
  }
  return { headers, texts: [text] }
}

function smtpEnv(port: number, tls: 'none' | 'starttls' | 'ssl', extra: Record<string, string> = {}): Record<string, string> {
  return { SVC_SMTP_HOST: '127.0.0.1', SVC_SMTP_PORT: String(port), SVC_SMTP_FROM: 'leader@example.com', SVC_SMTP_TLS: tls, ...extra }
}

function outboxRow(h: { ctx: Ctx }, id?: string) {
  const rows = h.ctx.db.select().from(mailOutbox).all()
  return id ? rows.find((r) => r.id === id)! : rows[0]!
}

let tls: { key: string; cert: string }

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mail-tls-'))
  const r = Bun.spawnSync(
    ['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-days', '1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
    { stderr: 'pipe' },
  )
  if (r.exitCode !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`)
  tls = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') }
})

describe('mail templates', () => {
  test('every template renders a subject, a text and an HTML part with its link and name', () => {
    for (const t of MAIL_TEMPLATES) {
      const m = renderMail(t, VARS[t], BASE)
      expect(m.subject.length).toBeGreaterThan(0)
      for (const part of [m.subject, m.text, m.html]) expect(part).not.toContain('undefined')
      const link = VARS[t].link
      if (link) {
        expect(m.text).toContain(BASE + link)
        expect(m.html).toContain(`href="${BASE + link}"`)
      }
      if (VARS[t].name) expect(m.text).toContain('Hello Ada,')
    }
    expect(renderMail('account-approved', VARS['account-approved'], BASE).text).toContain(`${BASE}/login`)
    const invite = renderMail('pool-invite', VARS['pool-invite'], BASE)
    expect(invite.subject).toBe('You have been invited to a pool on leader.example.org')
    expect(invite.text).toContain('"Lab GPUs"')
    expect(invite.text).toContain('"Grace"')
  })

  test('no subject carries user-chosen text: pool, inviter and display names appear in the body only (issue 26, item 6)', () => {
    const bait = 'URGENT Your account is suspended, call +1 555 0100'
    for (const t of MAIL_TEMPLATES) {
      const vars = Object.fromEntries(Object.entries(VARS[t]).map(([k, v]) => [k, k === 'link' ? v : `${bait} ${k}`]))
      const m = renderMail(t, vars, BASE)
      expect([t, m.subject.includes('URGENT')]).toEqual([t, false])
      for (const [k, v] of Object.entries(vars)) if (k !== 'link') expect([t, k, m.text.includes(v)]).toEqual([t, k, true])
    }
  })

  test('user-chosen names are escaped in the HTML part', () => {
    const m = renderMail('verify-email', { name: '<script>alert(1)</script>', link: '/verify-email?token=a&b' }, BASE)
    expect(m.html).not.toContain('<script>')
    expect(m.html).toContain('&#60;script&#62;')
    expect(m.html).toContain(`href="${BASE}/verify-email?token=a&#38;b"`)
    const invite = renderMail('pool-invite', { pool_name: '"><img src=x>', inviter: 'Eve & co', link: '/i' }, BASE)
    expect(invite.html).not.toContain('<img')
    expect(invite.html).toContain('Eve &#38; co')
  })

  test('a missing variable throws instead of mailing "undefined"', () => {
    expect(() => renderMail('verify-email', { name: 'Ada' }, BASE)).toThrow(/link/)
    expect(() => renderMail('password-changed', {}, BASE)).toThrow(/name/)
    expect(() => renderMail('pool-invite', { inviter: 'Grace', link: '/i' }, BASE)).toThrow(/pool_name/)
  })

  test('links to another host are refused', () => {
    expect(() => renderMail('password-reset', { name: 'A', link: 'https://evil.example/x' }, BASE)).toThrow()
    expect(() => renderMail('password-reset', { name: 'A', link: '//evil.example/x' }, BASE)).toThrow()
    expect(renderMail('password-reset', { name: 'A', link: `${BASE}/reset-password?token=t` }, BASE).text).toContain(`${BASE}/reset-password?token=t`)
  })
})

describe('mail sender', () => {
  const open: (Harness | Inbox)[] = []
  afterAll(async () => {
    for (const o of open) 'ctx' in o ? o.close() : await o.close()
  })
  const track = <T extends Harness | Inbox>(o: T): T => (open.push(o), o)

  test('an enqueued mail is delivered and its payload is cleared', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none', { SVC_BASE_URL: BASE })))
    h.ctx.db.transaction((tx) => h.ctx.mail.enqueue(tx, 'verify-email', 'ada@example.com', VARS['verify-email']))
    expect(mailStatus(h.ctx)).toEqual({ configured: true, pending: 1, failed: 0, sent: 0 })
    const r = await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))
    expect(r).toEqual({ sent: 1, failed: 0, retried: 0 })
    const row = outboxRow(h)
    expect([row.status, row.payload, row.attempts, row.sentAt]).toEqual(['sent', null, 1, h.clock.now()])
    expect(inbox.messages).toHaveLength(1)
    const msg = parseMime(inbox.messages[0]!.raw)
    expect(inbox.messages[0]!.to).toEqual(['ada@example.com'])
    expect(msg.headers['to']).toContain('ada@example.com')
    expect(msg.headers['from']).toContain('leader@example.com')
    expect(msg.headers['subject']).toContain('Confirm your email address')
    expect(msg.texts).toHaveLength(2)
    for (const t of msg.texts) expect(t).toContain(`${BASE}/verify-email?token=tok-verify`)
    expect(mailStatus(h.ctx)).toEqual({ configured: true, pending: 0, failed: 0, sent: 1 })
    expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 0, failed: 0, retried: 0 })
  })

  test('a sign-up\'s mails greet the address, not the display name whoever signed up chose, until the address is proven', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none', { SVC_BASE_URL: BASE, SVC_REQUIRE_EMAIL_VERIFICATION: '1', SVC_REQUIRE_ADMIN_APPROVAL: '1' }), { mailEnabled: true }))
    await seedUser(h, 'root@example.com', { role: 'admin' }) // the first account is the admin, active at once
    const lure = 'your account is locked. Unlock: call +1-555-0100'
    const r = await h.client({ ip: '203.0.113.7' }).post('/api/v1/auth/register', { email: 'target@example.net', password: 'a long password', display_name: lure })
    expect(r.status).toBe(201)
    const texts = async () => {
      await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))
      return parseMime(inbox.messages.at(-1)!.raw).texts
    }
    for (const t of await texts()) {
      expect(t).toContain('Hello target@example.net,')
      expect(t).not.toContain('locked')
    }
    // The mailbox's owner opened the link: the account, name and all, is theirs now.
    const token = issueActionToken(h.ctx.db, h.clock.now(), r.body.user.id, 'verify')
    expect((await h.client({ ip: '203.0.113.7' }).post('/api/v1/auth/verify-email', { token })).body).toEqual({ status: 'pending_approval' })
    for (const t of await texts()) expect(t).toContain(`Hello ${lure},`)
    expect(inbox.messages).toHaveLength(2)
  })

  test('inviting one address to a pool again and again delivers one mail, with a fixed subject and the invite link (issue 26, item 6)', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none', { SVC_BASE_URL: BASE })))
    const owner = await seedUser(h, 'owner@example.com', { displayName: 'Bank of Example Security Team' })
    const a = sessionClient(h, owner.id)
    const p = await a.post('/api/v1/pools', { name: 'Your account is locked: reply with your password' })
    const invites = []
    for (let i = 0; i < 5; i++) invites.push(await a.post(`/api/v1/pools/${p.body.id}/invites`, { email: 'target@example.com' }))
    expect(invites.map((r) => r.status)).toEqual([201, 200, 200, 200, 200])
    expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 1, failed: 0, retried: 0 })
    expect(inbox.messages).toHaveLength(1)
    const msg = parseMime(inbox.messages[0]!.raw)
    expect(msg.headers['subject']).toBe('You have been invited to a pool on leader.example.org')
    for (const t of msg.texts) {
      // The inviter's address is not proven: the mail names it, not the name they chose.
      expect(t).toContain('owner@example.com')
      expect(t).not.toContain('Bank of Example')
      expect(t).toContain('Your account is locked: reply with your password')
      expect(t).toContain(invites[0]!.body.invite_link.replace(/&/g, t.includes('<html') ? '&#38;' : '&'))
    }
  })

  test('STARTTLS and implicit TLS both deliver with the certificate checked against the given CA', async () => {
    for (const [mode, secure] of [['starttls', false], ['ssl', true]] as const) {
      const inbox = track(await startSmtp({ secure, key: tls.key, cert: tls.cert }))
      const h = track(makeHarness(smtpEnv(inbox.port, mode)))
      h.ctx.mail.enqueue(h.ctx.db, 'password-changed', 'ada@example.com', { name: 'Ada' })
      expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!, { ca: tls.cert }))).toEqual({ sent: 1, failed: 0, retried: 0 })
      expect(inbox.messages).toHaveLength(1)
      // Without the CA the self-signed certificate is refused: verification is on.
      h.ctx.mail.enqueue(h.ctx.db, 'password-changed', 'ada@example.com', { name: 'Ada' })
      expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 0, failed: 0, retried: 1 })
      expect(inbox.messages).toHaveLength(1)
    }
  })

  test('starttls refuses to continue in plain text when the server offers no STARTTLS', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'starttls')))
    h.ctx.mail.enqueue(h.ctx.db, 'test', 'ada@example.com', {})
    expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 0, failed: 0, retried: 1 })
    expect(inbox.messages).toHaveLength(0)
  })

  test('a refused mail is retried after each backoff and then delivered', async () => {
    let refusals = 2
    const inbox = track(
      await startSmtp({
        onRcptTo(_a, _s, cb) {
          if (refusals-- > 0) return cb(smtpError(451, 'Mailbox busy, try again later'))
          cb()
        },
      }),
    )
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    const transport = await createTransport(h.cfg.smtp!)
    h.ctx.mail.enqueue(h.ctx.db, 'test', 'ada@example.com', {})
    expect(await deliverDue(h.ctx, transport)).toEqual({ sent: 0, failed: 0, retried: 1 })
    let row = outboxRow(h)
    expect([row.status, row.attempts, row.nextAttemptAt]).toEqual(['pending', 1, h.clock.now() + 30_000])
    expect(row.lastError).toContain('451')
    expect(row.lastError).toContain('Mailbox busy, try again later')
    // Not due yet: nothing is sent before the backoff has passed.
    h.clock.advance(29_999)
    expect(await deliverDue(h.ctx, transport)).toEqual({ sent: 0, failed: 0, retried: 0 })
    h.clock.advance(1)
    expect(await deliverDue(h.ctx, transport)).toEqual({ sent: 0, failed: 0, retried: 1 })
    row = outboxRow(h)
    expect([row.attempts, row.nextAttemptAt]).toEqual([2, h.clock.now() + 120_000])
    h.clock.advance(120_000)
    expect(await deliverDue(h.ctx, transport)).toEqual({ sent: 1, failed: 0, retried: 0 })
    row = outboxRow(h)
    expect([row.status, row.attempts, row.payload]).toEqual(['sent', 3, null])
    expect(inbox.messages).toHaveLength(1)
  })

  test('a mail is given up after five failed attempts and its payload is dropped', async () => {
    const inbox = track(await startSmtp({ onRcptTo: (_a, _s, cb) => cb(smtpError(451, 'Greylisted')) }))
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    const transport = await createTransport(h.cfg.smtp!)
    h.ctx.mail.enqueue(h.ctx.db, 'password-reset', 'ada@example.com', VARS['password-reset'])
    for (let attempt = 1; attempt <= 4; attempt++) {
      expect(await deliverDue(h.ctx, transport)).toEqual({ sent: 0, failed: 0, retried: 1 })
      expect(outboxRow(h).attempts).toBe(attempt)
      expect(outboxRow(h).status).toBe('pending')
      h.clock.advance(backoffMs(attempt))
    }
    expect(await deliverDue(h.ctx, transport)).toEqual({ sent: 0, failed: 1, retried: 0 })
    const row = outboxRow(h)
    expect([row.status, row.attempts, row.payload]).toEqual(['failed', 5, null])
    expect(row.lastError).toContain('Greylisted')
    expect(mailStatus(h.ctx)).toEqual({ configured: true, pending: 0, failed: 1, sent: 0 })
    h.clock.advance(86_400_000)
    expect(await deliverDue(h.ctx, transport)).toEqual({ sent: 0, failed: 0, retried: 0 })
  })

  test('an undecryptable payload fails that row only; the rest of the batch is sent', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    h.ctx.mail.enqueue(h.ctx.db, 'test', 'bad@example.com', {})
    const bad = outboxRow(h).id
    h.ctx.db.update(mailOutbox).set({ payload: 'AAAA.BBBB.CCCC' }).where(eq(mailOutbox.id, bad)).run()
    h.clock.advance(1)
    h.ctx.mail.enqueue(h.ctx.db, 'test', 'good@example.com', {})
    expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 1, failed: 1, retried: 0 })
    expect([outboxRow(h, bad).status, outboxRow(h, bad).payload]).toEqual(['failed', null])
    expect(inbox.messages.map((m) => m.to)).toEqual([['good@example.com']])
  })

  test('concurrent calls send each mail once', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    for (let i = 0; i < 3; i++) h.ctx.mail.enqueue(h.ctx.db, 'test', `u${i}@example.com`, {})
    const transport = await createTransport(h.cfg.smtp!)
    const results = await Promise.all([deliverDue(h.ctx, transport), deliverDue(h.ctx, transport)])
    expect(results.reduce((n, r) => n + r.sent, 0)).toBe(3)
    expect(inbox.messages).toHaveLength(3)
  })

  test('the mail loop drains more than one batch per run, and wake sends without waiting for the tick', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    const loop = mailLoop(h.ctx, await createTransport(h.cfg.smtp!), 2)
    for (let i = 0; i < 3; i++) h.ctx.mail.enqueue(h.ctx.db, 'test', `u${i}@example.com`, {})
    await loop.run()
    expect(inbox.messages).toHaveLength(3)
    h.ctx.mail.enqueue(h.ctx.db, 'test', 'late@example.com', {})
    loop.wake()
    await until(() => inbox.messages.length >= 4, 'the woken loop to send the late mail')
    await loop.close()
    expect(inbox.messages).toHaveLength(4)
    // Closed: no more runs, so the database can close under it.
    h.ctx.mail.enqueue(h.ctx.db, 'test', 'after@example.com', {})
    loop.wake()
    await loop.run()
    expect(mailStatus(h.ctx).pending).toBe(1)
  })

  test('a stopping leader sends no more of its batch: the mail under way finishes, the rest are due again at once (a silent server held the stop 10-15 s a mail)', async () => {
    let release = () => {}
    const held = new Promise<void>((r) => (release = r))
    let reached = () => {}
    const atServer = new Promise<void>((r) => (reached = r))
    const inbox = track(
      await startSmtp({
        onRcptTo(_address, _session, cb) {
          reached()
          void held.then(() => cb())
        },
      }),
    )
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    const loop = mailLoop(h.ctx, await createTransport(h.cfg.smtp!), 20)
    for (let i = 0; i < 3; i++) h.ctx.mail.enqueue(h.ctx.db, 'test', `u${i}@example.com`, {})
    const running = loop.run()
    await atServer
    const closing = loop.close()
    release()
    await Promise.all([running, closing])
    expect(inbox.messages).toHaveLength(1)
    expect(mailStatus(h.ctx).pending).toBe(2)
    // Due now, not after the claim's hold: the next start sends them at once.
    const next = await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))
    expect(next.sent).toBe(2)
  })

  test('a mail queued under another secret key is given up with a reason that says so (it read "unable to authenticate data")', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    h.ctx.mail.enqueue(h.ctx.db, 'test', 'ada@example.com', {})
    const rotated: Ctx = { ...h.ctx, cfg: { ...h.cfg, secretKey: Buffer.alloc(32, 7) } }
    expect((await deliverDue(rotated, await createTransport(h.cfg.smtp!))).failed).toBe(1)
    const row = outboxRow(h)
    expect(row.status).toBe('failed')
    expect(row.lastError).toContain('queued under another SVC_SECRET_KEY')
    expect(inbox.messages).toHaveLength(0)
  })

  test('a mail queued while an older one to the same person still waits drops what it makes out of date (a deactivated user got "approved" last, after an outage)', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    const waiting = () => h.ctx.db.select().from(mailOutbox).all().filter((r) => r.status === 'pending').map((r) => `${r.template} ${r.toEmail}`)
    const q = (template: MailTemplate, to = 'erin@example.com') => h.ctx.mail.enqueue(h.ctx.db, template, to, VARS[template])
    q('verify-email')
    q('verify-email')
    q('verify-email', 'other@example.com')
    expect(waiting()).toEqual(['verify-email erin@example.com', 'verify-email other@example.com'])
    q('pending-approval')
    q('account-approved')
    q('pool-invite')
    expect(waiting()).toEqual(['verify-email erin@example.com', 'verify-email other@example.com', 'account-approved erin@example.com', 'pool-invite erin@example.com'])
    q('account-deactivated')
    expect(waiting()).toEqual(['verify-email other@example.com', 'pool-invite erin@example.com', 'account-deactivated erin@example.com'])
    await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))
    expect(inbox.messages.map((m) => m.to[0]).sort()).toEqual(['erin@example.com', 'erin@example.com', 'other@example.com'])
  })

  test('an invite withdrawn, or its pool deleted, while its mail still waits (an SMTP outage) is not mailed; other waiting invites to the address are', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none', { SVC_BASE_URL: BASE })))
    // An admin: an operator's plan holds fewer pools.
    const owner = sessionClient(h, (await seedUser(h, 'owner@example.com', { role: 'admin' })).id)
    const pool = async (name: string) => (await owner.post('/api/v1/pools', { name })).body.id as string
    const [a, b, c] = [await pool('Withdrawn'), await pool('Kept'), await pool('Deleted')]
    const invite = async (poolId: string, email = 'dana@example.com') => (await owner.post(`/api/v1/pools/${poolId}/invites`, { email })).body
    const withdrawn = await invite(a)
    const kept = await invite(b)
    await invite(c)
    await invite(c, 'eve@example.com')
    expect((await owner.delete(`/api/v1/pools/${a}/invites/${withdrawn.id}`)).status).toBe(204)
    const del = await owner.delete(`/api/v1/pools/${c}`)
    expect([del.status, del.body]).toEqual([200, { deleted: true, detached_nodes: 0 }])
    expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 1, failed: 0, retried: 0 })
    expect(inbox.messages.map((m) => m.to)).toEqual([['dana@example.com']])
    for (const t of parseMime(inbox.messages[0]!.raw).texts) expect(t).toContain(kept.invite_link.replace(/&/g, t.includes('<html') ? '&#38;' : '&'))
  })

  test('sent and given-up mail leaves the outbox 30 days after it was queued (every address ever mailed stayed); waiting mail stays', async () => {
    const h = track(makeHarness(smtpEnv(await closedPort(), 'none')))
    const q = (to: string) => h.ctx.mail.enqueue(h.ctx.db, 'password-changed', to, VARS['password-changed'])
    q('sent@example.com')
    q('failed@example.com')
    q('waiting@example.com')
    const set = (to: string, status: 'sent' | 'failed') => h.ctx.db.update(mailOutbox).set({ status, payload: null }).where(eq(mailOutbox.toEmail, to)).run()
    set('sent@example.com', 'sent')
    set('failed@example.com', 'failed')
    const purge = async () => {
      const loop = mailPurgeLoop(h.ctx)
      expect(loop.intervalMs).toBe(10 * 60_000)
      await loop.run()
      return h.ctx.db.select().from(mailOutbox).all().map((r) => r.toEmail).sort()
    }
    h.clock.advance(30 * DAY_MS - 1)
    expect(await purge()).toEqual(['failed@example.com', 'sent@example.com', 'waiting@example.com'])
    h.clock.advance(2)
    expect(await purge()).toEqual(['waiting@example.com'])
  })

  test('outbox rows survive a restart and are delivered afterwards', async () => {
    const inbox = track(await startSmtp())
    const h = makeHarness(smtpEnv(inbox.port, 'none'))
    h.ctx.mail.enqueue(h.ctx.db, 'verify-email', 'ada@example.com', VARS['verify-email'])
    h.close()
    const store = openDb(h.cfg.dbPath)
    const clock = new FakeClock(h.clock.now() + 60_000)
    const ctx: Ctx = { cfg: h.cfg, clock, db: store.db, sqlite: store.sqlite, log: silentLogger, mail: createOutbox(true, h.cfg.secretKey, clock), stopping: new AbortController().signal }
    try {
      expect(outboxRow({ ctx }).status).toBe('pending')
      expect(await deliverDue(ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 1, failed: 0, retried: 0 })
      expect(parseMime(inbox.messages[0]!.raw).texts[0]).toContain('/verify-email?token=tok-verify')
    } finally {
      store.close()
    }
  })

  test('sendTestMail delivers directly, without the outbox', async () => {
    const inbox = track(await startSmtp())
    const h = track(makeHarness(smtpEnv(inbox.port, 'none')))
    await sendTestMail(h.cfg.smtp!, 'admin@example.com', BASE)
    expect(inbox.messages).toHaveLength(1)
    expect(parseMime(inbox.messages[0]!.raw).headers['subject']).toBe('Test email from leader.example.org')
    expect(mailStatus(h.ctx).sent).toBe(0)
  })

  test('sendTestMail reports a refused login as smtp_failed with the server reply', async () => {
    const inbox = track(
      await startSmtp({
        authOptional: false,
        allowInsecureAuth: true,
        onAuth: (_a, _s, cb) => cb(smtpError(535, 'Invalid username or password')),
      }),
    )
    const h = track(makeHarness(smtpEnv(inbox.port, 'none', { SVC_SMTP_USER: 'leader', SVC_SMTP_PASSWORD: 'hunter2-secret' })))
    const err = await sendTestMail(h.cfg.smtp!, 'admin@example.com', BASE).catch((e) => e)
    expect(err).toBeInstanceOf(AppError)
    expect(err.code).toBe('smtp_failed')
    expect(err.message).toContain('Invalid username or password')
    expect(err.message).not.toContain('hunter2-secret')
    expect(inbox.messages).toHaveLength(0)
  })

  test('sendTestMail reports an unreachable server as smtp_failed', async () => {
    // Found just before use: a port released at the start of the file could be handed to one of
    // the file's own servers by then (seen once in CI: the connection was accepted, never greeted).
    const h = track(makeHarness(smtpEnv(await closedPort(), 'none')))
    const err = await sendTestMail(h.cfg.smtp!, 'admin@example.com', BASE).catch((e) => e)
    expect(err).toBeInstanceOf(AppError)
    expect(err.code).toBe('smtp_failed')
    expect(err.message).toMatch(/ECONNREFUSED|connect/i)
  })
})

describe('svc admin send-test-mail (the built binary)', () => {
  test('delivers the test mail to a real SMTP server; one that does not answer is one line naming it, exit 1', async () => {
    const inbox = await startSmtp()
    try {
      const sent = await runSvc(['admin', 'send-test-mail', 'ops@example.org'], { env: smtpEnv(inbox.port, 'none') })
      expect([sent.code, sent.stderr, sent.stdout]).toEqual([0, '', `test mail sent to ops@example.org through 127.0.0.1:${inbox.port} (none)\n`])
      expect(inbox.messages.map((m) => m.to)).toEqual([['ops@example.org']])
      // --db, which every admin command takes (CONTRACT), is taken here too (and not read).
      const withDb = await runSvc(['admin', 'send-test-mail', 'ops@example.org', '--db', '/nonexistent/join_state.sqlite3'], { env: smtpEnv(inbox.port, 'none') })
      expect([withDb.code, withDb.stderr]).toEqual([0, ''])
    } finally {
      await inbox.close()
    }
    const port = await closedPort()
    const down = await runSvc(['admin', 'send-test-mail', 'ops@example.org'], { env: smtpEnv(port, 'none') })
    expect(down.code).toBe(1)
    expect(down.stderr).toMatch(new RegExp(`^svc: the SMTP server 127\\.0\\.0\\.1:${port} \\(none\\) did not take the test mail: .*ECONNREFUSED.*\\n$`))
  })
})
