// pool.js: the live parts of a pool page (machines, jobs, models) and the join command.
// Routes that are not there yet (or refuse) show "No data yet." instead of breaking the page.
import type {} from './types'

export function poolClient(): void {
  const svc = window.svc
  const el = svc.el
  const $ = (id: string) => document.getElementById(id)
  const poolId = svc.data('pool-id')
  const q = encodeURIComponent(poolId)
  const emptyRow = (text: string, cols: number) => el('tr', {}, el('td', { colspan: cols, class: 'empty', text }))
  // 401/403/404 from a route this leader does not have yet is "nothing to show", not an error.
  const missing = (status: number) => status === 401 || status === 403 || status === 404
  const noData = (r: { status: number; error: string | null }) => (missing(r.status) ? 'No data yet.' : 'Could not load: ' + r.error)

  const gpuText = (g: any) =>
    `${g.name ?? 'GPU ' + g.index}: ${svc.fmtNum((g.memory_free_mb ?? 0) / 1024, 1)} of ${svc.fmtNum((g.memory_total_mb ?? 0) / 1024, 1)} GB free, ${svc.fmtNum(g.utilization_pct)}% busy`

  const nodeRow = (n: any) =>
    el(
      'tr',
      { 'data-fellow': n.fellow_id, 'data-state': n.state },
      el('td', {}, el('strong', { text: n.hostname ?? '—' }), el('br'), el('span', { class: 'muted mono', text: String(n.fellow_id ?? '').slice(0, 13) })),
      el('td', {}, svc.badge(String(n.state ?? 'unknown'))),
      el('td', {}, n.status ?? '—'),
      el('td', {}, svc.fmtNum(n.step)),
      el('td', {}, svc.fmtNum(n.loss, 4)),
      el('td', {}, ...(Array.isArray(n.gpus) && n.gpus.length ? n.gpus.map((g: any) => el('div', { text: gpuText(g) })) : ['—'])),
      el('td', {}, svc.fmtTime(n.last_seen_at)),
    )

  async function loadNodes() {
    const r = await svc.api('GET', `/api/v1/cluster/nodes?pool_id=${q}`)
    if (!r.ok) {
      svc.render($('nodes-summary'), 'none', () => [])
      return svc.render($('nodes-body'), { s: r.status }, () => [emptyRow(noData(r), 7)])
    }
    const items = ((r.data?.items ?? []) as any[]).filter((n) => n.pool_id === undefined || n.pool_id === poolId)
    const online = items.filter((n) => n.state === 'online').length
    // Announced only when the count changes (render skips identical data).
    svc.render($('nodes-summary'), [online, items.length], () => [items.length ? `${online} of ${items.length} machine(s) online.` : ''])
    svc.render($('nodes-body'), items, () => (items.length ? items.map(nodeRow) : [emptyRow('No machines yet. Create a join command below and run it on a machine.', 7)]))
  }

  async function loadJobs() {
    const r = await svc.api('GET', `/api/v1/jobs?pool_id=${q}`)
    if (!r.ok) return svc.render($('jobs-body'), { s: r.status }, () => [emptyRow(noData(r), 5)])
    const items = ((r.data?.items ?? []) as any[]).filter((j) => j.pool_id === undefined || j.pool_id === poolId)
    svc.render($('jobs-body'), items, () =>
      items.length
        ? items.map((j) =>
            el('tr', {}, el('td', { text: j.name ?? j.id }), el('td', {}, svc.badge(String(j.status ?? 'unknown'))), el('td', {}, svc.fmtNum(j.stages)), el('td', {}, svc.fmtNum(j.step)), el('td', {}, svc.fmtNum(j.loss, 4))),
          )
        : [emptyRow('No jobs in this pool yet.', 5)],
    )
  }

  async function loadModels() {
    const r = await svc.api('GET', `/api/v1/servables?pool_id=${q}`)
    if (!r.ok) return svc.render($('models'), { s: r.status }, () => [el('p', { class: 'empty', text: noData(r) })])
    const items = ((r.data?.items ?? []) as any[]).filter((m) => m.pool_id === poolId)
    svc.render($('models'), items, () =>
      items.length
        ? [el('ul', {}, ...items.map((m) => el('li', {}, el('strong', { text: m.name }), m.version ? ` (version ${m.version})` : '')))]
        : [el('p', { class: 'empty', text: 'No models from this pool yet.' })],
    )
  }

  const copyBtn = $('copy-join') as HTMLButtonElement | null
  if (copyBtn) copyBtn.disabled = true
  $('mint-join')?.addEventListener('click', () => {
    svc.say('join-msg', 'Creating a join command…')
    void svc.api('POST', '/api/v1/bootstrap/join-sessions', { pool_id: poolId }).then((r) => {
      if (!r.ok) return svc.say('join-msg', missing(r.status) && r.status !== 403 ? 'Join commands are not available on this leader yet.' : (r.error ?? ''), 'error')
      const cmd = $('join-cmd')
      if (cmd) cmd.textContent = String(r.data.command ?? '')
      if (copyBtn) copyBtn.disabled = false
      const expiry = $('join-expiry')
      if (expiry) expiry.textContent = `Valid until ${svc.fmtTime(r.data.expires_at)}; it can be reused for several machines until then.`
      svc.say('join-msg', 'Join command created. Copy it and run it on the new machine.', 'ok')
      copyBtn?.focus()
    })
  })

  svc.poll(loadNodes, 3000)
  svc.poll(loadJobs, 5000)
  svc.poll(loadModels, 15000)
}
