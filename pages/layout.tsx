// The frame of every page: landmarks, skip link, chrome in the interface language, footer with the
// legal links and the language switch. No inline script or style anywhere: the CSP is 'self' only.
import { escapeHtml, type Children } from '@kitajs/html'
import { STRINGS, LANGS, type Lang } from './i18n'

export interface PageUser {
  id: string
  name: string
  email: string
  role: 'user' | 'admin'
}

export interface PageCtx {
  /** The interface (chrome) language. */
  lang: Lang
  user: PageUser | null
  path: string
  /** Cache-busting suffix for /assets/* (a hash of the asset bodies). */
  assetVersion: string
  /** Users waiting for approval; shown to admins as a badge. */
  pendingCount: number
  baseUrl: string
}

export interface LayoutProps {
  ctx: PageCtx
  title: string
  /** Language of the page body; the chrome carries its own lang when it differs. Default: the interface language. */
  bodyLang?: string
  /** Page scripts under /assets/, loaded in order after the shared app.js. */
  script?: string | string[]
  /** data-* attributes on <body>: how a page script learns ids without inline script. */
  data?: Record<string, string>
  /** Extra <head> elements (hreflang alternates). */
  head?: Children
  children?: Children
}

const asset = (ctx: PageCtx, name: string) => `/assets/${name}?v=${ctx.assetVersion}`

function NavLink(props: { ctx: PageCtx; href: string; label: string; badge?: number; badgeLabel?: string }) {
  const current = props.ctx.path === props.href || props.ctx.path.startsWith(props.href + '/')
  return (
    <li>
      <a href={props.href} aria-current={current ? 'page' : undefined}>
        <span safe>{props.label}</span>
        {props.badge !== undefined && props.badge > 0 ? (
          <span class="badge" data-pending-badge="">
            {props.badge}
            <span class="sr-only" safe>{' ' + (props.badgeLabel ?? '')}</span>
          </span>
        ) : (
          ''
        )}
      </a>
    </li>
  )
}

function Header(props: { ctx: PageCtx; chromeLang: string | undefined }) {
  const { ctx } = props
  const s = STRINGS[ctx.lang]
  const u = ctx.user
  return (
    <header class={u ? 'top' : 'top signed-out'} lang={props.chromeLang}>
      <a class="skip" href="#main" safe>{s.skip}</a>
      <div class="top-inner">
        <a class="brand" href={u ? '/dashboard' : '/'}>
          <img src="/assets/icon.svg" alt="" width="28" height="28" />
          <span safe>{s.brand}</span>
        </a>
        {u ? (
          <button type="button" id="menu-button" class="menu-button secondary small" aria-expanded="false" aria-controls="main-nav" safe>
            {s.menu}
          </button>
        ) : (
          ''
        )}
        <nav aria-label={s.mainNav} id="main-nav">
          <ul class="nav">
            {u ? (
              <>
                <NavLink ctx={ctx} href="/ops/join-v2" label={s.join} />
                <NavLink ctx={ctx} href="/ops/inference" label={s.inference} />
                <NavLink ctx={ctx} href="/profile" label={s.profile} />
                {u.role === 'admin' ? (
                  <>
                    <NavLink ctx={ctx} href="/admin/users" label={s.adminUsers} badge={ctx.pendingCount} badgeLabel={s.pending} />
                    <NavLink ctx={ctx} href="/admin/pools" label={s.adminPools} />
                    <NavLink ctx={ctx} href="/admin/audit" label={s.adminAudit} />
                  </>
                ) : (
                  ''
                )}
              </>
            ) : (
              <>
                <NavLink ctx={ctx} href="/login" label={s.login} />
                <NavLink ctx={ctx} href="/register" label={s.register} />
              </>
            )}
          </ul>
        </nav>
        {u ? (
          <div class="chip" data-testid="user-chip">
            <span class="avatar" aria-hidden="true" safe>{u.name.slice(0, 1).toUpperCase()}</span>
            <span class="chip-name">
              <span class="sr-only" safe>{s.signedInAs + ' '}</span>
              <span safe>{u.name}</span>
            </span>
            <a href="/dashboard" aria-current={ctx.path === '/dashboard' ? 'page' : undefined} safe>{s.dashboard}</a>
            <button type="button" class="btn-link" data-logout="" safe>{s.logout}</button>
          </div>
        ) : (
          ''
        )}
      </div>
    </header>
  )
}

function Footer(props: { ctx: PageCtx; chromeLang: string | undefined }) {
  const s = STRINGS[props.ctx.lang]
  // On a landing page the switch goes to the other landing page, which stores the language itself.
  const landing = props.ctx.path === '/' || props.ctx.path === '/de'
  return (
    <footer class="foot" lang={props.chromeLang}>
      <nav aria-label={s.footerNav}>
        <ul class="foot-links">
          <li><a href="/legal/imprint" safe>{s.imprint}</a></li>
          <li><a href="/legal/privacy" safe>{s.privacy}</a></li>
          <li><a href="/legal/accessibility" safe>{s.accessibility}</a></li>
          <li><a href="/legal/leichte-sprache" lang="de" safe>{s.plainLanguage}</a></li>
        </ul>
        <ul class="foot-links lang-switch" aria-label={s.language}>
          {LANGS.map((l) => (
            <li>
              <a href={landing ? (l === 'de' ? '/de' : '/') : `/lang/${l}`} lang={l} hreflang={l} aria-current={l === props.ctx.lang ? 'true' : undefined} data-lang={l} safe>
                {s.langName[l]}
              </a>
            </li>
          ))}
        </ul>
      </nav>
    </footer>
  )
}

export function Layout(props: LayoutProps) {
  const { ctx } = props
  const bodyLang = props.bodyLang ?? ctx.lang
  // Chrome roots declare their own language only when it differs from the body's (SPEC.md, Pages).
  const primary = bodyLang.toLowerCase().split('-')[0]
  const chromeLang = primary === ctx.lang ? undefined : ctx.lang
  const scripts = [props.script ?? []].flat()
  const data: Record<string, string> = {}
  for (const [k, v] of Object.entries(props.data ?? {})) data[`data-${k}`] = escapeHtml(v)
  return (
    <html lang={bodyLang}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title safe>{props.title + ' · svc leader'}</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href={asset(ctx, 'app.css')} />
        {props.head ?? ''}
        <script src={asset(ctx, `strings-${ctx.lang}.js`)} defer></script>
        <script src={asset(ctx, 'app.js')} defer></script>
        {scripts.map((name) => (
          <script src={asset(ctx, name)} defer></script>
        ))}
      </head>
      <body {...data}>
        <Header ctx={ctx} chromeLang={chromeLang} />
        <main id="main" tabindex="-1">
          {scripts.length ? (
            // The page's panels, forms and buttons are its scripts': without them it said
            // "Loading…" for ever and its forms posted to the page URL (answered with raw JSON).
            <noscript>
              <p class="notice error" data-noscript="" lang={chromeLang} safe>{STRINGS[ctx.lang].noScript}</p>
            </noscript>
          ) : (
            ''
          )}
          {props.children ?? ''}
        </main>
        <Footer ctx={ctx} chromeLang={chromeLang} />
      </body>
    </html>
  )
}

/** A time the server knows, shown by app.js in the one date format of the pages (local time). */
export function Time(props: { iso: string | null }) {
  if (props.iso === null) return <span>—</span>
  return <time datetime={props.iso} data-local="" safe>{props.iso.replace('T', ' ').slice(0, 16) + ' UTC'}</time>
}

/** A status line scripts write into: role=status is announced politely, errors get role=alert. */
export function Notice(props: { id: string }) {
  return <p id={props.id} class="notice" role="status" aria-live="polite"></p>
}

/** A table whose rows the page's script fills (tbody `id`), "Loading…" until then. */
export function Table(props: { id: string; caption: string; cols: string[]; lang: Lang }) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr-only" safe>{props.caption}</caption>
        <thead>
          <tr>
            {props.cols.map((c) => (
              <th scope="col" safe>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody id={props.id}>
          <tr>
            <td colspan={String(props.cols.length)} class="empty" safe>{STRINGS[props.lang].loading}</td>
          </tr>
        </tbody>
      </table>
    </div>
  )
}
