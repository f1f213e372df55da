// app.js: the helpers every page script uses. Untrusted values reach the DOM only as text nodes
// (textContent), never as HTML, so a pool or user name cannot inject markup.
import type { ApiResult, Attrs, Child, Svc } from './types'

export function commonClient(): void {
  const lang = document.documentElement.lang.toLowerCase().startsWith('de') ? 'de' : 'en'
  const strings = window.svcStrings ?? {}
  const plurals = new Intl.PluralRules(lang)
  function t(key: string, vars: Record<string, string | number> = {}): string {
    const m = strings[key]
    let text: string
    if (m === undefined) {
      console.warn('missing string', key)
      text = key
    } else if (typeof m === 'string') text = m
    else text = m[plurals.select(Number(vars.n ?? 0))] ?? m.other
    return text.replace(/\{(\w+)\}/g, (all, name: string) => {
      const v = vars[name]
      return v === undefined ? all : typeof v === 'number' ? v.toLocaleString(lang) : v
    })
  }

  const csrf = (): string => {
    const m = /(?:^|;\s*)svc_csrf=([^;]*)/.exec(document.cookie)
    return m ? decodeURIComponent(m[1] ?? '') : ''
  }

  async function api<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResult<T>> {
    const h: Record<string, string> = { accept: 'application/json', ...headers }
    // Double-submit CSRF: the cookie's value goes back in the header on every state change.
    if (method !== 'GET' && method !== 'HEAD') h['x-csrf-token'] = csrf()
    if (body !== undefined) h['content-type'] = 'application/json'
    let res: Response
    try {
      res = await fetch(path, { method, headers: h, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) })
    } catch {
      return { ok: false, status: 0, data: null as T, error: t('common.unreachable') }
    }
    let data: any = null
    if ((res.headers.get('content-type') ?? '').includes('json')) {
      try {
        data = await res.json()
      } catch {
        data = null
      }
    }
    const detail = data && typeof data.detail === 'string' ? data.detail : null
    return { ok: res.ok, status: res.status, data, error: res.ok ? null : (detail ?? t('common.httpFailed', { status: String(res.status) })) }
  }

  function el(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue
      if (typeof v === 'function') e.addEventListener(k.replace(/^on/, ''), v)
      else if (k === 'text') e.textContent = String(v)
      else e.setAttribute(k, v === true ? '' : String(v))
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue
      e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c)
    }
    return e
  }

  function say(target: string | Element | null, text: string, kind: 'ok' | 'error' | '' = ''): void {
    const node = typeof target === 'string' ? document.getElementById(target) : target
    if (!node) return
    node.textContent = text
    node.className = 'notice' + (kind && text ? ' ' + kind : '')
    // Errors interrupt (alert); confirmations wait their turn (status).
    node.setAttribute('role', kind === 'error' ? 'alert' : 'status')
  }

  /** A form field's own message (the element `<id>-error`) and aria-invalid; true when the text is empty (the field is fine). */
  /**
   * An error under a form is taken down once the form is changed: the browser's own checks may
   * block the next submit, and the old message stayed as if it were about the new input.
   */
  function clearOnInput(form: string, msg: string): void {
    document.getElementById(form)?.addEventListener('input', () => {
      const node = document.getElementById(msg)
      if (node?.classList.contains('error')) say(node, '')
    })
  }

  function fieldError(id: string, text: string): boolean {
    const input = document.getElementById(id)
    const msg = document.getElementById(id + '-error')
    if (msg) msg.textContent = text
    if (input) {
      if (text) input.setAttribute('aria-invalid', 'true')
      else input.removeAttribute('aria-invalid')
    }
    return text === ''
  }

  // One load at a time. A refresh asked for while one runs (after a write, say) runs again as soon
  // as it ends: the running one may have been answered before the write and would leave the list
  // stale until the next interval.
  function poll(fn: () => Promise<void>, ms: number) {
    let timer: ReturnType<typeof setTimeout> | undefined
    let running = false
    let again = false
    const tick = async () => {
      if (timer !== undefined) clearTimeout(timer)
      if (running) {
        again = true
        return
      }
      running = true
      try {
        if (!document.hidden) await fn()
      } catch (e) {
        console.error(e)
      } finally {
        running = false
        if (again) {
          again = false
          void tick()
        } else timer = setTimeout(tick, ms)
      }
    }
    void tick()
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) void tick()
    })
    return { now: () => void tick() }
  }

  const rendered = new WeakMap<Element, string>()
  function render(container: Element | null, key: unknown, build: () => Child[]): void {
    if (!container) return
    const k = JSON.stringify(key)
    if (rendered.get(container) === k) return
    rendered.set(container, k)
    container.replaceChildren(...build().filter((c): c is Node | string => c !== null && c !== undefined && c !== false).map((c) => (typeof c === 'number' ? String(c) : c)))
    if (container.tagName === 'TBODY') labelCells(container)
  }

  /** Each cell names its column (data-label), which the narrow layout shows when rows stack. */
  function labelCells(body: Element): void {
    const heads = Array.from(body.closest('table')?.querySelectorAll('thead th') ?? []).map((th) => th.textContent?.trim() ?? '')
    for (const row of Array.from(body.querySelectorAll('tr'))) {
      Array.from(row.children).forEach((cell, i) => {
        if (cell.getAttribute('colspan') === null && heads[i]) cell.setAttribute('data-label', heads[i]!)
      })
    }
  }

  function formJson(form: HTMLFormElement): Record<string, string | boolean> {
    const out: Record<string, string | boolean> = {}
    for (const field of Array.from(form.elements)) {
      const f = field as HTMLInputElement
      if (!f.name || f.disabled) continue
      if (f.type === 'checkbox') out[f.name] = f.checked
      else out[f.name] = f.value.trim()
    }
    return out
  }

  const pad = (n: number) => String(n).padStart(2, '0')
  const fmtTime = (iso: string | null | undefined): string => {
    if (!iso) return '—'
    const d = new Date(iso)
    if (isNaN(d.getTime())) return '—'
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`
  }
  const relative = new Intl.RelativeTimeFormat(lang, { numeric: 'auto' })
  const fmtAgo = (iso: string | null | undefined): string => {
    if (!iso) return '—'
    const ms = new Date(iso).getTime()
    if (isNaN(ms)) return '—'
    const s = Math.round((ms - Date.now()) / 1000)
    const a = Math.abs(s)
    if (a < 5) return t('common.justNow')
    if (a < 60) return relative.format(s, 'second')
    if (a < 3600) return relative.format(Math.round(s / 60), 'minute')
    if (a < 86400) return relative.format(Math.round(s / 3600), 'hour')
    return relative.format(Math.round(s / 86400), 'day')
  }
  const ago = (iso: string | null | undefined): HTMLElement =>
    iso ? el('time', { datetime: iso, title: fmtTime(iso), text: fmtAgo(iso) }) : el('span', { text: '—' })
  const fmtNum = (n: number | null | undefined, digits = 0): string =>
    typeof n === 'number' && isFinite(n) ? n.toLocaleString(lang, { maximumFractionDigits: digits }) : '—'

  /** A size for people: 13 B, 2.9 MiB, 4.1 GiB (binary units, as the CLI prints them). */
  const fmtBytes = (n: number | null | undefined): string => {
    if (typeof n !== 'number' || !isFinite(n)) return '—'
    if (n < 1024) return `${fmtNum(n)} B`
    const units = ['KiB', 'MiB', 'GiB', 'TiB']
    let v = n / 1024
    let i = 0
    while (v >= 1024 && i < units.length - 1) (v /= 1024), i++
    return `${fmtNum(v, v < 10 ? 1 : 0)} ${units[i]}`
  }

  async function copy(text: string, status: string | Element | null): Promise<void> {
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      // Plain-HTTP deployments have no async clipboard: fall back to a selected textarea.
      const ta = el('textarea', { 'aria-hidden': 'true', class: 'sr-only' }) as HTMLTextAreaElement
      ta.value = text
      document.body.append(ta)
      ta.select()
      const ok = document.execCommand('copy')
      ta.remove()
      if (!ok) return say(status, t('common.copyFailed'), 'error')
    }
    say(status, t('common.copied'), 'ok')
  }

  /** An artifact's download link: its name, saved (never opened) from the content route. */
  const artifactLink = (x: { id: string; name: string }) => el('a', { href: '/api/v1/artifacts/' + encodeURIComponent(x.id) + '/content', text: x.name, download: '' })

  const badge = (state: string) => {
    const key = 'state.' + state
    return el('span', { class: 'state state-' + state.replace(/[^a-z_]/g, ''), 'data-state-name': state, text: key in strings ? t(key) : state.replace(/_/g, ' ') })
  }
  const data = (name: string) => document.body.getAttribute('data-' + name) ?? ''

  const svc: Svc = { api, el, say, fieldError, clearOnInput, poll, render, formJson, fmtTime, fmtAgo, ago, fmtNum, fmtBytes, artifactLink, csrf, copy, badge, data, t, lang }
  window.svc = svc

  // Times the server wrote (UTC) are shown like every other time on the page.
  for (const node of Array.from(document.querySelectorAll('time[datetime][data-local]'))) node.textContent = fmtTime(node.getAttribute('datetime'))
  for (const body of Array.from(document.querySelectorAll('tbody'))) labelCells(body)

  // The narrow layout folds the main navigation behind a menu button.
  const menu = document.getElementById('menu-button')
  menu?.addEventListener('click', () => {
    const open = menu.getAttribute('aria-expanded') !== 'true'
    menu.setAttribute('aria-expanded', String(open))
    document.querySelector('header.top')?.classList.toggle('open', open)
  })

  document.addEventListener('click', (e) => {
    const t = e.target instanceof Element ? e.target.closest('[data-logout],[data-copy]') : null
    if (!t) return
    if (t.hasAttribute('data-logout')) {
      // To the landing page of the language in use: '/' is the English one, and visiting it
      // stores English (a German user was switched to English by logging out).
      void api('POST', '/api/v1/auth/logout').then(() => {
        location.href = document.documentElement.lang === 'de' ? '/de' : '/'
      })
    } else {
      const src = document.getElementById(t.getAttribute('data-copy') ?? '')
      const text = src ? ((src as HTMLInputElement).value ?? src.textContent ?? '') : ''
      if (text.trim() === '') return say(t.getAttribute('data-copy-status'), svc.t('common.nothingToCopy'), 'error')
      void copy(text.trim(), t.getAttribute('data-copy-status'))
    }
  })
}
