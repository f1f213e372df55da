// pool-manage.js: members, join requests, invitations, edit, delete and joining a public pool.
import type {} from './types'

export function poolManageClient(): void {
  const svc = window.svc
  const el = svc.el
  const $ = (id: string) => document.getElementById(id)
  const poolId = svc.data('pool-id')
  const base = '/api/v1/pools/' + encodeURIComponent(poolId)
  const canManage = svc.data('can-manage') === '1'
  const me = svc.data('user-id')
  const emptyRow = (text: string, cols: number) => el('tr', {}, el('td', { colspan: cols, class: 'empty', text }))

  async function removeMember(m: any) {
    const self = m.user_id === me
    const who = m.display_name || m.email
    if (!confirm(self ? 'Leave this pool?' : `Remove ${who} from this pool?`)) return
    const r = await svc.api('DELETE', `${base}/members/${encodeURIComponent(m.user_id)}`)
    if (!r.ok) return svc.say('members-msg', r.error ?? '', 'error')
    if (self) {
      location.href = '/dashboard'
      return
    }
    svc.say('members-msg', `${who} was removed.`, 'ok')
    members.now()
  }

  const memberRow = (m: any) => {
    const mayRemove = m.role !== 'owner' && (canManage || m.user_id === me)
    const label = m.user_id === me ? 'Leave' : 'Remove'
    return el(
      'tr',
      {},
      el('td', { text: m.display_name ?? '—' }),
      el('td', { text: m.email }),
      el('td', { text: m.role }),
      el('td', { text: svc.fmtTime(m.joined_at) }),
      el('td', {}, mayRemove ? el('button', { type: 'button', class: 'small danger', 'aria-label': `${label} ${m.display_name || m.email}`, onclick: () => void removeMember(m) }, label) : ''),
    )
  }

  async function loadMembers() {
    const r = await svc.api('GET', `${base}/members`)
    if (!r.ok) return svc.render($('members-body'), { s: r.status }, () => [emptyRow(r.status === 404 ? 'Only members see the member list.' : 'Could not load: ' + r.error, 5)])
    const items = r.data.items as any[]
    svc.render($('members-body'), items, () => items.map(memberRow))
  }

  async function loadRequests() {
    const r = await svc.api('GET', `${base}/join-requests`)
    if (!r.ok) return svc.render($('requests'), { s: r.status }, () => [el('p', { class: 'empty', text: 'Could not load: ' + r.error })])
    const items = (r.data.items as any[]).filter((j) => j.status === 'pending')
    svc.render($('requests'), items, () =>
      items.length
        ? [
            el(
              'ul',
              { class: 'plain' },
              ...items.map((j) =>
                el(
                  'li',
                  { class: 'actions' },
                  el('span', { class: 'mono', text: j.user_id }),
                  ` asked on ${svc.fmtTime(j.created_at)} `,
                  el('button', { type: 'button', class: 'small', onclick: () => void approve(j.user_id) }, 'Approve'),
                ),
              ),
            ),
          ]
        : [el('p', { class: 'empty', text: 'No pending join requests.' })],
    )
  }

  async function approve(userId: string) {
    const r = await svc.api('POST', `${base}/join-requests/${encodeURIComponent(userId)}/approve`)
    svc.say('invite-form-msg', r.ok ? 'Request approved.' : (r.error ?? ''), r.ok ? 'ok' : 'error')
    requests?.now()
    members.now()
  }

  $('invite-form')?.addEventListener('submit', (e) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const email = String(svc.formJson(form).email)
    void svc.api('POST', `${base}/invites`, { email }).then((r) => {
      if (!r.ok) return svc.say('invite-form-msg', r.error ?? '', 'error')
      svc.say('invite-form-msg', r.status === 201 ? `Invitation sent to ${email}.` : `${email} was already invited; the invitation is still open and no new email was sent.`, 'ok')
      // The link too: without mail (or when it got lost) the inviter passes it on themselves.
      const box = $('invite-link-box')
      const input = $('invite-link') as HTMLInputElement | null
      if (box && input) {
        input.value = r.data.invite_link
        box.hidden = false
      }
      form.reset()
    })
  })

  $('edit-form')?.addEventListener('submit', (e) => {
    e.preventDefault()
    const body: Record<string, unknown> = svc.formJson(e.currentTarget as HTMLFormElement)
    if ('node_limit' in body) body.node_limit = body.node_limit === '' ? null : Number(body.node_limit)
    void svc.api('PATCH', base, body).then((r) => {
      if (!r.ok) return svc.say('edit-msg', r.error ?? '', 'error')
      const h = $('pool-name')
      if (h) h.textContent = r.data.name
      document.title = `${r.data.name} · svc leader`
      svc.say('edit-msg', 'Saved.', 'ok')
    })
  })

  $('delete-pool')?.addEventListener('click', () => {
    if (!confirm('Delete this pool for everyone? This cannot be undone.')) return
    void (async () => {
      let r = await svc.api('DELETE', base)
      if (!r.ok && r.data?.code === 'pool_has_nodes') {
        if (!confirm(`${r.error} Detach them and delete the pool anyway?`)) return svc.say('delete-msg', 'The pool was not deleted.')
        r = await svc.api('DELETE', base + '?force=true')
      }
      if (!r.ok) return svc.say('delete-msg', r.error ?? '', 'error')
      location.href = '/dashboard'
    })()
  })

  $('join-pool')?.addEventListener('click', () => {
    void svc.api('POST', `${base}/join`).then((r) => {
      if (!r.ok) return svc.say('join-pool-msg', r.error ?? '', 'error')
      if (r.data.status === 'pending') return svc.say('join-pool-msg', 'Your request was sent to the pool owner.', 'ok')
      location.reload()
    })
  })

  const members = svc.poll(loadMembers, 15000)
  const requests = canManage ? svc.poll(loadRequests, 15000) : null
}
