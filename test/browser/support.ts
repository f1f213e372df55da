// Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by playwright-core,
// screenshots under __screenshots__/ (git-ignored), and axe-core when the package is installed.
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'bun:test'
import { chromium, type Browser, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)
export const SHOTS = join(import.meta.dir, '__screenshots__')

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}

/**
 * Holds back the next `times` requests to `url` (a glob) until the returned release() is called,
 * to look at a page while its answers are still on their way. With `before`, each is answered as
 * the leader would have answered it when it was sent (an answer overtaken by a later write).
 */
export async function holdBack(page: Page, url: string, { times = 1, before = false } = {}): Promise<{ sent: Promise<void>; release: () => void }> {
  let release = () => {}
  const held = new Promise<void>((r) => (release = r))
  let seen = () => {}
  const sent = new Promise<void>((r) => (seen = r))
  await page.route(
    url,
    async (route) => {
      const answer = before ? await route.fetch() : null
      seen()
      await held
      await (answer ? route.fulfill({ response: answer }) : route.continue())
    },
    { times },
  )
  return { sent, release }
}

export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
}

/** axe-core's source, or null when the package is not installed (then a11y scans are skipped, loudly once). */
let axeSource: string | null | undefined
function loadAxe(): string | null {
  if (axeSource !== undefined) return axeSource
  try {
    axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')
  } catch {
    axeSource = null
    console.warn('SKIPPED axe-core scans: the axe-core package is not installed (add it as a devDependency to enable them).')
  }
  return axeSource
}
export const hasAxe = () => loadAxe() !== null

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[] }[]
}

/** Fails on serious or critical WCAG 2.1 A/AA violations. Evaluated through CDP, so the page's CSP does not block it. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  const src = loadAxe()
  if (src === null) return
  await page.evaluate(src)
  // A string expression: the test program has no browser types (lib "dom" stays out of it).
  const violations = (await page.evaluate(
    "axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }).then((r) => r.violations)",
  )) as AxeViolation[]
  const bad = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${name}: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`)
  expect(bad).toEqual([])
}

/** Collects uncaught page errors and CSP refusals: either means a page script is broken. */
export function watchErrors(page: Page, sink: string[]): void {
  page.on('pageerror', (e) => sink.push(`${page.url()}: ${e.message}`))
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) sink.push(`${page.url()}: ${m.text()}`)
  })
}
