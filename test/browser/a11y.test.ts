// Accessibility of the whole console in Chromium against the leader's app from source (the harness
// on a free port, so what is checked is this checkout's pages and scripts): axe-core's
// WCAG 2.1 A/AA and best-practice rules over every page a visitor, a member and an admin can reach,
// in English and German, with long names, lists and empty states (no allow-list: none is needed).
// Then what axe cannot see, by keyboard: refusals tied to their fields, where the focus goes when an
// action takes its button away or turns it off, Escape on the narrow menu, and the names of row
// buttons, toggles and the charts' tables.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { readFileSync } from 'node:fs'
import { makeHarness, seedUser, sessionClient, type Client, type Harness } from '../helpers/harness'
import { until } from '../helpers/until'
import { listen } from '../helpers/listen'
import { hasChromium, holdBack, launch, watchErrors } from './support'

const T = 60_000
const GPU = { index: 0, name: 'NVIDIA RTX 4090', memory_total_mb: 24564, memory_free_mb: 20480, utilization_pct: 12, temperature_c: 47 }
const LONG = 'Computational Linguistics Research Group – Übersetzungscluster mit einem sehr langen Namen'

/** The harness app on a free port. */
const serve = (h: Harness) => listen(h)

interface Violation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[]; failureSummary?: string }[]
}

const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

/** Every WCAG 2.1 A/AA violation axe finds on the page, one line each ("page: rule (impact) at targets"). */
async function violationsOf(page: Page, name: string): Promise<string[]> {
  await page.evaluate(AXE)
  const found = (await page.evaluate(
    "axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] }).then((r) => r.violations)",
  )) as Violation[]
  return found.map((v) => `${name}: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).slice(0, 4).join(', ')}`)
}

/** Until the page's first answers are drawn: no "Loading…" left in <main> (polled through CDP: the CSP refuses page.waitForFunction). */
async function settled(page: Page): Promise<void> {
  await page.waitForLoadState('load')
  const loading = "/Loading|[Ww]ird geladen…/.test(document.querySelector('main')?.textContent ?? '')"
  await until(async () => !(await page.evaluate(loading)), 'the page to draw its first answers', { timeoutMs: 5000, everyMs: 50 })
}

describe.skipIf(!hasChromium)('accessibility of the console in Chromium (harness app)', () => {
  const h = makeHarness({ SVC_AUTH_RATE_MAX: '1000' })
  let server: { url: string; stop(): Promise<void> }
  let browser: Browser
  let A: Client
  let M: Client
  let poolId = ''
  let emptyPoolId = ''
  let fellowId = ''
  let jobId = ''
  let node: Client
  const errors: string[] = []

  beforeAll(async () => {
    server = serve(h)
    browser = await launch()
    const admin = await seedUser(h, 'ada.lovelace.with.a.long.address@example.com', { role: 'admin', displayName: 'Ada Augusta King, Countess of Lovelace', emailVerified: true })
    const member = await seedUser(h, 'bob@example.com', { displayName: 'Bob Member', emailVerified: true })
    await seedUser(h, 'pending@example.com', { status: 'pending_approval' })
    A = sessionClient(h, admin.id)
    M = sessionClient(h, member.id)
    poolId = (await A.post('/api/v1/pools', { name: LONG, visibility: 'private', description: 'A pool with a long name and a description.' })).body.id
    emptyPoolId = (await A.post('/api/v1/pools', { name: 'Empty', visibility: 'private' })).body.id
    const invite = (await A.post(`/api/v1/pools/${poolId}/invites`, { email: 'bob@example.com' })).body
    expect((await M.post(`/api/v1/pools/invites/${invite.id}/accept`, {})).status).toBeLessThan(300)
    await A.post(`/api/v1/pools/${poolId}/invites`, { email: 'carol.with.a.very.long.address@example.com' })
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
    const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu-box-with-a-long-hostname-01.lab.example.com', gpus: [GPU] })).body
    fellowId = reg.fellow_id
    node = h.client({ bearer: reg.node_token })
    await beat()
    expect((await node.post(`/api/v1/workers/${fellowId}/logs`, { lines: ['starting', JSON.stringify({ level: 'warn', msg: 'disk almost full' }), 'ERROR engine fell over'] })).status).toBe(204)
    jobId = (await A.post('/api/v1/jobs', { name: 'train a long-named model on the lab cluster', pool_id: poolId, stages: 3 })).body.id
    await A.post('/api/v1/jobs', { name: 'short', pool_id: poolId, stages: 1 })
    await A.post('/api/v1/api-tokens', { name: 'laptop' })
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
    h.close()
  })

  const beat = async () =>
    expect((await node.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [GPU] }, runners: ['mlp'], servables: ['tiny-llm'], engines: [{ name: 'builtin', model: 'tiny-llm', healthy: true }] })).status).toBe(200)

  /** A page of `who` (null: signed out) in `lang`. */
  async function open(who: Client | null, lang: 'en' | 'de', width = 1280): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width, height: 900 }, locale: lang === 'de' ? 'de-DE' : 'en-US' })
    context.setDefaultTimeout(15_000)
    const cookies = who ? [...who.cookies].map(([name, value]) => ({ name, value, url: server.url })) : []
    await context.addCookies([...cookies, { name: 'svc_lang', value: lang, url: server.url }])
    const page = await context.newPage()
    watchErrors(page, errors)
    return { context, page }
  }

  const signedOut = (lang: 'en' | 'de') => [lang === 'de' ? '/de' : '/', '/login', '/register', '/forgot-password', '/reset-password?token=x', '/verify-email?token=x', '/legal/imprint', '/legal/privacy', '/legal/accessibility', '/legal/leichte-sprache', '/no-such-page']
  const member = () => ['/dashboard', `/pools/${poolId}`, `/jobs/${jobId}`, `/fellows/${fellowId}`, '/ops/inference', '/profile', '/no-such-page']
  const admin = () => [...member(), `/pools/${emptyPoolId}`, `/ops/join-v2?pool=${poolId}`, '/admin/users', '/admin/pools', '/admin/audit', '/api/v1/docs']

  /** The axe violations of each page in `paths`, seen by `who` (null: signed out) in `lang`. */
  async function scan(who: Client | null, lang: 'en' | 'de', paths: string[], label: string): Promise<string[]> {
    const found: string[] = []
    const { context, page } = await open(who, lang)
    try {
      for (const path of paths) {
        await page.goto(server.url + path)
        await settled(page)
        found.push(...(await violationsOf(page, `${lang} ${label} ${path}`)))
      }
    } finally {
      await context.close()
    }
    return found
  }

  for (const lang of ['en', 'de'] as const) {
    test(`every page passes axe (WCAG 2.1 A and AA, and best practice) in ${lang}: signed out, as a member, as an admin`, async () => {
      const found = [...(await scan(null, lang, signedOut(lang), 'signed out')), ...(await scan(M, lang, member(), 'member')), ...(await scan(A, lang, admin(), 'admin'))]
      expect(found).toEqual([])
      expect(errors).toEqual([])
    }, 90_000)
  }

  /** [aria-invalid, whether aria-describedby names `msg`] of the element `selector`. */
  const marking = (p: Page, selector: string, msg: string) =>
    p.evaluate(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); return [e.getAttribute('aria-invalid'), (e.getAttribute('aria-describedby') ?? '').split(' ').includes(${JSON.stringify(msg)})] })()`)
  const focusedId = (p: Page) => p.evaluate('document.activeElement && document.activeElement.id')

  test("a form the leader refuses marks the field it is about (aria-invalid, the message in its aria-describedby) and focuses it: a pool's name, an invitee, a slug", async () => {
    const { context, page } = await open(A, 'en')
    page.on('dialog', (d) => void d.accept())
    try {
      // A blank name passes the browser's own check (required) and is refused by the leader.
      await page.goto(server.url + '/dashboard')
      await page.fill('#pool-name', '   ')
      await page.press('#pool-name', 'Enter')
      await page.waitForSelector('#create-msg.error')
      expect([await marking(page, '#pool-name', 'create-msg'), await focusedId(page)]).toEqual([['true', true], 'pool-name'])
      await page.keyboard.type('Named')
      expect(await marking(page, '#pool-name', 'create-msg')).toEqual([null, false])

      await page.goto(`${server.url}/pools/${poolId}`)
      await page.fill('#invite-email', 'bob@example.com')
      await page.press('#invite-email', 'Enter')
      await page.waitForSelector('#invite-form-msg.error:has-text("already a member")')
      expect([await marking(page, '#invite-email', 'invite-form-msg'), await focusedId(page)]).toEqual([['true', true], 'invite-email'])
      await page.fill('#edit-name', '  ')
      await page.press('#edit-name', 'Enter')
      await page.waitForSelector('#edit-msg.error')
      expect([await marking(page, '#edit-name', 'edit-msg'), await focusedId(page)]).toEqual([['true', true], 'edit-name'])

      await page.goto(server.url + '/admin/pools')
      await page.fill('#create-name', 'Another')
      await page.fill('#create-slug', 'empty')
      await page.press('#create-slug', 'Enter')
      await page.waitForSelector('#create-msg.error:has-text("taken")')
      expect([await marking(page, '#create-slug', 'create-msg'), await marking(page, '#create-name', 'create-msg'), await focusedId(page)]).toEqual([['true', true], [null, false], 'create-slug'])
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test("a file's Delete button names the file, in English and German, as every other row button names its row (each said only \"Delete\")", async () => {
    const bytes = new TextEncoder().encode('named weights\n')
    const sha256 = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
    const begun = (await node.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'named.gguf', size_bytes: bytes.length, sha256 })).body
    expect((await node.call('PUT', `/api/v1/artifacts/uploads/${begun.upload_id}?offset=0`, bytes, { 'content-type': 'application/octet-stream' })).status).toBe(201)
    for (const [lang, name] of [['en', 'Delete named.gguf'], ['de', 'Löschen: named.gguf']] as const) {
      const { context, page } = await open(A, lang)
      try {
        await page.goto(`${server.url}/pools/${poolId}`)
        await page.locator('#files-body button[data-delete-artifact]').first().waitFor()
        expect(await page.getByRole('button', { name, exact: true }).count()).toBe(1)
      } finally {
        await context.close()
      }
    }
    const file = (await A.get(`/api/v1/artifacts?pool_id=${poolId}`)).body.items.find((x: { name: string }) => x.name === 'named.gguf')
    expect((await A.delete(`/api/v1/artifacts/${file.id}`)).status).toBeLessThan(300)
  }, T)

  test('an action that takes its button away or turns it off puts the focus on what happened (it fell to the page): a file deleted, a machine released', async () => {
    const bytes = new TextEncoder().encode('tiny weights\n')
    const sha256 = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
    const begun = (await node.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'weights.gguf', size_bytes: bytes.length, sha256 })).body
    expect((await node.call('PUT', `/api/v1/artifacts/uploads/${begun.upload_id}?offset=0`, bytes, { 'content-type': 'application/octet-stream' })).status).toBe(201)
    const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
    const spare = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'spare-box', gpus: [GPU] })).body.fellow_id
    const { context, page } = await open(A, 'en')
    page.on('dialog', (d) => void d.accept())
    try {
      await page.goto(`${server.url}/pools/${poolId}`)
      await page.getByRole('button', { name: 'Delete weights.gguf' }).focus()
      await page.keyboard.press('Enter')
      await page.waitForSelector('#files-msg:has-text("weights.gguf deleted")')
      await page.locator('#files-body button[data-delete-artifact]').waitFor({ state: 'detached' })
      expect(await focusedId(page)).toBe('files-msg')

      await page.goto(`${server.url}/fellows/${spare}`)
      await page.locator('#fellow-release:enabled').waitFor()
      await page.focus('#fellow-release')
      await page.keyboard.press('Enter')
      await page.waitForSelector('#manage-msg:has-text("released")')
      await page.locator('#fellow-release:disabled').waitFor()
      expect(await focusedId(page)).toBe('manage-msg')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('asking to join a public pool puts the focus on the answer: the button goes off, which left the focus on the page', async () => {
    const pub = (await A.post('/api/v1/pools', { name: 'Public lab', visibility: 'public' })).body.id
    const { context, page } = await open(M, 'en')
    try {
      await page.goto(`${server.url}/pools/${pub}`)
      await page.focus('#join-pool')
      await page.keyboard.press('Enter')
      await page.waitForSelector('#join-pool-msg:not(:empty)')
      await page.locator('#join-pool:disabled').waitFor()
      expect(await focusedId(page)).toBe('join-pool-msg')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('the narrow menu opens with the keyboard and Escape closes it, back on its button (it stayed open, the focus in a list of links)', async () => {
    const { context, page } = await open(M, 'en', 375)
    try {
      await page.goto(server.url + '/dashboard')
      await page.focus('#menu-button')
      await page.keyboard.press('Enter')
      expect(await page.getAttribute('#menu-button', 'aria-expanded')).toBe('true')
      await page.keyboard.press('Tab')
      expect(await page.evaluate("document.activeElement.closest('#main-nav') !== null")).toBe(true)
      await page.keyboard.press('Escape')
      expect([await page.getAttribute('#menu-button', 'aria-expanded'), await page.isVisible('#main-nav'), await focusedId(page)]).toEqual(['false', false, 'menu-button'])
      // Escape elsewhere on the page (in a form, say) leaves the focus where it is.
      await page.keyboard.press('Enter')
      await page.focus('#pool-name')
      await page.keyboard.press('Escape')
      expect(await focusedId(page)).toBe('pool-name')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('a chat question sent with the Send button leaves the focus on Stop while the answer is awaited, then back in the box (Send went off and the focus fell to the page)', async () => {
    await beat()
    const { context, page } = await open(M, 'en')
    try {
      await page.goto(server.url + '/ops/inference')
      await page.locator('#chat-model option[value="tiny-llm"]:not([disabled])').waitFor({ state: 'attached' })
      await page.selectOption('#chat-model', 'tiny-llm')
      const { sent, release } = await holdBack(page, '**/api/v1/chat/completions')
      await page.fill('#chat-prompt', 'Hello')
      await page.focus('#chat-send')
      await page.keyboard.press('Enter')
      await sent
      expect([await page.isDisabled('#chat-send'), await focusedId(page)]).toEqual([true, 'chat-stop'])
      await page.keyboard.press('Enter')
      await page.waitForSelector('#chat-msg:has-text("Stopped")')
      expect(await focusedId(page)).toBe('chat-prompt')
      release()
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('an upload started with its button leaves the focus on Cancel while it runs, and a cancelled one on what happened (Upload went off, then Cancel went away, each time to the page)', async () => {
    const { context, page } = await open(A, 'en')
    try {
      await page.goto(`${server.url}/pools/${poolId}`)
      await page.setInputFiles('#upload-file-input', { name: 'cancelled.bin', mimeType: 'application/octet-stream', buffer: Buffer.from('some bytes') })
      const { sent, release } = await holdBack(page, '**/api/v1/artifacts/uploads')
      await page.focus('#upload-button')
      await page.keyboard.press('Enter')
      await sent
      expect(await focusedId(page)).toBe('upload-cancel')
      await page.keyboard.press('Enter')
      release()
      await page.waitForSelector('#upload-msg:has-text("Upload cancelled.")')
      await page.locator('#upload-cancel').waitFor({ state: 'hidden' })
      expect(await focusedId(page)).toBe('upload-msg')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('with nothing to choose, "choose a model" and "choose a pool" mark the empty list they are about and focus it', async () => {
    const loner = sessionClient(h, (await seedUser(h, 'loner@example.com', { emailVerified: true })).id)
    const { context, page } = await open(loner, 'en')
    try {
      await page.goto(server.url + '/ops/inference')
      await page.waitForSelector('#model-hint:has-text("No models yet")')
      await page.fill('#chat-prompt', 'Hello')
      await page.press('#chat-prompt', 'Control+Enter')
      await page.waitForSelector('#chat-msg.error')
      expect([await marking(page, '#chat-model', 'chat-msg'), await focusedId(page)]).toEqual([['true', true], 'chat-model'])

      await page.goto(server.url + '/ops/join-v2')
      await page.waitForSelector('#join-pool option:not(:has-text("Loading"))', { state: 'attached' })
      await page.focus('#mint-join')
      await page.keyboard.press('Enter')
      await page.waitForSelector('#join-msg.error')
      expect([await marking(page, '#join-pool', 'join-msg'), await focusedId(page)]).toEqual([['true', true], 'join-pool'])
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('the log tail\'s Pause is a toggle whose name stays while its state changes (it said "Resume, pressed"), and looks pressed when pressed', async () => {
    const { context, page } = await open(A, 'en')
    try {
      await page.goto(`${server.url}/fellows/${fellowId}`)
      const toggle = page.locator('#fellow-log button[aria-pressed]')
      const state = async () => [await toggle.innerText(), await toggle.getAttribute('aria-pressed'), await page.evaluate("getComputedStyle(document.querySelector('#fellow-log button[aria-pressed]')).backgroundColor")]
      const [name, pressed, background] = await state()
      expect([name, pressed]).toEqual(['Pause', 'false'])
      await toggle.focus()
      await page.keyboard.press('Enter')
      const [nameOn, pressedOn, backgroundOn] = await state()
      expect([nameOn, pressedOn, backgroundOn === background]).toEqual(['Pause', 'true', false])
      await page.keyboard.press('Space')
      expect(await state()).toEqual([name, 'false', background])
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test("each chart's \"Show the data as a table\" names its chart (a pool or machine page had two alike, told apart only by where they sat)", async () => {
    const { context, page } = await open(A, 'de')
    try {
      for (const path of [`/pools/${poolId}`, `/fellows/${fellowId}`]) {
        await page.goto(server.url + path)
        await page.locator('figure.chart details summary').nth(1).waitFor()
        const named = (await page.evaluate("[...document.querySelectorAll('figure.chart')].filter((f) => f.querySelector('details summary')).map((f) => [f.querySelector('figcaption').textContent, f.querySelector('details summary').textContent])")) as [string, string][]
        expect(named.length).toBeGreaterThan(1)
        for (const [caption, summary] of named) expect(summary).toBe(`Daten als Tabelle zeigen: ${caption}`)
      }
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test("a member's own row offers \"Leave this pool\" (it read \"Leave Bob Member\", as if leaving a person), and German labels say the action, then whom", async () => {
    for (const [who, lang, name] of [[M, 'en', 'Leave this pool'], [M, 'de', 'Diesen Pool verlassen'], [A, 'en', 'Remove Bob Member'], [A, 'de', 'Entfernen: Bob Member']] as const) {
      const { context, page } = await open(who, lang)
      try {
        await page.goto(`${server.url}/pools/${poolId}`)
        await page.locator('#members-body tr[data-key]').first().waitFor()
        expect([lang, name, await page.getByRole('button', { name, exact: true }).count()]).toEqual([lang, name, 1])
      } finally {
        await context.close()
      }
    }
    expect(errors).toEqual([])
  }, T)
})
