// admin-users.js: searchable, filterable, paged user list with row actions; mail card; pending badge.
import type {} from './types'

export function adminUsersClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const form = $('user-filters') as HTMLFormElement
  const KEYS = ['q', 'status', 'role', 'sort', 'order', 'page_size']
  let page = Math.max(1, Number(new URLSearchParams(location.search).get('page')) || 1)
  let pages = 1

  // The filters live in the address bar, so a filtered view can be reloaded and shared.
  for (const k of KEYS) {
    const v = new URLSearchParams(location.search).get(k)
    const f = form.elements.namedItem(k) as HTMLInputElement | null
    if (v !== null && f) f.value = v
  }
  const query = () => {
    const f = svc.formJson(form)
    const p = new URLSearchParams()
    for (const k of KEYS) if (f[k]) p.set(k, String(f[k]))
    p.set('page', String(page))
    return p
  }

  async function act(u: any, label: string, method: string, path: string, body?: unknown) {
    // A new reset link voids the one on show: take it down before asking, so nobody copies a dead one.
    if (path === '/reset-password') {
      const pre = $('reset-link')
      const once = $('reset-once')
      if (pre) pre.textContent = ''
      if (once) once.hidden = true
    }
    const r = await svc.api(method, `/api/v1/admin/users/${encodeURIComponent(u.id)}${path}`, body)
    if (!r.ok) return svc.say('users-msg', `${label} ${u.email}: ${r.error}`, 'error')
    // A new password does not open an account that is not active: say so beside the link.
    const inactive = u.status !== 'active' ? ' ' + t('users.resetInactive', { status: t('state.' + u.status) }) : ''
    if (r.data?.delivery === 'link' && r.data.link) {
      const link = String(r.data.link)
      const once = $('reset-once')
      const pre = $('reset-link')
      if (pre) pre.textContent = link.startsWith('/') ? location.origin + link : link
      if (once) once.hidden = false
      svc.say('users-msg', t('users.resetLink', { email: u.email }) + inactive, 'ok')
    } else if (r.data?.delivery === 'mail') {
      svc.say('users-msg', t('users.resetMailed', { email: u.email }) + inactive, 'ok')
    } else {
      svc.say('users-msg', t('users.done', { action: label, email: u.email }), 'ok')
    }
    void loadPending()
    // The row is drawn anew with the buttons its new state takes: focus goes to its first one (it
    // fell to the page), or to the message when the row is gone (a deleted user).
    const focused = document.activeElement
    await load()
    if (focused && !document.contains(focused)) {
      const next = document.querySelector(`#users-body tr[data-user="${CSS.escape(u.email)}"] button`) as HTMLElement | null
      if (next) next.focus()
      else {
        const msg = $('users-msg')
        if (msg) {
          msg.tabIndex = -1
          msg.focus()
        }
      }
    }
  }

  const actions = (u: any) => {
    // One request at a time per button: a double click sent the action twice.
    const b = (text: string, handler: () => unknown, cls = 'small secondary') =>
      el('button', { type: 'button', class: cls, 'aria-label': `${text} ${u.email}`, onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, async () => handler()) }, text)
    const list: HTMLElement[] = []
    const approve = t('users.approve')
    const deactivate = t('users.deactivate')
    const reactivate = t('users.reactivate')
    const reset = t('users.reset')
    const del = t('users.delete')
    if (u.status === 'pending_approval' || u.status === 'unverified') list.push(b(approve, () => act(u, approve, 'POST', '/approve'), 'small'))
    if (u.status === 'active') list.push(b(deactivate, () => confirm(t('users.confirmDeactivate', { email: u.email })) && act(u, deactivate, 'POST', '/status', { status: 'disabled' })))
    if (u.status === 'disabled') list.push(b(reactivate, () => act(u, reactivate, 'POST', '/status', { status: 'active' })))
    list.push(b(reset, () => act(u, reset, 'POST', '/reset-password')))
    list.push(b(del, () => confirm(t('users.confirmDelete', { email: u.email })) && act(u, del, 'DELETE', ''), 'small danger'))
    return el('div', { class: 'actions' }, ...list)
  }

  const row = (u: any) =>
    el(
      'tr',
      { 'data-user': u.email },
      el('td', { text: u.email }),
      el('td', { text: u.display_name ?? '—' }),
      el('td', { text: t('role.' + u.role) }),
      el('td', {}, svc.badge(String(u.status))),
      el('td', { text: svc.fmtTime(u.created_at) }),
      el('td', { text: svc.fmtTime(u.last_login_at) }),
      el('td', { text: svc.fmtNum(u.pool_count) }),
      el('td', { text: svc.fmtNum(u.node_count) }),
      el('td', {}, actions(u)),
    )

  async function load() {
    const q = query()
    history.replaceState(null, '', '?' + q.toString())
    const asked = page
    const r = await svc.api('GET', '/api/v1/admin/users?' + q.toString())
    // Another page was chosen meanwhile (a load for it follows): this answer is not for it.
    if (page !== asked) return
    const body = $('users-body')
    if (!r.ok) {
      const text = r.status === 404 ? t('common.noData') : t('common.loadFailed', { error: r.error ?? '' })
      return svc.render(body, { s: r.status }, () => [el('tr', {}, el('td', { colspan: 9, class: 'empty', text }))])
    }
    const items = (r.data.items ?? []) as any[]
    const size = Number(r.data.page_size) || 25
    pages = Math.max(1, Math.ceil((Number(r.data.total) || 0) / size))
    // A page past the end (an old link, users deleted meanwhile): the last page instead of
    // "No users match" under "Page 5 of 1".
    if (items.length === 0 && page > pages) {
      page = pages
      return load()
    }
    svc.pager(page <= 1, page >= pages)
    svc.render($('page-info'), [page, pages, r.data.total], () => [t('users.page', { page, pages, n: Number(r.data.total) || 0 })])
    svc.render(body, items, () => (items.length ? items.map(row) : [el('tr', {}, el('td', { colspan: 9, class: 'empty', text: t('users.none') }))]))
  }

  async function loadPending() {
    const r = await svc.api('GET', '/api/v1/admin/users/pending-count')
    const badge = $('pending-badge')
    if (!badge || !r.ok) return
    const n = Number(r.data.count) || 0
    badge.hidden = n === 0
    badge.textContent = t('users.pending', { n })
    for (const nav of Array.from(document.querySelectorAll('[data-pending-badge]'))) nav.firstChild && (nav.firstChild.textContent = String(n))
  }

  async function loadMail() {
    const r = await svc.api('GET', '/api/v1/admin/mail')
    if (!r.ok) return svc.render($('mail-status'), { s: r.status }, () => [r.status === 404 ? t('common.noData') : t('common.loadFailed', { error: r.error ?? '' })])
    const m = r.data
    svc.render($('mail-status'), m, () => [
      m.configured ? t('mail.configured', { n: Number(m.pending) || 0, failed: Number(m.failed) || 0 }) : t('mail.disabled'),
    ])
    // Which mails were given up, and why: the count alone sent the admin to the leader's log.
    const failures: { to: string; template: string; attempts: number; last_error: string | null; queued_at: string }[] = Array.isArray(m.recent_failures) ? m.recent_failures : []
    svc.render($('mail-failures'), failures, () =>
      failures.length === 0
        ? []
        : [
            svc.el('p', {}, t('mail.failures')),
            svc.el(
              'ul',
              {},
              ...failures.map((f) => svc.el('li', {}, t('mail.failure', { to: f.to, template: f.template, at: svc.fmtTime(f.queued_at), attempts: String(f.attempts) }), svc.el('span', { lang: 'en' }, f.last_error ?? ''))),
            ),
          ],
    )
  }

  $('mail-test')?.addEventListener('click', (e) => {
    void svc.exclusive(e.currentTarget as Element, async () => {
      svc.say('mail-msg', t('mail.sending'))
      const r = await svc.api('POST', '/api/v1/admin/mail/test')
      svc.say('mail-msg', r.ok ? t('mail.sent', { to: r.data?.to ?? t('mail.yourAddress') }) : (r.error ?? ''), r.ok ? 'ok' : 'error')
      void loadMail()
    })
  })

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    page = 1
    void load()
  })
  for (const s of Array.from(form.querySelectorAll('select'))) s.addEventListener('change', () => ((page = 1), void load()))
  $('page-prev')?.addEventListener('click', () => ((page = Math.max(1, page - 1)), void load()))
  $('page-next')?.addEventListener('click', () => ((page = Math.min(pages, page + 1)), void load()))

  void load()
  svc.poll(loadPending, 15000)
  svc.poll(loadMail, 30000)
}
