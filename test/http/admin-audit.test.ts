import { afterAll, describe, expect, test } from 'bun:test'
import { createServer, type AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { eq } from 'drizzle-orm'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { recordAudit } from '../../src/audit/service'
import { auditLog, mailOutbox } from '../../src/db/schema'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

async function setup(env: Record<string, string> = {}, opts: { mailEnabled?: boolean } = {}) {
  const h = makeHarness(env, opts)
  all.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  return { h, admin, A: sessionClient(h, admin.id, { ip: '203.0.113.7' }) }
}

describe('audit log', () => {
  const minute = 60_000
  async function withEntries() {
    const s = await setup()
    const { h, admin } = s
    const other = await seedUser(h, 'other@example.com')
    const t0 = h.clock.now()
    const log = (kind: string, actor: string | null, detail?: Record<string, unknown>) => {
      recordAudit(h.ctx.db, h.clock, { kind, actorUserId: actor, clientIp: '198.51.100.1', targetType: 'user', targetId: other.id, detail })
      h.clock.advance(minute)
    }
    log('auth.login', other.id)
    log('auth.login_failed', null, { reason: '<script>alert(1)</script>' })
    log('auth.logout', other.id)
    log('admin.user.status', admin.id, { from: 'active', to: 'disabled' })
    log('authz.weird', admin.id) // shares the letters, not the 'auth.' prefix
    log('pool.create', other.id)
    h.ctx.db.insert(auditLog).values({ id: '01a20184-99e9-7296-9fc7-75b6e5358e00', ts: h.clock.now(), kind: 'legacy', detail: 'not json' }).run()
    return { ...s, other, t0 }
  }

  test('newest first, paginated, in the contract shape with detail parsed back to an object', async () => {
    const { A, other, t0 } = await withEntries()
    const r = await A.get('/api/v1/admin/audit?page_size=2')
    expect(r.status).toBe(200)
    expect(r.body.total).toBe(7)
    expect(r.body.items.map((e: { kind: string }) => e.kind)).toEqual(['legacy', 'pool.create'])
    expect(r.body.items[0].detail).toEqual({ raw: 'not json' })
    const p3 = await A.get('/api/v1/admin/audit?page_size=2&page=3')
    expect(p3.body.page).toBe(3)
    expect(p3.body.items[1]).toEqual({
      id: expect.any(String),
      ts: new Date(t0 + minute).toISOString(),
      kind: 'auth.login_failed',
      actor_user_id: null,
      actor_email: null,
      client_ip: '198.51.100.1',
      target_type: 'user',
      target_id: other.id,
      detail: { reason: '<script>alert(1)</script>' },
    })
    expect((await A.get('/api/v1/admin/audit?page_size=2&page=9')).body.items).toEqual([])
  })

  test('kind filters exactly, or by prefix when it ends with a dot', async () => {
    const { A } = await withEntries()
    const kinds = async (q: string) => (await A.get(`/api/v1/admin/audit?${q}`)).body.items.map((e: { kind: string }) => e.kind)
    expect(await kinds('kind=auth.login')).toEqual(['auth.login'])
    expect(await kinds('kind=auth.')).toEqual(['auth.logout', 'auth.login_failed', 'auth.login'])
    expect(await kinds('kind=admin.')).toEqual(['admin.user.status'])
    expect(await kinds('kind=auth')).toEqual([])
  })

  test('actor and a since/until window filter too, and combine', async () => {
    const { A, admin, other, t0 } = await withEntries()
    const at = (n: number) => new Date(t0 + n * minute).toISOString()
    const q = async (s: string) => (await A.get(`/api/v1/admin/audit?${s}`)).body
    expect((await q(`actor=${admin.id}`)).items.map((e: { kind: string }) => e.kind)).toEqual(['authz.weird', 'admin.user.status'])
    expect((await q(`since=${at(1)}&until=${at(3)}`)).items.map((e: { kind: string }) => e.kind)).toEqual(['auth.logout', 'auth.login_failed'])
    const both = await q(`actor=${other.id}&kind=auth.&since=${at(1)}`)
    expect([both.total, both.items[0].kind]).toEqual([1, 'auth.logout'])
  })

  test('bad filters answer 422', async () => {
    const { A } = await setup()
    const bogus = Buffer.from('12.not-an-id').toString('base64url')
    // Times as docs/api.md writes them, RFC 3339 with an offset: not whatever Date reads (the
    // leader's time zone, month first) nor a date that does not exist (rolled over into March).
    const loose = ['2026-11-28 7:00 AM', '01/12/2026', '2026-02-30T00:00:00Z', '2025-02-29T00:00:00Z', '2026-11-27T00:00:00', '2026-11-27T24:00:00Z', 'Fri, 27 Nov 2026 10:00:00 GMT'].map((v) => `since=${encodeURIComponent(v)}`)
    for (const v of ['2024-02-29T00:00:00Z', '2026-11-27T10:00Z', '2026-11-27t10:00:00.123456+14:00', '2026-11-27T10:00:00-00:00']) {
      expect([v, (await A.get(`/api/v1/admin/audit?since=${encodeURIComponent(v)}`)).status]).toEqual([v, 200])
    }
    for (const q of [...loose, 'since=yesterday', 'until=2026-13-01T00:00:00Z', 'actor=bob', 'page=0', 'page_size=500', 'kind=', 'verb=x', `cursor=${bogus}`, 'cursor=%21%21', `cursor=${bogus}&page=2`]) {
      expect([q, (await A.get(`/api/v1/admin/audit?${q}`)).status]).toEqual([q, 422])
    }
  })

  test('keyset pages: next_cursor walks every entry once, newest first, under each filter; the target filter', async () => {
    const { h, A, admin } = await setup()
    // 16,000 entries in bulk: a kind prefix past the total's cap (12,000 auth.), a rare one, a target now and then.
    const kinds = ['auth.login', 'auth.logout', 'auth.login', 'pool.create']
    const t0 = h.clock.now()
    const rows = Array.from({ length: 16_000 }, (_, i) => ({
      id: `01a20184-${(0x1000 + (i >> 16)).toString(16)}-7${(i & 0xfff).toString(16).padStart(3, '0')}-8000-${i.toString(16).padStart(12, '0')}`,
      // Several entries share a millisecond: the id breaks the tie.
      ts: t0 + Math.floor(i / 3),
      kind: i % 997 === 0 ? 'rare.thing' : kinds[i % kinds.length]!,
      actorUserId: i % 5 === 0 ? admin.id : null,
      targetId: i % 1000 === 0 ? 'pool-7' : null,
    }))
    h.ctx.sqlite.transaction(() => {
      for (let i = 0; i < rows.length; i += 500) h.ctx.db.insert(auditLog).values(rows.slice(i, i + 500)).run()
    })()
    const newestFirst = (xs: typeof rows) => [...xs].sort((a, b) => b.ts - a.ts || (b.id < a.id ? -1 : 1)).map((r) => r.id)
    const walk = async (filter: string) => {
      const seen: string[] = []
      let cursor: string | null = null
      let first: { total: number; total_exact: boolean } | null = null
      do {
        const r: { items: { id: string }[]; next_cursor: string | null; total: number; total_exact: boolean } = (await A.get(`/api/v1/admin/audit?page_size=200${filter}${cursor ? `&cursor=${cursor}` : ''}`)).body
        first ??= r
        seen.push(...r.items.map((e: { id: string }) => e.id))
        cursor = r.next_cursor
      } while (cursor !== null)
      return { seen, total: first!.total, exact: first!.total_exact }
    }
    const cases: [string, (r: (typeof rows)[number]) => boolean][] = [
      ['', () => true],
      ['&kind=auth.', (r) => r.kind.startsWith('auth.')], // a common prefix: walks the log
      ['&kind=rare.', (r) => r.kind.startsWith('rare.')], // a rare one: sorts its few
      ['&kind=pool.create', (r) => r.kind === 'pool.create'],
      [`&actor=${admin.id}&kind=auth.`, (r) => r.actorUserId === admin.id && r.kind.startsWith('auth.')],
      ['&target=pool-7', (r) => r.targetId === 'pool-7'],
      [`&since=${new Date(t0 + 1000).toISOString()}&until=${new Date(t0 + 2000).toISOString()}`, (r) => r.ts >= t0 + 1000 && r.ts < t0 + 2000],
    ]
    for (const [filter, keep] of cases) {
      const want = newestFirst(rows.filter(keep))
      const got = await walk(filter)
      expect([filter, got.seen.length, got.seen]).toEqual([filter, want.length, want])
      expect([filter, got.total, got.exact]).toEqual([filter, Math.min(want.length, 10_000), want.length <= 10_000])
    }
    // Offset pages still work, and name their page; a cursor page does not.
    const p2 = (await A.get('/api/v1/admin/audit?page_size=50&page=2&kind=auth.')).body
    expect([p2.page, p2.items.map((e: { id: string }) => e.id)]).toEqual([2, newestFirst(rows.filter((r) => r.kind.startsWith('auth.'))).slice(50, 100)])
    expect((await A.get(`/api/v1/admin/audit?cursor=${p2.next_cursor}`)).body.page).toBeNull()
  })

  test('admin actions land in the log with the admin as actor and the client IP', async () => {
    const { h, A, admin } = await setup()
    const u = await seedUser(h, 'pending@example.com', { status: 'pending_approval' })
    await A.post(`/api/v1/admin/users/${u.id}/approve`)
    const r = await A.get(`/api/v1/admin/audit?kind=admin.user.approve`)
    expect(r.body.items).toEqual([expect.objectContaining({ actor_user_id: admin.id, client_ip: '203.0.113.7', target_type: 'user', target_id: u.id, detail: { from: 'pending_approval' } })])
  })
})

const smtpEnv = (port: number) => ({ SVC_SMTP_HOST: '127.0.0.1', SVC_SMTP_PORT: String(port), SVC_SMTP_TLS: 'none', SVC_SMTP_FROM: 'leader@example.org' })

async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

describe('mail status and test mail', () => {
  test('without SMTP the mail status says disabled and the test mail answers 409 mail_disabled', async () => {
    const { A } = await setup()
    expect((await A.get('/api/v1/admin/mail')).body).toEqual({ configured: false, status: 'disabled', pending: 0, failed: 0, sent: 0, recent_failures: [] })
    const r = await A.post('/api/v1/admin/mail/test')
    expect([r.status, r.body.code]).toEqual([409, 'mail_disabled'])
  })

  test('with mail the status counts the outbox', async () => {
    const { h, A } = await setup({}, { mailEnabled: true })
    h.ctx.mail.enqueue(h.ctx.db, 'password-changed', 'x@example.com', { name: 'X' })
    h.ctx.mail.enqueue(h.ctx.db, 'password-changed', 'y@example.com', { name: 'Y' })
    expect((await A.get('/api/v1/admin/mail')).body).toEqual({ configured: true, status: 'configured', pending: 2, failed: 0, sent: 0, recent_failures: [] })
  })

  test('mails given up are listed with whom, what and the reason, the last attempt first (only counted, the reason was in the log alone)', async () => {
    const { h, A } = await setup({}, { mailEnabled: true })
    h.ctx.mail.enqueue(h.ctx.db, 'password-changed', 'x@example.com', { name: 'X' })
    h.ctx.mail.enqueue(h.ctx.db, 'password-changed', 'y@example.com', { name: 'Y' })
    const [x, y] = h.ctx.db.select().from(mailOutbox).orderBy(mailOutbox.toEmail).all()
    // As the sender leaves a mail it gave up on (src/mail/sender.ts, giveUp).
    h.ctx.db.update(mailOutbox).set({ status: 'failed', payload: null, attempts: 6, lastError: '550 5.1.1 mailbox unknown', nextAttemptAt: h.clock.now() + 2000 }).where(eq(mailOutbox.id, x!.id)).run()
    h.ctx.db.update(mailOutbox).set({ status: 'failed', payload: null, attempts: 1, lastError: 'cannot render: queued under another SVC_SECRET_KEY', nextAttemptAt: h.clock.now() + 1000 }).where(eq(mailOutbox.id, y!.id)).run()
    const body = (await A.get('/api/v1/admin/mail')).body
    expect(body).toMatchObject({ pending: 0, failed: 2 })
    expect(body.recent_failures).toEqual([
      { to: 'x@example.com', template: 'password-changed', attempts: 6, last_error: '550 5.1.1 mailbox unknown', queued_at: new Date(x!.createdAt).toISOString() },
      { to: 'y@example.com', template: 'password-changed', attempts: 1, last_error: 'cannot render: queued under another SVC_SECRET_KEY', queued_at: new Date(y!.createdAt).toISOString() },
    ])
  })

  test("the test mail goes to the calling admin's address through the configured server, and is audited", async () => {
    const got: string[] = []
    const server = new SMTPServer({
      logger: false,
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, session, cb) {
        stream.on('data', () => {})
        stream.on('end', () => {
          got.push(...session.envelope.rcptTo.map((a) => a.address))
          cb()
        })
      },
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const { A } = await setup(smtpEnv((server.server.address() as AddressInfo).port), { mailEnabled: true })
      const r = await A.post('/api/v1/admin/mail/test')
      expect([r.status, r.body]).toEqual([200, { sent: true, to: 'admin@example.com' }])
      expect(got).toEqual(['admin@example.com'])
      const entry = (await A.get('/api/v1/admin/audit?kind=admin.mail.test')).body.items[0]
      expect(entry).toMatchObject({ client_ip: '203.0.113.7', target_type: 'email', target_id: 'admin@example.com', detail: { ok: true } })
    } finally {
      await new Promise<void>((r) => server.close(() => r()))
    }
  })

  test('an SMTP failure answers 502 smtp_failed with the reason, and is audited', async () => {
    const { A } = await setup(smtpEnv(await freePort()), { mailEnabled: true })
    const r = await A.post('/api/v1/admin/mail/test')
    expect([r.status, r.body.code]).toEqual([502, 'smtp_failed'])
    expect(r.body.detail).toContain('ECONNREFUSED')
    const entry = (await A.get('/api/v1/admin/audit?kind=admin.mail.test')).body.items[0]
    expect(entry.detail.ok).toBe(false)
  })
})
