// The API reference page (/api/v1/docs) in Chromium against the built dist/svc: its script renders
// every operation of the OpenAPI document, without a page error, and the filter narrows the list.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { startLeader, type Leader } from '../helpers/leader'
import { operationsOf, type Json } from '../helpers/openapi'
import { expectAccessible, hasChromium, launch, watchErrors } from './support'

describe.skipIf(!hasChromium)('the API reference page in Chromium', () => {
  let leader: Leader
  let browser: Browser
  let page: Page
  const errors: string[] = []

  beforeAll(async () => {
    ;[leader, browser] = await Promise.all([startLeader(), launch()])
    page = await browser.newPage()
    watchErrors(page, errors)
  }, 30_000)

  afterAll(async () => {
    await browser?.close()
    await leader?.stop()
  })

  test('lists every operation of the document, each with its credentials and responses, and filters them', async () => {
    const doc = (await (await fetch(`${leader.url}/api/v1/openapi.json`)).json()) as Json
    const total = operationsOf(doc).length
    await page.goto(`${leader.url}/api/v1/docs`)
    // A selector, not page.waitForFunction: once it has to poll, that evaluates a string in the
    // page, which the page's CSP (script-src 'self') refuses.
    await page.waitForSelector('#count:has-text("operations")', { timeout: 10_000 })
    expect(await page.locator('#count').textContent()).toBe(`${total} operations`)
    expect(await page.locator('details.op').count()).toBe(total)
    const ws = page.locator('details.op', { hasText: '/ws/signals/{fellow_id}' })
    await ws.locator('summary').click()
    expect(await ws.textContent()).toContain('Response 101')
    expect(await ws.textContent()).toContain('Credentials: nodeToken')
    await page.fill('#filter', '/api/v1/pools')
    const pools = operationsOf(doc).filter((o) => o.path.includes('/api/v1/pools')).length
    expect(await page.locator('details.op').count()).toBe(pools)
    expect(await page.locator('#count').textContent()).toBe(`${pools} of ${total} operations`)
    await expectAccessible(page, 'api docs')
    expect(errors).toEqual([])
  }, 30_000)
})
