// Issue 29 (newcomer friction) in a real browser against the built dist/svc, in English and German,
// wide and narrow, with axe and screenshots (under __screenshots__/, git-ignored): a mistyped URL
// shows the HTML 404 page, /forgot-password says whom to ask; an owner invites without mail (told it
// was not mailed, with the link, listed as pending), sees join requests by name on the dashboard and
// rejects one; a non-member sees a public pool's machines and asks to join once; job rows lead to a
// job page with the failure reason; "Last seen" is relative; the join wizard warns about a loopback
// URL; the admin pages and the audit log work at 390 px behind a menu button; the chat's model field
// lists the models one can use.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startLeader, type Leader } from '../helpers/leader'
import { until } from '../helpers/until'
import { expectAccessible, hasChromium, launch, shot, watchErrors } from './support'

const T = 30_000
const WIDTHS = [1280, 390] as const
const LANGS = [
  { lang: 'en', locale: 'en-US', notFound: 'Not found', forgot: 'Forgot your password?', chromeSkip: 'Skip to main content' },
  { lang: 'de', locale: 'de-DE', notFound: 'Nicht gefunden', forgot: 'Passwort vergessen?', chromeSkip: 'Zum Inhalt springen' },
] as const

describe.skipIf(!hasChromium)('newcomer pages in Chromium', () => {
  let leader: Leader
  let browser: Browser
  const errors: string[] = []

  beforeAll(async () => {
    ;[leader, browser] = await Promise.all([startLeader(), launch()])
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await leader?.stop()
  })

  for (const l of LANGS) {
    for (const width of WIDTHS) {
      test(`an unknown URL and /forgot-password in ${l.lang} at ${width} px`, async () => {
        const context = await browser.newContext({ viewport: { width, height: 900 }, locale: l.locale })
        context.setDefaultTimeout(T - 5000) // a wait gives up before its test (see pages.test.ts)
        const page = await context.newPage()
        watchErrors(page, errors)
        try {
          const res = await page.goto(leader.url + '/this/does/not/exist')
          expect(res?.status()).toBe(404)
          expect(res?.headers()['content-type']).toContain('text/html')
          expect(await page.title()).toBe(`${l.notFound} · svc leader`)
          expect(await page.textContent('h1')).toBe(l.notFound)
          expect(await page.textContent('.skip')).toBe(l.chromeSkip)
          await shot(page, `newcomer-404-${l.lang}-${width}`)
          await expectAccessible(page, `404 ${l.lang} ${width}`)

          await page.goto(leader.url + '/login')
          await page.click('a[href="/forgot-password"]')
          await page.waitForURL('**/forgot-password')
          expect(await page.title()).toBe(`${l.forgot} · svc leader`)
          expect(await page.getAttribute('html', 'lang')).toBe(l.lang)
          expect(await page.textContent('h1')).toBe(l.forgot)
          // No SMTP on this leader: no form, the page says whom to ask.
          expect(await page.locator('main form').count()).toBe(0)
          await shot(page, `newcomer-forgot-${l.lang}-${width}`)
          await expectAccessible(page, `forgot-password ${l.lang} ${width}`)

          // The tab icon loads without a session.
          const icon = await page.request.get(leader.url + '/favicon.ico')
          expect(icon.status()).toBe(200)
          expect(icon.headers()['content-type']).toContain('image/svg+xml')
          // Nothing sideways at the narrow width.
          expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)
        } finally {
          await context.close()
        }
        expect(errors).toEqual([])
      }, T)
    }
  }
})

const PASSWORD = 'newcomer-password-1'

/** A signed-in API session (cookies and CSRF header), for setting the scene without the pages. */
async function session(url: string, email: string, register: boolean, name?: string) {
  const res = await fetch(`${url}/api/v1/auth/${register ? 'register' : 'login'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(register ? { email, password: PASSWORD, ...(name ? { display_name: name } : {}) } : { email, password: PASSWORD }),
  })
  if (!res.ok) throw new Error(`${email}: ${res.status} ${await res.text()}`)
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  const headers = { cookie, 'x-csrf-token': /svc_csrf=([^;]+)/.exec(cookie)![1]!, 'content-type': 'application/json' }
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await r.text()
    return { status: r.status, body: text ? JSON.parse(text) : null }
  }
  return { call, cookie }
}

describe.skipIf(!hasChromium)('newcomer flows in Chromium (issue 29)', () => {
  let leader: Leader
  let browser: Browser
  let poolId = ''
  let jobId = ''
  const errors: string[] = []

  beforeAll(async () => {
    ;[leader, browser] = await Promise.all([startLeader(), launch()])
    const ada = await session(leader.url, 'ada@example.com', true, 'Ada Owner')
    await session(leader.url, 'bob@example.com', true, 'Bob Newcomer')
    // A public pool that needs approval, one machine in it, and a job that failed with a reason.
    poolId = (await ada.call('POST', '/api/v1/pools', { name: 'Shared GPUs', visibility: 'public' })).body.id
    const js = await ada.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: poolId })
    const gpus = [{ index: 0, name: 'NVIDIA L4', memory_total_mb: 23034, memory_free_mb: 22000, utilization_pct: 3 }]
    const reg = await fetch(`${leader.url}/api/v1/workers/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${js.body.join_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ hostname: 'lab-gpu-7', gpus }),
    })
    const { node_token, fellow_id } = (await reg.json()) as { node_token: string; fellow_id: string }
    const node = { authorization: `Bearer ${node_token}`, 'content-type': 'application/json' }
    await fetch(`${leader.url}/api/v1/workers/heartbeat`, { method: 'POST', headers: node, body: JSON.stringify({ status: 'idle', hardware: { gpus } }) })
    jobId = (await ada.call('POST', '/api/v1/jobs', { name: 'tiny run', pool_id: poolId })).body.id
    await until(async () => (await ada.call('GET', `/api/v1/jobs/${jobId}`)).body.status === 'scheduled', 'the job to be placed', { timeoutMs: 10_000, everyMs: 100 })
    const failed = await fetch(`${leader.url}/api/v1/jobs/${jobId}/status`, {
      method: 'POST',
      headers: node,
      body: JSON.stringify({ status: 'failed', reason: 'stage 0: CUDA out of memory', fellow_id }),
    })
    expect(failed.status).toBe(200)
  }, 40_000)

  afterAll(async () => {
    await browser?.close()
    await leader?.stop()
  })

  async function signedIn(email: string, locale: string, width: number): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width, height: 900 }, locale })
    context.setDefaultTimeout(T - 5000) // a wait gives up before its test (see pages.test.ts)
    const page = await context.newPage()
    watchErrors(page, errors)
    const r = await page.request.post(leader.url + '/api/v1/auth/login', { data: { email, password: PASSWORD } })
    expect(r.status()).toBe(200)
    return { context, page }
  }

  const T_FLOW = 60_000
  const TEXT = {
    en: { notMailed: 'not mailed', asked: 'Your request was sent', reject: 'Reject', reason: 'CUDA out of memory', failed: 'failed', audit: 'Audit log', warn: 'Other machines cannot reach this leader.', menu: 'Menu', users: 'Users', ago: /ago|just now|now/, machines: /machines? online/ },
    de: { notMailed: 'nicht verschickt', asked: 'Ihre Anfrage ging', reject: 'Ablehnen', reason: 'CUDA out of memory', failed: 'fehlgeschlagen', audit: 'Protokoll', warn: 'Andere Maschinen erreichen diesen Leader nicht.', menu: 'Menü', users: 'Benutzer', ago: /vor|gerade eben|jetzt/, machines: /Maschinen? online/ },
  } as const

  for (const l of LANGS) {
    for (const width of WIDTHS) {
      test(`join requests, invites without mail, a public pool, jobs and the admin pages in ${l.lang} at ${width} px`, async () => {
        const t = TEXT[l.lang]
        const tag = `${l.lang}-${width}`
        const bob = await signedIn('bob@example.com', l.locale, width)
        const ada = await signedIn('ada@example.com', l.locale, width)
        try {
          // Bob, not a member, sees the public pool's machine and asks to join once.
          const b = bob.page
          await b.goto(`${leader.url}/pools/${poolId}`)
          expect(await b.getAttribute('html', 'lang')).toBe(l.lang)
          await b.locator('#nodes-body tr', { hasText: 'lab-gpu-7' }).waitFor()
          expect(await b.locator('#nodes-summary').innerText()).toMatch(t.machines)
          expect(await b.locator('#nodes-body tr', { hasText: 'lab-gpu-7' }).locator('time').innerText()).toMatch(t.ago)
          await b.click('#join-pool')
          await b.waitForSelector(`#join-pool-msg:has-text("${t.asked}")`)
          expect(await b.locator('#join-pool').isDisabled()).toBe(true)
          await b.reload()
          expect(await b.locator('#join-pool').isDisabled()).toBe(true)
          await shot(b, `newcomer-public-pool-${tag}`)
          await expectAccessible(b, `public pool ${tag}`)

          // Ada sees the request by name on her dashboard and rejects it.
          const a = ada.page
          await a.goto(leader.url + '/dashboard')
          const req = a.locator('#owner-requests li[data-request="bob@example.com"]')
          await req.waitFor()
          expect(await req.innerText()).toContain('Bob Newcomer')
          expect(await req.innerText()).toContain('Shared GPUs')
          await shot(a, `newcomer-dashboard-requests-${tag}`)
          await expectAccessible(a, `dashboard with requests ${tag}`)
          await req.getByRole('button', { name: new RegExp(t.reject) }).click()
          await until(async () => (await req.count()) === 0, 'the rejected request to leave the list', { timeoutMs: 5000, everyMs: 50 })

          // The pool page: an invite without mail says so, offers the link and lists it as pending.
          await a.goto(`${leader.url}/pools/${poolId}`)
          const email = `guest-${tag}@example.com`
          await a.fill('#invite-email', email)
          await a.keyboard.press('Enter')
          await a.waitForSelector(`#invite-form-msg:has-text("${t.notMailed}")`)
          expect(await a.locator('#invite-link').inputValue()).toStartWith(leader.url + '/dashboard?invite=')
          await a.locator(`#pool-invites li[data-invite="${email}"]`).waitFor()
          // The failed job's row leads to its page, which names the reason.
          const job = a.locator(`#jobs-body tr[data-job="${jobId}"]`)
          await job.waitFor()
          expect(await job.innerText()).toContain(t.reason)
          expect(await job.innerText()).toContain(t.failed)
          await shot(a, `newcomer-pool-owner-${tag}`)
          await expectAccessible(a, `pool owner ${tag}`)
          await job.locator('a').click()
          await a.waitForURL(`**/jobs/${jobId}`)
          await a.waitForSelector('#job-reason:has-text("CUDA out of memory")')
          expect(await a.locator('#job-status').innerText()).toBe(t.failed)
          await a.locator('#stages-body tr', { hasText: 'lab-gpu-7' }).waitFor()
          await shot(a, `newcomer-job-${tag}`)
          await expectAccessible(a, `job ${tag}`)

          // The join wizard warns: this leader's URL is 127.0.0.1.
          await a.goto(`${leader.url}/ops/join-v2?pool=${poolId}`)
          expect(await a.locator('#loopback-warning').innerText()).toContain(t.warn)
          await expectAccessible(a, `join wizard ${tag}`)

          // The chat's model field is a list; nothing is served here.
          await a.goto(`${leader.url}/ops/inference`)
          expect(await a.locator('select#chat-model').count()).toBe(1)
          await expectAccessible(a, `inference ${tag}`)

          // Admin pages, the audit log among them; at 390 px the navigation sits behind a menu button.
          await a.goto(leader.url + '/admin/users')
          await a.locator('#users-body tr[data-user="bob@example.com"]').waitFor()
          const menu = a.locator('#menu-button')
          if (width < 700) {
            expect(await menu.isVisible()).toBe(true)
            expect(await a.locator('#main-nav').isVisible()).toBe(false)
            await menu.click()
            expect(await menu.getAttribute('aria-expanded')).toBe('true')
            await a.locator('#main-nav').getByRole('link', { name: t.audit }).waitFor({ state: 'visible' })
            // Rows stack, each cell labelled with its column.
            expect(await a.locator('#users-body tr[data-user="bob@example.com"] td').first().getAttribute('data-label')).toBeTruthy()
          } else {
            expect(await menu.isVisible()).toBe(false)
          }
          expect(await a.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)
          await shot(a, `newcomer-admin-users-${tag}`)
          await expectAccessible(a, `admin users ${tag}`)
          await a.locator('#main-nav').getByRole('link', { name: t.audit }).click()
          await a.waitForURL('**/admin/audit**')
          await a.locator('#audit-body tr[data-kind="pool.join_reject"]').first().waitFor()
          expect(await a.locator('#audit-body tr[data-kind="pool.join_reject"]').first().innerText()).toContain('ada@example.com')
          // A pool target names which pool (every one read just "pool").
          const target = a.locator('#audit-body tr[data-kind="pool.join_reject"] a[href^="/pools/"]').first()
          const href = (await target.getAttribute('href')) ?? ''
          expect((await target.innerText()).trim()).toMatch(new RegExp(`^(pool|Pool) ${href.slice('/pools/'.length, '/pools/'.length + 13)}$`))
          expect(await a.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)
          await shot(a, `newcomer-audit-${tag}`)
          await expectAccessible(a, `audit ${tag}`)
          for (const path of ['/admin/pools', '/profile']) {
            await a.goto(leader.url + path)
            await a.waitForLoadState('networkidle')
            expect(await a.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)
            await shot(a, `newcomer${path.replace(/\//g, '-')}-${tag}`)
            await expectAccessible(a, `${path} ${tag}`)
          }
        } finally {
          await bob.context.close()
          await ada.context.close()
        }
        expect(errors).toEqual([])
      }, T_FLOW)
    }
  }
})
