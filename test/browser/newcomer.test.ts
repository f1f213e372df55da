// Issue 29 (newcomer friction) in a real browser against the built dist/svc: a mistyped URL shows
// the HTML 404 page, /forgot-password says whom to ask, in English and German, wide and narrow,
// with axe and screenshots (under __screenshots__/, git-ignored).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { startLeader, type Leader } from '../helpers/leader'
import { expectAccessible, hasChromium, launch, shot, watchErrors } from './support'

const T = 30_000
const WIDTHS = [1280, 390] as const
const LANGS = [
  { lang: 'en', locale: 'en-US', notFound: 'Not found', forgot: 'Forgot your password?', chromeSkip: 'Skip to main content' },
  { lang: 'de', locale: 'de-DE', notFound: 'Not found', forgot: 'Passwort vergessen?', chromeSkip: 'Zum Inhalt springen' },
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
        const page = await context.newPage()
        watchErrors(page, errors)
        try {
          const res = await page.goto(leader.url + '/this/does/not/exist')
          expect(res?.status()).toBe(404)
          expect(res?.headers()['content-type']).toContain('text/html')
          expect(await page.title()).toBe('Not found · svc leader')
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
