// fellow.js: one machine, polled: facts, its GPUs and engines, CPU/memory (and GPU) charts over a chosen
// period from /api/v1/workers/{id}/telemetry, its log tail, release and remove for those allowed.
import type {} from './types'

export function fellowClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const fellowId = svc.data('fellow-id')
  const path = '/api/v1/workers/' + encodeURIComponent(fellowId)
  const set = (id: string, ...children: (Node | string)[]) => {
    const node = $(id)
    if (node) node.replaceChildren(...children)
  }
  const gib = (mb: number) => svc.fmtNum(mb / 1024, 1) + ' GiB'
  const inGib = (n: number) => svc.fmtNum(n, 1) + ' GiB'
  const toGib = (mb: number | null) => (mb === null ? null : Math.round((mb / 1024) * 100) / 100)
  const SPAN: Record<string, number> = { '1h': 3600, '1d': 86400, '30d': 30 * 86400 }
  const pct = (n: number) => svc.fmtNum(n, 1) + ' %'
  let hasGpus: boolean | null = null
  let charts: { a: ReturnType<typeof window.svcConsole.chart>; b: ReturnType<typeof window.svcConsole.chart> } | null = null
  let tail: ReturnType<typeof window.svcConsole.logTail> | null = null
  let poolChecked = ''

  function makeCharts(gpus: boolean) {
    const a = $('chart-a')!
    const b = $('chart-b')!
    const c = window.svcConsole
    charts = gpus
      ? {
          a: c.chart(a, t('fellow.chartUtil'), [
            { label: t('fellow.gpuUtil'), color: 'blue', fmt: pct },
            { label: t('fellow.cpu'), color: 'green', fmt: pct },
            { label: t('fellow.gpuTemp'), color: 'red', scale: 'temp', fmt: (n) => svc.fmtNum(n, 0) + ' °C' },
          ]),
          b: c.chart(b, t('fellow.chartVram'), [
            { label: t('fellow.vramUsed'), color: 'purple', fmt: inGib },
            { label: t('fellow.memFree'), color: 'orange', fmt: inGib },
          ]),
        }
      : {
          a: c.chart(a, t('fellow.chartCpu'), [{ label: t('fellow.cpu'), color: 'green', fmt: pct }]),
          b: c.chart(b, t('fellow.chartMem'), [
            { label: t('fellow.memUsed'), color: 'purple', fmt: inGib },
            { label: t('fellow.memFree'), color: 'orange', fmt: inGib },
          ]),
        }
  }

  async function loadTelemetry() {
    if (!charts) return
    const range = ($('usage-range') as HTMLSelectElement).value
    const r = await svc.api('GET', path + '/telemetry?range=' + encodeURIComponent(range))
    // The range changed while this was under way: the load the change asked for draws the charts.
    if (!r.ok || range !== ($('usage-range') as HTMLSelectElement).value) return
    const pts = r.data.points as any[]
    const xs = pts.map((p) => Date.parse(p.ts) / 1000)
    const used = (free: number | null, total: number | null) => (free !== null && total !== null ? toGib(Math.max(0, total - free)) : null)
    const now = Date.now() / 1000
    const period: [number, number] = [now - (SPAN[range] ?? 3600), now]
    if (hasGpus) {
      charts.a.set(xs, [pts.map((p) => p.gpu_util_pct), pts.map((p) => p.cpu_pct), pts.map((p) => p.gpu_temp_c)], period)
      charts.b.set(xs, [pts.map((p) => used(p.gpu_free_mb, p.gpu_total_mb)), pts.map((p) => toGib(p.mem_free_mb))], period)
    } else {
      charts.a.set(xs, [pts.map((p) => p.cpu_pct)], period)
      charts.b.set(xs, [pts.map((p) => used(p.mem_free_mb, p.mem_total_mb)), pts.map((p) => toGib(p.mem_free_mb))], period)
    }
  }

  // A failed load's message ("could not be reached") goes once a later load succeeds; it stayed.
  let loadFailed = false
  async function load() {
    const r = await svc.api('GET', path)
    if (!r.ok) {
      svc.say('fellow-msg', r.status === 404 ? t('fellow.notFound') : (r.error ?? ''), 'error')
      loadFailed = true
      const body = $('fellow-body')
      if (body) body.hidden = r.status === 404
      return
    }
    if (loadFailed) {
      loadFailed = false
      svc.say('fellow-msg', '')
      const body = $('fellow-body')
      if (body) body.hidden = false
    }
    const n = r.data
    svc.render($('fellow-name'), [n.hostname], () => [n.hostname])
    document.title = `${n.hostname} · svc leader`
    svc.render($('fellow-state'), [n.state], () => [svc.badge(n.state)])
    svc.render($('fellow-status'), [n.status], () => [n.status ? svc.badge(n.status) : '—'])
    // In place: the link's text follows the step, the link stays (and keeps focus).
    svc.update($('fellow-job'), [n.job_id, n.step], () => [n.job_id ? el('a', { href: '/jobs/' + encodeURIComponent(n.job_id), text: t('fellow.jobAt', { step: svc.fmtNum(n.step) }) }) : t('fellow.noJob')])
    svc.render($('fellow-last-seen'), [svc.fmtAgo(n.last_seen_at)], () => [svc.ago(n.last_seen_at)])
    set('fellow-registered', svc.fmtTime(n.registered_at))
    set('fellow-cpu', n.cpu_pct === null ? '—' : pct(n.cpu_pct))
    set('fellow-mem', n.mem_free_mb === null ? '—' : n.mem_total_mb ? t('fellow.memOf', { free: gib(n.mem_free_mb), total: gib(n.mem_total_mb) }) : gib(n.mem_free_mb))
    set('fellow-runners', (n.runners as string[]).join(', ') || '—')
    set('fellow-models', (n.servables as string[]).join(', ') || t('fellow.noModels'))
    const gpus = n.gpus as any[]
    const card = $('gpus-card')
    if (card) card.hidden = gpus.length === 0
    svc.render($('gpus-body'), gpus, () =>
      gpus.map((g) =>
        el(
          'tr',
          {},
          el('td', { text: `${g.index}: ${g.name}` }),
          el('td', { text: t('fellow.vramOf', { used: gib(g.memory_total_mb - g.memory_free_mb), total: gib(g.memory_total_mb) }) }),
          el('td', { text: pct(g.utilization_pct) }),
          el('td', { text: typeof g.temperature_c === 'number' ? svc.fmtNum(g.temperature_c, 0) + ' °C' : '—' }),
        ),
      ),
    )
    const engines = (n.engines ?? []) as { name: string; model: string; healthy: boolean }[]
    const enginesCard = $('engines-card')
    if (enginesCard) enginesCard.hidden = engines.length === 0
    svc.render($('engines-body'), engines, () =>
      engines.map((e) =>
        el('tr', { 'data-engine': e.name }, el('td', { text: e.name }), el('td', { text: e.model }), el('td', {}, svc.badge(e.healthy ? 'healthy' : 'unhealthy'))),
      ),
    )
    if (hasGpus !== gpus.length > 0) {
      hasGpus = gpus.length > 0
      makeCharts(hasGpus)
      void loadTelemetry()
    }
    tail ??= window.svcConsole.logTail($('fellow-log')!, [{ id: n.fellow_id, name: n.hostname }])
    if (n.pool_id && poolChecked !== n.pool_id) {
      poolChecked = n.pool_id
      const p = await svc.api('GET', '/api/v1/pools/' + encodeURIComponent(n.pool_id))
      const name = p.ok ? p.data.name : n.pool_id
      set('fellow-pool', el('a', { href: '/pools/' + encodeURIComponent(n.pool_id), text: name }))
      set('fellow-pool-crumb', el('a', { href: '/pools/' + encodeURIComponent(n.pool_id), text: name }))
      const allowed = svc.data('admin') === '1' || n.owner_user_id === svc.data('user-id') || (p.ok && p.data.my_role === 'owner')
      const manage = $('manage-card')
      if (manage) manage.hidden = !allowed
    }
    const release = $('fellow-release') as HTMLButtonElement | null
    if (release) release.disabled = n.state === 'released'
  }

  $('fellow-release')?.addEventListener('click', (e) => {
    void svc.exclusive(e.currentTarget as Element, async () => {
      if (!confirm(t('fellow.confirmRelease'))) return
      const r = await svc.api('POST', '/api/v1/workers/release', { fellow_id: fellowId })
      svc.say('manage-msg', r.ok ? t('fellow.released') : (r.error ?? ''), r.ok ? 'ok' : 'error')
      // A released machine's button goes off, which took the keyboard focus to the page: it goes
      // to what happened.
      if (r.ok) svc.focus('manage-msg')
      facts.now()
    })
  })
  $('fellow-remove')?.addEventListener('click', (e) => {
    void svc.exclusive(e.currentTarget as Element, async () => {
      if (!confirm(t('fellow.confirmRemove'))) return
      const r = await svc.api('DELETE', path)
      if (!r.ok) return svc.say('manage-msg', r.error ?? '', 'error')
      location.href = poolChecked ? '/pools/' + encodeURIComponent(poolChecked) : '/dashboard'
    })
  })

  const facts = svc.poll(load, 3000)
  const usage = svc.poll(loadTelemetry, 15000)
  $('usage-range')?.addEventListener('change', () => usage.now())
}
