// join.js: the guided join. Pick a pool, mint a join command, then watch for the machine to appear.
import type {} from './types'

export function joinClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const select = $('join-pool') as HTMLSelectElement
  const copyBtn = $('copy-join') as HTMLButtonElement
  const wanted = new URLSearchParams(location.search).get('pool') ?? ''
  let known: Set<string> | null = null
  let watching: { now(): void } | null = null

  async function loadPools() {
    const r = await svc.api('GET', '/api/v1/pools?mine=true')
    if (!r.ok) return svc.render(select, { s: r.status }, () => [el('option', { value: '', text: t('joinw.poolsFailed') })])
    const items = r.data.items as any[]
    svc.render(select, items, () =>
      items.length ? items.map((p) => el('option', { value: p.id, selected: p.id === wanted, text: t('joinw.poolOption', { name: p.name, n: p.node_count }) })) : [el('option', { value: '', text: t('joinw.noPool') })],
    )
  }

  async function watch() {
    const poolId = select.value
    if (!poolId || known === null) return
    const r = await svc.api('GET', '/api/v1/cluster/nodes?pool_id=' + encodeURIComponent(poolId))
    if (!r.ok) return svc.render($('wait-status'), { s: r.status }, () => [t('joinw.noStatus')])
    const items = ((r.data?.items ?? []) as any[]).filter((n) => n.pool_id === undefined || n.pool_id === poolId)
    const fresh = items.filter((n) => !known!.has(n.fellow_id))
    const online = fresh.filter((n) => n.state === 'online')
    svc.render($('wait-status'), [fresh.length, online.length], () => [
      online.length ? t('joinw.online', { n: online.length }) : fresh.length ? t('joinw.registered') : t('joinw.waiting'),
    ])
    svc.render($('new-nodes'), fresh.map((n) => [n.fellow_id, n.state]), () =>
      fresh.map((n) => el('li', {}, el('strong', { text: n.hostname ?? n.fellow_id }), ' ', svc.badge(String(n.state)), ' ', el('a', { href: '/pools/' + encodeURIComponent(poolId), text: t('joinw.openPool') }))),
    )
  }

  $('mint-join')?.addEventListener('click', (e) => void svc.exclusive(e.currentTarget as Element, async () => {
    const poolId = select.value
    // Tied to the pool list it is about, which gets the focus (it was said under the form only).
    if (!poolId) return svc.formError('join-msg', ['join-pool'], t('joinw.choosePool'))
    svc.say('join-msg', t('join.creating'))
    await svc.api('POST', '/api/v1/bootstrap/join-sessions', { pool_id: poolId }).then(async (r) => {
      if (!r.ok) return svc.say('join-msg', r.status === 404 || r.status === 401 ? t('join.unavailable') : (r.error ?? ''), 'error')
      const cmd = $('join-cmd')
      if (cmd) cmd.textContent = String(r.data.command ?? '')
      const exp = $('join-expiry')
      if (exp) exp.textContent = t('join.valid', { time: svc.fmtTime(r.data.expires_at) })
      copyBtn.disabled = false
      copyBtn.focus()
      svc.say('join-msg', t('join.created'), 'ok')
      // Machines already in the pool are not "new": remember them before watching.
      const before = await svc.api('GET', '/api/v1/cluster/nodes?pool_id=' + encodeURIComponent(poolId))
      known = new Set(before.ok ? ((before.data?.items ?? []) as any[]).map((n) => n.fellow_id) : [])
      if (watching) watching.now()
      else watching = svc.poll(watch, 3000)
    })
  }))

  select.addEventListener('change', () => {
    known = null
    copyBtn.disabled = true
    const cmd = $('join-cmd')
    if (cmd) cmd.textContent = ''
    svc.render($('wait-status'), 'reset', () => [t('joinw.first')])
    svc.render($('new-nodes'), [], () => [])
  })

  void loadPools()
}
