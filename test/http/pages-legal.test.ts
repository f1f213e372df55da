import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeHarness, type Harness } from '../helpers/harness'

const files = mkdtempSync(join(tmpdir(), 'svc-legal-'))
const file = (name: string, body: string) => {
  const p = join(files, name)
  writeFileSync(p, body)
  return p
}

const open: Harness[] = []
const harness = (env: Record<string, string> = {}) => {
  const h = makeHarness(env)
  open.push(h)
  return h
}
afterAll(() => open.forEach((h) => h.close()))

const get = async (h: Harness, path: string, headers: Record<string, string> = {}) => {
  const res = await h.client().get(path, headers)
  expect(res.status).toBe(200)
  return res.body as string
}
const header = (html: string) => /<header[^>]*>/.exec(html)?.[0] ?? ''

describe('imprint and privacy', () => {
  test('without files they show a visible placeholder saying the deployment has not configured them', async () => {
    const h = harness()
    for (const [path, variable] of [['/legal/imprint', 'SVC_IMPRINT_FILE'], ['/legal/privacy', 'SVC_PRIVACY_FILE']] as const) {
      const html = await get(h, path)
      expect(html).toContain('<html lang="en">')
      expect(html).toContain('has not configured')
      expect(html).toContain(variable)
    }
  })

  test('configured fragments are shown as HTML under the SVC_LEGAL_LANG language; the chrome keeps its own', async () => {
    const h = harness({
      SVC_IMPRINT_FILE: file('imprint.html', '<h1>Impressum</h1><p>Muster GmbH, Musterstraße 1</p>'),
      SVC_PRIVACY_FILE: file('privacy.html', '<h1>Datenschutz</h1><p>Wir speichern wenig.</p>'),
      SVC_LEGAL_LANG: 'de-AT',
    })
    const imprint = await get(h, '/legal/imprint')
    expect(imprint).toContain('<html lang="de-AT">')
    expect(imprint).toContain('<h1>Impressum</h1><p>Muster GmbH, Musterstraße 1</p>')
    expect(imprint).not.toContain('has not configured')
    expect(header(imprint)).toContain('lang="en"')
    const privacy = await get(h, '/legal/privacy', { 'accept-language': 'de' })
    expect(privacy).toContain('<p>Wir speichern wenig.</p>')
    expect(header(privacy)).not.toContain('lang=')
  })

  test('an unparseable SVC_LEGAL_LANG falls back to en', async () => {
    const h = harness({ SVC_LEGAL_LANG: 'not a tag!' })
    expect(await get(h, '/legal/imprint')).toContain('<html lang="en">')
  })

  test('a German legal language gets a German placeholder', async () => {
    const h = harness({ SVC_LEGAL_LANG: 'de' })
    const html = await get(h, '/legal/privacy')
    expect(html).toContain('<html lang="de">')
    expect(html).toContain('keine Datenschutzerklärung')
  })
})

describe('accessibility pages', () => {
  test('the statement follows the interface language and says when no contact or video is configured', async () => {
    const h = harness()
    const en = await get(h, '/legal/accessibility')
    expect(en).toContain('<html lang="en">')
    expect(en).toContain('Accessibility statement')
    expect(en).toContain('data-a11y-contact="none"')
    expect(en).toContain('has not configured a contact')
    expect(en).toContain('data-dgs="missing"')
    expect(en).toContain('data-a11y-body="builtin"')
    const de = await get(h, '/legal/accessibility', { 'accept-language': 'de-DE,de;q=0.9' })
    expect(de).toContain('<html lang="de">')
    expect(de).toContain('Erklärung zur Barrierefreiheit')
    expect(de).toContain('kein Kontakt')
  })

  test('an email contact becomes a mailto link; a web address a plain link; the DGS video is embedded', async () => {
    const mail = harness({ SVC_A11Y_CONTACT: 'barriers@example.org', SVC_DGS_VIDEO_URL: 'https://video.example.net/dgs.mp4' })
    const html = await get(mail, '/legal/accessibility')
    expect(html).toContain('<a href="mailto:barriers@example.org">barriers@example.org</a>')
    expect(html).toMatch(/<video controls src="https:\/\/video\.example\.net\/dgs\.mp4"/)
    const csp = (await mail.client().get('/legal/accessibility')).headers.get('content-security-policy')
    expect(csp).toContain('media-src \'self\' https://video.example.net')

    const link = harness({ SVC_A11Y_CONTACT: 'https://example.org/barriers' })
    expect(await get(link, '/legal/accessibility')).toContain('<a href="https://example.org/barriers">https://example.org/barriers</a>')
  })

  test('a contact that is neither an email nor a web address is shown as text, never as a script link', async () => {
    const h = harness({ SVC_A11Y_CONTACT: 'javascript:alert(1)' })
    const html = await get(h, '/legal/accessibility')
    expect(html).not.toContain('href="javascript:')
    expect(html).toContain('data-a11y-contact="text"')
  })

  test('SVC_ACCESSIBILITY_FILE replaces the built-in statement body', async () => {
    const h = harness({ SVC_ACCESSIBILITY_FILE: file('a11y.html', '<p>Partially compliant with EN 301 549.</p>') })
    const html = await get(h, '/legal/accessibility')
    expect(html).toContain('data-a11y-body="file"')
    expect(html).toContain('<p>Partially compliant with EN 301 549.</p>')
    expect(html).not.toContain('data-a11y-body="builtin"')
  })

  test('Leichte Sprache is always German, with English chrome marked as such', async () => {
    const h = harness({ SVC_DGS_VIDEO_URL: 'https://video.example.net/dgs.mp4' })
    const c = h.client()
    c.cookies.set('svc_lang', 'en')
    const html = (await c.get('/legal/leichte-sprache')).body as string
    expect(html).toContain('<html lang="de">')
    expect(html).toContain('Leichter Sprache')
    expect(header(html)).toContain('lang="en"')
    expect(html).toContain('data-dgs="video"')
    const de = await get(h, '/legal/leichte-sprache', { 'accept-language': 'de' })
    expect(header(de)).not.toContain('lang=')
    expect(de).toContain('data-a11y-contact="none"')
  })
})
