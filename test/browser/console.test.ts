// Issue 25 (the training console and fleet views) in Chromium against the built dist/svc with two
// real fellows: bad input on the submit form is refused beside its field with nothing sent; a
// 2-stage job submitted from the pool page runs, its loss chart gains points, it is paused and
// resumed from its page; a machine page shows the CPU/memory chart, its engine and the log tail; the dashboard
// shows the fleet chart. English at 1280 px and German at 390 px, axe on every new page,
// screenshots under __screenshots__/ (git-ignored).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { killAll, startCluster, startFellow, stopCluster, waitOnline, type Cluster } from '../helpers/cluster'
import { until } from '../helpers/until'
import { expectAccessible, hasChromium, holdBack, launch, shot, watchErrors } from './support'

const T = 120_000

describe.skipIf(!hasChromium)('training console and fleet views in Chromium (issue 25)', () => {
  let c: Cluster
  let browser: Browser
  let jobId = ''
  const errors: string[] = []
  const posted: string[] = []

  beforeAll(async () => {
    ;[c, browser] = await Promise.all([startCluster('tunnel'), launch()])
    startFellow(c, 'alpha')
    startFellow(c, 'beta')
    await waitOnline(c, 2)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    // A clean stop first (SIGTERM: the agents end their runner processes), then whatever is left.
    try {
      if (c) await stopCluster(c)
    } finally {
      await killAll()
    }
  })

  async function signedIn(locale: string, width: number): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width, height: 900 }, locale })
    const page = await context.newPage()
    watchErrors(page, errors)
    // Every confirmation is accepted; what each said is checked by the flow (the action happened).
    page.on('dialog', (d) => void d.accept())
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/api/v1/jobs')) posted.push(r.postData() ?? '')
    })
    const r = await page.request.post(c.leader.url + '/api/v1/auth/login', { data: { email: 'admin@example.com', password: 'cluster admin password' } })
    expect(r.status()).toBe(200)
    return { context, page }
  }

  const noSideways = async (p: Page) => expect(await p.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true)
  const text = async (p: Page, sel: string) => (await p.locator(sel).innerText()).trim()
  /** The points a chart's text alternative counts ("12 points.", "1,234 points.", "1.234 Punkte."). */
  const pointsIn = async (p: Page, sel: string) => Number(/(\d[\d.,]*)/.exec(await p.locator(`${sel} .chart-summary`).innerText())?.[1]?.replace(/[.,]/g, '') ?? 0)

  test('submit a 2-stage job from the pool page, watch its loss chart, pause and resume it, open a machine (en, 1280 px)', async () => {
    const { context, page } = await signedIn('en-US', 1280)
    try {
      // The page's first answer about the pool's machines (one list serves the table and the form)
      // is held back: a form sent before it comes asks for them itself (it said the pool had no machines).
      const { release } = await holdBack(page, '**/api/v1/cluster/nodes?pool_id=*', { times: 1 })
      await page.goto(`${c.leader.url}/pools/${c.poolId}`)
      // Bad input: a clear message beside each field, nothing submitted.
      await page.fill('#job-name-input', 'console run')
      await page.fill('#job-config-input', '{"steps": 5,')
      await page.fill('#job-stages-input', '3')
      await page.fill('#job-runner-input', 'torch')
      await page.click('#submit-job-button')
      await page.waitForSelector('#job-config-input-error:has-text("not valid JSON")')
      release()
      await page.locator('#nodes-body tr', { hasText: 'alpha' }).waitFor()
      expect(await text(page, '#job-stages-input-error')).toContain('2 machines, fewer than 3 stages')
      expect(await text(page, '#job-runner-input-error')).toContain('No machine of this pool offers the runner "torch"')
      expect(await page.getAttribute('#job-config-input', 'aria-invalid')).toBe('true')
      expect(await text(page, '#submit-msg')).toContain('Nothing was submitted')
      await page.fill('#job-config-input', '[1, 2]')
      await page.click('#submit-job-button')
      await page.waitForSelector('#job-config-input-error:has-text("must be a JSON object")')
      expect(posted).toEqual([])
      // What only the leader checks (the built-in runner's settings) lands beside its field too,
      // naming the setting (it was a line of API text under the button).
      await page.fill('#job-runner-input', 'mlp')
      await page.fill('#job-stages-input', '2')
      await page.fill('#job-config-input', '{"steps": -3}')
      await page.click('#submit-job-button')
      await page.waitForSelector('#job-config-input-error:has-text("steps: must be an integer from 1 to 100000000 (a setting of the built-in runner mlp)")')
      expect(await text(page, '#submit-msg')).toContain('Nothing was submitted')
      expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe('job-config-input')
      expect(posted).toHaveLength(1)
      posted.splice(0)
      await shot(page, 'console-submit-errors-en-1280')
      await expectAccessible(page, 'pool submit errors en 1280')

      // A good one: two stages, one per machine, long enough to pause in the middle.
      await page.fill('#job-runner-input', 'mlp')
      await page.fill('#job-stages-input', '2')
      await page.fill('#job-config-input', '{"steps": 1000000, "report_every": 20}')
      await page.click('#submit-job-button')
      await page.waitForSelector('#submit-msg a')
      expect(posted).toHaveLength(1)
      expect(JSON.parse(posted[0]!)).toMatchObject({ name: 'console run', stages: 2, runner: 'mlp', config: { steps: 1000000, report_every: 20 } })
      await page.locator('#submit-msg a').click()
      await page.waitForURL('**/jobs/*')
      jobId = page.url().split('/jobs/')[1]!

      // Placement: both machines, the transport named; the loss chart gains points.
      await page.locator('#stages-body tr[data-stage="1"] a').waitFor()
      expect((await text(page, '#stages-body')).match(/alpha|beta/g)?.sort()).toEqual(['alpha', 'beta'])
      expect(await text(page, '#job-transport')).toContain('through the leader')
      await page.waitForSelector('#job-status:has-text("running")')
      const first = await until(async () => {
        const n = await pointsIn(page, '#job-chart')
        return n >= 2 ? n : null
      }, 'the loss chart to get points', { timeoutMs: 30_000, everyMs: 200 })
      await until(async () => (await pointsIn(page, '#job-chart')) > first, 'the loss chart to gain more points', { timeoutMs: 30_000, everyMs: 200 })
      expect(await page.locator('#job-chart canvas').count()).toBeGreaterThan(0)
      expect(await text(page, '#job-chart .chart-summary')).toMatch(/Loss: [\d.,]+ now/)
      expect(await text(page, '#job-progress-text')).toMatch(/^Step [\d,]+ of 1,000,000/)
      await shot(page, 'console-job-running-en-1280')
      await expectAccessible(page, 'job running en 1280')

      // Pause and resume from the page (each after a confirmation).
      await page.click('#job-pause')
      await page.waitForSelector('#job-status:has-text("paused")')
      await page.locator('#job-resume').waitFor({ state: 'visible' })
      await page.click('#job-resume')
      await page.waitForSelector('#job-status:has-text("running")')
      const afterResume = await pointsIn(page, '#job-chart')
      await until(async () => (await pointsIn(page, '#job-chart')) > afterResume, 'points after the resume', { timeoutMs: 30_000, everyMs: 200 })

      // The log tail of its machines gets lines; filtering to errors hides the info lines.
      await page.locator('#job-log li[data-level="info"]').first().waitFor({ timeout: 20_000 })
      await page.selectOption('#job-log-level', 'error')
      expect(await page.locator('#job-log li[data-level="info"]').count()).toBe(0)
      await page.selectOption('#job-log-level', 'all')

      // A machine page: CPU and memory chart (no GPUs here) with its text, and its log tail.
      await page.locator('#stages-body tr[data-stage="0"] a').click()
      await page.waitForURL('**/fellows/*')
      await page.waitForSelector('#fellow-state:has-text("online")')
      await until(async () => (await pointsIn(page, '#chart-a')) >= 1, 'the CPU chart to have a point', { timeoutMs: 20_000, everyMs: 200 })
      expect(await text(page, '#chart-a figcaption')).toBe('CPU utilisation')
      expect(await text(page, '#chart-a .chart-summary')).toMatch(/CPU: [\d.,]+ % now/)
      expect(await text(page, '#chart-b figcaption')).toBe('Memory used and free')
      expect(await page.locator('#gpus-card').isHidden()).toBe(true)
      // The engine the agent runs when none is declared, as its heartbeats name it.
      await page.locator('#engines-body tr[data-engine="builtin"]').waitFor()
      expect((await text(page, '#engines-body')).replace(/\s+/g, ' ')).toBe('builtin tiny-llm healthy')
      expect(await page.locator('#fellow-job a').getAttribute('href')).toBe(`/jobs/${jobId}`)
      await page.locator('#fellow-log li[data-level]').first().waitFor({ timeout: 20_000 })
      await page.locator('#manage-card').waitFor({ state: 'visible' })
      // The day's chart once its own answer is in (the hour's chart on show already had a point).
      await Promise.all([page.waitForResponse((r) => r.url().includes('/telemetry?range=1d')), page.selectOption('#usage-range', '1d')])
      await until(async () => (await pointsIn(page, '#chart-a')) >= 1, 'the day chart to have a point', { timeoutMs: 10_000, everyMs: 200 })
      await shot(page, 'console-fellow-en-1280')
      await expectAccessible(page, 'machine en 1280')

      // The dashboard: a fleet chart for the pool.
      // Just after a minute turns, the newest bucket may have seen one fellow so far, and the
      // dashboard reloads its fleet charts each minute: reload until both are in it.
      await until(async () => {
        await page.goto(c.leader.url + '/dashboard')
        const summary = page.locator(`#fleet-list li[data-pool="${c.poolId}"] .chart-summary`, { hasText: 'Machines online:' })
        await summary.waitFor({ timeout: 10_000 })
        return (await summary.innerText()).includes('Machines online: 2 now') ? true : null
      }, 'the fleet chart to count both machines', { timeoutMs: 20_000, everyMs: 500 })
      await shot(page, 'console-dashboard-en-1280')
      await expectAccessible(page, 'dashboard en 1280')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  /** Marks the focused element (a property, which an update in place keeps) and says whether it is still the focused one. */
  const markFocus = (p: Page) => p.evaluate('document.activeElement.svcMark = 1')
  const focusKept = async (p: Page) => (await p.evaluate('document.activeElement && document.activeElement.svcMark === 1')) as boolean
  const hide = (p: Page, hidden: boolean) =>
    p.evaluate(
      hidden
        ? "Object.defineProperty(document, 'hidden', { configurable: true, get: () => true }); Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' }); document.dispatchEvent(new Event('visibilitychange'))"
        : "delete document.hidden; delete document.visibilityState; document.dispatchEvent(new Event('visibilitychange'))",
    )

  test('a job page holds at most 2 event streams, none while its tab is hidden, and resumes after the last event when shown (four tabs hung every other tab)', async () => {
    expect(jobId).not.toBe('')
    const { context, page } = await signedIn('en-US', 1280)
    const open = new Set<unknown>()
    const opened: { url: string; lastEventId: string | undefined }[] = []
    page.on('request', (r) => {
      if (!/\/(metrics|logs)\/stream$/.test(r.url())) return
      open.add(r)
      opened.push({ url: r.url(), lastEventId: r.headers()['last-event-id'] })
    })
    page.on('requestfinished', (r) => void open.delete(r))
    page.on('requestfailed', (r) => void open.delete(r))
    try {
      await page.goto(`${c.leader.url}/jobs/${jobId}`)
      await page.locator('#job-log li[data-level]').first().waitFor({ timeout: 20_000 })
      await until(async () => ((await pointsIn(page, '#job-chart')) >= 1 ? true : null), 'the loss chart', { timeoutMs: 30_000, everyMs: 200 })
      // The metrics and one machine's log: two machines used to mean three streams (up to five).
      expect(open.size).toBe(2)
      // The other machine's log on demand, from the chooser; still two streams.
      const options = await page.locator('#job-log-source option').allInnerTexts()
      expect(options.sort()).toEqual(['alpha', 'beta'])
      const other = (await page.locator('#job-log-source option:not(:checked)').getAttribute('value'))!
      await page.selectOption('#job-log-source', other)
      await until(async () => (opened.some((o) => o.url.includes(other)) && open.size === 2 ? true : null), "the other machine's stream instead", { timeoutMs: 5000, everyMs: 50 })
      await page.locator('#job-log li[data-level]').first().waitFor({ timeout: 20_000 })
      expect(open.size).toBe(2)

      // Hidden: no stream held. Shown again: the metrics resume after the last event received.
      await hide(page, true)
      await until(async () => (open.size === 0 ? true : null), 'the streams to close while hidden', { timeoutMs: 5000, everyMs: 50 })
      const before = opened.length
      const points = await pointsIn(page, '#job-chart')
      await hide(page, false)
      await until(async () => (open.size === 2 ? true : null), 'the streams to open again', { timeoutMs: 5000, everyMs: 50 })
      const metrics = opened.slice(before).find((o) => o.url.includes('/metrics/stream'))
      expect(metrics?.lastEventId).toMatch(/^[1-9]\d*$/)
      await until(async () => ((await pointsIn(page, '#job-chart')) > points ? true : null), 'new points after the return', { timeoutMs: 30_000, everyMs: 200 })
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('keyboard focus stays on a link in the pool\'s jobs table and the machine page while the step changes (the rows were rebuilt every few seconds)', async () => {
    expect(jobId).not.toBe('')
    const { context, page } = await signedIn('en-US', 1280)
    try {
      await page.goto(`${c.leader.url}/pools/${c.poolId}`)
      const row = page.locator(`#jobs-body tr[data-job="${jobId}"]`)
      await row.waitFor()
      await row.locator('a').focus()
      await markFocus(page)
      const step = await row.locator('td').nth(3).innerText()
      await until(async () => ((await row.locator('td').nth(3).innerText()) !== step ? true : null), 'the step to change', { timeoutMs: 20_000, everyMs: 100 })
      expect(await focusKept(page)).toBe(true)
      // The machine whose step moves (the stage that reports it), then its link focused while it moves on.
      const steps = () => page.locator('#nodes-body tr[data-fellow] td:nth-child(4)').allInnerTexts()
      const s0 = await steps()
      const i = (await until(async () => (await steps()).findIndex((x, k) => x !== s0[k]) + 1, "a machine's step to change", { timeoutMs: 20_000, everyMs: 100 })) - 1
      const nodeRow = page.locator('#nodes-body tr[data-fellow]').nth(i)
      const node = nodeRow.locator('td').first().locator('a')
      await node.focus()
      await markFocus(page)
      const s1 = await nodeRow.locator('td').nth(3).innerText()
      await until(async () => ((await nodeRow.locator('td').nth(3).innerText()) !== s1 ? true : null), "the machine's step to change again", { timeoutMs: 20_000, everyMs: 100 })
      expect(await focusKept(page)).toBe(true)

      await node.click()
      await page.waitForURL('**/fellows/*')
      const link = page.locator('#fellow-job a')
      await link.waitFor()
      await link.focus()
      await markFocus(page)
      const text0 = await link.innerText()
      await until(async () => ((await page.locator('#fellow-job').innerText()) !== text0 ? true : null), 'the step on the machine page to change', { timeoutMs: 20_000, everyMs: 100 })
      expect(await focusKept(page)).toBe(true)
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('"could not be reached" goes once a later load succeeds, on the job and the machine page', async () => {
    expect(jobId).not.toBe('')
    const { context, page } = await signedIn('en-US', 1280)
    try {
      await page.goto(`${c.leader.url}/jobs/${jobId}`)
      await page.waitForSelector('#job-status:has-text("running")')
      const jobUrl = `**/api/v1/jobs/${jobId}`
      await page.route(jobUrl, (r) => r.abort())
      await page.waitForSelector('#job-msg.error:has-text("could not be reached")', { timeout: 10_000 })
      await page.unroute(jobUrl)
      await page.waitForSelector('#job-msg:not(.error)', { state: 'attached', timeout: 10_000 })
      expect(await text(page, '#job-msg')).toBe('')

      const fellow = (await c.api<{ items: { fellow_id: string }[] }>('GET', `/api/v1/cluster/nodes?pool_id=${c.poolId}`)).body.items[0]!.fellow_id
      await page.goto(`${c.leader.url}/fellows/${fellow}`)
      await page.waitForSelector('#fellow-state:has-text("online")')
      const fellowUrl = `**/api/v1/workers/${fellow}`
      await page.route(fellowUrl, (r) => r.abort())
      await page.waitForSelector('#fellow-msg.error:has-text("could not be reached")', { timeout: 10_000 })
      await page.unroute(fellowUrl)
      await page.waitForSelector('#fellow-msg:not(.error)', { state: 'attached', timeout: 10_000 })
      expect(await text(page, '#fellow-msg')).toBe('')
    } finally {
      await context.close()
    }
  }, T)

  test('a plain member of the pool sees no pause, checkpoint or cancel on a job they may not steer', async () => {
    expect(jobId).not.toBe('')
    const email = 'member@example.com'
    const password = 'member password 123'
    const reg = await fetch(c.leader.url + '/api/v1/auth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })
    expect(reg.status).toBe(201)
    const user = ((await reg.json()) as { user: { id: string; status: string } }).user
    if (user.status !== 'active') expect((await c.api('POST', `/api/v1/admin/users/${user.id}/approve`)).status).toBe(200)
    const invite = await c.api<{ id: string; invite_link: string }>('POST', `/api/v1/pools/${c.poolId}/invites`, { email })
    expect(invite.status).toBeLessThan(300)
    const token = new URL(invite.body.invite_link).searchParams.get('token')!
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    watchErrors(page, errors)
    try {
      expect((await page.request.post(c.leader.url + '/api/v1/auth/login', { data: { email, password } })).status()).toBe(200)
      const csrf = (await context.cookies()).find((k) => k.name === 'svc_csrf')?.value ?? ''
      expect((await page.request.post(`${c.leader.url}/api/v1/pools/invites/${invite.body.id}/accept`, { headers: { 'x-csrf-token': csrf }, data: { token } })).ok()).toBe(true)
      await page.goto(`${c.leader.url}/jobs/${jobId}`)
      await page.waitForSelector('#job-status:has-text("running")')
      await page.locator('#stages-body tr[data-stage="1"] a').waitFor()
      for (const id of ['#steer-card', '#job-pause', '#job-checkpoint', '#job-cancel']) expect([id, await page.locator(id).isHidden()]).toEqual([id, true])
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)

  test('the same pages in German at 390 px: usable, nothing sideways, charts with their text', async () => {
    expect(jobId).not.toBe('')
    const { context, page } = await signedIn('de-DE', 390)
    try {
      await page.goto(c.leader.url + '/de') // stores German (then on to the dashboard)
      await page.goto(`${c.leader.url}/jobs/${jobId}`)
      expect(await page.getAttribute('html', 'lang')).toBe('de')
      await page.waitForSelector('#job-status:has-text("läuft")')
      await until(async () => (await pointsIn(page, '#job-chart')) >= 1, 'the loss chart', { timeoutMs: 30_000, everyMs: 200 })
      expect(await text(page, '#job-chart .chart-summary')).toMatch(/Messpunkte?\./)
      await noSideways(page)
      await shot(page, 'console-job-de-390')
      await expectAccessible(page, 'job de 390')

      await page.goto(`${c.leader.url}/pools/${c.poolId}`)
      await page.locator('#jobs-body tr', { hasText: 'console run' }).waitFor()
      await until(async () => (await pointsIn(page, '#fleet-online')) >= 1, 'the fleet chart', { timeoutMs: 20_000, everyMs: 200 })
      await noSideways(page)
      await shot(page, 'console-pool-de-390')
      await expectAccessible(page, 'pool de 390')

      const node = (await c.api<{ items: { fellow_id: string }[] }>('GET', `/api/v1/cluster/nodes?pool_id=${c.poolId}`)).body.items[1]!
      await page.goto(`${c.leader.url}/fellows/${node.fellow_id}`)
      await until(async () => (await pointsIn(page, '#chart-b')) >= 1, 'the memory chart', { timeoutMs: 20_000, everyMs: 200 })
      expect(await text(page, '#chart-a figcaption')).toBe('CPU-Auslastung')
      await page.locator('#engines-body tr[data-engine="builtin"]').waitFor()
      expect((await text(page, '#engines-body')).replace(/\s+/g, ' ')).toContain('builtin tiny-llm betriebsbereit')
      await page.locator('#fellow-log li[data-level]').first().waitFor({ timeout: 20_000 })
      await noSideways(page)
      await shot(page, 'console-fellow-de-390')
      await expectAccessible(page, 'machine de 390')

      await page.goto(c.leader.url + '/dashboard')
      await page.locator(`#fleet-list li[data-pool="${c.poolId}"] .chart-summary`, { hasText: 'Maschinen online' }).waitFor({ timeout: 20_000 })
      await noSideways(page)
      await shot(page, 'console-dashboard-de-390')
      await expectAccessible(page, 'dashboard de 390')

      // Cancel from the job page ends it.
      await page.goto(`${c.leader.url}/jobs/${jobId}`)
      await page.click('#job-cancel')
      await page.waitForSelector('#job-status:has-text("abgebrochen")')
    } finally {
      await context.close()
    }
    expect(errors).toEqual([])
  }, T)
})
