// admin-audit.js: the audit log, newest first, paged, filtered by kind (a prefix such as "auth.").
import type {} from './types'

export function adminAuditClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const form = $('audit-filters') as HTMLFormElement
  const SIZE = 50
  const params = new URLSearchParams(location.search)
  let page = Math.max(1, Number(params.get('page')) || 1)
  let more = false
  const kindField = form.elements.namedItem('kind') as HTMLSelectElement
  if (params.get('kind') !== null) kindField.value = params.get('kind') ?? ''

  const detailText = (d: Record<string, unknown> | null) =>
    d === null ? '' : Object.entries(d).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')

  const row = (e: any) =>
    el(
      'tr',
      { 'data-kind': e.kind, 'data-key': e.id },
      el('td', {}, el('time', { datetime: e.ts, text: svc.fmtTime(e.ts) })),
      el('td', { class: 'mono', text: e.kind }),
      el('td', { text: e.actor_email ?? (e.actor_user_id ? String(e.actor_user_id).slice(0, 13) : '—') }),
      el('td', { class: 'mono', text: e.client_ip ?? '—' }),
      el('td', {}, e.target_type === 'pool' && e.target_id ? el('a', { href: '/pools/' + encodeURIComponent(e.target_id), text: `${t('audit.pool')} ${String(e.target_id).slice(0, 13)}` }) : e.target_type ? `${e.target_type} ${String(e.target_id ?? '').slice(0, 13)}` : '—'),
      el('td', { class: 'detail', text: detailText(e.detail) }),
    )

  async function load() {
    const q = new URLSearchParams()
    if (kindField.value) q.set('kind', kindField.value)
    q.set('page', String(page))
    q.set('page_size', String(SIZE))
    history.replaceState(null, '', '?' + q.toString())
    const asked = page
    const r = await svc.api('GET', '/api/v1/admin/audit?' + q.toString())
    // Another page was chosen meanwhile (a load for it follows): this answer would show page 1's
    // entries under "Page 2" with Next still on.
    if (page !== asked) return
    const body = $('audit-body')
    if (!r.ok) return svc.render(body, { s: r.status }, () => [el('tr', {}, el('td', { colspan: 6, class: 'empty', text: t('common.loadFailed', { error: r.error ?? '' }) }))])
    const items = r.data.items as any[]
    const total = Number(r.data.total) || 0
    // The total is counted up to a cap (total_exact false past it); next_cursor says whether more follow.
    const exact = r.data.total_exact !== false
    const pages = Math.max(1, Math.ceil(total / SIZE))
    // A page past the end (an old link, a filter with fewer entries): the last page instead of
    // "No entries match" under "Page 5,000 of 1", as the user list does. Past a capped total the
    // last page is not known: the last one the count vouches for.
    if (items.length === 0 && page > pages) {
      page = pages
      return load()
    }
    more = r.data.next_cursor !== null && r.data.next_cursor !== undefined
    svc.pager(page <= 1, !more)
    svc.render($('page-info'), [page, pages, total, exact], () => [exact ? t('audit.page', { page, pages, n: total }) : t('audit.pageMany', { page, n: total })])
    // Updated in place: a new entry rebuilt the table and took the keyboard focus off its links.
    svc.update(body, items, () => (items.length ? items.map(row) : [el('tr', {}, el('td', { colspan: 6, class: 'empty', text: t('audit.none') }))]))
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    page = 1
    list.now()
  })
  kindField.addEventListener('change', () => ((page = 1), list.now()))
  $('page-prev')?.addEventListener('click', () => ((page = Math.max(1, page - 1)), list.now()))
  $('page-next')?.addEventListener('click', () => more && ((page = page + 1), list.now()))

  const list = svc.poll(load, 15000)
}
