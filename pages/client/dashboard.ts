// dashboard.js: pools and plan (polled), invitations, create pool.
import type {} from './types'

export function dashboardClient(): void {
  const svc = window.svc
  const el = svc.el
  const $ = (id: string) => document.getElementById(id)
  const emptyRow = (text: string, cols: number) => el('tr', {}, el('td', { colspan: cols, class: 'empty', text }))

  const poolRow = (p: any) =>
    el(
      'tr',
      {},
      el('td', {}, el('a', { href: '/pools/' + encodeURIComponent(p.id), text: p.name })),
      el('td', {}, p.visibility),
      el('td', {}, p.my_role ?? '—'),
      el('td', {}, `${p.node_count} / ${p.node_limit === null ? 'unlimited' : p.node_limit}`),
      el('td', {}, String(p.member_count)),
    )

  function applyLimits(l: any) {
    svc.render($('plan'), l, () => [`${l.plan} You own ${l.pools_owned}.`])
    const select = $('pool-visibility') as HTMLSelectElement
    // Private first and preselected: making a pool public must be a deliberate choice.
    const chosen = select.value || 'private'
    const vis = (l.allowed_visibilities as string[]).slice().sort((a) => (a === 'private' ? -1 : 1))
    svc.render(select, vis, () =>
      vis.map((v) => el('option', { value: v, selected: v === chosen, text: v === 'public' ? 'Public: listed to every logged-in user' : 'Private: members only' })),
    )
    const full = l.max_pools !== null && l.pools_owned >= l.max_pools
    const submit = $('create-pool-submit') as HTMLButtonElement
    submit.disabled = full
    if (full) svc.say('create-msg', `${l.plan} You have reached that limit; delete a pool or ask an admin for a larger plan.`)
    else if (($('create-msg')?.textContent ?? '').includes('reached that limit')) svc.say('create-msg', '')
    syncOpenJoin()
  }

  function syncOpenJoin() {
    const row = $('open-join-row')
    if (row) row.hidden = ($('pool-visibility') as HTMLSelectElement).value !== 'public'
  }
  $('pool-visibility')?.addEventListener('change', syncOpenJoin)

  async function loadPools() {
    const [p, l] = await Promise.all([svc.api('GET', '/api/v1/pools'), svc.api('GET', '/api/v1/pools/limits')])
    if (l.ok) applyLimits(l.data)
    else svc.render($('plan'), { e: l.error }, () => ['Your plan could not be loaded: ' + l.error])
    if (!p.ok) return svc.render($('pools-body'), { e: p.error }, () => [emptyRow('Pools could not be loaded: ' + p.error, 5)])
    const items = p.data.items as any[]
    svc.render($('pools-body'), items, () => (items.length ? items.map(poolRow) : [emptyRow('No pools yet. Create one below, or accept an invitation.', 5)]))
  }

  async function accept(id: string, token?: string) {
    const r = await svc.api('POST', `/api/v1/pools/invites/${encodeURIComponent(id)}/accept`, token === undefined ? undefined : { token })
    if (!r.ok) return svc.say('invite-msg', r.error ?? '', 'error')
    svc.say('invite-msg', `You joined ${r.data.pool_name}.`, 'ok')
    if (token !== undefined) {
      const card = $('invite-link-card')
      if (card) card.hidden = true
      history.replaceState(null, '', '/dashboard')
    }
    pools.now()
    invites.now()
  }

  // An invitation link (/dashboard?invite=ID&token=T, from the invite mail or the inviter): accepted
  // on a click, never on load, so a link alone cannot make anyone join a pool.
  const query = new URLSearchParams(location.search)
  const linkInvite = query.get('invite')
  const linkToken = query.get('token')
  if (linkInvite && linkToken) {
    const card = $('invite-link-card')
    if (card) card.hidden = false
    $('accept-link-invite')?.addEventListener('click', () => void accept(linkInvite, linkToken))
  }

  async function loadInvites() {
    const r = await svc.api('GET', '/api/v1/pools/invites/mine')
    if (!r.ok) return svc.render($('invites'), { e: r.error }, () => [el('p', { class: 'empty', text: 'Invitations could not be loaded: ' + r.error })])
    const items = r.data.items as any[]
    svc.render($('invites'), items, () =>
      items.length
        ? [
            el(
              'ul',
              { class: 'plain' },
              ...items.map((i) =>
                el(
                  'li',
                  { class: 'actions' },
                  el('span', {}, 'Invitation to ', el('strong', { text: i.pool_name }), ` (expires ${svc.fmtTime(i.expires_at)})`),
                  el('button', { type: 'button', class: 'small', 'aria-label': `Accept the invitation to ${i.pool_name}`, onclick: () => void accept(i.id) }, 'Accept'),
                ),
              ),
            ),
          ]
        : [el('p', { class: 'empty', text: 'No pending invitations.' })],
    )
  }

  $('create-pool')?.addEventListener('submit', (e) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const body = svc.formJson(form)
    if (body.description === '') delete body.description
    if (body.visibility !== 'public') delete body.open_join
    svc.say('create-msg', 'Creating the pool…')
    void svc.api('POST', '/api/v1/pools', body).then((r) => {
      if (!r.ok) return svc.say('create-msg', r.error ?? '', 'error')
      location.href = '/pools/' + encodeURIComponent(r.data.id) + '?created=1'
    })
  })

  const pools = svc.poll(loadPools, 5000)
  const invites = svc.poll(loadInvites, 15000)
}
