// Keyboard focus, announcements and reflow in the console, in Chromium against the built dist/svc:
// polled tables keep the focused link or button, an action that takes its button away puts the
// focus somewhere sensible, the signed-out navigation stays reachable when narrow, the chat answer
// is announced once, form errors are tied to their field, and long text wraps at 320 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { SVC_BIN, startLeader, type Leader } from '../helpers/leader'
import { until } from '../helpers/until'
import { hasChromium, launch, watchErrors } from './support'

const T = 60_000
const PASSWORD = 'focus-test-password'

/** A leader on a port of 46900-46959 (of the range 46900-46999 these tests may use), trying a few. */
async function leaderInRange(env: Record<string, string> = {}): Promise<Leader> {
  let last: unknown
  for (let i = 0; i < 8; i++) {
    const port = 46900 + Math.floor(Math.random() * 60) // 46960-46999: the fellow's p2p ports
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
  let poolId = ''
  let fellow: Subprocess | null = null
  const errors: string[] = []

  /** One real fellow in a pool of its own (it serves the built-in tiny-llm and runs mlp jobs). */
  async function fellowPool(): Promise<string> {
    if (fellow) return poolId
    poolId = (await api('POST', '/api/v1/pools', { name: 'Fellow pool' })).id
    const token = (await api('POST', '/api/v1/bootstrap/join-sessions', { pool_id: poolId })).join_token
    const online = async () => (await api('GET', `/api/v1/cluster/nodes?pool_id=${poolId}`)).items.some((n: any) => n.state === 'online')
    let output = ''
    // Its p2p ports (base, base+1) are taken from 46960-46999, where a client connection's
    // ephemeral port may sit: another base when they are taken.
    for (let attempt = 0; attempt < 5; attempt++) {
      const dir = mkdtempSync(join(tmpdir(), 'svc-focus-fellow-'))
      const log = join(dir, 'out.log')
      const p2p = 46960 + Math.floor(Math.random() * 39)
      const proc = Bun.spawn([SVC_BIN, 'fellow', '--leader', leader.url, '--join-token', token, '--state-dir', join(dir, 'state'), '--advertise-host', '127.0.0.1', '--p2p-port-base', String(p2p), '--hostname', 'focus-box'], {
        env: { PATH: process.env.PATH ?? '' }, stdin: 'ignore', stdout: Bun.file(log), stderr: Bun.file(join(dir, 'err.log')),
      })
      fellow = proc
      const busy = async () => (await Bun.file(log).exists()) && (await Bun.file(log).text()).includes('cannot listen for p2p frames')
      const up = await until(async () => ((await online()) ? 'online' : (await busy()) || proc.exitCode !== null ? 'failed' : null), 'the fellow online or failed', { timeoutMs: 20_000, everyMs: 200 })
      if (up === 'online') return poolId
      output = await Bun.file(log).text()
      proc.kill('SIGKILL')
      await proc.exited
      fellow = null
    }
    throw new Error('the fellow did not come online: ' + output)
  }
  const focusedId = (p: Page = page) => p.evaluate('document.activeElement && document.activeElement.id') as Promise<string>

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
    fellow?.kill('SIGTERM')
    await fellow?.exited
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

  test('an action that takes its button away puts the focus on what happened or on the button that replaces it (revoke, withdraw, remove, pause/resume, last page, cancel an edit)', async () => {
    page.on('dialog', (d) => void d.accept())
    // Profile: a revoked token has no Revoke button.
    await api('POST', '/api/v1/api-tokens', { name: 'laptop' })
    await page.goto(leader.url + '/profile')
    await page.getByRole('button', { name: 'Revoke token laptop' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForSelector('#tokens-msg:has-text("revoked")')
    await until(async () => (await page.getByRole('button', { name: 'Revoke token laptop' }).count()) === 0, 'the button gone')
    expect(await focusedId()).toBe('tokens-msg')

    // A pool's invitation withdrawn, a member removed.
    const pool = await api('POST', '/api/v1/pools', { name: 'Members pool' })
    await api('POST', `/api/v1/pools/${pool.id}/invites`, { email: 'carol@example.com' })
    const bob = await browser.newContext()
    await bob.request.post(leader.url + '/api/v1/auth/register', { data: { email: 'bob@example.com', password: PASSWORD, display_name: 'Bob' } })
    const invite = await api('POST', `/api/v1/pools/${pool.id}/invites`, { email: 'bob@example.com' })
    await api('POST', `/api/v1/pools/invites/${invite.id}/accept`, { token: new URL(invite.invite_link, leader.url).searchParams.get('token') }, bob)
    await bob.close()
    await page.goto(`${leader.url}/pools/${pool.id}`)
    await page.getByRole('button', { name: 'Withdraw the invitation for carol@example.com' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForSelector('#pool-invites-msg:has-text("carol@example.com")')
    expect(await focusedId()).toBe('pool-invites-msg')
    await page.getByRole('button', { name: 'Remove Bob' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForSelector('#members-msg:has-text("Bob")')
    await until(async () => (await page.getByRole('button', { name: 'Remove Bob' }).count()) === 0, 'the row gone')
    expect(await focusedId()).toBe('members-msg')

    // Admin pools: Cancel goes back to the Edit button that opened the form.
    await page.goto(leader.url + '/admin/pools')
    await page.getByRole('button', { name: 'Edit Members pool' }).click()
    await page.click('#edit-cancel')
    expect(await focused()).toBe('BUTTON Edit Members pool')

    // Audit log: Next on the way to the last page goes off; the focus goes to Previous.
    await page.goto(leader.url + '/admin/audit?page=1')
    await page.waitForSelector('#page-info:not(:empty)')
    expect(await page.isDisabled('#page-next')).toBe(true) // fewer than 50 entries so far
    for (let i = 0; (await page.isDisabled('#page-next')) && i < 60; i++) {
      await api('PATCH', `/api/v1/pools/${pool.id}`, { description: 'entry ' + i })
      if (i % 10 === 9) {
        await poke()
        await page.waitForSelector('#page-info:has-text("entries")')
      }
    }
    await until(async () => {
      await poke()
      return page.isEnabled('#page-next')
    }, 'a second page of the audit log')
    await page.focus('#page-next')
    await page.keyboard.press('Enter')
    await page.waitForSelector('#page-info:has-text("Page 2")')
    await page.locator('#page-next:disabled').waitFor()
    expect(await focusedId()).toBe('page-prev')

    // A job: Pause hides itself and shows Resume, which gets the focus; and back.
    const fp = await fellowPool()
    const job = await api('POST', '/api/v1/jobs', { name: 'long', pool_id: fp, config: { steps: 100000000, report_every: 50 } })
    await until(async () => ['scheduled', 'running'].includes((await api('GET', `/api/v1/jobs/${job.id}`)).status), 'the job to run', { timeoutMs: 20_000, everyMs: 200 }).catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify(await api('GET', `/api/v1/jobs/${job.id}`))}`)
    })
    await page.goto(`${leader.url}/jobs/${job.id}`)
    await page.locator('#job-pause:visible').waitFor()
    await page.focus('#job-pause')
    await page.keyboard.press('Enter')
    await page.locator('#job-resume:visible').waitFor()
    await until(async () => (await focusedId()) === 'job-resume', 'the focus on Resume')
    await page.keyboard.press('Enter')
    await page.locator('#job-pause:visible').waitFor()
    await until(async () => (await focusedId()) === 'job-pause', 'the focus on Pause')
    expect(errors).toEqual([])
  }, T)

  test('a visitor without a session keeps Log in and Register at 390 and 320 px (the narrow layout hid the navigation, and only a signed-in page has the menu button)', async () => {
    for (const width of [390, 320]) {
      const c = await browser.newContext({ viewport: { width, height: 800 }, locale: 'en-US' })
      try {
        const p = await c.newPage()
        watchErrors(p, errors)
        for (const path of ['/', '/login']) {
          await p.goto(leader.url + path)
          const nav = p.getByRole('navigation', { name: 'Main' })
          expect(await nav.getByRole('link', { name: 'Log in' }).isVisible()).toBe(true)
          expect(await nav.getByRole('link', { name: 'Register' }).isVisible()).toBe(true)
          expect(await p.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)
        }
      } finally {
        await c.close()
      }
    }
    expect(errors).toEqual([])
  }, T)

  test('a streamed chat answer is read once: the log is busy while it streams and only new words are added (the whole answer went to the live region at every token)', async () => {
    await fellowPool()
    await page.goto(leader.url + '/ops/inference')
    await page.waitForSelector('#chat-model option[value="tiny-llm"]:not([disabled])', { state: 'attached', timeout: 20_000 })
    // Every change to the log while the answer streams: text taken away (other than the "…" shown
    // before the first word), and whether the log was busy when words were added.
    await page.evaluate(`(() => {
      const log = document.getElementById('chat-log')
      window.seen = { removed: [], added: 0, notBusy: 0 }
      new MutationObserver((records) => {
        for (const r of records) {
          for (const n of r.removedNodes) if (n.nodeType === 3 && n.data !== '…') window.seen.removed.push(n.data)
          if (r.type === 'characterData') window.seen.removed.push(r.oldValue)
          for (const n of r.addedNodes) if (n.nodeType === 3 && r.target.closest('.msg:last-child')) {
            window.seen.added++
            if (log.getAttribute('aria-busy') !== 'true') window.seen.notBusy++
          }
        }
      }).observe(log, { subtree: true, childList: true, characterData: true, characterDataOldValue: true })
    })()`)
    await page.selectOption('#chat-model', 'tiny-llm')
    await page.fill('#chat-prompt', 'It was the best of')
    await page.click('#chat-send')
    const reply = page.locator('#chat-log .msg:last-child span')
    await until(async () => (await reply.innerText()).split(' ').length >= 64, 'the streamed reply', { timeoutMs: 15_000, everyMs: 100 })
    await until(async () => (await page.locator('#chat-msg').innerText()) === '', 'the end of the stream', { timeoutMs: 5000, everyMs: 50 })
    const seen = (await page.evaluate('window.seen')) as { removed: string[]; added: number; notBusy: number }
    expect(seen.added).toBeGreaterThan(0)
    expect(seen.removed).toEqual([])
    expect(seen.notBusy).toBe(0)
    expect(await page.getAttribute('#chat-log', 'aria-busy')).toBeNull()
    expect(errors).toEqual([])
  }, T)

  test('a refused login, registration or password change marks the field it is about (aria-invalid, described by the message) and focuses it; the error is an assertive alert', async () => {
    const invalid = async (p: Page, id: string, msg: string) => {
      expect(await p.getAttribute('#' + id, 'aria-invalid')).toBe('true')
      expect((await p.getAttribute('#' + id, 'aria-describedby')) ?? '').toContain(msg)
      expect(await focusedId(p)).toBe(id)
      expect(await p.getAttribute('#' + msg, 'role')).toBe('alert')
      expect(await p.getAttribute('#' + msg, 'aria-live')).toBe('assertive')
    }
    const c = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US' })
    try {
      const p = await c.newPage()
      watchErrors(p, errors)
      await p.goto(leader.url + '/login')
      await p.fill('#login-email', 'ada@example.com')
      await p.fill('#login-password', 'not the password')
      await p.press('#login-password', 'Enter')
      await p.waitForSelector('#login-msg.error')
      await invalid(p, 'login-password', 'login-msg')
      // Typing again: the field is no longer marked.
      await p.keyboard.type('x')
      expect(await p.getAttribute('#login-password', 'aria-invalid')).toBeNull()
      expect(await p.getAttribute('#login-password', 'aria-describedby')).toBeNull()

      await p.goto(leader.url + '/register')
      await p.fill('#reg-email', 'ada@example.com')
      await p.fill('#reg-password', 'long enough password')
      await p.press('#reg-password', 'Enter')
      await p.waitForSelector('#register-msg.error')
      await invalid(p, 'reg-email', 'register-msg')
      // The hint it had stays beside the message.
      await p.fill('#reg-password', 'x')
      expect(await p.getAttribute('#reg-password', 'aria-describedby')).toBe('reg-password-hint')
    } finally {
      await c.close()
    }
    await page.goto(leader.url + '/profile')
    await page.fill('#pw-current', 'not the password')
    await page.fill('#pw-new', 'a new long password')
    await page.fill('#pw-confirm', 'a new long password')
    await page.press('#pw-confirm', 'Enter')
    await page.waitForSelector('#password-msg.error')
    await invalid(page, 'pw-current', 'password-msg')
    await page.fill('#pw-current', PASSWORD)
    await page.fill('#pw-confirm', 'something else entirely')
    await page.press('#pw-confirm', 'Enter')
    await page.waitForSelector('#password-msg.error:has-text("differ")')
    await invalid(page, 'pw-confirm', 'password-msg')
    expect(await page.getAttribute('#pw-current', 'aria-invalid')).toBeNull()
    expect(errors).toEqual([])
  }, T)

  test('an upload is announced at each phase and quarter, not at every slice hashed and every progress event; the progress bar says the whole text', async () => {
    const pool = await api('POST', '/api/v1/pools', { name: 'Upload pool' })
    // 100 MiB: 13 of the 8 MiB slices the page hashes at a time.
    const dir = mkdtempSync(join(tmpdir(), 'svc-focus-upload-'))
    const file = join(dir, 'big.bin')
    await Bun.write(file, new Uint8Array(100 << 20).map((_, i) => i & 0xff))
    await page.goto(`${leader.url}/pools/${pool.id}`)
    await page.evaluate(`(() => {
      const msg = document.getElementById('upload-msg')
      const bar = document.getElementById('upload-progress')
      window.said = []
      window.valuetexts = []
      new MutationObserver(() => window.said.push(msg.textContent)).observe(msg, { subtree: true, childList: true, characterData: true })
      new MutationObserver(() => window.valuetexts.push(bar.getAttribute('aria-valuetext'))).observe(bar, { attributes: true, attributeFilter: ['aria-valuetext'] })
    })()`)
    await page.setInputFiles('#upload-file-input', file)
    await page.click('#upload-button')
    try {
      await page.waitForSelector('#upload-msg.ok:has-text("uploaded")', { timeout: 40_000 })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    const said = (await page.evaluate('window.said')) as string[]
    const valuetexts = (await page.evaluate('window.valuetexts')) as string[]
    const checking = said.filter((x) => x.startsWith('Checking the file'))
    const sending = said.filter((x) => x.startsWith('Uploading'))
    expect(checking.length).toBeGreaterThan(0)
    expect(checking.length).toBeLessThanOrEqual(5) // 0, 25, 50, 75, 100 %
    expect(sending.length).toBeLessThanOrEqual(5)
    expect(valuetexts.filter((x) => x.startsWith('Checking the file')).length).toBe(13)
    expect(valuetexts.at(-1)).toMatch(/^Uploading: 100% \(100 MiB of 100 MiB\)$/)
    expect(errors).toEqual([])
  }, T)

  test("a button reached with Tab in the admin's user list, wider than its box at 1280 px, is scrolled into view (Delete was mostly cut off)", async () => {
    // A table a little wider than its box, where Chromium scrolled nothing and left the last button cut.
    const email = 'dan@example.com'
    const c = await browser.newContext()
    await c.request.post(leader.url + '/api/v1/auth/register', { data: { email, password: PASSWORD, display_name: 'Dan' } })
    await c.close()
    await page.goto(leader.url + '/admin/users')
    const del = page.getByRole('button', { name: 'Delete ' + email })
    await del.waitFor()
    const wrap = page.locator('.table-wrap', { has: del })
    expect(await wrap.evaluate((w: any) => w.scrollWidth > w.clientWidth)).toBe(true)
    // Tab along the row from its first button (in view where the table starts).
    await page.locator(`#users-body tr[data-user="${email}"] button`).first().focus()
    expect(await wrap.evaluate((w: any) => w.scrollLeft)).toBe(0)
    for (let i = 0; i < 5 && (await focused()) !== 'BUTTON Delete ' + email; i++) await page.keyboard.press('Tab')
    expect(await focused()).toBe('BUTTON Delete ' + email)
    const shown = await page.evaluate(`(() => {
      const e = document.activeElement, w = e.closest('.table-wrap')
      const er = e.getBoundingClientRect(), wr = w.getBoundingClientRect()
      return Math.max(0, Math.min(er.right, wr.right) - Math.max(er.left, wr.left)) / er.width
    })()`)
    expect(shown).toBeGreaterThanOrEqual(0.99)
    expect(errors).toEqual([])
  }, T)

  test('the warning that other machines cannot reach a loopback leader wraps at 320 px: no page scrolls sideways (SVC_BASE_URL=http://ADDRESS:PORT did not break)', async () => {
    const pool = await api('POST', '/api/v1/pools', { name: 'Narrow pool' })
    for (const lang of ['en', 'de']) {
      const c = await browser.newContext({ viewport: { width: 320, height: 800 }, storageState: await ctx.storageState() })
      try {
        await c.addCookies([{ name: 'svc_lang', value: lang, url: leader.url }])
        const p = await c.newPage()
        watchErrors(p, errors)
        for (const path of ['/ops/join-v2', `/pools/${pool.id}`]) {
          await p.goto(leader.url + path)
          await p.locator('#loopback-warning').waitFor()
          expect([lang, path, await p.evaluate('document.documentElement.scrollWidth <= window.innerWidth')]).toEqual([lang, path, true])
        }
      } finally {
        await c.close()
      }
    }
    expect(errors).toEqual([])
  }, T)
})
