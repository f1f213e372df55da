import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'
import { csrfValid } from '../../src/http/csrf'

const h = makeHarness({ SVC_BASE_URL: 'https://leader.example.org' })
afterAll(() => h.close())

const XSS = '<script>alert(1)</script>'
const admin = await seedUser(h, 'admin@example.com', { role: 'admin', displayName: 'Ada Admin' })
const user = await seedUser(h, 'user@example.com', { displayName: XSS })
const other = await seedUser(h, 'other@example.com')
const userPool = (await sessionClient(h, user.id).post('/api/v1/pools', { name: XSS, description: `<img src=x onerror=alert(2)>` })).body
const publicPool = (await sessionClient(h, admin.id).post('/api/v1/pools', { name: 'Open pool', visibility: 'public' })).body

const SESSION_PAGES = ['/dashboard', '/profile', `/pools/${userPool.id}`, '/ops/join-v2', '/ops/inference', '/admin/users', '/admin/pools']

describe('access rules and redirects', () => {
  test('every session page sends a visitor without a session to /login with 303', async () => {
    for (const path of SESSION_PAGES) {
      const res = await h.client().get(path)
      expect([path, res.status, res.headers.get('location')]).toEqual([path, 303, '/login'])
    }
  })

  test('public pages answer 200 with or without a session', async () => {
    const pub = ['/robots.txt', '/sitemap.xml', '/llms.txt', '/verify-email?token=x', '/reset-password?token=x']
    for (const path of [...pub, '/legal/imprint', '/legal/privacy', '/legal/accessibility', '/legal/leichte-sprache']) {
      expect([path, (await h.client().get(path)).status]).toEqual([path, 200])
      expect([path, (await sessionClient(h, user.id).get(path)).status]).toEqual([path, 200])
    }
  })

  test('a stale session cookie is treated as no session, not as an error', async () => {
    const c = h.client()
    c.cookies.set('svc_session', 'not-a-session')
    const res = await c.get('/ops/inference')
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/login')
  })

  test('the landing pages redirect a logged-in user to the dashboard; /en is a 301 to /', async () => {
    expect((await h.client().get('/')).status).toBe(200)
    for (const path of ['/', '/de']) {
      const res = await sessionClient(h, user.id).get(path)
      expect([res.status, res.headers.get('location')]).toEqual([303, '/dashboard'])
    }
    const en = await h.client().get('/en')
    expect([en.status, en.headers.get('location')]).toEqual([301, '/'])
  })

  test('login and register redirect to the dashboard when already logged in', async () => {
    for (const path of ['/login', '/register']) {
      expect((await h.client().get(path)).status).toBe(200)
      const res = await sessionClient(h, user.id).get(path)
      expect([res.status, res.headers.get('location')]).toEqual([303, '/dashboard'])
    }
  })

  test('admin pages send plain users to the dashboard and render for admins', async () => {
    for (const path of ['/admin/users', '/admin/pools']) {
      const res = await sessionClient(h, user.id).get(path)
      expect([res.status, res.headers.get('location')]).toEqual([303, '/dashboard'])
      const ok = await sessionClient(h, admin.id).get(path)
      expect(ok.status).toBe(200)
      expect(ok.headers.get('content-type')).toContain('text/html')
    }
    expect((await sessionClient(h, admin.id).get('/admin/users')).body).toContain('Send test email')
  })

  test('admins see a pending-approval badge with the count; plain users do not', async () => {
    await seedUser(h, 'waiting1@example.com', { status: 'pending_approval' })
    await seedUser(h, 'waiting2@example.com', { status: 'pending_approval' })
    const html = (await sessionClient(h, admin.id).get('/dashboard')).body as string
    expect(html).toMatch(/<span class="badge" data-pending-badge="">2<span class="sr-only"> pending approval<\/span><\/span>/)
    expect((await sessionClient(h, user.id).get('/dashboard')).body).not.toContain('data-pending-badge')
  })

  test('every session page renders for its user', async () => {
    for (const path of SESSION_PAGES.filter((p) => !p.startsWith('/admin'))) {
      const res = await sessionClient(h, user.id).get(path)
      expect([path, res.status]).toEqual([path, 200])
    }
  })

  test('ops pages show a chip with the name, a Dashboard link and logout', async () => {
    for (const path of ['/ops/join-v2', '/ops/inference']) {
      const html = (await sessionClient(h, admin.id).get(path)).body as string
      const chip = /<div class="chip"[^>]*>(.*?)<\/div>/s.exec(html)?.[1] ?? ''
      expect(chip).toContain('Ada Admin')
      expect(chip).toContain('href="/dashboard"')
      expect(chip).toContain('data-logout')
    }
  })

  test('a pool page is 404 for a pool that is private to others, missing or malformed, and 200 for members, admins and public pools', async () => {
    expect((await sessionClient(h, user.id).get(`/pools/${userPool.id}`)).status).toBe(200)
    expect((await sessionClient(h, admin.id).get(`/pools/${userPool.id}`)).status).toBe(200)
    expect((await sessionClient(h, other.id).get(`/pools/${publicPool.id}`)).status).toBe(200)
    for (const path of [`/pools/${userPool.id}`, '/pools/01a20184-99e9-7296-9fc7-75b6e5358e98', '/pools/not-a-uuid']) {
      const res = await sessionClient(h, other.id).get(path)
      expect([path, res.status]).toEqual([path, 404])
      expect(res.headers.get('content-type')).toContain('text/html')
      expect(res.body).not.toContain('&lt;script&gt;')
    }
  })

  test("a job's or a machine's page is 404 unless its pool is the user's (or an admin looks); it used to draw empty panels that said 'Loading…'", async () => {
    const u = sessionClient(h, user.id)
    const job = (await u.post('/api/v1/jobs', { name: 'train', pool_id: userPool.id })).body
    const join = (await u.post('/api/v1/bootstrap/join-sessions', { pool_id: userPool.id })).body.join_token
    const fellow = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu-1' })).body
    for (const path of [`/jobs/${job.id}`, `/fellows/${fellow.fellow_id}`]) {
      expect([path, (await u.get(path)).status]).toEqual([path, 200])
      expect([path, (await sessionClient(h, admin.id).get(path)).status]).toEqual([path, 200])
      const res = await sessionClient(h, other.id).get(path)
      expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 404, 'text/html; charset=utf-8'])
    }
    for (const path of ['/jobs/01a20184-99e9-7296-9fc7-75b6e5358e98', '/fellows/01a20184-99e9-7296-9fc7-75b6e5358e98', '/jobs/nope']) {
      expect([path, (await sessionClient(h, admin.id).get(path)).status]).toEqual([path, 404])
    }
  })

  test('the login page hands the wanted page to its Register link, and the register page keeps it (an invite link survived only a login)', async () => {
    const c = h.client()
    const wanted = '/dashboard?invite=01a20184-99e9-7296-9fc7-75b6e5358e98&token=abc'
    await c.get(wanted)
    const moved = await c.get('/login')
    expect([moved.status, moved.headers.get('location')]).toEqual([303, `/login?next=${encodeURIComponent(wanted)}`])
    const login = await c.get(moved.headers.get('location')!)
    expect(login.body).toContain(`href="/register?next=${encodeURIComponent(wanted).replace(/&/g, '&amp;')}"`)
    const reg = await c.get(`/register?next=${encodeURIComponent(wanted)}`)
    expect(reg.body).toContain(`data-next="${wanted.replace(/&/g, '&amp;')}"`)
    // Only a path of this leader is kept.
    for (const bad of ['https://evil.example/x', '//evil.example/x', '/\\evil.example']) {
      expect((await h.client().get(`/register?next=${encodeURIComponent(bad)}`)).body).toContain('data-next="/dashboard"')
    }
  })

  test('after the login redirect, the login page carries the page the visitor wanted', async () => {
    const c = h.client()
    await c.get(`/pools/${userPool.id}?tab=x`)
    expect(c.cookies.get('svc_next')).toBeDefined()
    // It moves into the address: a reload of the login page still has it (it was gone after the
    // first view, and an invitation with it).
    const moved = await c.get('/login')
    expect(moved.status).toBe(303)
    expect(c.cookies.has('svc_next')).toBe(false)
    for (let view = 0; view < 2; view++) {
      const login = await c.get(moved.headers.get('location')!)
      expect(login.body).toContain(`data-next="/pools/${userPool.id}?tab=x"`)
    }
    // Only a path of this leader is taken from the address.
    for (const bad of ['https://evil.example/x', '//evil.example/x']) expect((await h.client().get(`/login?next=${encodeURIComponent(bad)}`)).body).toContain('data-next="/dashboard"')
  })
})

describe('interface language', () => {
  const header = (html: string) => /<header[^>]*>/.exec(html)?.[0] ?? ''

  test('/lang/{code} stores the language and returns to a same-origin referring path only', async () => {
    const cases: [string | null, string][] = [
      ['http://leader.test/profile?x=1', '/profile?x=1'],
      ['https://leader.example.org/legal/privacy', '/legal/privacy'],
      ['https://evil.example/steal', '/'],
      ['http://leader.test//evil.example/x', '/'],
      ['javascript:alert(1)', '/'],
      [null, '/'],
      // From the English landing page, "back" is the German one: returning to / would store English again.
      ['http://leader.test/', '/de'],
    ]
    for (const [referer, want] of cases) {
      const c = h.client()
      const res = await c.get('/lang/de', referer === null ? {} : { referer })
      expect([referer, res.status, res.headers.get('location')]).toEqual([referer, 303, want])
      expect(c.cookies.get('svc_lang')).toBe('de')
    }
    const back = await h.client().get('/lang/en', { referer: 'http://leader.test/de' })
    expect(back.headers.get('location')).toBe('/')
  })

  test('an unknown language code answers the 404 page', async () => {
    const res = await h.client().get('/lang/fr')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toContain('text/html')
    expect(res.headers.getSetCookie().some((c) => c.startsWith('svc_lang='))).toBe(false)
  })

  test('the cookie wins over Accept-Language, which wins over English; the whole page follows it', async () => {
    const plain = (await sessionClient(h, user.id).get('/dashboard')).body as string
    expect(header(plain)).not.toContain('lang=')
    expect(plain).toContain('Log out')

    const german = (await sessionClient(h, user.id).get('/dashboard', { 'accept-language': 'fr;q=0.9, de-DE;q=0.8, en;q=0.1' })).body as string
    // Every page body is translated now (issue 29): the page is German, the chrome needs no lang of its own.
    expect(german).toContain('<html lang="de">')
    expect(header(german)).not.toContain('lang=')
    expect(german).toContain('<footer class="foot">')
    expect(german).toContain('Abmelden')
    expect(german).toContain('Willkommen,')
    expect(german).toContain('/assets/strings-de.js')

    const c = sessionClient(h, user.id)
    c.cookies.set('svc_lang', 'en')
    const cookieWins = (await c.get('/dashboard', { 'accept-language': 'de' })).body as string
    expect(cookieWins).toContain('Log out')
  })

  test('visiting / stores English and /de stores German, with the body in that language', async () => {
    const c = h.client()
    const de = await c.get('/de')
    expect(de.body).toContain('<html lang="de">')
    expect(c.cookies.get('svc_lang')).toBe('de')
    const en = await c.get('/')
    expect(en.body).toContain('<html lang="en">')
    expect(c.cookies.get('svc_lang')).toBe('en')
  })
})

describe('cookies and headers', () => {
  test('a page view without a CSRF cookie sets a valid one; a valid one is kept', async () => {
    const c = h.client()
    const first = await c.get('/login')
    const token = c.cookies.get('svc_csrf')!
    expect(csrfValid(h.cfg.secretKey, token, token, null)).toBe(true)
    expect(first.headers.getSetCookie().find((s) => s.startsWith('svc_csrf='))).not.toContain('HttpOnly')
    const again = await c.get('/register')
    expect(again.headers.getSetCookie().some((s) => s.startsWith('svc_csrf='))).toBe(false)
    c.cookies.set('svc_csrf', 'forged.value')
    await c.get('/login')
    expect(c.cookies.get('svc_csrf')).not.toBe('forged.value')
  })

  test('the CSRF cookie from a page view lets page scripts change state with the header', async () => {
    const c = sessionClient(h, other.id)
    c.cookies.delete('svc_csrf')
    expect((await c.post('/api/v1/pools', { name: 'Needs CSRF' })).status).toBe(403)
    await c.get('/dashboard')
    expect((await c.post('/api/v1/pools', { name: 'Needs CSRF' })).status).toBe(201)
  })

  test('pages carry a self-only CSP without inline script, and the hardening headers', async () => {
    for (const path of ['/', '/login', '/legal/accessibility']) {
      const res = await h.client().get(path)
      const csp = res.headers.get('content-security-policy') ?? ''
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).not.toContain('unsafe-inline')
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('referrer-policy')).toBe('same-origin')
      // Every script is an external file from this origin (the CSP would block inline ones anyway).
      for (const tag of (res.body as string).match(/<script[^>]*>/g) ?? []) expect(tag).toMatch(/src="\/assets\//)
    }
  })

  test('assets are served from the binary with their types; unknown names are 404', async () => {
    const js = await h.client().get('/assets/app.js')
    expect(js.status).toBe(200)
    expect(js.headers.get('content-type')).toContain('javascript')
    expect(js.body).toContain('x-csrf-token')
    expect((await h.client().get('/assets/app.css')).headers.get('content-type')).toContain('text/css')
    expect((await h.client().get('/assets/nope.js')).status).toBe(404)
    expect((await h.client().get('/assets/__proto__')).status).toBe(404)
  })
})

describe('escaping', () => {
  const raw = /<script>alert\(1\)<\/script>|<img src=x/

  test('a display name is escaped on every page that shows it', async () => {
    for (const path of ['/dashboard', '/profile', '/ops/join-v2', '/ops/inference', `/pools/${userPool.id}`, '/legal/imprint']) {
      const html = (await sessionClient(h, user.id).get(path)).body as string
      expect([path, raw.test(html)]).toEqual([path, false])
      expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    }
  })

  test('a pool name and description are escaped on the pool page, its title and edit form', async () => {
    const html = (await sessionClient(h, admin.id).get(`/pools/${userPool.id}`)).body as string
    expect(raw.test(html)).toBe(false)
    expect(html).toContain('<title>&lt;script&gt;alert(1)&lt;/script&gt; · svc leader</title>')
    expect(html).toContain('<h1 id="pool-name">&lt;script&gt;alert(1)&lt;/script&gt;</h1>')
    expect(html).toContain('&lt;img src=x onerror=alert(2)&gt;')
  })
})

describe('crawler files', () => {
  test('robots.txt points at the sitemap by absolute URL', async () => {
    const res = await h.client().get('/robots.txt')
    expect(res.headers.get('content-type')).toContain('text/plain')
    expect(res.body).toContain('Sitemap: https://leader.example.org/sitemap.xml')
    expect(res.body).toContain('Disallow: /admin/')
  })

  test('the sitemap lists both languages with hreflang alternates and absolute URLs', async () => {
    const res = await h.client().get('/sitemap.xml')
    const xml = res.body as string
    expect(res.headers.get('content-type')).toContain('xml')
    expect(xml).toContain('<loc>https://leader.example.org/</loc>')
    expect(xml).toContain('<loc>https://leader.example.org/de</loc>')
    expect(xml).toContain('hreflang="en" href="https://leader.example.org/"')
    expect(xml).toContain('hreflang="de" href="https://leader.example.org/de"')
    expect(xml).toContain('hreflang="x-default"')
    expect(xml).not.toMatch(/<loc>\//)
  })

  test('llms.txt describes the service with absolute links', async () => {
    const res = await h.client().get('/llms.txt')
    expect(res.status).toBe(200)
    expect(res.body).toStartWith('# svc leader')
    expect(res.body).toContain('https://leader.example.org/api/v1')
  })
})

describe('newcomer friction (issue 29)', () => {
  const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

  test('a browser navigating to an unknown path gets the HTML 404 page with the page headers', async () => {
    for (const who of [h.client(), sessionClient(h, user.id), sessionClient(h, admin.id)]) {
      const res = await who.get('/no/such/page', { accept: BROWSER_ACCEPT })
      expect(res.status).toBe(404)
      expect(res.headers.get('content-type')).toContain('text/html')
      expect(res.body).toContain('<title>Not found · svc leader</title>')
      expect(res.body).toContain('<h1>Not found</h1>')
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('referrer-policy')).toBe('same-origin')
      expect(res.headers.get('cache-control')).toBe('no-store')
    }
    // The chrome follows the language cookie, then Accept-Language, like every page.
    const de = await h.client().get('/nope', { accept: BROWSER_ACCEPT, 'accept-language': 'de' })
    expect(de.body).toContain('<html lang="de">')
    expect(de.body).toContain('<h1>Nicht gefunden</h1>')
    const c = h.client()
    c.cookies.set('svc_lang', 'de')
    expect((await c.get('/nope', { accept: 'text/html' })).body).toContain('Zum Inhalt springen')
    // A logged-in user keeps their chrome on the 404 page.
    expect((await sessionClient(h, user.id).get('/nope', { accept: BROWSER_ACCEPT })).body).toContain('Log out')
  })

  test('API clients keep the admin-only JSON answer for unknown paths', async () => {
    const api = [
      ['/no/such/page', {}],
      ['/no/such/page', { accept: 'application/json' }],
      ['/no/such/page', { accept: 'application/json, text/html;q=0.5' }],
      ['/api/v1/nope', { accept: BROWSER_ACCEPT }],
      ['/metrics/nope', { accept: BROWSER_ACCEPT }],
    ] as const
    for (const [path, headers] of api) {
      const res = await h.client().get(path, headers)
      expect([path, headers, res.status]).toEqual([path, headers, 401])
      expect(res.headers.get('content-type')).toContain('application/problem+json')
    }
    const ws = await h.client().get('/ws/nope', { accept: BROWSER_ACCEPT })
    expect(ws.status).toBe(403)
    // A POST to an unknown path is no navigation, whatever it accepts.
    expect((await h.client().post('/no/such/page', {}, { accept: BROWSER_ACCEPT })).status).toBe(401)
    // An admin's API client still learns the path does not exist.
    expect((await sessionClient(h, admin.id).get('/api/v1/nope')).status).toBe(404)
  })

  test('the favicon is public: /favicon.svg with a long cache, /favicon.ico redirects to it', async () => {
    const svg = await h.client().get('/favicon.svg')
    expect(svg.status).toBe(200)
    expect(svg.headers.get('content-type')).toContain('image/svg+xml')
    expect(svg.headers.get('cache-control')).toBe('public, max-age=604800')
    expect(String(svg.body)).toContain('<svg')
    const ico = await h.client().get('/favicon.ico')
    expect([ico.status, ico.headers.get('location')]).toEqual([301, '/favicon.svg'])
    expect(ico.headers.get('cache-control')).toBe('public, max-age=604800')
    expect((await h.client().get('/login')).body).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml"/>')
  })

  test('the login page links to /forgot-password, which says whom to ask, in English and German', async () => {
    expect((await h.client().get('/login')).body).toContain('<a href="/forgot-password">Forgot your password?</a>')
    const en = await h.client().get('/forgot-password')
    expect(en.status).toBe(200)
    expect(en.body).toContain('<html lang="en">')
    expect(en.body).toContain('<title>Forgot your password? · svc leader</title>')
    expect(en.body).toContain('Ask an administrator')
    expect(en.body).toContain('This leader sends no mail')
    expect(en.body).not.toContain('<form')
    expect(en.body).toContain('<a href="/login">Back to log in</a>')
    const de = await h.client().get('/forgot-password', { 'accept-language': 'de' })
    expect(de.body).toContain('<html lang="de">')
    expect(de.body).toContain('<title>Passwort vergessen? · svc leader</title>')
    expect(de.body).toContain('Dieser Leader verschickt keine E-Mails')
    expect(de.headers.get('x-frame-options')).toBe('DENY')
    expect((await sessionClient(h, user.id).get('/forgot-password')).status).toBe(200)
  })

  test('with mail configured, /forgot-password says the reset link comes by mail', async () => {
    const hm = makeHarness({ SVC_SMTP_HOST: '127.0.0.1', SVC_SMTP_PORT: '2525', SVC_SMTP_TLS: 'none', SVC_SMTP_FROM: 'leader@example.org' })
    try {
      const en = await hm.client().get('/forgot-password')
      expect(en.body).toContain('reset link mailed to you')
      expect(en.body).not.toContain('sends no mail')
      expect((await hm.client().get('/forgot-password', { 'accept-language': 'de' })).body).toContain('per E-Mail')
    } finally {
      hm.close()
    }
  })
})

describe('pages without JavaScript and the audit filter', () => {
  const NOTICE = { en: 'This console needs JavaScript', de: 'Diese Konsole braucht JavaScript' }
  const notice = (html: string) => /<noscript>\s*<p[^>]*data-noscript[^>]*>([^<]*)<\/p>\s*<\/noscript>/.exec(html)?.[1] ?? null

  test('every page that needs its script says so in a <noscript> notice, in English and German; pages without a script have none', async () => {
    for (const lang of ['en', 'de'] as const) {
      const headers = { 'accept-language': lang }
      for (const path of [...SESSION_PAGES.filter((p) => !p.startsWith('/admin')), `/pools/${userPool.id}`]) {
        const html = (await sessionClient(h, user.id).get(path, headers)).body as string
        expect([lang, path, notice(html)?.startsWith(NOTICE[lang])]).toEqual([lang, path, true])
      }
      for (const path of ['/admin/users', '/admin/pools', '/admin/audit']) {
        const html = (await sessionClient(h, admin.id).get(path, headers)).body as string
        expect([lang, path, notice(html)?.startsWith(NOTICE[lang])]).toEqual([lang, path, true])
      }
      for (const path of ['/login', '/register', '/verify-email?token=x', '/reset-password?token=x']) {
        const html = (await h.client().get(path, headers)).body as string
        expect([lang, path, notice(html)?.startsWith(NOTICE[lang])]).toEqual([lang, path, true])
      }
      for (const path of [lang === 'de' ? '/de' : '/', '/legal/imprint', '/forgot-password']) {
        const html = (await h.client().get(path, headers)).body as string
        expect([lang, path, notice(html)]).toEqual([lang, path, null])
      }
    }
  })

  test('the login and register buttons are off until the script turns them on, so without JavaScript nothing posts to the page (it showed raw JSON)', async () => {
    for (const path of ['/login', '/register']) {
      const html = (await h.client().get(path)).body as string
      const button = /<form id="(?:login|register)-form"[\s\S]*?(<button type="submit"[^>]*>)/.exec(html)?.[1] ?? ''
      expect([path, /\bdisabled\b/.test(button), button.includes('data-needs-js')]).toEqual([path, true, true])
    }
  })

  test('the audit filter offers the kinds the leader records (job.*, artifact.*, cli.*; it offered "jobs." for job.submit and job.cancel)', async () => {
    // Every kind written in src/: `kind: 'x.y'` and the admin row actions' audit(…, 'admin.user.…').
    const kinds = new Set<string>()
    for await (const file of new Bun.Glob('src/**/*.ts').scan({ cwd: import.meta.dir + '/../..' })) {
      const text = await Bun.file(import.meta.dir + '/../../' + file).text()
      for (const m of text.matchAll(/(?:kind: |\baudit\([^']*)'([a-z_]+\.[a-z_.]+)'/g)) kinds.add(m[1]!)
    }
    expect(kinds.has('job.submit')).toBe(true)
    for (const lang of ['en', 'de']) {
      const html = (await sessionClient(h, admin.id).get('/admin/audit', { 'accept-language': lang })).body as string
      const select = /<select id="a-kind"[\s\S]*?<\/select>/.exec(html)?.[0] ?? ''
      const values = [...select.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]!).filter((v) => v !== '')
      const matches = (v: string, k: string) => (v.endsWith('.') ? k.startsWith(v) : k === v)
      // Each option finds something, and every recorded kind is under an option.
      expect(values.filter((v) => ![...kinds].some((k) => matches(v, k)))).toEqual([])
      expect([...kinds].filter((k) => !values.some((v) => matches(v, k)))).toEqual([])
    }
  })
})
