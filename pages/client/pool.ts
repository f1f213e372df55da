// pool.js: the live parts of a pool page (machines, jobs, models, files) and the join command.
// Routes that are not there yet (or refuse) show "No data yet." instead of breaking the page.
import type { ApiResult } from './types'

export function poolClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const poolId = svc.data('pool-id')
  const q = encodeURIComponent(poolId)
  const emptyRow = (text: string, cols: number) => el('tr', {}, el('td', { colspan: cols, class: 'empty', text }))
  // 401/403/404 from a route this leader does not have yet is "nothing to show", not an error.
  const missing = (status: number) => status === 401 || status === 403 || status === 404
  const noData = (r: { status: number; error: string | null }) => (missing(r.status) ? t('common.noData') : t('common.loadFailed', { error: r.error ?? '' }))

  const gpuText = (g: any) =>
    t('pool.gpu', {
      name: g.name ?? 'GPU ' + g.index,
      free: svc.fmtNum((g.memory_free_mb ?? 0) / 1024, 1),
      total: svc.fmtNum((g.memory_total_mb ?? 0) / 1024, 1),
      busy: svc.fmtNum(g.utilization_pct),
    })

  // A machine without GPUs shows its CPU and memory instead of a dash.
  const cpuText = (n: any) =>
    n.cpu_pct === null || n.cpu_pct === undefined ? '—' : t('pool.cpuOnly', { cpu: svc.fmtNum(n.cpu_pct, 0), mem: svc.fmtNum((n.mem_free_mb ?? 0) / 1024, 1) })

  const nodeRow = (n: any) =>
    el(
      'tr',
      { 'data-key': n.fellow_id, 'data-fellow': n.fellow_id, 'data-state': n.state },
      el('td', {}, el('a', { href: '/fellows/' + encodeURIComponent(n.fellow_id) }, el('strong', { text: n.hostname ?? '—' })), el('br'), el('span', { class: 'muted mono', text: String(n.fellow_id ?? '').slice(0, 13) })),
      el('td', {}, svc.badge(String(n.state ?? 'unknown'))),
      el('td', {}, n.status ? svc.badge(String(n.status)) : '—', n.job_id ? el('div', {}, el('a', { href: '/jobs/' + encodeURIComponent(n.job_id), text: t('pool.theJob') })) : ''),
      el('td', {}, svc.fmtNum(n.step)),
      el('td', {}, svc.fmtNum(n.loss, 4)),
      el('td', {}, ...(Array.isArray(n.gpus) && n.gpus.length ? n.gpus.map((g: any) => el('div', { text: gpuText(g) })) : [cpuText(n)])),
      el('td', {}, svc.ago(n.last_seen_at)),
    )

  async function loadNodes() {
    const r = await svc.api('GET', `/api/v1/cluster/nodes?pool_id=${q}`)
    if (!r.ok) {
      svc.render($('nodes-summary'), 'none', () => [])
      return svc.render($('nodes-body'), { s: r.status }, () => [emptyRow(noData(r), 7)])
    }
    const items = ((r.data?.items ?? []) as any[]).filter((n) => n.pool_id === undefined || n.pool_id === poolId)
    // The submit form (pool-console.js) checks against the same list: this answer serves both
    // (each script polled it, 805 KB at 500 machines).
    document.dispatchEvent(new CustomEvent('svc:pool-nodes', { detail: items }))
    const online = items.filter((n) => n.state === 'online').length
    large = online > 0 && items.length > SMALL
    // Announced only when the count changes (render skips identical data).
    svc.render($('nodes-summary'), [online, items.length], () => [items.length ? t('pool.online', { n: items.length, online }) : ''])
    // Keyed by what a person sees (the relative "last seen", not its timestamp), and what changed
    // is updated in place: rebuilding the rows at every step took keyboard focus away.
    const shown = items.slice(0, nodeList.limit())
    const key = shown.map((n) => [n.fellow_id, n.state, n.status, n.step, n.loss, n.job_id, n.gpus, svc.fmtAgo(n.last_seen_at)])
    const empty = $('join-section') ? t('pool.noMachinesMember') : t('pool.noMachines')
    svc.update($('nodes-body'), key, () => (shown.length ? shown.map(nodeRow) : [emptyRow(empty, 7)]))
    nodeList.shown(shown.length, items.length)
  }
  // 50 rows at a time (the summary above counts them all): 500 machines drew 500 rows.
  const nodeList = svc.showMore($('nodes-body'), () => nodes.now())

  /** A job of the pool waits or runs: its lists are polled more often then. */
  const MOVING = ['queued', 'scheduled', 'running']
  let moving = false
  /** More than SMALL machines, some of them online: a heavy list, and no first machine awaited. */
  const SMALL = 50
  let large = false
  let lastJobs = ''
  // The newest 50 jobs, 50 more at a time: each poll asks for as many as are on show (the list
  // came whole, 500 at most, and older jobs could not be reached), following the list's cursor past
  // the 500 one answer holds.
  const jobList = svc.showMore($('jobs-body'), () => jobs?.now())
  async function fetchJobs(limit: number): Promise<{ r: ApiResult; items: any[]; more: boolean }> {
    const items: any[] = []
    let cursor: string | null = null
    for (;;) {
      const r: ApiResult = await svc.api('GET', `/api/v1/jobs?pool_id=${q}&page_size=${Math.min(500, limit - items.length)}` + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''))
      if (!r.ok) return { r, items, more: false }
      items.push(...((r.data?.items ?? []) as any[]))
      cursor = typeof r.data?.next_cursor === 'string' ? r.data.next_cursor : null
      if (cursor === null || items.length >= limit) return { r, items, more: cursor !== null }
    }
  }

  async function loadJobs() {
    const { r, items: all, more } = await fetchJobs(jobList.limit())
    if (!r.ok) return svc.render($('jobs-body'), { s: r.status }, () => [emptyRow(noData(r), 6)])
    const items = all.filter((j) => j.pool_id === undefined || j.pool_id === poolId)
    jobList.shown(items.length, null, more)
    moving = items.some((j) => MOVING.includes(j.status))
    // Updated in place: the step and loss change every few seconds, and a rebuilt row took the
    // focus off its link.
    svc.update($('jobs-body'), items, () =>
      items.length
        ? items.map((j) =>
            el(
              'tr',
              { 'data-key': j.id, 'data-job': j.id, 'data-status': j.status },
              el('td', {}, el('a', { href: '/jobs/' + encodeURIComponent(j.id), text: j.name ?? j.id })),
              el('td', {}, svc.badge(String(j.status ?? 'unknown')), j.reason ? el('div', { class: 'reason', lang: 'en', text: j.reason }) : ''),
              el('td', {}, svc.fmtNum(j.stages)),
              el('td', {}, svc.fmtNum(j.step)),
              el('td', {}, svc.fmtNum(j.loss, 4)),
              el('td', {}, svc.fmtTime(j.updated_at)),
            ),
          )
        : [emptyRow(t('pool.noJobs'), 6)],
    )
    // A job that changed moved its machines too: refresh them now rather than on their own beat.
    const sig = JSON.stringify(items.map((j) => [j.id, j.status, j.assignments]))
    if (sig !== lastJobs && lastJobs !== '') nodes.now()
    lastJobs = sig
  }

  async function loadModels() {
    const r = await svc.api('GET', `/api/v1/servables?pool_id=${q}`)
    if (!r.ok) return svc.render($('models'), { s: r.status }, () => [el('p', { class: 'empty', text: noData(r) })])
    const items = ((r.data?.items ?? []) as any[]).filter((m) => m.pool_id === poolId)
    svc.update($('models'), items, () =>
      items.length
        ? [el('ul', {}, ...items.map((m) => el('li', { 'data-key': m.name + ' ' + (m.version ?? '') }, el('strong', { text: m.name }), m.version ? ' ' + t('pool.version', { version: m.version }) : '')))]
        : [el('p', { class: 'empty', text: t('pool.noModels') })],
    )
  }

  // The pool's files: a download link each; its owner (or an admin) may delete one.
  const canManage = svc.data('can-manage') === '1'
  async function loadFiles() {
    const r = await svc.api('GET', `/api/v1/artifacts?pool_id=${q}`)
    if (!r.ok) return svc.render($('files-body'), { s: r.status }, () => [emptyRow(noData(r), 7)])
    const items = (r.data?.items ?? []) as any[]
    // Updated in place: a rebuilt table took the keyboard focus off its links and buttons.
    svc.update($('files-body'), items, () =>
      items.length
        ? items.map((x) =>
            el(
              'tr',
              { 'data-artifact': x.id, 'data-key': x.id },
              el('td', {}, svc.artifactLink(x)),
              el('td', { text: t('artifact.' + x.kind) }),
              el('td', { text: svc.fmtBytes(x.size_bytes) }),
              el('td', {}, x.job_id ? el('a', { href: '/jobs/' + encodeURIComponent(x.job_id), text: x.stage === null ? t('files.job') : t('files.jobStage', { stage: x.stage }) }) : '—'),
              el('td', { class: 'mono', text: x.id }),
              el('td', { text: svc.fmtTime(x.created_at) }),
              el('td', {}, canManage ? el('button', { type: 'button', class: 'secondary', 'data-delete-artifact': x.id, 'data-name': x.name, 'aria-label': t('files.deleteLabel', { name: x.name }), text: t('files.delete') }) : ''),
            ),
          )
        : [emptyRow(t('pool.noFiles'), 7)],
    )
  }
  $('files-body')?.addEventListener('click', (ev) => {
    const b = (ev.target as HTMLElement).closest('button[data-delete-artifact]') as HTMLButtonElement | null
    if (!b) return
    const name = b.dataset.name ?? ''
    if (!confirm(t('files.confirmDelete', { name }))) return
    // aria-disabled while it is sent (disabled took the keyboard focus off it), and the focus on
    // what happened once the file is gone: its row and button go with it (it fell to the page).
    void svc.exclusive(b, async () => {
      const r = await svc.api('DELETE', '/api/v1/artifacts/' + encodeURIComponent(b.dataset.deleteArtifact ?? ''))
      if (!r.ok) return svc.say('files-msg', r.error ?? '', 'error')
      svc.say('files-msg', t('files.deleted', { name }), 'ok')
      svc.focus('files-msg')
      files?.now()
    })
  })

  const copyBtn = $('copy-join') as HTMLButtonElement | null
  if (copyBtn) copyBtn.disabled = true
  $('mint-join')?.addEventListener('click', (e) => void svc.exclusive(e.currentTarget as Element, async () => {
    svc.say('join-msg', t('join.creating'))
    await svc.api('POST', '/api/v1/bootstrap/join-sessions', { pool_id: poolId }).then((r) => {
      if (!r.ok) return svc.say('join-msg', missing(r.status) && r.status !== 403 ? t('join.unavailable') : (r.error ?? ''), 'error')
      const cmd = $('join-cmd')
      if (cmd) cmd.textContent = String(r.data.command ?? '')
      if (copyBtn) copyBtn.disabled = false
      const expiry = $('join-expiry')
      if (expiry) expiry.textContent = t('join.validReusable', { time: svc.fmtTime(r.data.expires_at) })
      svc.say('join-msg', t('join.created'), 'ok')
      copyBtn?.focus()
    })
  }))

  // Every 3 s while a job of the pool waits or runs (its steps and machines move). Otherwise the
  // jobs every 15 s, and the machines of a pool of more than 50 every 10 s (a list of 500 is
  // 805 KB, and an idle page fetched it 26 times a minute); a small pool's stay at 3 s, as does
  // one with no machine online (one being added should show up soon).
  const nodes = svc.poll(loadNodes, () => (moving || !large ? 3000 : 10_000))
  const jobs = $('jobs-body') ? svc.poll(loadJobs, () => (moving ? 3000 : 15_000)) : null
  document.addEventListener('svc:jobs-changed', () => jobs?.now())
  if ($('models')) svc.poll(loadModels, 15000)
  const files = $('files-body') ? svc.poll(loadFiles, 15000) : null
  document.addEventListener('svc:files-changed', () => files?.now())
}
