// The console's page scripts in Chromium against the leader's app from source (the harness on a
// port of 46850-46899, so what is checked is this checkout's scripts, not the last dist/svc): the
// leader's English messages marked lang="en" on German pages, and the other details an explorer
// found on the job, machine, pool, inference and profile pages. The test plays the fellow (its
// registration, heartbeats, log lines and inference frames) through the API.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { makeHarness, seedUser, sessionClient, tokenClient, type Client, type Harness } from '../helpers/harness'
import { until } from '../helpers/until'
import { listen } from '../helpers/listen'
import { hasChromium, holdBack, launch, shot, watchErrors } from './support'

const T = 60_000
const GPU = { index: 0, name: 'NVIDIA RTX 4090', memory_total_mb: 24564, memory_free_mb: 20480, utilization_pct: 12 }

/** The harness app on a free port. */
const serve = (h: Harness) => listen(h)

describe.skipIf(!hasChromium)('console details in Chromium (harness app)', () => {
  const h = makeHarness()
  let server: { url: string; stop(): Promise<void> }
  let browser: Browser
  let A: Client
  let poolId = ''
  let fellowId = ''
  let node: Client
  /** A job that waits for 3 machines in a pool of 1: the leader says why, in English. */
  let waiting: { id: string; reason: string }
  const errors: string[] = []

  beforeAll(async () => {
    server = serve(h)
    browser = await launch()
    const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
    A = sessionClient(h, admin.id)
    poolId = (await A.post('/api/v1/pools', { name: 'Lab', visibility: 'private' })).body.id
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
    const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'box-1', gpus: [GPU] })).body
    fellowId = reg.fellow_id
    node = h.client({ bearer: reg.node_token })
    await beat()
    const job = (await A.post('/api/v1/jobs', { name: 'waits', pool_id: poolId, stages: 3 })).body
    const reason = (await A.get(`/api/v1/jobs/${job.id}`)).body.reason
    expect(reason).toContain('pool has')
    waiting = { id: job.id, reason }
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
    h.close()
  })

  /** A heartbeat of box-1: its GPU, the engine it serves, and the memory figures given. */
  const beat = async (hardware: Record<string, unknown> = {}) =>
    expect((await node.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [GPU], ...hardware }, servables: ['tiny-llm'], engines: [{ name: 'builtin', model: 'tiny-llm', healthy: true }] })).status).toBe(200)

  /** A signed-in admin's page in `lang` at `width` px. */
  async function open(lang: 'en' | 'de', width = 1280, locale = lang === 'de' ? 'de-DE' : 'en-US'): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width, height: 900 }, locale, timezoneId: 'Europe/Berlin' })
    context.setDefaultTimeout(15_000)
    await context.addCookies([...[...A.cookies].map(([name, value]) => ({ name, value, url: server.url })), { name: 'svc_lang', value: lang, url: server.url }])
    const page = await context.newPage()
    watchErrors(page, errors)
    page.on('dialog', (d) => void d.accept())
    return { context, page }
  }

  /** The language a text is read in: the lang of the nearest element that states one. */
  const langAt = (p: Page, selector: string) => p.evaluate(`document.querySelector(${JSON.stringify(selector)})?.closest('[lang]')?.getAttribute('lang') ?? null`)
  /** The lang of the element holding exactly `text` inside `selector` (null when none does). */
  const langOfText = (p: Page, selector: string, text: string) =>
    p.evaluate(`(() => {
      const root = document.querySelector(${JSON.stringify(selector)})
      const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT)
      for (let n = walk.nextNode(); n; n = walk.nextNode()) if (n.textContent.includes(${JSON.stringify(text)})) return n.parentElement.closest('[lang]')?.getAttribute('lang') ?? null
      return 'not found'
    })()`)

  test("the leader's English on German pages is marked lang=\"en\": a job's reason, the pool's job list, a refused chat", async () => {
    const { context, page } = await open('de')
    try {
      await page.goto(`${server.url}/jobs/${waiting.id}`)
      await page.waitForSelector(`#job-reason:has-text("${waiting.reason}")`)
      expect(await page.getAttribute('html', 'lang')).toBe('de')
      expect(await langOfText(page, '#job-reason', waiting.reason)).toBe('en')

      await page.goto(`${server.url}/pools/${poolId}`)
      const reason = page.locator(`#jobs-body tr[data-job="${waiting.id}"] .reason`)
      await reason.waitFor()
      expect(await reason.innerText()).toBe(waiting.reason)
      expect(await langAt(page, `#jobs-body tr[data-job="${waiting.id}"] .reason`)).toBe('en')

      // A chat refused before it began (a wrong API token): the leader's message in English, the
      // page's own words around it in German.
      const refused = await fetch(`${server.url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer svc_not_a_token', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tiny-llm', messages: [{ role: 'user', content: 'hi' }], stream: true }),
      })
      expect(refused.status).toBe(401)
      const message = ((await refused.json()) as { error: { message: string } }).error.message
      await page.goto(`${server.url}/ops/inference`)
      await page.locator('#chat-model option[value="tiny-llm"]:not([disabled])').waitFor({ state: 'attached' })
      await page.selectOption('#chat-model', 'tiny-llm')
      await page.click('#chat-form summary')
      await page.fill('#chat-token', 'svc_not_a_token')
      await page.fill('#chat-prompt', 'Hallo')
      await page.click('#chat-send')
      await page.waitForSelector('#chat-msg.error')
      expect(await page.locator('#chat-msg').innerText()).toBe(message)
      expect(await langOfText(page, '#chat-msg', message)).toBe('en')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('an empty command box says so in the page\'s language (the stylesheet said "No command yet." on German pages)', async () => {
    const placeholder = (p: Page) => p.evaluate(`getComputedStyle(document.getElementById('join-cmd'), '::before').content`)
    for (const [lang, text] of [['de', '"Noch kein Befehl."'], ['en', '"No command yet."']] as const) {
      const { context, page } = await open(lang)
      try {
        for (const path of [`/pools/${poolId}`, '/ops/join-v2']) {
          await page.goto(server.url + path)
          expect([path, await placeholder(page)]).toEqual([path, text])
        }
      } finally {
        await context.close()
      }
    }
    expect(errors).toEqual([])
  }, T)

  /** The next inference request for box-1, taken as its agent would (a long-poll). */
  const nextRequest = async (): Promise<{ request_id: string }> => {
    for (;;) {
      const r = await node.get(`/api/v1/infer/requests/${fellowId}?wait_ms=30000`)
      if (r.status === 200) return r.body
      expect(r.status).toBe(204)
    }
  }
  const frames = async (id: string, list: Record<string, unknown>[]) => expect((await node.post(`/api/v1/infer/responses/${id}`, { frames: list })).status).toBe(204)

  test('a chat answer that fails midway leaves no "Assistant" bubble behind, and a long unbroken answer wraps in the log', async () => {
    const { context, page } = await open('en', 390)
    try {
      await page.goto(`${server.url}/ops/inference`)
      await page.locator('#chat-model option[value="tiny-llm"]:not([disabled])').waitFor({ state: 'attached' })
      await page.selectOption('#chat-model', 'tiny-llm')
      const taken = nextRequest()
      await page.fill('#chat-prompt', 'Tell me a long word')
      await page.click('#chat-send')
      const req = await taken
      const word = 'x'.repeat(600)
      await frames(req.request_id, [{ delta: word }])
      await page.waitForSelector(`#chat-log .msg:has-text("${word}")`)
      // Wrapped inside the log: nothing wider than the box (the word ran off to the right).
      expect(await page.evaluate(`(() => { const l = document.getElementById('chat-log'); return l.scrollWidth <= l.clientWidth })()`)).toBe(true)
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)

      await frames(req.request_id, [{ error: 'the engine fell over' }])
      await page.waitForSelector('#chat-msg.error')
      expect(await page.locator('#chat-msg').innerText()).toContain('the engine fell over')
      // The question goes back into the box and leaves the log; its half answer goes with it.
      expect(await page.inputValue('#chat-prompt')).toBe('Tell me a long word')
      expect(await page.locator('#chat-log .msg').count()).toBe(0)
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('a paused log tail holds at most the 500 lines it can show and says how many older ones it dropped (30,000 held lines took 40 MB)', async () => {
    const { context, page } = await open('en')
    try {
      await page.goto(`${server.url}/fellows/${fellowId}`)
      const list = page.locator('#fellow-log .log-lines')
      await list.locator('li.empty').waitFor()
      await page.click('#fellow-log button[aria-pressed]')
      await page.waitForSelector('#fellow-log .log-status:has-text("Paused: 0 new lines held back.")')
      for (let b = 0; b < 3; b++) {
        const lines = Array.from({ length: 500 }, (_, k) => `paused line ${b * 500 + k}`)
        expect((await node.post(`/api/v1/workers/${fellowId}/logs`, { lines })).status).toBe(204)
      }
      const status = page.locator('#fellow-log .log-status')
      await until(async () => ((await status.innerText()).includes('1,000') ? true : null), 'the held lines to be counted', { timeoutMs: 10_000, everyMs: 50 })
      expect(await status.innerText()).toBe('Paused: the newest 500 new lines are held back; 1,000 older ones were dropped.')
      expect(await list.locator('li.empty').count()).toBe(1)

      // Resumed: the newest 500 drawn, and what was dropped still said.
      await page.click('#fellow-log button[aria-pressed]')
      await until(async () => ((await list.locator('li[data-level]').count()) === 500 ? true : null), 'the held lines to be drawn', { timeoutMs: 10_000, everyMs: 50 })
      expect(await list.locator('li[data-level] .log-msg').first().innerText()).toBe('paused line 1000')
      expect(await list.locator('li[data-level] .log-msg').last().innerText()).toBe('paused line 1499')
      expect(await status.innerText()).toBe('1,000 lines that came while paused were dropped: the newest 500 are shown.')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  /** Every text drawn on a canvas from now on (the charts' axis labels), in the page's window.drawn. */
  const recordCanvasText = (p: Page) =>
    p.addInitScript(`window.drawn = new Set(); const fill = CanvasRenderingContext2D.prototype.fillText; CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) { window.drawn.add(String(text)); return fill.call(this, text, ...rest) }`)
  const drawn = async (p: Page) => (await p.evaluate('[...window.drawn]')) as string[]

  test('chart axes speak the page\'s language: a German machine page in an American browser says 14:30 and 01.11., not 2:30pm and 11/1', async () => {
    // 20 minutes of heartbeats, one each 30 s, with the memory free moving by a fraction of a GiB.
    for (let k = 0; k < 40; k++) {
      h.clock.advance(30_000)
      await beat({ cpu_pct: 10 + (k % 7), mem_free_mb: 3900 + 10 * k, mem_total_mb: 8192 })
    }
    const { context, page } = await open('de', 1280, 'en-US')
    try {
      await page.clock.setFixedTime(new Date(h.clock.now()))
      await recordCanvasText(page)
      await page.goto(`${server.url}/fellows/${fellowId}`)
      const points = async () => Number(/(\d+) Messpunkte/.exec(await page.locator('#chart-b .chart-summary').innerText())?.[1] ?? 0)
      await until(async () => ((await points()) >= 40 ? true : null), 'the hour chart', { timeoutMs: 10_000, everyMs: 50 })
      const hour = await drawn(page)
      // Times on a 24-hour clock, the day as Germans write it; no am/pm, no month/day.
      expect(hour.filter((x) => /^\d{2}:\d{2}$/.test(x)).length).toBeGreaterThan(1)
      expect(hour.filter((x) => /^\d{2}\.\d{2}\.$/.test(x))).toContain('01.11.')
      expect(hour.filter((x) => /[ap]m|\//i.test(x))).toEqual([])
      // Fractions with a decimal comma (the memory axis in GiB).
      expect(hour.filter((x) => /^\d+,\d+$/.test(x)).length).toBeGreaterThan(0)
      expect(hour.filter((x) => /^\d+\.\d+$/.test(x))).toEqual([])

      // The month: days.
      await page.evaluate('window.drawn.clear()')
      await Promise.all([page.waitForResponse((r) => r.url().includes('/telemetry?range=30d')), page.selectOption('#usage-range', '30d')])
      await until(async () => ((await drawn(page)).some((x) => /^\d{2}\.\d{2}\.$/.test(x)) ? true : null), 'the month chart', { timeoutMs: 10_000, everyMs: 50 })
      expect((await drawn(page)).filter((x) => /[ap]m|\//i.test(x))).toEqual([])
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('terminal colour codes are left out of log lines and chat answers ([31mRED[0m showed raw), and the machine table says GiB as the machine page does', async () => {
    const { context, page } = await open('en')
    try {
      await page.goto(`${server.url}/fellows/${fellowId}`)
      const list = page.locator('#fellow-log .log-lines')
      await list.locator('li').first().waitFor()
      const lines = ['\x1b[31mERROR\x1b[0m disk \x1b[1;33mfull\x1b[0m', JSON.stringify({ level: 'warn', msg: '\x1b[32mgreen\x1b[39m light' })]
      expect((await node.post(`/api/v1/workers/${fellowId}/logs`, { lines })).status).toBe(204)
      await list.locator('li[data-level] .log-msg', { hasText: 'light' }).waitFor()
      const shown = await list.locator('li[data-level]').evaluateAll((li) => li.slice(-2).map((x) => [x.getAttribute('data-level'), x.querySelector('.log-msg')!.textContent]))
      expect(shown).toEqual([
        ['error', 'ERROR disk full'],
        ['warn', 'green light'],
      ])

      await page.goto(`${server.url}/pools/${poolId}`)
      const gpu = page.locator(`#nodes-body tr[data-fellow="${fellowId}"] td`).nth(5)
      await gpu.waitFor()
      expect(await gpu.innerText()).toBe('NVIDIA RTX 4090: 20 of 24 GiB free, 12% busy')
      await page.goto(`${server.url}/fellows/${fellowId}`)
      await page.waitForSelector('#gpus-body td:has-text("GiB")')
      expect(await page.locator('#gpus-body td').nth(1).innerText()).toBe('4 GiB of 24 GiB')

      // A colour code split over two deltas is left out as well.
      await page.goto(`${server.url}/ops/inference`)
      await page.locator('#chat-model option[value="tiny-llm"]:not([disabled])').waitFor({ state: 'attached' })
      await page.selectOption('#chat-model', 'tiny-llm')
      const taken = nextRequest()
      await page.fill('#chat-prompt', 'Colours?')
      await page.click('#chat-send')
      const req = await taken
      await frames(req.request_id, [{ delta: 'plain \x1b[1' }])
      await frames(req.request_id, [{ delta: ';31mred\x1b[0m' }, { delta: ' again' }, { done: true, finish_reason: 'stop' }])
      await page.waitForSelector('#chat-send:not([disabled])')
      expect(await page.locator('#chat-log .msg').last().locator('span').innerText()).toBe('plain red again')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('at 320 px a command box keeps the width of the card and its Copy button goes under it; words in the facts are not cut mid-word', async () => {
    const { context, page } = await open('de', 320)
    try {
      await page.goto(`${server.url}/pools/${poolId}`)
      await page.locator('#files-upload-cmd').waitFor()
      await shot(page, 'details-pool-de-320')
      for (const id of ['join-cmd', 'files-upload-cmd']) {
        const box = (await page.evaluate(`(() => {
          const pre = document.getElementById('${id}'), button = pre.parentElement.querySelector('button'), card = pre.closest('.card')
          const r = (e) => e.getBoundingClientRect()
          return { pre: r(pre).width, card: r(card).width, below: r(button).top >= r(pre).bottom }
        })()`)) as { pre: number; card: number; below: boolean }
        // The card's width less its padding (1.25 rem a side), give or take a pixel.
        expect([id, box.pre >= box.card - 42, box.below]).toEqual([id, true, true])
      }
      // "Eigentümer" on one line (it broke as "Eigentü|mer" without a hyphen).
      const role = (await page.evaluate(`(() => {
        const dd = [...document.querySelectorAll('dl.facts dd')].find((d) => d.textContent === 'Eigentümer')
        const range = document.createRange()
        range.selectNodeContents(dd)
        return range.getClientRects().length
      })()`)) as number
      expect(role).toBe(1)
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  /**
   * Counts the page's requests to /api/v1/cluster/nodes and /api/v1/jobs over `seconds` of the
   * page's (fake) time, moved a second at a time, each step's answers in before the next.
   */
  async function countPolls(p: Page, seconds: number): Promise<{ nodes: number; jobs: number; jobUrls: string[] }> {
    const seen = { nodes: 0, jobs: 0, jobUrls: [] as string[] }
    const open = new Set<unknown>()
    const watch = (r: { url(): string }) => {
      const path = new URL(r.url()).pathname
      if (path === '/api/v1/cluster/nodes') seen.nodes++
      else if (path === '/api/v1/jobs') seen.jobs++, seen.jobUrls.push(r.url())
      else return
      open.add(r)
    }
    const done = (r: unknown) => void open.delete(r)
    p.on('request', watch)
    p.on('requestfinished', done)
    p.on('requestfailed', done)
    try {
      for (let s = 0; s < seconds; s++) {
        await p.clock.runFor(1000)
        await until(() => open.size === 0, 'the polls to be answered', { timeoutMs: 5000, everyMs: 5 })
        // Answers handled (the next poll armed) before the clock moves on.
        await p.evaluate('new Promise((r) => requestAnimationFrame(() => r(null)))').catch(() => {})
      }
    } finally {
      p.off('request', watch)
      p.off('requestfinished', done)
      p.off('requestfailed', done)
    }
    return seen
  }

  test('the pool page asks for its machines once per beat (two scripts polled the same list), a large pool\'s less often while none of its jobs moves, and not while hidden', async () => {
    // 60 machines: a list worth fetching less often.
    const quiet = (await A.post('/api/v1/pools', { name: 'Quiet', visibility: 'private' })).body.id
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: quiet })).body.join_token
    for (let k = 2; k <= 61; k++) {
      const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: `box-${k}`, gpus: [GPU] })).body
      expect((await h.client({ bearer: reg.node_token }).post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [GPU] }, runners: ['mlp', 'torch'] })).status).toBe(200)
    }
    const done = (await A.post('/api/v1/jobs', { name: 'done', pool_id: quiet, stages: 1 })).body.id
    expect((await A.delete(`/api/v1/jobs/${done}`)).status).toBe(200)

    const { context, page } = await open('en')
    try {
      await page.clock.install({ time: new Date(h.clock.now()) })
      await page.goto(`${server.url}/pools/${quiet}`)
      await page.locator(`#jobs-body tr[data-job="${done}"]`).waitFor()
      // The submit form knows the pool's runners from the machine list's one answer.
      await page.locator('#job-runner-options option[value="torch"]').waitFor({ state: 'attached' })

      // Nothing runs: each list about every 10-15 s.
      const idle = await countPolls(page, 60)
      expect(idle.nodes).toBeGreaterThanOrEqual(4)
      expect(idle.nodes).toBeLessThanOrEqual(7)
      expect(idle.jobs).toBeGreaterThanOrEqual(3)
      expect(idle.jobs).toBeLessThanOrEqual(5)

      // A job waits: every 3 s again, as soon as the page learns of it.
      const queued = (await A.post('/api/v1/jobs', { name: 'queued', pool_id: quiet, stages: 2 })).body.id
      await countPolls(page, 16)
      await page.locator(`#jobs-body tr[data-job="${queued}"]`).waitFor()
      const busy = await countPolls(page, 30)
      expect(busy.nodes).toBeGreaterThanOrEqual(9)
      expect(busy.nodes).toBeLessThanOrEqual(11)
      expect(busy.jobs).toBeGreaterThanOrEqual(9)
      expect(busy.jobs).toBeLessThanOrEqual(11)

      // Hidden: nothing asked.
      await page.evaluate("Object.defineProperty(document, 'hidden', { configurable: true, get: () => true }); document.dispatchEvent(new Event('visibilitychange'))")
      const hidden = await countPolls(page, 30)
      expect([hidden.nodes, hidden.jobs]).toEqual([0, 0])
      expect((await A.delete(`/api/v1/jobs/${queued}`)).status).toBe(200)
    } finally {
      await context.close()
    }

    // A job form sent before that one answer is in asks for the machines itself, and says what is wrong.
    const second = await open('en')
    try {
      const { release } = await holdBack(second.page, '**/api/v1/cluster/nodes?pool_id=*')
      await second.page.goto(`${server.url}/pools/${quiet}`)
      await second.page.fill('#job-name-input', 'too wide')
      await second.page.fill('#job-stages-input', '62')
      await second.page.click('#submit-job-button')
      await second.page.waitForSelector('#job-stages-input-error:has-text("60 machines, fewer than 62 stages")')
      release()
      await second.page.locator('#nodes-body tr[data-fellow]').first().waitFor()
    } finally {
      await second.context.close()
    }
    expect(errors).toEqual([])
  }, 120_000)

  /** The line under a long table and its button (the table's caption names it). */
  const moreOf = (p: Page, body: string) => p.locator(`.table-wrap:has(#${body}) + .list-more`)

  test('long lists show 50 rows at a time with a count and "Show 50 more": all users\' API tokens, a pool\'s members and machines, and its jobs past the newest (older pages by cursor)', async () => {
    // 1,000 more tokens (each user's own, as people make them), 120 members, 560 finished jobs.
    for (let k = 0; k < 1000; k++) tokenClient(h, (await seedUser(h, `holder-${k}@example.com`)).id)
    const many = (await A.post('/api/v1/pools', { name: 'Many', visibility: 'private' })).body.id
    for (let k = 0; k < 120; k++) {
      const u = await seedUser(h, `member-${k}@example.com`)
      const invite = (await A.post(`/api/v1/pools/${many}/invites`, { email: u.email })).body
      const token = new URL(invite.invite_link).searchParams.get('token')
      expect((await sessionClient(h, u.id).post(`/api/v1/pools/invites/${invite.id}/accept`, { token })).status).toBe(200)
    }
    const jobIds: string[] = []
    for (let k = 0; k < 560; k++) {
      const id = (await A.post('/api/v1/jobs', { name: `old ${k}`, pool_id: many, stages: 1 })).body.id
      expect((await A.delete(`/api/v1/jobs/${id}`)).status).toBe(200)
      jobIds.push(id)
    }
    const tokens = (await A.get('/api/v1/api-tokens')).body.items.length
    expect(tokens).toBeGreaterThanOrEqual(1000)

    const { context, page } = await open('en')
    try {
      await page.goto(`${server.url}/profile`)
      await page.locator('#tokens-body tr').nth(49).waitFor()
      expect(await page.locator('#tokens-body tr').count()).toBe(50)
      const tokensMore = moreOf(page, 'tokens-body')
      expect(await tokensMore.locator('[role=status]').innerText()).toBe(`Showing 50 of ${tokens.toLocaleString('en')}.`)
      await tokensMore.getByRole('button', { name: 'Show 50 more' }).click()
      await page.locator('#tokens-body tr').nth(99).waitFor()
      expect(await page.locator('#tokens-body tr').count()).toBe(100)
      expect(await tokensMore.locator('[role=status]').innerText()).toBe(`Showing 100 of ${tokens.toLocaleString('en')}.`)
      // The focus stays on the button, for the next 50.
      expect(await page.evaluate('document.activeElement.textContent')).toBe('Show 50 more')

      await page.goto(`${server.url}/pools/${many}`)
      await page.locator('#members-body tr').nth(49).waitFor()
      expect(await page.locator('#members-body tr').count()).toBe(50)
      expect(await moreOf(page, 'members-body').locator('[role=status]').innerText()).toBe('Showing 50 of 121.')
      // Newest first; past them, the older ones a page at a time, until there are no more.
      const jobs = page.locator('#jobs-body tr[data-job]')
      await jobs.nth(49).waitFor()
      expect(await jobs.count()).toBe(50)
      expect(await jobs.first().getAttribute('data-job')).toBe(jobIds[559]!)
      const jobsMore = moreOf(page, 'jobs-body')
      expect(await jobsMore.locator('[role=status]').innerText()).toBe('Showing the newest 50.')
      const cursors: string[] = []
      page.on('request', (r) => void (r.url().includes('cursor=') && cursors.push(r.url())))
      for (let n = 100; n <= 600; n += 50) {
        await jobsMore.getByRole('button', { name: 'Show 50 more' }).click()
        await jobs.nth(Math.min(n, 560) - 1).waitFor()
        expect(await jobs.count()).toBe(Math.min(n, 560))
      }
      // Past the 500 one answer holds, by the list's cursor.
      expect(cursors.length).toBeGreaterThan(0)
      expect(await jobs.last().getAttribute('data-job')).toBe(jobIds[0]!)
      expect(await jobsMore.locator('[role=status]').innerText()).toBe('All 560 shown.')
      expect(await jobsMore.getByRole('button').isHidden()).toBe(true)
      // The button went with the last of them: the focus is on what it says now, not lost to the page.
      expect(await page.evaluate('document.activeElement.getAttribute("role")')).toBe('status')

      // The machines of a pool of 60: 50, then the rest.
      const quiet = (await A.get('/api/v1/pools')).body.items.find((x: { name: string }) => x.name === 'Quiet').id
      await page.goto(`${server.url}/pools/${quiet}`)
      await page.locator('#nodes-body tr[data-fellow]').nth(49).waitFor()
      expect(await page.locator('#nodes-body tr[data-fellow]').count()).toBe(50)
      const nodesMore = moreOf(page, 'nodes-body')
      expect(await nodesMore.locator('[role=status]').innerText()).toBe('Showing 50 of 60.')
      await nodesMore.getByRole('button', { name: 'Show 50 more' }).click()
      await page.locator('#nodes-body tr[data-fellow]').nth(59).waitFor()
      expect(await nodesMore.locator('[role=status]').innerText()).toBe('All 60 shown.')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, 120_000)

  test("the submit form's message marks the leader's reason why a job waits lang=\"en\" inside its German sentence", async () => {
    const { context, page } = await open('de')
    try {
      await page.goto(`${server.url}/pools/${poolId}`)
      await page.locator('#nodes-body tr[data-fellow]').first().waitFor()
      await page.fill('#job-name-input', 'zu groß')
      await page.fill('#job-vram-input', '999999')
      await page.click('#submit-job-button')
      const reason = page.locator('#submit-msg span[lang="en"]')
      await reason.waitFor()
      expect(await reason.innerText()).toMatch(/^needs 1 fellow with >= .* free; pool has 0$/)
      expect(await page.locator('#submit-msg').innerText()).toMatch(/^Auftrag „zu groß“ gestartet\. Wartet auf Maschinen: needs .*; pool has 0\. Seine Seite öffnen$/)
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)
})
