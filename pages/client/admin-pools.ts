// admin-pools.js: every pool, with create, edit (node limit, visibility) and delete.
import type {} from './types'

export function adminPoolsClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const editForm = $('edit-form') as HTMLFormElement
  let editing: any = null

  /** The fields of the edit or create form a refusal's errors[].path names: tied to them (it only said so under the form). */
  const fieldsOf = (prefix: string): Record<string, string[]> => ({
    '/name': [prefix + '-name'],
    '/description': [prefix + '-description'],
    '/visibility': [prefix + '-visibility'],
    '/node_limit': [prefix + '-limit'],
    '/open_join': [prefix + '-open'],
  })

  const fields = (form: HTMLFormElement, only: 'all' | 'changed') => {
    const body: Record<string, unknown> = only === 'all' ? svc.formJson(form) : svc.changedFields(form)
    if ('node_limit' in body) body.node_limit = body.node_limit === '' ? null : Number(body.node_limit)
    if (body.slug === '') delete body.slug
    return body
  }

  function startEdit(p: any) {
    editing = p
    const set = (name: string, v: string | boolean) => {
      const f = editForm.elements.namedItem(name) as HTMLInputElement
      if (f.type === 'checkbox') f.checked = Boolean(v)
      else f.value = String(v)
    }
    set('name', p.name)
    set('description', p.description)
    set('visibility', p.visibility)
    set('node_limit', p.node_limit === null ? '' : String(p.node_limit))
    set('open_join', p.open_join)
    // What was loaded is what a save compares with: only the fields changed here are sent.
    svc.settleFields(editForm)
    const section = $('edit-section')
    if (section) section.hidden = false
    svc.say('edit-msg', '')
    ;(editForm.elements.namedItem('name') as HTMLInputElement).focus()
  }

  async function remove(p: any) {
    if (!confirm(t('pools.confirmDelete', { name: p.name }))) return
    let r = await svc.api('DELETE', '/api/v1/admin/pools/' + encodeURIComponent(p.id))
    if (!r.ok && r.data?.code === 'pool_has_nodes') {
      if (!confirm(t('pool.confirmDetach', { n: Number(r.data.node_count) || 0 }))) return
      r = await svc.api('DELETE', '/api/v1/admin/pools/' + encodeURIComponent(p.id) + '?force=true')
    }
    svc.say('pools-msg', r.ok ? t('pools.deleted', { name: p.name }) : (r.error ?? ''), r.ok ? 'ok' : 'error')
    list.now()
  }

  const row = (p: any) =>
    el(
      'tr',
      { 'data-key': p.id },
      el('td', {}, el('a', { href: '/pools/' + encodeURIComponent(p.id), text: p.name }), p.is_default ? ' ' + t('pools.default') : ''),
      el('td', { class: 'mono', text: p.slug }),
      el('td', { text: t('visibility.' + p.visibility) + (p.open_join ? ', ' + t('pools.openJoin') : '') }),
      el('td', { text: p.node_limit === null ? t('pool.nodesUnlimited', { n: p.node_count }) : t('pool.nodesOfLimit', { n: p.node_count, limit: p.node_limit }) }),
      el('td', { text: svc.fmtNum(p.member_count) }),
      el('td', { text: svc.fmtTime(p.created_at) }),
      el(
        'td',
        {},
        el(
          'div',
          { class: 'actions' },
          el('button', { type: 'button', class: 'small secondary', 'aria-label': t('pools.editLabel', { name: p.name }), onclick: () => startEdit(p) }, t('pools.edit')),
          el('button', { type: 'button', class: 'small danger', 'aria-label': t('pools.deleteLabel', { name: p.name }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => remove(p)) }, t('pools.delete')),
        ),
      ),
    )

  async function load() {
    const r = await svc.api('GET', '/api/v1/admin/pools')
    const body = $('pools-body')
    if (!r.ok) return svc.render(body, { s: r.status }, () => [el('tr', {}, el('td', { colspan: 7, class: 'empty', text: t('common.loadFailed', { error: r.error ?? '' }) }))])
    const items = r.data.items as any[]
    // Updated in place: a rebuilt table took the keyboard focus off its buttons at every change.
    svc.update(body, items, () => (items.length ? items.map(row) : [el('tr', {}, el('td', { colspan: 7, class: 'empty', text: t('pools.none') }))]))
  }

  // Only the fields changed here are sent: a save sent every field as the row had been loaded,
  // undoing what another tab or admin had saved meanwhile.
  svc.onSubmit(editForm, async () => {
    if (!editing) return
    const body = fields(editForm, 'changed')
    if (Object.keys(body).length === 0) return svc.say('edit-msg', t('common.nothingChanged'), 'ok')
    const r = await svc.api('PATCH', '/api/v1/admin/pools/' + encodeURIComponent(editing.id), body)
    if (!r.ok) return svc.formError('edit-msg', svc.refusedFields(r, fieldsOf('edit')), r.error ?? '')
    svc.settleFields(editForm)
    svc.say('edit-msg', t('pools.saved', { name: r.data.name }), 'ok')
    list.now()
  })
  $('edit-cancel')?.addEventListener('click', () => {
    const section = $('edit-section')
    if (section) section.hidden = true
    // Back to the Edit button that opened the form (the focus fell to the page with the form).
    const row = editing ? document.querySelector(`#pools-body tr[data-key="${CSS.escape(editing.id)}"]`) : null
    svc.focus(row?.querySelector('button') ?? 'pools-body')
    editing = null
  })

  // One request at a time: a double click created two pools.
  svc.onSubmit('create-form', async (form) => {
    const r = await svc.api('POST', '/api/v1/admin/pools', fields(form, 'all'))
    if (!r.ok) return svc.formError('create-msg', svc.refusedFields(r, { ...fieldsOf('create'), '/slug': ['create-slug'], slug_taken: ['create-slug'] }), r.error ?? '')
    svc.say('create-msg', t('pools.created', { name: r.data.name }), 'ok')
    form.reset()
    list.now()
  })

  const list = svc.poll(load, 10000)
}
