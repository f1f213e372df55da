// robots.txt, sitemap.xml and llms.txt. Every URL is absolute, from SVC_BASE_URL, because crawlers
// resolve nothing relative in these files.
const PUBLIC_PATHS = ['/legal/imprint', '/legal/privacy', '/legal/accessibility', '/legal/leichte-sprache']

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

export function robotsTxt(baseUrl: string): string {
  return [
    'User-agent: *',
    'Allow: /',
    // Session pages answer with a redirect to /login anyway; keep crawlers off them and the API.
    'Disallow: /api/',
    'Disallow: /dashboard',
    'Disallow: /pools/',
    'Disallow: /jobs/',
    'Disallow: /profile',
    'Disallow: /admin/',
    'Disallow: /ops/',
    'Disallow: /lang/',
    '',
    `Sitemap: ${baseUrl}/sitemap.xml`,
    '',
  ].join('\n')
}

export function sitemapXml(baseUrl: string): string {
  const alternates = [
    ['en', `${baseUrl}/`],
    ['de', `${baseUrl}/de`],
    ['x-default', `${baseUrl}/`],
  ]
  const links = alternates.map(([l, href]) => `    <xhtml:link rel="alternate" hreflang="${l}" href="${xmlEscape(href!)}"/>`).join('\n')
  const landing = [`${baseUrl}/`, `${baseUrl}/de`].map((loc) => `  <url>\n    <loc>${xmlEscape(loc)}</loc>\n${links}\n  </url>`)
  const legal = PUBLIC_PATHS.map((p) => `  <url>\n    <loc>${xmlEscape(baseUrl + p)}</loc>\n  </url>`)
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">',
    ...landing,
    ...legal,
    '</urlset>',
    '',
  ].join('\n')
}

export function llmsTxt(baseUrl: string): string {
  return `# svc leader

> A self-hosted control plane for GPU worker machines ("fellows"): user accounts, pools with
> quotas and invites, one-line machine join, pipeline training jobs and an OpenAI-compatible
> inference endpoint. One executable and one SQLite file.

## Pages

- [Landing page (English)](${baseUrl}/): what the service does
- [Landing page (German)](${baseUrl}/de): the same in German
- [Register](${baseUrl}/register) and [log in](${baseUrl}/login)
- [Accessibility statement](${baseUrl}/legal/accessibility)
- [Leichte Sprache](${baseUrl}/legal/leichte-sprache): plain German
- [Imprint](${baseUrl}/legal/imprint) and [privacy policy](${baseUrl}/legal/privacy)

## API

- Base path: ${baseUrl}/api/v1 (JSON; errors are RFC 9457 problem+json)
- Chat: POST ${baseUrl}/api/v1/chat/completions (OpenAI-compatible, needs a personal API token)
- Public aggregate statistics: GET ${baseUrl}/api/v1/public/stats
`
}
