// Mail to internationalised addresses through nodemailer and a real SMTP server (smtp-server):
// an IDN domain travels as its A-label (any server takes it), a non-ASCII local part needs a relay
// that announces SMTPUTF8, and a relay without it refuses with a reply the outbox keeps.
import { afterAll, describe, expect, test } from 'bun:test'
import type { AddressInfo } from 'node:net'
import { SMTPServer, type SMTPServerOptions } from 'smtp-server'
import { makeHarness, seedUser, type Harness } from '../helpers/harness'
import { mailOutbox } from '../../src/db/schema'
import { createTransport, deliverDue } from '../../src/mail/sender'

interface Received {
  rcpt: string[]
  smtputf8: boolean
  toHeader: string
}

async function startSmtp(opts: SMTPServerOptions = {}) {
  const got: Received[] = []
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const head = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n')[0]!
        const args = session.envelope.mailFrom ? session.envelope.mailFrom.args : false
        got.push({
          rcpt: session.envelope.rcptTo.map((a) => a.address),
          smtputf8: typeof args === 'object' && args !== null && 'SMTPUTF8' in args,
          toHeader: /^To: (.*)$/m.exec(head)?.[1] ?? '',
        })
        cb()
      })
    },
    ...opts,
  })
  server.on('error', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.server.address() as AddressInfo).port, got, close: () => new Promise<void>((r) => server.close(() => r())) }
}

const open: { close(): unknown }[] = []
afterAll(async () => {
  for (const o of open) await o.close()
})

async function leaderMailingTo(port: number): Promise<Harness> {
  const h = makeHarness({ SVC_SMTP_HOST: '127.0.0.1', SVC_SMTP_PORT: String(port), SVC_SMTP_FROM: 'leader@example.com', SVC_SMTP_TLS: 'none', SVC_REQUIRE_EMAIL_VERIFICATION: '1' })
  open.push(h)
  await seedUser(h, 'root@example.com', { role: 'admin' })
  for (const email of ['Jörg.User@example.org', 'user@bücher.example']) {
    const r = await h.client({ ip: '203.0.113.7' }).post('/api/v1/auth/register', { email, password: 'a long password' })
    expect([email, r.status, r.body.user?.status]).toEqual([email, 201, 'unverified'])
  }
  return h
}

describe('verification mail to internationalised addresses', () => {
  test('an SMTPUTF8 relay receives both: the UTF-8 mailbox with SMTPUTF8, the IDN domain as its A-label', async () => {
    const smtp = await startSmtp()
    open.push(smtp)
    const h = await leaderMailingTo(smtp.port)
    expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 2, failed: 0, retried: 0 })
    const byTo = Object.fromEntries(smtp.got.map((m) => [m.rcpt[0], m]))
    expect(byTo['jörg.user@example.org']).toMatchObject({ smtputf8: true, toHeader: 'jörg.user@example.org' })
    // smtp-server shows the envelope domain decoded; the header shows what went over the wire.
    expect(byTo['user@bücher.example']).toMatchObject({ smtputf8: false, toHeader: 'user@xn--bcher-kva.example' })
  })

  test('a relay without SMTPUTF8 refuses the UTF-8 mailbox (the outbox keeps its reply and retries) but takes the IDN domain', async () => {
    // RFC 6531 3.4: a server that does not announce SMTPUTF8 must refuse a non-ASCII mailbox.
    const smtp = await startSmtp({
      hideSMTPUTF8: true,
      onRcptTo(address, session, cb) {
        // smtp-server shows an A-label domain decoded: the local part is what needed SMTPUTF8.
        const local = address.address.slice(0, address.address.lastIndexOf('@'))
        if (/[^\x00-\x7f]/.test(local) && !(session.envelope as { smtpUtf8?: boolean }).smtpUtf8) {
          return cb(Object.assign(new Error('5.6.7 Non-ASCII mailbox needs SMTPUTF8, which this server does not support'), { responseCode: 553 }))
        }
        cb()
      },
    })
    open.push(smtp)
    const h = await leaderMailingTo(smtp.port)
    expect(await deliverDue(h.ctx, await createTransport(h.cfg.smtp!))).toEqual({ sent: 1, failed: 0, retried: 1 })
    expect(smtp.got.map((m) => m.toHeader)).toEqual(['user@xn--bcher-kva.example'])
    const refused = h.ctx.db.select().from(mailOutbox).all().find((r) => r.toEmail === 'jörg.user@example.org')!
    expect(refused.status).toBe('pending')
    expect(refused.lastError).toContain('SMTPUTF8')
  })
})
