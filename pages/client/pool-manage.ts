// pool-manage.js: members, join requests, invitations, edit, delete and joining a public pool.
import type {} from './types'

export function poolManageClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const poolId = svc.data('pool-id')
  const base = '/api/v1/pools/' + encodeURIComponent(poolId)
  const canManage = svc.data('can-manage') === '1'
  const me = svc.data('user-id')
  const emptyRow = (text: string, cols: number) => el('tr', {}, el('td', { colspan: cols, class: 'empty', text }))

  async function removeMember(m: any) {
    const self = m.user_id === me
    const who = m.display_name || m.email
    if (!confirm(self ? t('members.confirmLeave') : t('members.confirmRemove', { who }))) return
    const r = await svc.api('DELETE', `${base}/members/${encodeURIComponent(m.user_id)}`)
    if (!r.ok) return svc.say('members-msg', r.error ?? '', 'error')
    if (self) {
      location.href = '/dashboard'
      return
    }
    svc.say('members-msg', t('members.removed', { who }), 'ok')
    // The row goes with its button: the focus goes to what happened (it fell to the page).
    svc.focus('members-msg')
    members?.now()
  }

  const memberRow = (m: any) => {
    const mayRemove = m.role !== 'owner' && (canManage || m.user_id === me)
    const self = m.user_id === me
    const label = self ? t('members.leave') : t('members.remove')
    // Whom the button is about: your own row leaves the pool (it read "Leave NAME", as if leaving a person).
    const name = self ? t('members.leaveLabel') : t('members.removeLabel', { who: m.display_name || m.email })
    return el(
      'tr',
      { 'data-key': m.user_id },
      el('td', { text: m.display_name ?? '—' }),
      el('td', { text: m.email }),
      el('td', { text: t('role.' + m.role) }),
      el('td', { text: svc.fmtTime(m.joined_at) }),
      el('td', {}, mayRemove ? el('button', { type: 'button', class: 'small danger', 'aria-label': name, onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => removeMember(m)) }, label) : ''),
    )
  }

  async function loadMembers() {
    const r = await svc.api('GET', `${base}/members`)
    if (!r.ok) return svc.render($('members-body'), { s: r.status }, () => [emptyRow(r.status === 404 ? t('members.onlyMembers') : t('common.loadFailed', { error: r.error ?? '' }), 5)])
    const items = r.data.items as any[]
    const shown = items.slice(0, memberList.limit())
    // Updated in place (as the requests and invitations below): a rebuilt list took the keyboard focus off its buttons.
    svc.update($('members-body'), shown, () => shown.map(memberRow))
    memberList.shown(shown.length, items.length)
  }
  // 50 at a time: a pool of 1,000 members drew 1,000 rows.
  const memberList = svc.showMore($('members-body'), () => members?.now())

  async function loadRequests() {
    const r = await svc.api('GET', `${base}/join-requests`)
    if (!r.ok) return svc.render($('requests'), { s: r.status }, () => [el('p', { class: 'empty', text: t('common.loadFailed', { error: r.error ?? '' }) })])
    const items = (r.data.items as any[]).filter((j) => j.status === 'pending')
    svc.update($('requests'), items, () =>
      items.length
        ? [
            el(
              'ul',
              { class: 'plain requests' },
              ...items.map((j) => {
                const who = j.display_name || j.email
                return el(
                  'li',
                  { class: 'actions', 'data-request': j.email, 'data-key': j.user_id },
                  el('span', {}, el('strong', { text: who }), j.display_name ? ` (${j.email})` : '', ' · ', t('requests.asked', { time: svc.fmtAgo(j.created_at) })),
                  el('button', { type: 'button', class: 'small', 'aria-label': t('requests.approveLabel', { who }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => decide(j, 'approve')) }, t('requests.approve')),
                  el('button', { type: 'button', class: 'small danger', 'aria-label': t('requests.rejectLabel', { who }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => decide(j, 'reject')) }, t('requests.reject')),
                )
              }),
            ),
          ]
        : [el('p', { class: 'empty', text: t('requests.none') })],
    )
  }

  async function decide(j: any, how: 'approve' | 'reject') {
    const who = j.display_name || j.email
    const r = await svc.api('POST', `${base}/join-requests/${encodeURIComponent(j.user_id)}/${how}`)
    const pool = $('pool-name')?.textContent ?? ''
    svc.say('requests-msg', r.ok ? t(how === 'approve' ? 'requests.approved' : 'requests.rejected', { who, pool }) : (r.error ?? ''), r.ok ? 'ok' : 'error')
    // The request goes with its buttons: the focus goes to what happened.
    if (r.ok) svc.focus('requests-msg')
    requests?.now()
    members?.now()
  }

  // Pending invitations with their links: without mail the owner passes each link on by hand.
  async function loadInvites() {
    const r = await svc.api('GET', `${base}/invites`)
    if (!r.ok) return svc.render($('pool-invites'), { s: r.status }, () => [el('p', { class: 'empty', text: t('common.loadFailed', { error: r.error ?? '' }) })])
    const items = r.data.items as any[]
    svc.update($('pool-invites'), items, () =>
      items.length
        ? [
            el(
              'ul',
              { class: 'plain invites' },
              ...items.map((i) =>
                el(
                  'li',
                  { class: 'actions', 'data-invite': i.email, 'data-key': i.id },
                  el('span', {}, el('strong', { text: i.email }), ' · ', t('invites.expires', { time: svc.fmtTime(i.expires_at) })),
                  el('button', { type: 'button', class: 'small secondary', 'aria-label': t('poolInvites.copyLabel', { email: i.email }), onclick: () => void svc.copy(i.invite_link, 'pool-invites-msg') }, t('poolInvites.copy')),
                  el('button', { type: 'button', class: 'small danger', 'aria-label': t('poolInvites.withdrawLabel', { email: i.email }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => withdraw(i)) }, t('poolInvites.withdraw')),
                ),
              ),
            ),
          ]
        : [el('p', { class: 'empty', text: t('poolInvites.none') })],
    )
  }

  async function withdraw(i: any) {
    if (!confirm(t('poolInvites.confirmWithdraw', { email: i.email }))) return
    const r = await svc.api('DELETE', `${base}/invites/${encodeURIComponent(i.id)}`)
    svc.say('pool-invites-msg', r.ok ? t('poolInvites.withdrawn', { email: i.email }) : (r.error ?? ''), r.ok ? 'ok' : 'error')
    // The invitation goes with its button: the focus goes to what happened (it fell to the page).
    if (r.ok) svc.focus('pool-invites-msg')
    invites?.now()
  }

  svc.onSubmit('invite-form', async (form) => {
    const email = String(svc.formJson(form).email)
    const r = await svc.api('POST', `${base}/invites`, { email })
    // The link on show is the last invite's: it does not belong to this attempt.
    if (!r.ok) {
      const box = $('invite-link-box')
      if (box) box.hidden = true
      // Tied to the address when it is about the address (a malformed one, one already a member);
      // the inviter's own limit (invite_limit) is no fault of the address: said under the form.
      return svc.formError('invite-form-msg', svc.refusedFields(r, { '/email': ['invite-email'], conflict: ['invite-email'] }), r.error ?? '')
    }
    // Say what really happened: mailed, not mailed (no mail server), or already open.
    const key = r.status !== 201 ? 'invite.alreadyOpen' : r.data.mailed ? 'invite.mailed' : 'invite.notMailed'
    svc.say('invite-form-msg', t(key, { email }), 'ok')
    const box = $('invite-link-box')
    const input = $('invite-link') as HTMLInputElement | null
    if (box && input) {
      input.value = r.data.invite_link
      box.hidden = false
    }
    form.reset()
    invites?.now()
  })

  svc.clearOnInput('edit-form', 'edit-msg')
  svc.clearOnInput('invite-form', 'invite-form-msg')
  // Only the fields changed here are sent: a second tab's save sent every field as it had loaded
  // them, undoing what the first had saved meanwhile.
  svc.onSubmit('edit-form', async (form) => {
    const body: Record<string, unknown> = svc.changedFields(form)
    if (Object.keys(body).length === 0) return svc.say('edit-msg', t('common.nothingChanged'), 'ok')
    if ('node_limit' in body) body.node_limit = body.node_limit === '' ? null : Number(body.node_limit)
    const r = await svc.api('PATCH', base, body)
    // A refusal is tied to the field it is about (it only said so under the form).
    if (!r.ok) return svc.formError('edit-msg', svc.refusedFields(r, { '/name': ['edit-name'], '/description': ['edit-description'], '/visibility': ['edit-visibility'], '/node_limit': ['edit-limit'] }), r.error ?? '')
    svc.settleFields(form)
    const h = $('pool-name')
    if (h) h.textContent = r.data.name
    document.title = `${r.data.name} · svc leader`
    // The page's facts say what was saved (only the title did; the rest waited for a reload).
    const desc = $('pool-description')
    if (desc) {
      desc.textContent = r.data.description ?? ''
      desc.hidden = !r.data.description
    }
    const vis = $('pool-visibility-fact')
    const label = ($('edit-visibility') as HTMLSelectElement | null)?.querySelector(`option[value="${r.data.visibility}"]`)?.textContent
    if (vis && label) vis.textContent = label + (r.data.visibility === 'public' && r.data.open_join ? (vis.dataset.openJoin ?? '') : '')
    const limit = $('pool-limit-fact')
    if (limit) limit.textContent = r.data.node_limit === null ? (limit.dataset.unlimited ?? '') : String(r.data.node_limit)
    svc.say('edit-msg', t('common.saved'), 'ok')
  })

  $('delete-pool')?.addEventListener('click', (e) => {
    void svc.exclusive(e.currentTarget as Element, async () => {
      if (!confirm(t('pool.confirmDelete'))) return
      let r = await svc.api('DELETE', base)
      if (!r.ok && r.data?.code === 'pool_has_nodes') {
        if (!confirm(t('pool.confirmDetach', { n: Number(r.data.node_count) || 0 }))) return svc.say('delete-msg', t('pool.notDeleted'))
        r = await svc.api('DELETE', base + '?force=true')
      }
      if (!r.ok) return svc.say('delete-msg', r.error ?? '', 'error')
      location.href = '/dashboard'
    })
  })

  $('join-pool')?.addEventListener('click', (e) => {
    const button = e.currentTarget as HTMLButtonElement
    void svc.exclusive(button, async () => {
      const r = await svc.api('POST', `${base}/join`)
      if (!r.ok) return svc.say('join-pool-msg', r.error ?? '', 'error')
      // Asked: the button stays off (also after a reload: the page knows the open request), and
      // the focus it had goes to the answer (it fell to the page).
      button.disabled = true
      if (r.data.status === 'pending') {
        svc.say('join-pool-msg', t('pool.asked'), 'ok')
        return svc.focus('join-pool-msg')
      }
      location.reload()
    })
  })

  const members = $('members-body') ? svc.poll(loadMembers, 15000) : null
  const requests = canManage ? svc.poll(loadRequests, 15000) : null
  const invites = canManage ? svc.poll(loadInvites, 15000) : null
}
