// The pages in a real browser against the built dist/svc: register, pool, join command, a fellow
// coming online, invite and accept, admin deactivation, language switch, redirects, axe, screenshots.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { Database } from 'bun:sqlite'
import { SVC_BIN, startLeader, type Leader } from '../helpers/leader'
import { freeBase } from '../helpers/listen'
import { until } from '../helpers/until'
import { expectAccessible, hasChromium, holdBack, launch, shot, watchErrors } from './support'

const PASSWORD = 'correct-horse-battery'
const POOL = 'Render farm <b>&</b>'
const T = 20_000

describe.skipIf(!hasChromium)('pages in Chromium', () => {
  let leader: Leader
  let browser: Browser
  let ada: BrowserContext
  let bob: BrowserContext
  let page: Page
  let poolUrl = ''
  let joinToken = ''
  let gpuFellowId = ''
  let gpuNodeToken = ''
  let fellow: Subprocess | null = null
  const errors: string[] = []
  // gpu-box-1 is played by the test (no agent behind it): it is online for two heartbeat intervals
  // (20 s) after each of these, as the reference agent reports it: one engine serving, one declared
  // but not answering its health check.
  const GPUS = [{ index: 0, name: 'NVIDIA RTX 4090', memory_total_mb: 24564, memory_free_mb: 20480, utilization_pct: 12, temperature_c: 47 }]
  const gpuBoxHeartbeat = async (over: Record<string, unknown> = {}) =>
    (
      await fetch(leader.url + '/api/v1/workers/heartbeat', {
        method: 'POST',
        headers: { authorization: `Bearer ${gpuNodeToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          status: 'idle',
          hardware: { gpus: GPUS },
          servables: ['tiny-llm'],
          engines: [
            { name: 'builtin', model: 'tiny-llm', healthy: true },
            { name: 'vllm', model: 'qwen2.5-7b', healthy: false },
          ],
          ...over,
        }),
      })
    ).status

  beforeAll(async () => {
    ;[leader, browser] = await Promise.all([startLeader(), launch()])
    ada = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    await ada.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: leader.url })
    bob = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    // A wait gives up before its test does: a test that runs out of time has bun kill the processes
    // it started, Chromium among them, and every test after it fails without a word of its own.
    for (const c of [ada, bob]) c.setDefaultTimeout(T - 5000)
    page = await ada.newPage()
    watchErrors(page, errors)
  }, 30_000)

  afterAll(async () => {
    fellow?.kill('SIGKILL')
    await browser?.close()
    await leader?.stop()
  })

  test('ops pages send a visitor without a session to /login', async () => {
    for (const path of ['/ops/join-v2', '/ops/inference']) {
      const res = await fetch(leader.url + path, { redirect: 'manual' })
      expect([res.status, res.headers.get('location')]).toEqual([303, '/login'])
    }
    const p = await bob.newPage()
    await p.goto(leader.url + '/ops/inference')
    expect(new URL(p.url()).pathname).toBe('/login')
    await p.close()
  }, T)

  test('the landing page works with the keyboard: the first Tab reaches the skip link', async () => {
    await page.goto(leader.url + '/')
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement?.className')).toBe('skip')
    await page.keyboard.press('Enter')
    expect(await page.evaluate('location.hash')).toBe('#main')
    await shot(page, '01-landing')
    await expectAccessible(page, 'landing')
  }, T)

  test('the first user registers with the keyboard alone and lands on the dashboard', async () => {
    await page.goto(leader.url + '/register')
    await expectAccessible(page, 'register')
    await page.focus('#reg-email')
    await page.keyboard.type('ada@example.com')
    await page.keyboard.press('Tab')
    await page.keyboard.type('Ada Lovelace')
    await page.keyboard.press('Tab')
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press('Enter')
    await page.waitForURL('**/dashboard')
    await expect(page.locator('.chip-name').innerText()).resolves.toContain('Ada Lovelace')
    await page.waitForSelector('#plan:not(:has-text("Loading"))')
    expect(await page.locator('#plan').innerText()).toContain('Your plan allows')
    expect(await page.locator('.tiles').innerText()).toMatch(/Training Console[\s\S]*Inference[\s\S]*Profile/)
  }, T)

  // Before any machine joins: the fellow of the next test stays online for two heartbeat intervals
  // (20 s), so later in the run this page would list its model, depending on how fast the tests go.
  test('the inference chat box with no model served says so and sends nothing', async () => {
    const p = await ada.newPage()
    watchErrors(p, errors)
    try {
      await p.goto(leader.url + '/ops/inference')
      await p.waitForSelector('#model-hint:has-text("No models yet")')
      expect(await p.locator('#chat-model option').innerText()).toBe('No models yet')
      await p.fill('#chat-prompt', 'Hello there')
      await p.focus('#chat-prompt')
      await p.keyboard.press('Control+Enter')
      await p.waitForSelector('#chat-msg.error:has-text("Choose a model")')
      expect(await p.locator('#chat-send').isEnabled()).toBe(true)
    } finally {
      await p.close()
    }
  }, T)

  test('creates a pool and copies its join command; a fellow joins and shows online', async () => {
    await page.fill('#pool-name', POOL)
    await page.click('#create-pool-submit')
    await page.waitForURL('**/pools/**')
    poolUrl = page.url()
    expect(await page.locator('#pool-name').innerText()).toBe(POOL)
    expect(await page.locator('a[href^="/ops/join-v2?pool="]').count()).toBe(1)
    const copy = page.locator('#copy-join')
    expect(await copy.isVisible()).toBe(true)
    await page.click('#mint-join')
    await page.waitForSelector('#join-cmd:not(:empty)')
    const command = await page.locator('#join-cmd').innerText()
    await copy.click()
    await page.waitForSelector('#join-msg:has-text("Copied")')
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(command.trim())

    // Play the machine: register with the join token from the command, then heartbeat once.
    joinToken = /svc_join_[A-Za-z0-9_-]+/.exec(command)?.[0] ?? ''
    expect(joinToken).not.toBe('')
    const reg = await fetch(leader.url + '/api/v1/workers/register', {
      method: 'POST',
      headers: { authorization: `Bearer ${joinToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ hostname: 'gpu-box-1', gpus: GPUS }),
    })
    expect(reg.status).toBe(201)
    const { node_token, fellow_id } = (await reg.json()) as { node_token: string; fellow_id: string }
    gpuFellowId = fellow_id
    gpuNodeToken = node_token
    expect(await gpuBoxHeartbeat()).toBe(200)
    const row = page.locator('#nodes-body tr[data-state="online"]')
    await row.waitFor({ timeout: 10_000 })
    expect(await row.innerText()).toContain('gpu-box-1')
    expect(await row.innerText()).toContain('NVIDIA RTX 4090')
    await shot(page, '03-pool')
    await expectAccessible(page, 'pool')
  }, T)

  test("the machine page shows its GPU's temperature (table and chart text) and the engines it offers", async () => {
    expect(gpuFellowId).not.toBe('')
    const p = await ada.newPage()
    watchErrors(p, errors)
    try {
      expect(await gpuBoxHeartbeat()).toBe(200) // online for this test, however long the last one took
      await p.goto(`${leader.url}/fellows/${gpuFellowId}`)
      await p.waitForSelector('#fellow-state:has-text("online")')
      const gpuRow = (await p.locator('#gpus-body tr').innerText()).replace(/\s+/g, ' ')
      expect(gpuRow).toContain('0: NVIDIA RTX 4090')
      expect(gpuRow).toContain('47 °C')
      await p.waitForSelector('#chart-a .chart-summary:has-text("GPU temperature: 47 °C now")')
      expect(await p.locator('#chart-a figcaption').innerText()).toBe('GPU and CPU utilisation')
      // The text alternative's table (behind its disclosure, so read as text) has the temperature too.
      expect(await p.locator('#chart-a table thead').textContent()).toContain('GPU temperature')
      expect(await p.locator('#chart-a table tbody').textContent()).toContain('47 °C')

      await p.locator('#engines-card').waitFor({ state: 'visible' })
      const engine = async (name: string) => (await p.locator(`#engines-body tr[data-engine="${name}"]`).innerText()).replace(/\s+/g, ' ').trim()
      expect(await engine('builtin')).toBe('builtin tiny-llm healthy')
      expect(await engine('vllm')).toBe('vllm qwen2.5-7b not answering')
      expect(await p.locator('#engines-body tr[data-engine="vllm"] .state-unhealthy').count()).toBe(1)
      expect((await p.locator('#fellow-models').innerText()).trim()).toBe('tiny-llm')
      await shot(p, '03b-machine')
      await expectAccessible(p, 'machine with GPU and engines')
    } finally {
      await p.close()
    }
  }, T)

  test("the pool's files: the upload command for this pool, a download link, and the owner deletes one after a confirmation", async () => {
    expect(gpuNodeToken).not.toBe('')
    // gpu-box-1 stores a file for its pool, as an engine's model file or a checkpoint would be.
    const bytes = new TextEncoder().encode('tiny weights\n')
    const sha256 = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
    const node = { authorization: `Bearer ${gpuNodeToken}` }
    const begun = (await (await fetch(leader.url + '/api/v1/artifacts/uploads', { method: 'POST', headers: { ...node, 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'model', name: 'tiny <b>weights & co.gguf', size_bytes: bytes.length, sha256 }) })).json()) as { upload_id: string }
    const put = await fetch(`${leader.url}/api/v1/artifacts/uploads/${begun.upload_id}?offset=0`, { method: 'PUT', headers: { ...node, 'content-type': 'application/octet-stream' }, body: bytes })
    expect(put.status).toBe(201)
    const artifact = ((await put.json()) as { artifact: { id: string } }).artifact

    await page.goto(poolUrl)
    expect(await page.locator('#files-upload-cmd').innerText()).toMatch(/^svc artifacts upload FILE --pool render-farm/)
    const row = page.locator(`#files-body tr[data-artifact="${artifact.id}"]`)
    await row.waitFor({ timeout: 10_000 })
    expect((await row.innerText()).replace(/\s+/g, ' ')).toContain(`tiny <b>weights & co.gguf model 13 B — ${artifact.id}`)
    expect(await row.locator('a').getAttribute('href')).toBe(`/api/v1/artifacts/${artifact.id}/content`)
    await expectAccessible(page, 'pool with a file')
    // A refresh of the list is under way when the file is deleted, and its answer (taken before the
    // delete, still listing the file) comes after: the page loads the list again at once (it waited
    // for the next refresh, 15 s, showing a deleted file with its Delete button).
    const { sent, release } = await holdBack(page, '**/api/v1/artifacts?pool_id=*', { before: true })
    await page.evaluate("document.dispatchEvent(new Event('svc:files-changed'))")
    await sent
    page.once('dialog', (d) => void d.accept())
    await row.locator('button:has-text("Delete")').click()
    await page.waitForSelector('#files-msg:has-text("tiny <b>weights & co.gguf deleted.")')
    release()
    await page.waitForSelector('#files-body td.empty:not(:has-text("Loading"))', { timeout: 5000 })
    expect((await fetch(`${leader.url}/api/v1/artifacts/${artifact.id}`, { headers: node })).status).toBe(404)
  }, T)

  test('a member uploads a file from the pool page: hashed in the browser, resumed where it stands after the connection broke, listed', async () => {
    await page.goto(poolUrl)
    // 9 MiB and a bit: more than one of the slices the page hashes at a time.
    const bytes = Buffer.alloc(9 * 1024 * 1024 + 5)
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) >>> 5
    const sha256 = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

    // A name that is a path is refused beside the field, and nothing is sent.
    let opened = 0
    page.on('request', (r) => void (r.method() === 'POST' && r.url().endsWith('/api/v1/artifacts/uploads') && opened++))
    await page.click('#upload-button')
    await page.waitForSelector('#upload-file-input-error:has-text("Choose a file.")')
    await page.setInputFiles('#upload-file-input', { name: 'weights.bin', mimeType: 'application/octet-stream', buffer: bytes })
    await page.fill('#upload-name-input', 'models/weights.bin')
    await page.click('#upload-button')
    await page.waitForSelector('#upload-name-input-error:has-text("must not hold /")')
    expect(await page.locator('#upload-name-input').getAttribute('aria-invalid')).toBe('true')
    expect(opened).toBe(0)

    // The first time the bytes are sent, the first 4 MiB arrive and the connection breaks: the page
    // asks the leader where the upload stands and sends only the rest.
    const puts: string[] = []
    await page.route('**/api/v1/artifacts/uploads/*', async (route) => {
      const req = route.request()
      if (req.method() !== 'PUT') return route.continue()
      puts.push(new URL(req.url()).searchParams.get('offset') ?? '')
      // Then a proxy in front of a restarting leader answers 502 once: asked again, and resumed.
      if (puts.length === 2) return route.fulfill({ status: 502, contentType: 'text/html', body: '<html><body>502 Bad Gateway</body></html>' })
      if (puts.length > 2) return route.continue()
      const csrf = (await ada.cookies()).find((c) => c.name === 'svc_csrf')?.value ?? ''
      const part = await page.request.put(req.url(), { headers: { 'content-type': 'application/octet-stream', 'x-csrf-token': csrf }, data: bytes.subarray(0, 4 << 20) })
      expect(part.status()).toBe(200)
      await route.abort('connectionreset')
    })
    await page.fill('#upload-name-input', 'weights <v2>.bin')
    await page.selectOption('#upload-kind-input', 'model')
    await page.click('#upload-button')
    await page.waitForSelector('#upload-msg:has-text("weights <v2>.bin uploaded (9 MiB).")', { timeout: 15_000 })
    expect(await page.evaluate('document.activeElement?.id')).toBe('upload-msg')
    await page.unroute('**/api/v1/artifacts/uploads/*')
    expect(puts).toEqual(['0', String(4 << 20), String(4 << 20)])
    expect(opened).toBe(1)

    const row = page.locator('#files-body tr', { hasText: 'weights <v2>.bin' })
    await row.waitFor({ timeout: 10_000 })
    expect((await row.innerText()).replace(/\s+/g, ' ')).toContain('weights <v2>.bin model 9 MiB')
    const id = (await row.getAttribute('data-artifact')) ?? ''
    const meta = await page.request.get(`${leader.url}/api/v1/artifacts/${id}`)
    expect(((await meta.json()) as { sha256: string }).sha256).toBe(sha256)
    const content = await page.request.get(`${leader.url}/api/v1/artifacts/${id}/content`)
    expect(new Bun.CryptoHasher('sha256').update(await content.body()).digest('hex')).toBe(sha256)
    // The form is ready for the next file.
    expect(await page.locator('#upload-name-input').inputValue()).toBe('')
    expect(await page.locator('#upload-progress').isHidden()).toBe(true)
    await expectAccessible(page, 'pool after an upload')
    await page.request.delete(`${leader.url}/api/v1/artifacts/${id}`, { headers: { 'x-csrf-token': (await ada.cookies()).find((c) => c.name === 'svc_csrf')?.value ?? '' } })
  }, 40_000)

  // Without SMTP nobody's address is verified: an invite is taken through its link, which the
  // inviter passes on. It used to be listed to (and accepted by) whoever registered the address
  // first (issue 26, item 9).
  test('a second user is invited and accepts through the invite link from the dashboard', async () => {
    await page.fill('#invite-email', 'bob@example.com')
    await page.keyboard.press('Enter')
    // No SMTP on this leader: the page says the invite was not mailed and offers its link.
    await page.waitForSelector('#invite-form-msg:has-text("not mailed")')
    await page.waitForSelector('#invite-link-box:not([hidden])')
    const link = await page.locator('#invite-link').inputValue()
    expect(link).toStartWith(leader.url + '/dashboard?invite=')
    // Listed as pending, with its expiry in plain words (it read "bob@example.com · (expires ...)").
    expect(await page.locator('#pool-invites li[data-invite="bob@example.com"] span').innerText()).toMatch(/^bob@example\.com · expires \d{4}-\d\d-\d\d \d\d:\d\d$/)

    // Bob has no account yet: the link sends him to log in, he registers from there instead and
    // lands on the invitation (registering used to forget it and end on a bare dashboard).
    const p = await bob.newPage()
    watchErrors(p, errors)
    await p.goto(link)
    await p.waitForURL((u) => u.pathname === '/login')
    await p.click('main a:has-text("Register")')
    await p.waitForURL('**/register?next=*')
    await p.fill('#reg-email', 'bob@example.com')
    await p.fill('#reg-password', PASSWORD)
    await p.click('button[type=submit]')
    await p.waitForURL((u) => u.pathname === '/dashboard' && u.searchParams.has('invite'))
    expect(p.url()).toBe(link)
    const accept = p.locator('#accept-link-invite')
    await accept.waitFor()
    await shot(p, '02-dashboard-invite')
    await expectAccessible(p, 'dashboard')
    await accept.click()
    await p.waitForSelector('#invite-msg:has-text("You joined")')
    // The button went with its card: focus is on what happened, not dropped to the page.
    expect(await p.evaluate('document.activeElement?.id')).toBe('invite-msg')
    await p.waitForSelector(`#pools-body a:has-text("${POOL}")`)
    expect(new URL(p.url()).search).toBe('')
    // A plain user's plan allows private pools only: no hint about public ones.
    expect(await p.locator('#pool-visibility option').allInnerTexts()).toEqual(['Private: members only'])
    expect([await p.locator('#visibility-hint').isHidden(), await p.locator('#pool-visibility').getAttribute('aria-describedby')]).toEqual([true, null])
    await p.close()
  }, T)

  test("the pool's settings: what was saved shows at once, an old error goes once the form is changed, a failed invite takes the last invite's link down", async () => {
    await page.goto(poolUrl)
    // A blank name is refused; typing takes the refusal down (the browser's own checks may block
    // the next submit, and the old message stayed as if it were about the new input).
    const name = await page.locator('#edit-name').inputValue()
    await page.fill('#edit-name', '   ')
    await page.click('#edit-form button[type=submit]')
    await page.waitForSelector('#edit-msg.error')
    await page.fill('#edit-name', name)
    await page.waitForSelector('#edit-msg:not(.error)', { state: 'attached' })
    expect(await page.locator('#edit-msg').innerText()).toBe('')
    // Saved: the description and the limit on the page say so (only the title did until a reload).
    await page.fill('#edit-description', 'GPUs for <everyone>')
    await page.fill('#edit-limit', '7')
    await page.click('#edit-form button[type=submit]')
    await page.waitForSelector('#edit-msg.ok')
    expect([await page.locator('#pool-description').innerText(), await page.locator('#pool-limit-fact').innerText()]).toEqual(['GPUs for <everyone>', '7'])
    await page.fill('#edit-limit', '')
    await page.click('#edit-form button[type=submit]')
    await page.waitForSelector('#pool-limit-fact:has-text("no limit")')
    // An invite refused: the link on show was the previous person's.
    await page.fill('#invite-email', 'carol@example.com')
    await page.keyboard.press('Enter')
    await page.waitForSelector('#invite-link-box:not([hidden])')
    await page.fill('#invite-email', 'not-an-address@x')
    await page.click('#invite-form button[type=submit]')
    await page.waitForSelector('#invite-form-msg.error')
    expect(await page.locator('#invite-link-box').isHidden()).toBe(true)
  }, T)

  test('an admin deactivates a user, whose session ends', async () => {
    await page.goto(leader.url + '/admin/users')
    const row = page.locator('#users-body tr[data-user="bob@example.com"]')
    await row.waitFor()
    await page.waitForSelector('#mail-status:has-text("Mail is disabled")')
    // A mail the sender gave up on (written as the leader's sender leaves one): the card says to
    // whom, what and why, not only how many.
    const state = new Database(join(leader.dir, 'state', 'join_state.sqlite3'))
    state.run("INSERT INTO mail_outbox (id, template, to_email, payload, status, attempts, next_attempt_at, last_error, created_at, sent_at) VALUES ('01900000-0000-7000-8000-000000000001', 'pool-invite', 'gone@example.com', NULL, 'failed', 6, 0, '550 5.1.1 mailbox unknown', 0, NULL)")
    state.close()
    await page.reload()
    await page.waitForSelector('#mail-failures li:has-text("gone@example.com")')
    expect(await page.locator('#mail-failures li span[lang=en]').innerText()).toBe('550 5.1.1 mailbox unknown')
    await shot(page, '05-admin-users')
    await expectAccessible(page, 'admin-users')
    page.once('dialog', (d) => void d.accept())
    await row.getByRole('button', { name: 'Deactivate bob@example.com' }).click()
    await page.waitForSelector('#users-body tr[data-user="bob@example.com"] .state-disabled')
    // The row was drawn anew: focus is on its first button, not dropped to the page.
    await until(async () => ((await page.evaluate("document.activeElement?.getAttribute('aria-label')")) === 'Reactivate bob@example.com' ? true : null), 'focus on the new row', { timeoutMs: 5000, everyMs: 50 })
    const p = await bob.newPage()
    await p.goto(leader.url + '/dashboard')
    expect(new URL(p.url()).pathname).toBe('/login')
    await p.close()
  }, T)

  test('the admin reactivates the user and hands out a reset link that works on the reset page', async () => {
    const row = page.locator('#users-body tr[data-user="bob@example.com"]')
    // A reset link for the deactivated account says it opens nothing until the account is active
    // (the link promised a login that was then refused).
    await row.getByRole('button', { name: 'Reset password bob@example.com' }).click()
    await page.waitForSelector('#users-msg:has-text("The account is disabled: the new password lets them log in only once an admin makes it active.")')
    await row.getByRole('button', { name: 'Reactivate bob@example.com' }).click()
    await page.waitForSelector('#users-body tr[data-user="bob@example.com"] .state-active')
    // The first link is taken down the moment a new one is asked for (the new one voids it; the test
    // once read the dead link before the answer came and timed out on the reset page): the answer is
    // held back until the page has been looked at.
    const first = (await page.locator('#reset-link').innerText()).trim()
    const { release } = await holdBack(page, '**/api/v1/admin/users/*/reset-password')
    await row.getByRole('button', { name: 'Reset password bob@example.com' }).click()
    await page.waitForSelector('#reset-once[hidden]', { state: 'attached' })
    expect(await page.locator('#reset-link').innerText()).toBe('')
    release()
    await page.waitForSelector('#reset-link:not(:empty)')
    const link = (await page.locator('#reset-link').innerText()).trim()
    expect(link).toStartWith(leader.url + '/reset-password?token=')
    expect(link).not.toBe(first)

    const p = await bob.newPage()
    watchErrors(p, errors)
    await p.goto(link)
    await p.fill('#reset-password', 'a-brand-new-password')
    await p.fill('#reset-confirm', 'a-brand-new-password')
    await p.keyboard.press('Enter')
    await p.waitForSelector('#reset-msg.ok')
    await p.click('#reset-msg a[href="/login"]')
    await p.fill('#login-email', 'bob@example.com')
    await p.fill('#login-password', 'a-brand-new-password')
    await p.keyboard.press('Enter')
    await p.waitForURL('**/dashboard')
    await p.close()
  }, T)

  test('the page switches to German and back, staying on the page', async () => {
    await page.goto(leader.url + '/dashboard')
    await page.click('footer a[data-lang="de"]')
    await page.waitForSelector('html[lang="de"]')
    expect(new URL(page.url()).pathname).toBe('/dashboard')
    expect(await page.locator('[data-logout]').innerText()).toBe('Abmelden')
    expect(await page.locator('h1').innerText()).toContain('Willkommen')
    await shot(page, '06-dashboard-de')
    await page.click('footer a[data-lang="en"]')
    await page.waitForSelector('html[lang="en"]')
    expect(await page.locator('[data-logout]').innerText()).toBe('Log out')
    // Logging out in German ends on the German landing page (it went to '/', which stores English).
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    other.setDefaultTimeout(T - 5000)
    try {
      const p = await other.newPage()
      expect((await p.request.post(leader.url + '/api/v1/auth/login', { data: { email: 'ada@example.com', password: PASSWORD } })).status()).toBe(200)
      await p.goto(leader.url + '/dashboard')
      await p.click('footer a[data-lang="de"]')
      await p.waitForSelector('html[lang="de"]')
      await p.click('[data-logout]')
      await p.waitForURL((u) => u.pathname === '/de')
      expect(await p.locator('html').getAttribute('lang')).toBe('de')
      expect((await other.cookies()).find((c) => c.name === 'svc_lang')?.value).toBe('de')
    } finally {
      await other.close()
    }
  }, T)

  test('the profile mints an API token shown once, lists it and revokes it', async () => {
    await page.goto(leader.url + '/profile')
    await page.fill('#token-name', 'laptop CLI')
    await page.keyboard.press('Enter')
    await page.waitForSelector('#token-once:not([hidden]) #token-value:not(:empty)')
    expect(await page.locator('#token-value').innerText()).toMatch(/^svc_pat_/)
    const revoke = page.getByRole('button', { name: 'Revoke token laptop CLI' })
    await revoke.waitFor()
    page.once('dialog', (d) => void d.accept())
    await revoke.click()
    await page.waitForSelector('#tokens-msg:has-text("revoked")')
    await page.reload()
    expect(await page.locator('#token-value').innerText()).toBe('')
    // Once the list has loaded (not the "Loading" row the page is served with): listed, no button.
    await page.locator('#tokens-body tr', { hasText: 'laptop CLI' }).waitFor()
    expect(await page.getByRole('button', { name: 'Revoke token laptop CLI' }).count()).toBe(0)
  }, T)

  test('the inference page lists who serves what and streams an answer from a real fellow', async () => {
    // gpu-box-1 (played by the test, no agent behind it) may still be online: it stops offering the
    // model, so the request can only go to the real fellow.
    expect(await gpuBoxHeartbeat({ servables: [], engines: [] })).toBe(200)
    const dir = mkdtempSync(join(tmpdir(), 'svc-browser-fellow-'))
    fellow = Bun.spawn([SVC_BIN, 'fellow', '--leader', leader.url, '--join-token', joinToken, '--state-dir', join(dir, 'state'), '--advertise-host', '127.0.0.1', '--p2p-port-base', String(freeBase()), '--hostname', 'chat-box-1'], {
      env: { PATH: process.env.PATH ?? '' }, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore',
    })
    await page.goto(leader.url + '/ops/inference')
    const row = page.locator('#serving-body tr', { hasText: 'chat-box-1' })
    await row.waitFor({ timeout: 15_000 })
    expect(await row.innerText()).toMatch(/tiny-llm\s+chat-box-1\s+0 of 4/)
    await page.waitForSelector('#chat-model option[value="tiny-llm"]:not([disabled])', { state: 'attached' })
    await page.selectOption('#chat-model', 'tiny-llm')
    await page.fill('#chat-prompt', 'It was the best of')
    await page.click('#chat-send')
    // The reply streams in; the built-in model's default length is 64 words. (Polled from here:
    // the page's CSP forbids the string evaluation page.waitForFunction would use.)
    const reply = page.locator('#chat-log .msg:last-child span')
    await until(async () => ((await reply.innerText()).split(' ').length >= 64 ? true : null), 'the streamed reply', { timeoutMs: 10_000, everyMs: 100 })
    // The words can arrive a chunk before [DONE], which clears the waiting message.
    await until(async () => ((await page.locator('#chat-msg').innerText()) === '' ? true : null), 'the end of the stream', { timeoutMs: 5000, everyMs: 50 })
    await expectAccessible(page, 'inference with a fellow')
    // A refused question goes back into the box and leaves the log (it was lost, and its bubble
    // stayed though it was no longer part of the conversation).
    const bubbles = await page.locator('#chat-log .msg').count()
    await page.click('#chat-form details summary')
    await page.fill('#chat-token', 'svc_pat_bogus')
    await page.fill('#chat-prompt', 'my important question')
    await page.click('#chat-send')
    await page.waitForSelector('#chat-msg.error')
    expect(await page.locator('#chat-prompt').inputValue()).toBe('my important question')
    expect(await page.locator('#chat-log .msg').count()).toBe(bubbles)
    await page.fill('#chat-token', '')
  }, 45_000) // a fellow agent starts, joins and serves within it

  test('the admin user list opened past its last page shows the last page (it said "No users match" under "Page 5 of 1")', async () => {
    await page.goto(leader.url + '/admin/users?page=5')
    await page.waitForSelector('#page-info:has-text("Page 1 of 1")')
    expect(await page.locator('#users-body tr[data-user]').count()).toBeGreaterThan(0)
    expect(new URL(page.url()).searchParams.get('page')).toBe('1')
  }, T)

  /** Holds every POST to `url` (a glob) until the returned function is called: two clicks land while the first is on its way. */
  async function holdPosts(p: Page, url: string): Promise<() => void> {
    let release = () => {}
    const held = new Promise<void>((r) => (release = r))
    await p.route(url, async (route) => {
      if (route.request().method() === 'POST') await held
      await route.continue()
    })
    return release
  }

  test('a double click sends one request: an API token (the first was never shown), a pool from the dashboard, a pool from the admin page', async () => {
    const p = await ada.newPage()
    watchErrors(p, errors)
    const posts: string[] = []
    p.on('request', (r) => {
      if (r.method() === 'POST') posts.push(new URL(r.url()).pathname)
    })
    const csrf = (await ada.cookies()).find((c) => c.name === 'svc_csrf')?.value ?? ''
    try {
      await p.goto(leader.url + '/profile')
      await p.fill('#token-name', 'double click')
      let release = await holdPosts(p, '**/api/v1/api-tokens')
      await p.click('#token-form button[type=submit]')
      // A person's second click goes through whatever the button says (aria-disabled stops Playwright).
      await p.click('#token-form button[type=submit]', { force: true })
      await p.keyboard.press('Enter')
      release()
      await p.waitForSelector('#token-once:not([hidden]) #token-value:not(:empty)')
      await p.locator('#tokens-body tr', { hasText: 'double click' }).waitFor()
      expect(posts.filter((x) => x === '/api/v1/api-tokens')).toHaveLength(1)
      expect(await p.locator('#tokens-body tr', { hasText: 'double click' }).count()).toBe(1)

      await p.goto(leader.url + '/dashboard')
      await p.fill('#pool-name', 'Double click pool')
      release = await holdPosts(p, '**/api/v1/pools')
      await p.click('#create-pool-submit')
      await p.click('#create-pool-submit', { force: true })
      release()
      await p.waitForURL('**/pools/**')
      expect(posts.filter((x) => x === '/api/v1/pools')).toHaveLength(1)
      await p.request.delete(`${leader.url}/api/v1/pools/${new URL(p.url()).pathname.split('/')[2]}`, { headers: { 'x-csrf-token': csrf } })

      await p.goto(leader.url + '/admin/pools')
      await p.fill('#create-name', 'Double click admin pool')
      release = await holdPosts(p, '**/api/v1/admin/pools')
      await p.click('#create-form button[type=submit]')
      await p.click('#create-form button[type=submit]', { force: true })
      release()
      await p.waitForSelector('#create-msg.ok')
      expect(posts.filter((x) => x === '/api/v1/admin/pools')).toHaveLength(1)
      const all = (await (await p.request.get(leader.url + '/api/v1/admin/pools')).json()) as { items: { id: string; name: string }[] }
      const made = all.items.filter((x) => x.name === 'Double click admin pool')
      expect(made).toHaveLength(1)
      await p.request.delete(`${leader.url}/api/v1/admin/pools/${made[0]!.id}`, { headers: { 'x-csrf-token': csrf } })
    } finally {
      await p.close()
    }
  }, T)

  test("two tabs editing the same pool keep each other's changes: only the changed fields are sent (pool page and admin page)", async () => {
    const a = await ada.newPage()
    const b = await ada.newPage()
    for (const p of [a, b]) watchErrors(p, errors)
    const patched: unknown[] = []
    b.on('request', (r) => {
      if (r.method() === 'PATCH') patched.push(JSON.parse(r.postData() ?? 'null'))
    })
    const poolApi = leader.url + '/api/v1/pools/' + new URL(poolUrl).pathname.split('/')[2]
    try {
      await Promise.all([a.goto(poolUrl), b.goto(poolUrl)])
      await a.fill('#edit-description', 'described in tab A')
      await a.click('#edit-form button[type=submit]')
      await a.waitForSelector('#edit-msg.ok')
      await b.fill('#edit-limit', '5')
      await b.click('#edit-form button[type=submit]')
      await b.waitForSelector('#edit-msg.ok')
      expect(patched).toEqual([{ node_limit: 5 }])
      expect(await (await a.request.get(poolApi)).json()).toMatchObject({ description: 'described in tab A', node_limit: 5 })
      // Saved, then nothing changed: nothing is sent.
      await b.click('#edit-form button[type=submit]')
      await b.waitForSelector('#edit-msg:has-text("Nothing was changed")')
      expect(patched).toHaveLength(1)

      await Promise.all([a.goto(leader.url + '/admin/pools'), b.goto(leader.url + '/admin/pools')])
      for (const p of [a, b]) await p.getByRole('button', { name: `Edit ${POOL}` }).click()
      await a.fill('#edit-description', 'described on the admin page')
      await a.click('#edit-form button[type=submit]')
      await a.waitForSelector('#edit-msg.ok')
      await b.fill('#edit-limit', '')
      await b.click('#edit-form button[type=submit]')
      await b.waitForSelector('#edit-msg.ok')
      expect(patched.slice(1)).toEqual([{ node_limit: null }])
      expect(await (await a.request.get(poolApi)).json()).toMatchObject({ description: 'described on the admin page', node_limit: null })
    } finally {
      await a.close()
      await b.close()
    }
  }, T)

  test('the audit log opened past its last page shows the last page (it said "No entries match" under "Page 5,000")', async () => {
    await page.goto(leader.url + '/admin/audit?page=5000')
    await page.waitForSelector('#audit-body tr[data-kind]')
    const info = await page.locator('#page-info').innerText()
    const m = /^Page (\d+) of (\d+)/.exec(info)
    expect(m?.[1]).toBe(m?.[2])
    expect(new URL(page.url()).searchParams.get('page')).toBe(m?.[1] ?? '')
  }, T)

  test('a German page marks a message from the leader (English) with lang="en"; its own texts carry none', async () => {
    const de = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'de-DE' })
    de.setDefaultTimeout(T - 5000)
    try {
      const p = await de.newPage()
      watchErrors(p, errors)
      await p.goto(leader.url + '/login')
      expect(await p.getAttribute('html', 'lang')).toBe('de')
      await p.fill('#login-email', 'bob@example.com')
      await p.fill('#login-password', 'not the password at all')
      await p.keyboard.press('Enter')
      await p.waitForSelector('#login-msg.error')
      expect([await p.locator('#login-msg').innerText(), await p.getAttribute('#login-msg', 'lang')]).toEqual(['Wrong email or password.', 'en'])
      await p.fill('#login-password', 'a-brand-new-password')
      await p.keyboard.press('Enter')
      await p.waitForURL('**/dashboard')
    } finally {
      await de.close()
    }
  }, T)

  test('a page whose session ended elsewhere goes to the login page once, which brings it back (it polled 401 for ever under "No data yet.")', async () => {
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    other.setDefaultTimeout(T - 5000)
    try {
      const p = await other.newPage()
      watchErrors(p, errors)
      expect((await p.request.post(leader.url + '/api/v1/auth/login', { data: { email: 'bob@example.com', password: 'a-brand-new-password' } })).status()).toBe(200)
      const path = new URL(poolUrl).pathname
      await p.goto(leader.url + path)
      await p.locator('#nodes-body tr[data-fellow]').first().waitFor()
      // Logged out in another tab of the same browser.
      const csrf = (await other.cookies()).find((c) => c.name === 'svc_csrf')?.value ?? ''
      expect((await p.request.post(leader.url + '/api/v1/auth/logout', { headers: { 'x-csrf-token': csrf } })).status()).toBeLessThan(300)
      await p.waitForURL((u) => u.pathname === '/login', { timeout: 10_000 })
      expect(new URL(p.url()).searchParams.get('next')).toBe(path)
      await p.fill('#login-email', 'bob@example.com')
      await p.fill('#login-password', 'a-brand-new-password')
      await p.keyboard.press('Enter')
      await p.waitForURL((u) => u.pathname === path)
    } finally {
      await other.close()
    }
  }, T)

  test('deleting a pool with a machine attached asks in plain words how many and what happens to them (it quoted the API: "detach them or delete with force=true")', async () => {
    const csrf = (await ada.cookies()).find((c) => c.name === 'svc_csrf')?.value ?? ''
    const made = await page.request.post(leader.url + '/api/v1/pools', { headers: { 'x-csrf-token': csrf }, data: { name: 'Short lived' } })
    const pool = (await made.json()) as { id: string }
    const join = ((await (await page.request.post(leader.url + '/api/v1/bootstrap/join-sessions', { headers: { 'x-csrf-token': csrf }, data: { pool_id: pool.id } })).json()) as { join_token: string }).join_token
    expect((await fetch(leader.url + '/api/v1/workers/register', { method: 'POST', headers: { authorization: `Bearer ${join}`, 'content-type': 'application/json' }, body: JSON.stringify({ hostname: 'short-box' }) })).status).toBe(201)
    await page.goto(leader.url + '/admin/pools')
    const asked: string[] = []
    page.on('dialog', (d) => {
      asked.push(d.message())
      void d.accept()
    })
    await page.getByRole('button', { name: 'Delete Short lived' }).click()
    await page.waitForSelector('#pools-msg:has-text("Short lived")')
    page.removeAllListeners('dialog')
    expect(asked[1]).toBe('1 machine is attached to the pool. Detach it (it is told to stop) and delete the pool anyway?')
    expect((await page.request.get(`${leader.url}/api/v1/pools/${pool.id}`)).status()).toBe(404)
  }, T)

  test('a name that is one long word wraps at 375 px: no page scrolls sideways (a pool name in a heading and a chart caption did)', async () => {
    const narrow = await browser.newContext({ viewport: { width: 375, height: 800 }, storageState: await ada.storageState() })
    const p = await narrow.newPage()
    watchErrors(p, errors)
    try {
      const csrf = (await narrow.cookies()).find((c) => c.name === 'svc_csrf')?.value ?? ''
      const made = await p.request.post(leader.url + '/api/v1/pools', { headers: { 'x-csrf-token': csrf }, data: { name: 'ComputationalLinguisticsResearchGroupCluster'.repeat(2) } })
      expect(made.status()).toBe(201)
      const id = ((await made.json()) as { id: string }).id
      for (const path of ['/dashboard', `/pools/${id}`, '/admin/pools']) {
        await p.goto(leader.url + path)
        await p.waitForLoadState('networkidle')
        expect([path, await p.evaluate('document.documentElement.scrollWidth')]).toEqual([path, 375])
      }
      await p.request.delete(`${leader.url}/api/v1/pools/${id}`, { headers: { 'x-csrf-token': csrf } })
    } finally {
      await narrow.close()
    }
  }, T)

  test('every other page renders without script errors, passes axe and is photographed', async () => {
    const pool = new URL(poolUrl).pathname
    const pages: [string, string][] = [
      ['/profile', '04-profile'],
      ['/admin/pools', '07-admin-pools'],
      [`/ops/join-v2?pool=${pool.split('/').pop()}`, '08-join'],
      ['/ops/inference', '09-inference'],
      ['/legal/imprint', '10-imprint'],
      ['/legal/privacy', '11-privacy'],
      ['/legal/accessibility', '12-accessibility'],
      ['/legal/leichte-sprache', '13-leichte-sprache'],
      ['/verify-email?token=x', '14-verify-email'],
      ['/reset-password?token=x', '15-reset-password'],
    ]
    for (const [path, name] of pages) {
      await page.goto(leader.url + path)
      await page.waitForLoadState('networkidle')
      await shot(page, name)
      await expectAccessible(page, name)
    }
    const anon = await browser.newPage()
    watchErrors(anon, errors)
    const anonPages: [string, string][] = [['/de', '16-landing-de'], ['/login', '17-login']]
    for (const [path, name] of anonPages) {
      await anon.goto(leader.url + path)
      await shot(anon, name)
      await expectAccessible(anon, name)
    }
    await anon.close()
    expect(errors).toEqual([])
  }, 40_000)
})
