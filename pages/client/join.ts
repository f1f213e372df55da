// join.js: the guided join. Pick a pool, mint a join command, then watch for the machine to appear.
import type {} from './types'

export function joinClient(): void {
  const svc = window.svc
  const el = svc.el
  const $ = (id: string) => document.getElementById(id)
  const select = $('join-pool') as HTMLSelectElement
  const copyBtn = $('copy-join') as HTMLButtonElement
  const wanted = new URLSearchParams(location.search).get('pool') ?? ''
  let known: Set<string> | null = null
  let watching: { now(): void } | null = null

  async function loadPools() {
    const r = await svc.api('GET', '/api/v1/pools?mine=true')
    if (!r.ok) return svc.render(select, { s: r.status }, () => [el('option', { value: '', text: 'Pools could not be loaded' })])
    const items = r.data.items as any[]
    svc.render(select, items, () =>
      items.length ? items.map((p) => el('option', { value: p.id, selected: p.id === wanted, text: `${p.name} (${p.node_count} machine(s))` })) : [el('option', { value: '', text: 'You are not in any pool yet' })],
    )
  }

  async function watch() {
    const poolId = select.value
    if (!poolId || known === null) return
    const r = await svc.api('GET', '/api/v1/cluster/nodes?pool_id=' + encodeURIComponent(poolId))
    if (!r.ok) return svc.render($('wait-status'), { s: r.status }, () => ['Machine status is not available yet on this leader.'])
    const items = ((r.data?.items ?? []) as any[]).filter((n) => n.pool_id === undefined || n.pool_id === poolId)
    const fresh = items.filter((n) => !known!.has(n.fellow_id))
    const online = fresh.filter((n) => n.state === 'online')
    svc.render($('wait-status'), [fresh.length, online.length], () => [
      online.length
        ? `${online.length} new machine(s) online in this pool.`
        : fresh.length
          ? 'A new machine registered; waiting for its first heartbeat…'
          : 'Waiting for a new machine to register… Run the command on it.',
    ])
    svc.render($('new-nodes'), fresh.map((n) => [n.fellow_id, n.state]), () =>
      fresh.map((n) => el('li', {}, el('strong', { text: n.hostname ?? n.fellow_id }), ' ', svc.badge(String(n.state)), ' ', el('a', { href: '/pools/' + encodeURIComponent(poolId), text: 'Open the pool' }))),
    )
  }

  $('mint-join')?.addEventListener('click', () => {
    const poolId = select.value
    if (!poolId) return svc.say('join-msg', 'Choose a pool first.', 'error')
    svc.say('join-msg', 'Creating a join command…')
    void svc.api('POST', '/api/v1/bootstrap/join-sessions', { pool_id: poolId }).then(async (r) => {
      if (!r.ok) return svc.say('join-msg', r.status === 404 || r.status === 401 ? 'Join commands are not available on this leader yet.' : (r.error ?? ''), 'error')
      const cmd = $('join-cmd')
      if (cmd) cmd.textContent = String(r.data.command ?? '')
      const exp = $('join-expiry')
      if (exp) exp.textContent = `Valid until ${svc.fmtTime(r.data.expires_at)}.`
      copyBtn.disabled = false
      copyBtn.focus()
      svc.say('join-msg', 'Join command created. Copy it and run it on the machine.', 'ok')
      // Machines already in the pool are not "new": remember them before watching.
      const before = await svc.api('GET', '/api/v1/cluster/nodes?pool_id=' + encodeURIComponent(poolId))
      known = new Set(before.ok ? ((before.data?.items ?? []) as any[]).map((n) => n.fellow_id) : [])
      if (watching) watching.now()
      else watching = svc.poll(watch, 3000)
    })
  })

  select.addEventListener('change', () => {
    known = null
    copyBtn.disabled = true
    const cmd = $('join-cmd')
    if (cmd) cmd.textContent = ''
    svc.render($('wait-status'), 'reset', () => ['Create a join command first.'])
    svc.render($('new-nodes'), [], () => [])
  })

  void loadPools()
}
