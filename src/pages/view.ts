// What every page handler needs: who is asking, in which interface language, the CSRF cookie,
// the security headers, and the two ways a page answers (HTML or a redirect).
import { BASE_CSP, PAGE_SECURITY_HEADERS } from '../http/security-headers'
import { CSRF_COOKIE, csrfValid, mintCsrfToken } from '../http/csrf'
import { SESSION_COOKIE } from '../http/policy'
import type { Caller } from '../caller'
import { getUser, type UserRow } from '../accounts/service'
import { pendingCount as pendingApprovals } from '../admin/service'
import { pickLang, LANG_COOKIE, type Lang } from '../../pages/i18n'
import { ASSET_VERSION } from '../../pages/assets'
import type { PageCtx } from '../../pages/layout'
import type { Ctx } from '../context'
import { requestUrl } from '../http/host'

/** The parts of Elysia's handler context a page uses (structural, so tests can fake it). */
export interface PageRequest {
  request: Request
  cookie: Record<string, { value?: unknown; set(v: Record<string, unknown>): unknown }>
  set: { headers: Record<string, unknown>; status?: unknown }
  caller: Caller
}

/** Where a visitor without a session is sent back to after logging in (SPEC: 303 to /login). */
export const NEXT_COOKIE = 'svc_next'
const YEAR_S = 365 * 24 * 3600

/** A same-origin path from a URL-ish value, or null. Guards /lang and post-login redirects. */
export function sameOriginPath(value: string | null | undefined, origins: string[]): string | null {
  if (!value || value.length > 2000) return null
  let u: URL
  try {
    u = new URL(value, origins[0])
  } catch {
    return null
  }
  if (!origins.includes(u.origin)) return null
  const path = u.pathname + u.search
  // "//evil.example" would be a protocol-relative URL in a Location header: an open redirect.
  if (!path.startsWith('/') || /^[/\\]{2}/.test(path) || path.includes('\\')) return null
  return path
}

export function originsOf(ctx: Ctx, request: Request): string[] {
  const out = [requestUrl(request).origin]
  try {
    out.push(new URL(ctx.cfg.baseUrl).origin)
  } catch {
    // baseUrl is validated by config; nothing to add
  }
  return out
}

function contentSecurityPolicy(ctx: Ctx): string {
  let media = "'self'"
  if (ctx.cfg.dgsVideoUrl) {
    try {
      media += ' ' + new URL(ctx.cfg.dgsVideoUrl).origin
    } catch {
      // an unparseable URL is refused by config already
    }
  }
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `media-src ${media}`,
    "connect-src 'self'",
    ...BASE_CSP,
  ].join('; ')
}

/** The headers every page carries: its Content-Security-Policy and PAGE_SECURITY_HEADERS. */
export function securityHeadersOf(ctx: Ctx): Record<string, string> {
  return { 'content-security-policy': contentSecurityPolicy(ctx), ...PAGE_SECURITY_HEADERS }
}

export function securityHeaders(ctx: Ctx, set: PageRequest['set']): void {
  Object.assign(set.headers, securityHeadersOf(ctx))
}

export interface View {
  page: PageCtx
  user: UserRow | null
  path: string
  html(markup: JSX.Element, status?: number): string | Promise<string>
  redirect(location: string, status?: 301 | 302 | 303): string
  /** 303 to /login, remembering where the visitor wanted to go. */
  toLogin(): string
  setLang(lang: Lang): void
}

const displayName = (u: UserRow) => (u.displayName && u.displayName.trim() !== '' ? u.displayName : u.email)

/** Who is asking and in which interface language, as the layout needs it. */
export function pageContext(ctx: Ctx, request: Request, caller: Caller, langCookie: unknown): { page: PageCtx; user: UserRow | null } {
  const row = caller.kind === 'user' ? (getUser(ctx.db, caller.userId) ?? null) : null
  const user = row && row.status === 'active' ? row : null
  const pendingCount = user?.role === 'admin' ? pendingApprovals(ctx.db) : 0
  const lang = pickLang(typeof langCookie === 'string' ? langCookie : undefined, request.headers.get('accept-language'))
  const page: PageCtx = {
    lang,
    user: user ? { id: user.id, name: displayName(user), email: user.email, role: user.role } : null,
    path: requestUrl(request).pathname,
    assetVersion: ASSET_VERSION,
    pendingCount,
    baseUrl: ctx.cfg.baseUrl,
  }
  return { page, user }
}

export function view(ctx: Ctx, r: PageRequest): View {
  const url = requestUrl(r.request)
  const { page, user } = pageContext(ctx, r.request, r.caller, r.cookie[LANG_COOKIE]?.value)
  const cookieBase = { path: '/', sameSite: 'lax', secure: ctx.cfg.cookieSecure }

  // Every page view leaves a CSRF cookie valid for its session behind (for none before login), so
  // page scripts can always send the header.
  const csrf = r.cookie[CSRF_COOKIE]?.value
  const session = r.caller.kind === 'user' && r.caller.fromCookie ? r.cookie[SESSION_COOKIE]?.value : null
  const bound = typeof session === 'string' ? session : null
  if (typeof csrf !== 'string' || !csrfValid(ctx.cfg.secretKey, csrf, csrf, bound)) {
    r.cookie[CSRF_COOKIE]!.set({ value: mintCsrfToken(ctx.cfg.secretKey, bound), httpOnly: false, ...cookieBase })
  }
  securityHeaders(ctx, r.set)
  r.set.headers['cache-control'] = 'no-store'

  const redirect = (location: string, status: 301 | 302 | 303 = 303) => {
    r.set.status = status
    r.set.headers['location'] = location
    return ''
  }
  return {
    page,
    user,
    path: url.pathname,
    html(markup, status = 200) {
      r.set.status = status
      r.set.headers['content-type'] = 'text/html; charset=utf-8'
      return typeof markup === 'string' ? '<!doctype html>' + markup : markup.then((m) => '<!doctype html>' + m)
    },
    redirect,
    toLogin() {
      const next = sameOriginPath(url.pathname + url.search, [url.origin])
      if (next) r.cookie[NEXT_COOKIE]!.set({ value: next, httpOnly: true, maxAge: 600, ...cookieBase })
      return redirect('/login', 303)
    },
    setLang(l) {
      r.cookie[LANG_COOKIE]!.set({ value: l, httpOnly: true, maxAge: YEAR_S, ...cookieBase })
    },
  }
}

/** Reads and clears the remembered destination; only a same-origin path survives. */
export function takeNext(r: PageRequest): string {
  const v = r.cookie[NEXT_COOKIE]?.value
  if (typeof v !== 'string' || v === '') return '/dashboard'
  r.cookie[NEXT_COOKIE]!.set({ value: '', path: '/', maxAge: 0, expires: new Date(0) })
  const origin = requestUrl(r.request).origin
  return sameOriginPath(v, [origin]) ?? '/dashboard'
}
