// Stored XSS on the server-rendered pages: every user-controlled field (display name, pool name and
// description, job name, fellow hostname) holds a script payload, and every page that may show it
// is fetched with a session that can see it. The raw payload must not appear in the HTML, and where
// a page renders the field on the server its escaped form must (so the check is not vacuous).
// Fields filled in by page scripts from the JSON API are checked in Chromium: test/browser/xss.test.ts.
import { afterAll, describe, expect, test } from 'bun:test'
import { escapeHtml } from '@kitajs/html'
import { makeHarness, type Client } from '../helpers/harness'
import { buildXssWorld, PAYLOADS } from '../helpers/xss'

const h = makeHarness()
afterAll(() => h.close())
const world = await buildXssWorld(h)
const pageRoutes = new Set(h.app.routes.filter((r) => r.method === 'GET').map((r) => r.path))

/** Pages to look at, as the owner of each payload's pool and as the admin. */
const OWNER_PAGES = ['/dashboard', '/profile', '/pools/:id', '/ops/join-v2', '/ops/inference']
const ADMIN_PAGES = ['/dashboard', '/admin/users', '/admin/pools', '/pools/:id']

async function html(c: Client, route: string, poolId: string): Promise<string> {
  const r = await c.get(route.replace(':id', poolId))
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type') ?? '').toContain('text/html')
  return r.body as string
}

describe('script payloads in user-controlled fields', () => {
  test('the API stores them as given, and refuses them where a format forbids them', () => {
    expect(world.owners).toHaveLength(PAYLOADS.length)
    // Invite emails (email format) and servable names (a strict pattern) cannot carry markup at all.
    expect(world.refused.filter((r) => r.startsWith('invite email'))).toHaveLength(PAYLOADS.length)
    expect(world.refused.filter((r) => r.startsWith('servable name'))).toHaveLength(PAYLOADS.length)
  })

  const missing = [...new Set([...OWNER_PAGES, ...ADMIN_PAGES])].filter((p) => !pageRoutes.has(p))
  if (missing.length > 0) test.skip(`pages not present in this build are skipped: ${missing.join(', ')}`, () => {})

  for (const o of world.owners) {
    test(`${JSON.stringify(o.payload)} is escaped on every page that shows it`, async () => {
      const raw: string[] = []
      const seenEscaped = new Set<string>()
      const look = async (who: string, c: Client, route: string) => {
        if (!pageRoutes.has(route)) return
        const page = await html(c, route, o.poolId)
        for (const p of PAYLOADS) if (page.includes(p)) raw.push(`${who} ${route}: raw ${JSON.stringify(p)}`)
        if (page.includes(escapeHtml(o.payload))) seenEscaped.add(route)
      }
      for (const route of OWNER_PAGES) await look('owner', o.session, route)
      for (const route of ADMIN_PAGES) await look('admin', world.admin, route)
      expect(raw).toEqual([])
      // Rendered on the server, escaped: the display name in every session page's header, the
      // profile's name, the pool page's name and description.
      const expectEscaped = ['/dashboard', '/profile', '/pools/:id'].filter((r) => pageRoutes.has(r))
      expect([...seenEscaped].filter((r) => expectEscaped.includes(r)).sort()).toEqual(expectEscaped.sort())
    })
  }
})
