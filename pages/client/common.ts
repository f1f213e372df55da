// app.js: the helpers every page script uses. Untrusted values reach the DOM only as text nodes
// (textContent), never as HTML, so a pool or user name cannot inject markup.
import type { ApiResult, Attrs, Child, Svc } from './types'

export function commonClient(): void {
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
      return { ok: false, status: 0, data: null as T, error: 'The leader could not be reached. Check your connection and try again.' }
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
    return { ok: res.ok, status: res.status, data, error: res.ok ? null : (detail ?? `The request failed (HTTP ${res.status}).`) }
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

  function poll(fn: () => Promise<void>, ms: number) {
    let timer: ReturnType<typeof setTimeout> | undefined
    let running = false
    const tick = async () => {
      if (timer !== undefined) clearTimeout(timer)
      if (running) return
      running = true
      try {
        if (!document.hidden) await fn()
      } catch (e) {
        console.error(e)
      } finally {
        running = false
        timer = setTimeout(tick, ms)
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

  const fmtTime = (iso: string | null | undefined): string => {
    if (!iso) return '—'
    const d = new Date(iso)
    return isNaN(d.getTime()) ? '—' : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
  }
  const fmtNum = (n: number | null | undefined, digits = 0): string =>
    typeof n === 'number' && isFinite(n) ? n.toLocaleString(undefined, { maximumFractionDigits: digits }) : '—'

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
      if (!ok) return say(status, 'Copying failed: select the text and copy it yourself.', 'error')
    }
    say(status, 'Copied to the clipboard.', 'ok')
  }

  const badge = (state: string) => el('span', { class: 'state state-' + state.replace(/[^a-z_]/g, ''), text: state.replace(/_/g, ' ') })
  const data = (name: string) => document.body.getAttribute('data-' + name) ?? ''

  const svc: Svc = { api, el, say, poll, render, formJson, fmtTime, fmtNum, copy, badge, data }
  window.svc = svc

  document.addEventListener('click', (e) => {
    const t = e.target instanceof Element ? e.target.closest('[data-logout],[data-copy]') : null
    if (!t) return
    if (t.hasAttribute('data-logout')) {
      void api('POST', '/api/v1/auth/logout').then(() => {
        location.href = '/'
      })
    } else {
      const src = document.getElementById(t.getAttribute('data-copy') ?? '')
      const text = src ? ((src as HTMLInputElement).value ?? src.textContent ?? '') : ''
      if (text.trim() === '') return say(t.getAttribute('data-copy-status'), 'Nothing to copy yet.', 'error')
      void copy(text.trim(), t.getAttribute('data-copy-status'))
    }
  })
}
