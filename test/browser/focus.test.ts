// Keyboard focus, announcements and reflow in the console, in Chromium against the built dist/svc:
// polled tables keep the focused link or button, an action that takes its button away puts the
// focus somewhere sensible, the signed-out navigation stays reachable when narrow, the chat answer
// is announced once, form errors are tied to their field, and long text wraps at 320 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startLeader, type Leader } from '../helpers/leader'
import { until } from '../helpers/until'
import { hasChromium, launch, watchErrors } from './support'

const T = 60_000
const PASSWORD = 'focus-test-password'

/** A leader on a port of 46900-46999 (the range these tests may use), trying a few. */
async function leaderInRange(env: Record<string, string> = {}): Promise<Leader> {
  let last: unknown
  for (let i = 0; i < 8; i++) {
    const port = 46900 + Math.floor(Math.random() * 100)
    try {
      return await startLeader({ SVC_PORT: String(port), SVC_AUTH_RATE_MAX: '1000', ...env })
    } catch (e) {
      last = e
    }
  }
  throw last
}

describe.skipIf(!hasChromium)('keyboard focus and announcements in the console', () => {
  let leader: Leader
  let browser: Browser
  let ctx: BrowserContext
  let page: Page
  let csrf = ''
  const errors: string[] = []

  async function api(method: string, path: string, body?: unknown, c: BrowserContext = ctx): Promise<any> {
    const token = (await c.cookies(leader.url)).find((k) => k.name === 'svc_csrf')?.value ?? csrf
    const r = await c.request.fetch(leader.url + path, { method, headers: { 'x-csrf-token': token }, data: body === undefined ? undefined : body })
    if (r.status() >= 400) throw new Error(`${method} ${path}: ${r.status()} ${await r.text()}`)
    return r.status() === 204 ? null : r.json()
  }

  /** What has the keyboard focus: BODY when it fell to the page. */
  const focused = (p: Page = page) =>
    p.evaluate(`(() => { const e = document.activeElement; if (!e || e === document.body) return 'BODY'; return e.tagName + ' ' + (e.getAttribute('aria-label') || e.textContent || '').trim() })()`) as Promise<string>
  /** Runs every poll of the page now (they run again when the tab is shown). */
  const poke = (p: Page = page) => p.evaluate("document.dispatchEvent(new Event('visibilitychange'))")

  beforeAll(async () => {
    ;[leader, browser] = await Promise.all([leaderInRange(), launch()])
    ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US' })
    ctx.setDefaultTimeout(T - 10_000)
    const r = await ctx.request.post(leader.url + '/api/v1/auth/register', { data: { email: 'ada@example.com', password: PASSWORD, display_name: 'Ada' } })
    expect(r.status()).toBeLessThan(300)
    csrf = (await ctx.cookies(leader.url)).find((k) => k.name === 'svc_csrf')?.value ?? ''
    page = await ctx.newPage()
    watchErrors(page, errors)
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await leader?.stop()
  })

  test('a link or button in a polled table keeps the keyboard focus when its row changes (dashboard, admin pools, audit log)', async () => {
    const pool = await api('POST', '/api/v1/pools', { name: 'Focus one' })
    // Dashboard: the pool's link.
    await page.goto(leader.url + '/dashboard')
    const link = page.locator('#pools-body a', { hasText: 'Focus one' })
    await link.focus()
    await api('PATCH', `/api/v1/pools/${pool.id}`, { name: 'Focus two' })
    await poke()
    await page.locator('#pools-body a', { hasText: 'Focus two' }).waitFor()
    expect(await focused()).toBe('A Focus two')

    // Admin pools: the row's Edit button, which still edits the pool as it is now.
    await page.goto(leader.url + '/admin/pools')
    await page.getByRole('button', { name: 'Edit Focus two' }).focus()
    await api('PATCH', `/api/v1/pools/${pool.id}`, { name: 'Focus three' })
    await poke()
    await page.getByRole('button', { name: 'Edit Focus three' }).waitFor()
    expect(await focused()).toBe('BUTTON Edit Focus three')
    await page.keyboard.press('Enter')
    expect(await page.inputValue('#edit-form [name=name]')).toBe('Focus three')

    // Audit log: a link in the table while a new entry comes in on top.
    await page.goto(leader.url + '/admin/audit')
    const rows = page.locator('#audit-body tr[data-kind]')
    await rows.first().waitFor()
    const before = await rows.count()
    await page.locator('#audit-body a').first().focus()
    const was = await focused()
    expect(was).toStartWith('A pool ')
    await api('PATCH', `/api/v1/pools/${pool.id}`, { name: 'Focus four' })
    await poke()
    await until(async () => (await rows.count()) > before, 'the new audit entry')
    expect(await focused()).toBe(was)
    expect(errors).toEqual([])
  }, T)
})
