// The HTML answer to a browser that navigates to an unknown path. Unknown paths stay admin-only for
// API clients (the not-found gate in app.ts answers them 401/403), but a person who mistypes a URL
// in a browser gets a readable 404 page rather than a JSON error (issue 29).
import type { Caller } from '../caller'
import type { Ctx } from '../context'
import { pagesModule } from './load'
import { requestUrl } from '../http/host'

/** The q-value a media range gets from an Accept header (exact type, then type/*, then * /*). */
function qualityOf(accept: string, type: string): number {
  const [major] = type.split('/')
  let best = -1
  let rank = -1
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';')
    const r = range.trim()
    const specificity = r === type ? 3 : r === `${major}/*` ? 2 : r === '*/*' ? 1 : 0
    if (specificity === 0 || specificity < rank) continue
    const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/.exec(p)).find((m) => m)?.[1]
    rank = specificity
    best = q === undefined ? 1 : Number(q)
  }
  return best < 0 ? 0 : best
}

/**
 * A browser navigation: GET or HEAD, outside the API, the sockets and /metrics, with an Accept that
 * names text/html and prefers it to JSON. Everything else (curl, fetch, SDKs) keeps the JSON answer.
 */
export function isBrowserNavigation(request: Request): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false
  const path = requestUrl(request).pathname
  if (path.startsWith('/api/') || path === '/api' || path.startsWith('/ws/') || path === '/ws' || path === '/metrics' || path.startsWith('/metrics/')) return false
  const accept = request.headers.get('accept')
  if (accept === null || accept.length > 2000 || !/text\/html/i.test(accept)) return false
  const html = qualityOf(accept, 'text/html')
  return html > 0 && html >= qualityOf(accept, 'application/json')
}

/** The 404 page, in the visitor's interface language, with the page security headers. */
export async function notFoundResponse(ctx: Ctx, request: Request, caller: Caller): Promise<Response> {
  return (await pagesModule()).notFoundResponse(ctx, request, caller)
}
