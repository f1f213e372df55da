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
      { 'data-key': p.id },
      el('td', {}, el('a', { href: '/pools/' + encodeURIComponent(p.id), text: p.name })),
      el('td', {}, svc.t('visibility.' + p.visibility)),
      el('td', {}, p.my_role ? svc.t('role.' + p.my_role) : '—'),
      el('td', {}, p.node_limit === null ? svc.t('pool.nodesUnlimited', { n: p.node_count }) : svc.t('pool.nodesOfLimit', { n: p.node_count, limit: p.node_limit })),
      el('td', {}, svc.fmtNum(p.member_count)),
    )

  function applyLimits(l: any) {
    const plan = () =>
      svc.t(l.max_nodes_per_pool === null ? 'dash.planAnyNodes' : 'dash.plan', {
        pools: l.max_pools === null ? svc.t('dash.anyPools') : svc.t('dash.pools', { n: l.max_pools }),
        nodes: l.max_nodes_per_pool === null ? '' : svc.t('dash.nodes', { n: l.max_nodes_per_pool }),
      })
    svc.render($('plan'), l, () => [plan() + ' ' + svc.t('dash.owned', { n: l.pools_owned })])
    const select = $('pool-visibility') as HTMLSelectElement
    // Private first and preselected: making a pool public must be a deliberate choice.
    const chosen = select.value || 'private'
    const vis = (l.allowed_visibilities as string[]).slice().sort((a) => (a === 'private' ? -1 : 1))
    svc.render(select, vis, () =>
      vis.map((v) => el('option', { value: v, selected: v === chosen, text: svc.t(v === 'public' ? 'dash.optionPublic' : 'dash.optionPrivate') })),
    )
    // The hint speaks of public pools only to someone whose plan allows one.
    const hint = $('visibility-hint')
    if (hint) hint.hidden = !vis.includes('public')
    if (vis.includes('public')) select.setAttribute('aria-describedby', 'visibility-hint')
    else select.removeAttribute('aria-describedby')
    const full = l.max_pools !== null && l.pools_owned >= l.max_pools
    const submit = $('create-pool-submit') as HTMLButtonElement
    submit.disabled = full
    if (full) {
      svc.say('create-msg', svc.t('dash.limitReached', { n: l.max_pools }))
      $('create-msg')?.setAttribute('data-limit', '')
    } else if ($('create-msg')?.hasAttribute('data-limit')) {
      $('create-msg')?.removeAttribute('data-limit')
      svc.say('create-msg', '')
    }
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
    else svc.render($('plan'), { e: l.error }, () => [svc.t('dash.planFailed', { error: l.error ?? '' })])
    if (!p.ok) return svc.render($('pools-body'), { e: p.error }, () => [emptyRow(svc.t('dash.poolsFailed', { error: p.error ?? '' }), 5)])
    const items = p.data.items as any[]
    // Updated in place: a rebuilt table took the keyboard focus off its link at every change.
    svc.update($('pools-body'), items, () => (items.length ? items.map(poolRow) : [emptyRow(svc.t('dash.noPools'), 5)]))
    fleetPools = items.filter((x) => x.my_role !== null).slice(0, FLEET_MAX)
    if (fleetPools.map((x) => x.id).join() !== Array.from(fleetCharts.keys()).join()) fleet.now()
  }

  // Per pool a small chart of the last day: machines online and free VRAM (its summary is the text).
  const FLEET_MAX = 12
  let fleetPools: any[] = []
  const fleetCharts = new Map<string, ReturnType<typeof window.svcConsole.chart>>()
  async function loadFleet() {
    const list = $('fleet-list')
    const card = $('fleet-card')
    if (!list || !card) return
    card.hidden = fleetPools.length === 0
    const wanted = fleetPools.map((x) => x.id).join()
    if (wanted !== Array.from(fleetCharts.keys()).join()) {
      fleetCharts.clear()
      list.replaceChildren(
        ...fleetPools.map((pool) => {
          const box = el('div')
          const item = el('li', { 'data-pool': pool.id }, el('h3', {}, el('a', { href: '/pools/' + encodeURIComponent(pool.id), text: pool.name })), box)
          fleetCharts.set(
            pool.id,
            window.svcConsole.chart(box, svc.t('fleet.dashTitle', { pool: pool.name }), [
              { label: svc.t('fleet.online'), color: 'green', fmt: (n) => svc.fmtNum(n) },
              { label: svc.t('fleet.vramFree'), color: 'blue', scale: 'vram', fmt: (n) => svc.fmtNum(n, 1) + ' GiB' },
            ], { height: 70, compact: true }),
          )
          return item
        }),
      )
    }
    await Promise.all(
      fleetPools.map(async (pool) => {
        const r = await svc.api('GET', `/api/v1/pools/${encodeURIComponent(pool.id)}/telemetry?range=1d`)
        const c = fleetCharts.get(pool.id)
        if (!r.ok || !c) return
        const pts = r.data.points as any[]
        const now = Date.now() / 1000
        c.set(pts.map((x) => Date.parse(x.ts) / 1000), [pts.map((x) => x.online), pts.map((x) => Math.round((x.vram_free_mb / 1024) * 100) / 100)], [now - 86400, now])
      }),
    )
  }

  // Join requests waiting for the caller, as owner of their pools: approve or reject from here.
  async function decide(j: any, how: 'approve' | 'reject') {
    const who = j.display_name || j.email
    const r = await svc.api('POST', `/api/v1/pools/${encodeURIComponent(j.pool_id)}/join-requests/${encodeURIComponent(j.user_id)}/${how}`)
    svc.say('requests-msg', r.ok ? svc.t(how === 'approve' ? 'requests.approved' : 'requests.rejected', { who, pool: j.pool_name }) : (r.error ?? ''), r.ok ? 'ok' : 'error')
    // The request goes with its buttons: the focus goes to what happened.
    if (r.ok) svc.focus('requests-msg')
    requests.now()
    pools.now()
  }

  async function loadRequests() {
    const r = await svc.api('GET', '/api/v1/pools/join-requests')
    const card = $('requests-card')
    if (!r.ok || !card) return
    const items = r.data.items as any[]
    card.hidden = items.length === 0 && ($('requests-msg')?.textContent ?? '') === ''
    svc.update($('owner-requests'), items, () =>
      items.length
        ? [
            el(
              'ul',
              { class: 'plain requests' },
              ...items.map((j) => {
                const who = j.display_name || j.email
                return el(
                  'li',
                  { class: 'actions', 'data-request': j.email, 'data-key': j.pool_id + ' ' + j.user_id },
                  el('span', {}, el('strong', { text: who }), j.display_name ? ` (${j.email})` : '', ' ', svc.t('requests.asksToJoin'), ' ', el('a', { href: '/pools/' + encodeURIComponent(j.pool_id), text: j.pool_name }), ' · ', svc.ago(j.created_at)),
                  el('button', { type: 'button', class: 'small', 'aria-label': svc.t('requests.approveLabel', { who }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => decide(j, 'approve')) }, svc.t('requests.approve')),
                  el('button', { type: 'button', class: 'small danger', 'aria-label': svc.t('requests.rejectLabel', { who }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => decide(j, 'reject')) }, svc.t('requests.reject')),
                )
              }),
            ),
          ]
        : [el('p', { class: 'empty', text: svc.t('requests.none') })],
    )
  }

  async function accept(id: string, token?: string) {
    const r = await svc.api('POST', `/api/v1/pools/invites/${encodeURIComponent(id)}/accept`, token === undefined ? undefined : { token })
    if (!r.ok) return svc.say('invite-msg', r.error ?? '', 'error')
    svc.say('invite-msg', svc.t('invites.joined', { pool: r.data.pool_name }), 'ok')
    if (token !== undefined) {
      const card = $('invite-link-card')
      if (card) card.hidden = true
      history.replaceState(null, '', '/dashboard')
    }
    // The button that had focus is gone with its card or its invitation: focus goes to what
    // happened (it fell to the page).
    svc.focus('invite-msg')
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
    $('accept-link-invite')?.addEventListener('click', (e) => void svc.exclusive(e.currentTarget as Element, () => accept(linkInvite, linkToken)))
  }

  async function loadInvites() {
    const r = await svc.api('GET', '/api/v1/pools/invites/mine')
    if (!r.ok) return svc.render($('invites'), { e: r.error }, () => [el('p', { class: 'empty', text: svc.t('invites.failed', { error: r.error ?? '' }) })])
    const items = r.data.items as any[]
    svc.update($('invites'), items, () =>
      items.length
        ? [
            el(
              'ul',
              { class: 'plain' },
              ...items.map((i) =>
                el(
                  'li',
                  { class: 'actions', 'data-key': i.id },
                  el('span', {}, svc.t('invites.to'), ' ', el('strong', { text: i.pool_name }), ` (${svc.t('invites.expires', { time: svc.fmtTime(i.expires_at) })})`),
                  el('button', { type: 'button', class: 'small', 'aria-label': svc.t('invites.acceptLabel', { pool: i.pool_name }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => accept(i.id)) }, svc.t('invites.accept')),
                ),
              ),
            ),
          ]
        : [el('p', { class: 'empty', text: svc.t('invites.none') })],
    )
  }

  // One request at a time: a double click created two pools.
  svc.onSubmit('create-pool', async (form) => {
    const body = svc.formJson(form)
    if (body.description === '') delete body.description
    if (body.visibility !== 'public') delete body.open_join
    svc.say('create-msg', svc.t('dash.creating'))
    const r = await svc.api('POST', '/api/v1/pools', body)
    // A refusal is tied to the field it is about (it only said so under the form).
    if (!r.ok) return svc.formError('create-msg', svc.refusedFields(r, { '/name': ['pool-name'], '/description': ['pool-description'], '/visibility': ['pool-visibility'] }), r.error ?? '')
    // On its way to the new pool: the button stays off (a click meanwhile made a second one).
    const submit = form.querySelector('button[type=submit]') as HTMLButtonElement | null
    if (submit) submit.disabled = true
    location.href = '/pools/' + encodeURIComponent(r.data.id) + '?created=1'
  })

  const pools = svc.poll(loadPools, 5000)
  const fleet = svc.poll(loadFleet, 60000)
  const invites = svc.poll(loadInvites, 15000)
  const requests = svc.poll(loadRequests, 15000)
}
