// job.js: one job, polled: status with its reason (why it waits, why it failed), stages and the
// machines running them, and cancel while it is not finished.
import type {} from './types'

export function jobClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const jobId = svc.data('job-id')
  const path = '/api/v1/jobs/' + encodeURIComponent(jobId)
  const TERMINAL = ['completed', 'failed', 'cancelled']
  const set = (id: string, ...children: (Node | string)[]) => {
    const node = $(id)
    if (node) node.replaceChildren(...children)
  }

  async function load() {
    const r = await svc.api('GET', path)
    if (!r.ok) {
      svc.say('job-msg', r.status === 404 ? t('job.notFound') : (r.error ?? ''), 'error')
      const facts = $('job-facts')
      if (facts) facts.hidden = r.status === 404
      return
    }
    const j = r.data
    const [nodes, pool] = await Promise.all([svc.api('GET', '/api/v1/cluster/nodes?pool_id=' + encodeURIComponent(j.pool_id)), svc.api('GET', '/api/v1/pools/' + encodeURIComponent(j.pool_id))])
    const byId = new Map<string, any>(nodes.ok ? (nodes.data.items as any[]).map((n) => [n.fellow_id, n]) : [])
    svc.render($('job-name'), [j.name], () => [j.name])
    document.title = `${j.name} · svc leader`
    svc.render($('job-status'), [j.status], () => [svc.badge(j.status)])
    svc.render($('job-reason'), [j.reason, j.status], () => [j.reason ?? (j.status === 'failed' ? t('job.noReason') : '—')])
    const poolName = pool.ok ? pool.data.name : j.pool_id
    svc.render($('job-pool'), [poolName], () => [el('a', { href: '/pools/' + encodeURIComponent(j.pool_id), text: poolName })])
    set('job-runner', j.runner)
    set('job-step', svc.fmtNum(j.step))
    set('job-loss', svc.fmtNum(j.loss, 4))
    set('job-created', svc.fmtTime(j.created_at))
    set('job-updated', svc.fmtTime(j.updated_at))
    const rows = Array.from({ length: j.stages }, (_, stage) => {
      const a = (j.assignments as any[]).find((x) => x.stage === stage)
      const n = a ? byId.get(a.fellow_id) : undefined
      return { stage, fellow: a?.fellow_id ?? null, host: n?.hostname ?? null, state: n?.state ?? null }
    })
    svc.render($('stages-body'), rows, () =>
      rows.map((s) =>
        el(
          'tr',
          {},
          el('td', { text: String(s.stage) }),
          el('td', {}, s.fellow ? el('span', {}, el('strong', { text: s.host ?? '—' }), ' ', el('span', { class: 'muted mono', text: s.fellow.slice(0, 13) })) : el('span', { class: 'empty', text: t('job.unassigned') })),
          el('td', {}, s.state ? svc.badge(s.state) : '—'),
        ),
      ),
    )
    const cancel = $('job-cancel')
    if (cancel) cancel.hidden = TERMINAL.includes(j.status)
  }

  $('job-cancel')?.addEventListener('click', () => {
    if (!confirm(t('job.confirmCancel'))) return
    void svc.api('DELETE', path).then((r) => {
      svc.say('job-msg', r.ok ? t('job.cancelled') : (r.error ?? ''), r.ok ? 'ok' : 'error')
      job.now()
    })
  })

  const job = svc.poll(load, 3000)
}
