// Stored XSS in a real browser: the pages fill lists (pools, jobs, nodes, users) from the JSON API
// with their scripts, which the HTML check (test/http/xss.test.ts) cannot see. With script payloads
// in every user-controlled field, no dialog may fire and no element may be injected, and the
// payloads must show up as text (so the pages did render them).
import { afterAll, describe, expect, test } from 'bun:test'
import { hasChromium, launch } from './support'
import { makeHarness, sessionClient } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { buildXssWorld, PAYLOADS } from '../helpers/xss'

describe.skipIf(!hasChromium)('script payloads in Chromium', () => {
  const h = makeHarness()
  afterAll(() => h.close())

  test('no dialog fires and nothing is injected on the pages that render user data; the payloads show as text', async () => {
    const world = await buildXssWorld(h)
    const srv = listen(h)
    const browser = await launch()
    const findings: string[] = []
    const shown = new Map<string, number>()
    try {
      const visits: [string, string[]][] = [
        ...world.owners.map((o): [string, string[]] => [o.userId, ['/dashboard', `/pools/${o.poolId}`]]),
        [world.adminId, ['/admin/users', '/admin/pools']],
      ]
      for (const [userId, paths] of visits) {
        const ctx = await browser.newContext()
        await ctx.addCookies([...sessionClient(h, userId).cookies].map(([name, value]) => ({ name, value, url: srv.url })))
        const page = await ctx.newPage()
        page.on('dialog', (d) => {
          findings.push(`${page.url()}: a ${d.type()} fired: ${d.message()}`)
          void d.dismiss()
        })
        for (const path of paths) {
        await page.goto(srv.url + path, { waitUntil: 'networkidle' })
        // A string, evaluated in the page (the test is compiled without the DOM's types).
        const r = (await page.evaluate(`(() => {
          const injected = document.querySelectorAll('img[src="x"], svg[onload], [onerror], [onload]').length
          const scripts = [...document.scripts].filter((s) => (s.textContent || '').includes('alert(1)')).length
          const text = document.body.innerText
          return { injected, scripts, counts: ${JSON.stringify(PAYLOADS)}.map((p) => text.split(p).length - 1) }
        })()`)) as { injected: number; scripts: number; counts: number[] }
        if (r.injected > 0) findings.push(`${path}: ${r.injected} injected element(s)`)
        if (r.scripts > 0) findings.push(`${path}: ${r.scripts} injected script(s)`)
        PAYLOADS.forEach((p, i) => shown.set(p, (shown.get(p) ?? 0) + r.counts[i]!))
        shown.set(path.replace(/[0-9a-f-]{36}/, ':id'), (shown.get(path.replace(/[0-9a-f-]{36}/, ':id')) ?? 0) + r.counts.reduce((a, b) => a + b, 0))
        }
        await ctx.close()
      }
    } finally {
      await browser.close()
      await srv.stop()
    }
    expect(findings).toEqual([])
    // Rendered as text: every payload somewhere, and every page showed some.
    for (const p of PAYLOADS) expect(`${p}: ${shown.get(p)! > 0}`).toBe(`${p}: true`)
    for (const page of ['/dashboard', '/pools/:id', '/admin/users', '/admin/pools']) expect(`${page}: ${(shown.get(page) ?? 0) > 0}`).toBe(`${page}: true`)
  }, 120_000)
})
