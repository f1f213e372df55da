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

  // The session ended while the page was open (logged out in another tab, revoked, expired): the
  // API answers 401 to every poll, which the panels showed as "No data yet." for ever. The first
  // such answer goes to the login page, which comes back here. Only on a page drawn for a signed-in
  // person (a wrong password on the login form is a 401 too), and once: a login page that sends
  // the browser straight back (the page thinks the session lives, the API not) would loop, so a
  // second 401 within a minute of the last such trip stays on the page.
  let leaving = false
  function sessionEnded(): void {
    if (leaving || !document.querySelector('[data-logout]')) return
    const KEY = 'svc_session_ended_at'
    let last = 0
    try {
      last = Number(sessionStorage.getItem(KEY)) || 0
    } catch {
      // no storage: the page-level flag alone
    }
    if (Date.now() - last < 60_000) return
    // Stamped only when leaving: stamped at every 401, a polling tab kept the stamp fresh and
    // never went to the login page after a second session end within the minute.
    try {
      sessionStorage.setItem(KEY, String(Date.now()))
    } catch {
      // as above
    }
    leaving = true
    location.href = '/login?next=' + encodeURIComponent(location.pathname + location.search)
  }

  // The leader's messages are English whatever the page's language (the API speaks English): a
  // German page marks them lang="en", so a screen reader says them in English, not in German sounds.
  const serverTexts: string[] = []
  function fromServer(text: string): string {
    if (lang === 'en' || serverTexts.includes(text)) return text
    serverTexts.push(text)
    if (serverTexts.length > 50) serverTexts.shift()
    return text
  }
  /** The text as nodes, a server message in it wrapped in <span lang="en">; null when it holds none. */
  function marked(text: string): Node[] | null {
    const found = serverTexts.filter((d) => text.includes(d)).sort((a, b) => b.length - a.length)[0]
    if (found === undefined) return null
    const at = text.indexOf(found)
    const span = document.createElement('span')
    span.lang = 'en'
    span.textContent = found
    return [document.createTextNode(text.slice(0, at)), span, document.createTextNode(text.slice(at + found.length))].filter((n) => n.textContent !== '')
  }
  /** Sets an element's text; in a page that is not English, a server message in it carries lang="en". */
  function setText(node: Element, text: string): void {
    node.removeAttribute('lang')
    const parts = lang === 'en' ? null : marked(text)
    if (parts === null) node.textContent = text
    else if (parts.length === 1) {
      node.textContent = text
      node.setAttribute('lang', 'en')
    } else node.replaceChildren(...parts)
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
    if (detail) fromServer(detail)
    if (Array.isArray(data?.errors)) for (const e of data.errors) if (typeof e?.message === 'string') fromServer(e.message)
    if (res.status === 401 && data?.code !== 'invalid_credentials' && path !== '/api/v1/auth/logout') sessionEnded()
    return { ok: res.ok, status: res.status, data, error: res.ok ? null : (detail ?? t('common.httpFailed', { status: String(res.status) })) }
  }

  // The listeners el() attached, so that update() can move a new element's onto the old one it keeps.
  const handlers = new WeakMap<Element, [string, (e: Event) => void][]>()
  function el(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue
      if (typeof v === 'function') {
        const type = k.replace(/^on/, '')
        e.addEventListener(type, v)
        handlers.set(e, [...(handlers.get(e) ?? []), [type, v]])
      } else if (k === 'text') e.textContent = String(v)
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
    setText(node, text)
    node.className = 'notice' + (kind && text ? ' ' + kind : '')
    // Errors interrupt (alert); confirmations wait their turn (status). aria-live says the same: a
    // polite one left on an alert (the Notice is served with it) contradicted the role.
    node.setAttribute('role', kind === 'error' ? 'alert' : 'status')
    node.setAttribute('aria-live', kind === 'error' ? 'assertive' : 'polite')
    // Something else said here: the fields an earlier error was about are no longer invalid.
    if (kind !== 'error' && node.id) for (const f of Array.from(document.querySelectorAll(`[data-error-of="${CSS.escape(node.id)}"]`))) unmarkField(f)
  }

  function unmarkField(field: Element): void {
    const msg = field.getAttribute('data-error-of')
    field.removeAttribute('data-error-of')
    field.removeAttribute('aria-invalid')
    const ids = (field.getAttribute('aria-describedby') ?? '').split(/\s+/).filter((id) => id !== '' && id !== msg)
    if (ids.length) field.setAttribute('aria-describedby', ids.join(' '))
    else field.removeAttribute('aria-describedby')
  }

  /**
   * An error under a form (the element `msg`) tied to the fields it is about: each is marked
   * aria-invalid with the message in its aria-describedby, and the first gets the focus. Undone for
   * a field once it is changed, for all once `msg` says something else.
   */
  function formError(msg: string, fields: string[], text: string): void {
    say(msg, text, 'error')
    let first: HTMLElement | null = null
    for (const id of fields) {
      const f = document.getElementById(id)
      if (!f) continue
      first ??= f
      if (f.getAttribute('data-error-of') !== msg) {
        const ids = (f.getAttribute('aria-describedby') ?? '').split(/\s+/).filter(Boolean)
        f.setAttribute('aria-describedby', [...ids, msg].join(' '))
        f.setAttribute('data-error-of', msg)
        f.addEventListener('input', () => unmarkField(f), { once: true })
      }
      f.setAttribute('aria-invalid', 'true')
    }
    first?.focus()
  }

  /** The fields a refusal is about: by its errors' paths ('/password') or its code ('email_taken'), as `map` names them. */
  function refusedFields(r: ApiResult<any>, map: Record<string, string[]>): string[] {
    const keys = [...(Array.isArray(r.data?.errors) ? r.data.errors.map((e: any) => String(e?.path ?? '')) : []), String(r.data?.code ?? '')]
    return Array.from(new Set(keys.flatMap((k) => map[k] ?? [])))
  }

  /**
   * Turns a list's Previous and Next buttons (#page-prev, #page-next) off or on. One that had the
   * focus and goes off (the last page reached) hands it to the other (it fell to the page).
   */
  function pager(prevOff: boolean, nextOff: boolean): void {
    const prev = document.getElementById('page-prev') as HTMLButtonElement | null
    const next = document.getElementById('page-next') as HTMLButtonElement | null
    if (!prev || !next) return
    const had = document.activeElement
    prev.disabled = prevOff
    next.disabled = nextOff
    if (had === next && nextOff) focus(prevOff ? 'page-info' : prev)
    else if (had === prev && prevOff) focus(nextOff ? 'page-info' : next)
  }

  /**
   * Keyboard focus to an element (a message gets tabindex=-1 first): where it goes when an action
   * removed, hid or disabled the control that had it, which left it on the page's body.
   */
  function focus(target: string | Element | null): void {
    const node = typeof target === 'string' ? document.getElementById(target) : target
    if (!(node instanceof HTMLElement)) return
    if (node.tabIndex < 0 && !node.hasAttribute('tabindex')) node.tabIndex = -1
    node.focus()
  }

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
    if (msg) setText(msg, text)
    if (input) {
      if (text) input.setAttribute('aria-invalid', 'true')
      else input.removeAttribute('aria-invalid')
    }
    return text === ''
  }

  // One load at a time. A refresh asked for while one runs (after a write, say) runs again as soon
  // as it ends: the running one may have been answered before the write and would leave the list
  // stale until the next interval. `ms` may be a function, asked after each load: a list polls
  // slower while nothing in it moves.
  function poll(fn: () => Promise<void>, ms: number | (() => number)) {
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
        } else timer = setTimeout(tick, typeof ms === 'number' ? ms : ms())
      }
    }
    void tick()
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) void tick()
    })
    return { now: () => void tick() }
  }

  // A long list is drawn SHOWN_STEP rows at a time: 1,001 API tokens with a button each, or a pool's
  // 1,000 members, made a page that took seconds to draw and was no use to scroll. A line under the
  // table says how many of how many are on show (role=status: a click is answered), with a button
  // for more; the focus stays on it, or goes to the line when the last rows took it away.
  const SHOWN_STEP = 50
  function showMore(body: Element | null, redraw: () => void): { limit(): number; shown(n: number, total: number | null, more?: boolean): void } {
    let limit = SHOWN_STEP
    const count = el('span', { class: 'muted', role: 'status' })
    const button = el('button', { type: 'button', class: 'secondary small', text: t('list.more', { n: SHOWN_STEP }) }) as HTMLButtonElement
    const caption = body?.closest('table')?.querySelector('caption')?.textContent?.trim()
    if (caption) button.setAttribute('aria-label', `${button.textContent} (${caption})`)
    button.addEventListener('click', () => {
      limit += SHOWN_STEP
      redraw()
    })
    const bar = el('div', { class: 'actions list-more', hidden: true }, count, button)
    ;(body?.closest('.table-wrap') ?? body?.closest('table'))?.after(bar)
    return {
      limit: () => limit,
      // `total` null: not known (a list paged by cursor), `more` says whether there are more.
      shown(n, total, more = total !== null && n < total) {
        bar.hidden = !more && n <= SHOWN_STEP
        count.textContent = more ? (total === null ? t('list.newest', { n }) : t('list.shown', { n, total })) : t('list.all', { n })
        const had = document.activeElement === button
        button.hidden = !more
        if (had && !more) focus(count)
      },
    }
  }

  // One request at a time per form or button: a double click (or Enter pressed twice) sent two
  // (two jobs, two pools, two API tokens of which the first was never shown). While one is under
  // way further calls are ignored and the form's submit buttons (or the button) say they are off
  // with aria-disabled: `disabled` would take the keyboard focus off a button that has it.
  const inFlight = new WeakSet<Element>()
  async function exclusive(owner: Element, fn: () => Promise<unknown>): Promise<void> {
    if (inFlight.has(owner)) return
    inFlight.add(owner)
    const buttons = owner instanceof HTMLFormElement ? Array.from(owner.querySelectorAll('button[type=submit], button:not([type])')) : [owner]
    const marked = buttons.filter((b) => !b.hasAttribute('aria-disabled'))
    for (const b of marked) b.setAttribute('aria-disabled', 'true')
    try {
      await fn()
    } catch (e) {
      console.error(e)
    } finally {
      inFlight.delete(owner)
      for (const b of marked) b.removeAttribute('aria-disabled')
    }
  }
  /** A form's submit handler that sends at most one request at a time (see exclusive). */
  function onSubmit(target: string | HTMLFormElement | null, handler: (form: HTMLFormElement) => Promise<unknown>): void {
    const form = typeof target === 'string' ? (document.getElementById(target) as HTMLFormElement | null) : target
    form?.addEventListener('submit', (e) => {
      e.preventDefault()
      void exclusive(form, () => handler(form))
    })
  }

  // Server-sent events over fetch, not EventSource: a browser keeps six connections per host over
  // HTTP/1.1 and every open stream holds one, so a few console tabs left every other tab waiting.
  // A stream closes while its tab is hidden and opens again when it is shown, resuming after the
  // last event it got (Last-Event-ID, which EventSource cannot send on a stream it opens anew). A
  // dropped connection is opened again after a pause; `end` (the job finished) closes it for good.
  function stream(url: string, on: Record<string, (data: string) => void>): { close(): void } {
    let lastId: string | null = null
    let ctl: AbortController | null = null
    let timer: ReturnType<typeof setTimeout> | undefined
    let closed = false
    let failures = 0
    const stop = () => {
      ctl?.abort()
      ctl = null
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
    }
    const retry = () => {
      ctl = null
      if (closed || document.hidden) return
      failures++
      timer = setTimeout(open, Math.min(30_000, 1000 * 2 ** Math.min(failures, 5)))
    }
    async function open() {
      timer = undefined
      if (closed || ctl || document.hidden) return
      const mine = (ctl = new AbortController())
      const headers: Record<string, string> = { accept: 'text/event-stream' }
      if (lastId !== null) headers['last-event-id'] = lastId
      try {
        const res = await fetch(url, { headers, credentials: 'same-origin', signal: mine.signal })
        if (res.status === 401) sessionEnded()
        // Gone or not (any longer) for this viewer: nothing to come back for.
        if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) {
          closed = true
          return
        }
        if (!res.ok || !res.body) return retry()
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
        let buf = ''
        let id: string | null = null
        let event = 'message'
        let data: string[] = []
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          failures = 0
          buf += value
          const lines = buf.split(/\r\n|\r|\n/)
          buf = lines.pop() ?? ''
          for (const line of lines) {
            if (line === '') {
              if (id !== null) lastId = id
              if (event === 'end') {
                closed = true
                mine.abort()
                on.end?.('')
                return
              }
              if (data.length) on[event]?.(data.join('\n'))
              id = null
              event = 'message'
              data = []
              continue
            }
            if (line.startsWith(':')) continue
            const colon = line.indexOf(':')
            const field = colon < 0 ? line : line.slice(0, colon)
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
            if (field === 'id') id = value
            else if (field === 'event') event = value
            else if (field === 'data') data.push(value)
          }
        }
      } catch {
        if (mine.signal.aborted) return
      }
      if (ctl === mine) retry()
    }
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) stop()
      else if (!closed) {
        failures = 0
        void open()
      }
    })
    void open()
    return {
      close: () => {
        closed = true
        stop()
      },
    }
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

  // Makes `old` look like `nu` while keeping every node that is the same kind in the same place:
  // text and attributes change in place, so a focused link or button in a row stays the element
  // it was (and keeps focus) while the step and loss beside it move. Children marked data-key
  // (rows) are matched by key. The listeners el() attached move with the content: a kept button
  // answers with the new row's handler (its data), not the one it was first drawn with.
  function morph(old: Node, nu: Node): void {
    if (old.nodeType !== nu.nodeType || old.nodeName !== nu.nodeName) return (old as ChildNode).replaceWith(nu)
    if (old.nodeType !== Node.ELEMENT_NODE) {
      if (old.nodeValue !== nu.nodeValue) old.nodeValue = nu.nodeValue
      return
    }
    const o = old as Element
    const n = nu as Element
    for (const a of Array.from(o.attributes)) if (!n.hasAttribute(a.name)) o.removeAttribute(a.name)
    for (const a of Array.from(n.attributes)) if (o.getAttribute(a.name) !== a.value) o.setAttribute(a.name, a.value)
    const was = handlers.get(o) ?? []
    const now = handlers.get(n) ?? []
    if (was.length || now.length) {
      for (const [type, f] of was) o.removeEventListener(type, f)
      for (const [type, f] of now) o.addEventListener(type, f)
      handlers.set(o, now)
    }
    morphChildren(o, Array.from(n.childNodes))
  }
  function morphChildren(parent: Element, next: Node[]): void {
    const keyOf = (c: Node) => (c instanceof Element ? c.getAttribute('data-key') : null)
    const byKey = new Map<string, Node>()
    for (const c of Array.from(parent.childNodes)) {
      const k = keyOf(c)
      if (k !== null) byKey.set(k, c)
    }
    next.forEach((nu, i) => {
      const k = keyOf(nu)
      const at = parent.childNodes[i] ?? null
      const match = k !== null ? (byKey.get(k) ?? null) : at && keyOf(at) === null ? at : null
      if (match === null) return parent.insertBefore(nu, at)
      if (k !== null) byKey.delete(k)
      if (match !== at) parent.insertBefore(match, at)
      morph(match, nu)
    })
    while (parent.childNodes.length > next.length) parent.lastChild!.remove()
  }
  /** As render, but the container's content is updated in place (morph), so focus stays put. */
  function update(container: Element | null, key: unknown, build: () => Child[]): void {
    if (!container) return
    const k = JSON.stringify(key)
    if (rendered.get(container) === k) return
    rendered.set(container, k)
    const next = build()
      .filter((c): c is Node | string | number => c !== null && c !== undefined && c !== false)
      .map((c) => (typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c))
    if (container.tagName === 'TBODY') {
      // Labelled before the comparison, so the labels are no difference.
      const scratch = document.createElement('tbody')
      scratch.append(...next)
      const table = container.closest('table')
      if (table) {
        const heads = Array.from(table.querySelectorAll('thead th')).map((th) => th.textContent?.trim() ?? '')
        for (const row of Array.from(scratch.querySelectorAll('tr')))
          Array.from(row.children).forEach((cell, i) => {
            if (cell.getAttribute('colspan') === null && heads[i]) cell.setAttribute('data-label', heads[i]!)
          })
      }
      return morphChildren(container, Array.from(scratch.childNodes))
    }
    morphChildren(container, next)
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

  // An edit form sends only what its user changed: two tabs (or two people) editing the same
  // thing undid each other's changes when every field went back as it was loaded. A field's
  // default (the value attribute, defaultChecked, defaultSelected) is what was loaded or last saved.
  type Field = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement
  const fieldsOf = (form: HTMLFormElement) =>
    Array.from(form.elements).filter((f): f is Field => (f instanceof HTMLInputElement || f instanceof HTMLSelectElement || f instanceof HTMLTextAreaElement) && f.name !== '' && !f.disabled)
  function changedFields(form: HTMLFormElement): Record<string, string | boolean> {
    const out: Record<string, string | boolean> = {}
    for (const f of fieldsOf(form)) {
      if (f instanceof HTMLInputElement && f.type === 'checkbox') {
        if (f.checked !== f.defaultChecked) out[f.name] = f.checked
      } else if (f instanceof HTMLSelectElement) {
        const loaded = Array.from(f.options).find((o) => o.defaultSelected)?.value ?? f.options[0]?.value ?? ''
        if (f.value !== loaded) out[f.name] = f.value
      } else if (f.value.trim() !== f.defaultValue.trim()) out[f.name] = f.value.trim()
    }
    return out
  }
  /** What the form shows becomes what it compares with (after loading it, or a save). */
  function settleFields(form: HTMLFormElement): void {
    for (const f of fieldsOf(form)) {
      if (f instanceof HTMLInputElement && f.type === 'checkbox') f.defaultChecked = f.checked
      else if (f instanceof HTMLSelectElement) for (const o of Array.from(f.options)) o.defaultSelected = o.selected
      else f.defaultValue = f.value
    }
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

  // Terminal colour and cursor codes (ESC [ 31 m, ESC ] 8 ; ; url BEL): runners and engines write
  // them for a terminal, and a page showed them raw ([31mRED[0m).
  const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g
  const withoutAnsi = (text: string): string => (text.includes('\x1b') ? text.replace(ANSI, '') : text)

  const badge = (state: string) => {
    const key = 'state.' + state
    return el('span', { class: 'state state-' + state.replace(/[^a-z_]/g, ''), 'data-state-name': state, text: key in strings ? t(key) : state.replace(/_/g, ' ') })
  }
  const data = (name: string) => document.body.getAttribute('data-' + name) ?? ''

  const svc: Svc = { api, fromServer, showMore, exclusive, onSubmit, stream, el, say, formError, refusedFields, focus, pager, fieldError, clearOnInput, poll, render, update, formJson, changedFields, settleFields, fmtTime, fmtAgo, ago, fmtNum, fmtBytes, withoutAnsi, artifactLink, csrf, copy, badge, data, t, lang }
  window.svc = svc

  // Forms that only a script can send come with their button off, so that without JavaScript
  // they are not posted to the page's own address (which answered with raw JSON).
  for (const b of Array.from(document.querySelectorAll<HTMLButtonElement>('button[data-needs-js]'))) b.disabled = false

  // Times the server wrote (UTC) are shown like every other time on the page.
  for (const node of Array.from(document.querySelectorAll('time[datetime][data-local]'))) node.textContent = fmtTime(node.getAttribute('datetime'))
  for (const body of Array.from(document.querySelectorAll('tbody'))) labelCells(body)

  // A control focused in a table wider than its box (which scrolls sideways) is scrolled into view:
  // Chromium left a row's last buttons (the user list's Delete) mostly cut off at the box's edge.
  document.addEventListener('focusin', (e) => {
    const target = e.target
    if (target instanceof HTMLElement && target.closest('.table-wrap')) target.scrollIntoView({ block: 'nearest', inline: 'nearest' })
  })

  // The narrow layout folds the main navigation behind a menu button.
  const menu = document.getElementById('menu-button')
  const showMenu = (open: boolean) => {
    menu?.setAttribute('aria-expanded', String(open))
    document.querySelector('header.top')?.classList.toggle('open', open)
  }
  menu?.addEventListener('click', () => showMenu(menu.getAttribute('aria-expanded') !== 'true'))
  // Escape on the open menu (its button or a link in it) folds it and goes back to the button, as
  // a keyboard user expects of a disclosure: it stayed open, the focus somewhere in its links.
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || !menu || menu.getAttribute('aria-expanded') !== 'true') return
    const at = document.activeElement
    if (at !== menu && !(at instanceof Element && at.closest('#main-nav'))) return
    showMenu(false)
    menu.focus()
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
