// What the page routes answer (the routes, with their policies, are in ./routes.ts). Loaded with
// the first page a browser asks for, so the pages, their texts and their scripts stay out of a
// leader that only serves fellows and the API (docs/benchmarks.md, idle RSS).
import { readFileSync } from 'node:fs'
import { AppError } from '../errors'
import { toMe } from '../accounts/service'
import { getVisiblePool, memberRole, planFor } from '../pools/service'
import { jobPoolOf } from '../jobs/service'
import { fellowPoolOf } from '../fellows/service'
import { view, securityHeaders, securityHeadersOf, pageContext, sameOriginPath, originsOf, takeNext, NEXT_COOKIE, type PageRequest } from './view'
import { isLang, LANG_COOKIE, type Lang } from '../../pages/i18n'
import { ASSETS, ASSET_VERSION } from '../../pages/assets'
import { LandingPage, NotFoundPage, type NotFoundWhat } from '../../pages/landing'
import { JobPage } from '../../pages/job'
import { FellowPage } from '../../pages/fellow'
import { hasPendingJoinRequest } from '../pools/membership'
import { LoginPage, RegisterPage, VerifyEmailPage, ResetPasswordPage, ForgotPasswordPage } from '../../pages/auth'
import { DashboardPage } from '../../pages/dashboard'
import { PoolPage } from '../../pages/pool'
import { ProfilePage } from '../../pages/profile'
import { AdminUsersPage, AdminPoolsPage, AdminAuditPage } from '../../pages/admin'
import { JoinPage, InferencePage } from '../../pages/ops'
import { LegalDocPage, AccessibilityPage, PlainLanguagePage } from '../../pages/legal'
import { robotsTxt, sitemapXml, llmsTxt } from '../../pages/crawler'
import type { Caller } from '../caller'
import { cookieFrom } from '../http/cookies'
import type { PagePath } from './paths'
import type { Ctx } from '../context'
import { requestUrl } from '../http/host'

const FAVICON_MAX_AGE_S = 7 * 24 * 3600

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Read on every request, so an operator's edit shows without a restart; a vanished file is "not configured". */
function fragment(file: string | null): string | null {
  if (file === null) return null
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return null
  }
}

const etags = new Map<string, string>()
const assetEtag = (name: string, body: string) => {
  let e = etags.get(name)
  if (e === undefined) etags.set(name, (e = `W/"${Bun.hash(body).toString(36)}"`))
  return e
}
/** Assets are built into the binary: they last changed when this process started serving them. */
const STARTED_AT = new Date().toUTCString()

function etagMatches(header: string | null, etag: string): boolean {
  if (header === null) return false
  const opaque = etag.slice(2)
  return header.split(',').some((t) => {
    const v = t.trim()
    return v === '*' || v === etag || v === opaque
  })
}

/** The `:name` segments of a route path. */
type ParamNames<P extends string> = P extends `${string}:${infer N}/${infer Rest}` ? N | ParamNames<`/${Rest}`> : P extends `${string}:${infer N}` ? N : never

/** What a page handler gets: the page request plus its route's path parameters and the query. */
export type PageRequestOf<P extends string = string> = PageRequest & { params: Record<ParamNames<P>, string>; query: Record<string, string | undefined> }

export function pageHandlers(ctx: Ctx) {
  const text = (r: PageRequest, body: string, type: string) => {
    securityHeaders(ctx, r.set)
    r.set.headers['content-type'] = type
    r.set.headers['cache-control'] = 'public, max-age=3600'
    return body
  }
  const notFound = (r: PageRequest, what?: NotFoundWhat) => {
    const v = view(ctx, r)
    return v.html(<NotFoundPage ctx={v.page} what={what} />, 404)
  }
  /** Session pages: no (active) session means a 303 to /login. */
  const session = (r: PageRequest, render: (v: ReturnType<typeof view>) => string | Promise<string>) => {
    const v = view(ctx, r)
    return v.user ? render(v) : v.toLogin()
  }
  const landing = (r: PageRequest, lang: Lang) => {
    const v = view(ctx, r)
    v.setLang(lang)
    if (v.user) return v.redirect('/dashboard')
    return v.html(<LandingPage ctx={{ ...v.page, lang }} bodyLang={lang} />)
  }
  const admin = (r: PageRequest, render: (v: ReturnType<typeof view>) => string | Promise<string>) =>
    session(r, (v) => (v.user!.role === 'admin' ? render(v) : v.redirect('/dashboard')))
  /** What lives in a pool is shown to the pool's members, and to admins (also when it has no pool). */
  const visibleHere = (u: { id: string; role: string }, poolId: string | null | undefined) =>
    poolId !== undefined && (u.role === 'admin' || (poolId !== null && memberRole(ctx.db, poolId, u.id) !== null))

  return {
    // Landing and language.
    // Visiting a landing page stores its language (SPEC), also on the way to the dashboard.
    '/': (r) => landing(r, 'en'),
    '/de': (r) => landing(r, 'de'),
    '/en': (r) => view(ctx, r).redirect('/', 301),
    '/lang/:code': (r) => {
      const code = r.params.code
      if (!isLang(code)) return notFound(r, 'language')
      const v = view(ctx, r)
      v.setLang(code)
      let back = sameOriginPath(r.request.headers.get('referer'), originsOf(ctx, r.request))
      // The landing pages fix their own language: going "back" to one would undo the switch.
      if (back !== null && /^\/(de|en)?(\?|$)/.test(back)) back = code === 'de' ? '/de' : '/'
      if (back === null || back.startsWith('/lang/')) back = '/'
      return v.redirect(back, 303)
    },
    // Crawler files and assets.
    '/robots.txt': (r) => text(r, robotsTxt(ctx.cfg.baseUrl), 'text/plain; charset=utf-8'),
    '/sitemap.xml': (r) => text(r, sitemapXml(ctx.cfg.baseUrl), 'application/xml; charset=utf-8'),
    '/llms.txt': (r) => text(r, llmsTxt(ctx.cfg.baseUrl), 'text/plain; charset=utf-8'),
    '/assets/:name': (r) => {
      const asset = Object.hasOwn(ASSETS, r.params.name) ? ASSETS[r.params.name] : undefined
      if (!asset) return notFound(r)
      const body = text(r, asset.body, asset.type)
      // Versioned URLs never change content; unversioned ones must be revalidated, which the
      // ETag makes a 304 instead of the whole file. Weak: the bytes differ per Content-Encoding.
      r.set.headers['cache-control'] = r.query.v === ASSET_VERSION ? 'public, max-age=31536000, immutable' : 'no-cache'
      const etag = assetEtag(r.params.name, asset.body)
      r.set.headers['etag'] = etag
      r.set.headers['last-modified'] = STARTED_AT
      if (etagMatches(r.request.headers.get('if-none-match'), etag)) {
        r.set.status = 304
        return ''
      }
      return body
    },
    // The tab icon, public (a logged-out browser asks for /favicon.ico on its own). Its URL is
    // not versioned, so it is cached for a week rather than forever.
    '/favicon.svg': (r) => {
      const body = text(r, ASSETS['icon.svg']!.body, 'image/svg+xml')
      r.set.headers['cache-control'] = `public, max-age=${FAVICON_MAX_AGE_S}`
      return body
    },
    '/favicon.ico': (r) => {
      securityHeaders(ctx, r.set)
      r.set.headers['cache-control'] = `public, max-age=${FAVICON_MAX_AGE_S}`
      r.set.status = 301
      r.set.headers['location'] = '/favicon.svg'
      return ''
    },
    '/forgot-password': (r) => {
      const v = view(ctx, r)
      return v.html(<ForgotPasswordPage ctx={v.page} mail={ctx.cfg.smtp !== null} />)
    },
    // Accounts.
    // Where the login is to go comes in a cookie (the page that sent the visitor here) and moves
    // into the address, where a reload, or coming back to the tab later, still finds it (the
    // cookie was gone after the first view, and the invitation with it).
    '/login': (r) => {
      const v = view(ctx, r)
      if (v.user) return v.redirect('/dashboard')
      const url = requestUrl(r.request)
      if (r.cookie[NEXT_COOKIE]?.value) {
        const next = takeNext(r)
        if (next !== '/dashboard') return v.redirect(`/login?next=${encodeURIComponent(next)}`)
      }
      const next = sameOriginPath(url.searchParams.get('next'), [url.origin]) ?? '/dashboard'
      return v.html(<LoginPage ctx={v.page} next={next} />)
    },
    // From the login page, `?next=` carries where the login was to go (an invite link): a new
    // account registered and logged in goes there, as a login would.
    '/register': (r) => {
      const v = view(ctx, r)
      const next = sameOriginPath(requestUrl(r.request).searchParams.get('next'), [requestUrl(r.request).origin]) ?? '/dashboard'
      return v.user ? v.redirect('/dashboard') : v.html(<RegisterPage ctx={v.page} next={next} />)
    },
    '/verify-email': (r) => {
      const v = view(ctx, r)
      return v.html(<VerifyEmailPage ctx={v.page} />)
    },
    '/reset-password': (r) => {
      const v = view(ctx, r)
      return v.html(<ResetPasswordPage ctx={v.page} />)
    },
    // Session pages.
    '/dashboard': (r) => session(r, (v) => v.html(<DashboardPage ctx={v.page} />)),
    '/profile': (r) => session(r, (v) => v.html(<ProfilePage ctx={v.page} me={profileOf(v.user!)} />)),
    '/pools/:id': (r) =>
      session(r, (v) => {
        const u = v.user!
        const actor = { userId: u.id, role: u.role }
        let pool
        try {
          if (!UUID.test(r.params.id)) throw new AppError('not_found', 'Pool not found')
          pool = getVisiblePool(ctx.db, actor, r.params.id)
        } catch (e) {
          // Missing and invisible pools look the same: a private pool's existence is not disclosed.
          if (e instanceof AppError && e.code === 'not_found') return notFound(r, 'pool')
          throw e
        }
        const allowed = new Set<string>(planFor(ctx.db, u.role).allowedVisibilities)
        allowed.add(pool.visibility)
        return v.html(
          <PoolPage
            ctx={v.page}
            pool={pool}
            canManage={u.role === 'admin' || pool.my_role === 'owner'}
            isMember={pool.my_role !== null}
            requested={pool.my_role === null && hasPendingJoinRequest(ctx.db, pool.id, u.id)}
            allowedVisibilities={[...allowed]}
          />,
        )
      }),
    '/admin/users': (r) => admin(r, (v) => v.html(<AdminUsersPage ctx={v.page} />)),
    '/admin/pools': (r) => admin(r, (v) => v.html(<AdminPoolsPage ctx={v.page} />)),
    '/admin/audit': (r) => admin(r, (v) => v.html(<AdminAuditPage ctx={v.page} />)),
    // The facts come from /api/v1/jobs/{id} and /api/v1/workers/{id} in the page scripts; a job or
    // machine the user may not see is the HTML 404, as a pool is (the page drew its empty panels).
    '/jobs/:id': (r) => session(r, (v) => (UUID.test(r.params.id) && visibleHere(v.user!, jobPoolOf(ctx.db, r.params.id)) ? v.html(<JobPage ctx={v.page} jobId={r.params.id} />) : notFound(r, 'job'))),
    '/fellows/:id': (r) => session(r, (v) => (UUID.test(r.params.id) && visibleHere(v.user!, fellowPoolOf(ctx.db, r.params.id)) ? v.html(<FellowPage ctx={v.page} fellowId={r.params.id} />) : notFound(r, 'fellow'))),
    '/ops/join-v2': (r) => session(r, (v) => v.html(<JoinPage ctx={v.page} />)),
    '/ops/inference': (r) => session(r, (v) => v.html(<InferencePage ctx={v.page} />)),
    // Legal and accessibility.
    '/legal/imprint': (r) => {
      const v = view(ctx, r)
      return v.html(<LegalDocPage ctx={v.page} kind="imprint" legalLang={ctx.cfg.legalLang} fragment={fragment(ctx.cfg.imprintFile)} />)
    },
    '/legal/privacy': (r) => {
      const v = view(ctx, r)
      return v.html(<LegalDocPage ctx={v.page} kind="privacy" legalLang={ctx.cfg.legalLang} fragment={fragment(ctx.cfg.privacyFile)} />)
    },
    '/legal/accessibility': (r) => {
      const v = view(ctx, r)
      const a11y = { contact: ctx.cfg.a11yContact, videoUrl: ctx.cfg.dgsVideoUrl }
      return v.html(<AccessibilityPage ctx={v.page} {...a11y} fragment={fragment(ctx.cfg.accessibilityFile)} />)
    },
    '/legal/leichte-sprache': (r) => {
      const v = view(ctx, r)
      return v.html(<PlainLanguagePage ctx={v.page} contact={ctx.cfg.a11yContact} videoUrl={ctx.cfg.dgsVideoUrl} />)
    },
  } satisfies { [P in PagePath]: (r: PageRequestOf<P>) => unknown }
}

function profileOf(u: Parameters<typeof toMe>[0]) {
  const me = toMe(u)
  return { email: me.email, displayName: me.display_name, role: me.role, status: me.status, createdAt: me.created_at, lastLoginAt: me.last_login_at }
}

/** The 404 page, in the visitor's interface language, with the page security headers. */
export function notFoundResponse(ctx: Ctx, request: Request, caller: Caller): Response {
  const { page } = pageContext(ctx, request, caller, cookieFrom(request.headers.get('cookie'), LANG_COOKIE))
  // The page has no async component, so this is a string.
  const markup = <NotFoundPage ctx={page} />
  if (typeof markup !== 'string') throw new Error('NotFoundPage must render synchronously')
  const body = '<!doctype html>' + markup
  const headers = new Headers({ ...securityHeadersOf(ctx), 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
  return new Response(request.method === 'HEAD' ? null : body, { status: 404, headers })
}
