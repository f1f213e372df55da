// job.js: one job, polled: status with its reason (why it waits, why it failed), stages and the
// machines running them, the transport; the loss and throughput chart and the step progress from
// the metrics stream (SSE through svc.stream: closed while the tab is hidden, then resumed with
// Last-Event-ID); pause, resume, checkpoint and cancel, each after a confirmation, for those who
// may steer the job; its checkpoints and artifacts; the log tail of one of its machines at a time.
import type {} from './types'

export function jobClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const jobId = svc.data('job-id')
  const path = '/api/v1/jobs/' + encodeURIComponent(jobId)
  const TERMINAL = ['completed', 'failed', 'cancelled']
  const ACTIVE = ['scheduled', 'running', 'paused']
  const set = (id: string, ...children: (Node | string)[]) => {
    const node = $(id)
    if (node) node.replaceChildren(...children)
  }
  const show = (id: string, on: boolean) => {
    const node = $(id)
    if (node) node.hidden = !on
  }
  /** The step budget: config.steps, or the built-in runner's default of 200. */
  const budgetOf = (j: any): number | null => (typeof j.config?.steps === 'number' ? j.config.steps : j.runner === 'mlp' ? 200 : null)

  let job: any = null
  const chart = window.svcConsole.chart($('job-chart')!, t('job.chart'), [
    { label: t('job.loss'), color: 'blue', fmt: (n) => svc.fmtNum(n, 4) },
    { label: t('job.throughput'), color: 'orange', scale: 'tp', fmt: (n) => t('job.perSecond', { n: svc.fmtNum(n, 1) }) },
  ])
  // Metric events: x = time; loss from the stage that reports it, throughput from any stage.
  const xs: number[] = []
  const loss: (number | null)[] = []
  const tput: (number | null)[] = []
  const steps: { at: number; step: number }[] = []
  let drawTimer: ReturnType<typeof setTimeout> | undefined
  const draw = () => {
    drawTimer ??= setTimeout(() => {
      drawTimer = undefined
      chart.set(xs.slice(), [loss.slice(), tput.slice()])
      progress()
    }, 150)
  }

  function progress() {
    if (!job) return
    const budget = budgetOf(job)
    const step = Math.max(job.step ?? 0, steps.length ? steps[steps.length - 1]!.step : 0)
    const bar = $('job-progress') as HTMLProgressElement | null
    show('job-progress-box', budget !== null)
    if (budget === null) return set('job-progress-text', t('job.stepNoBudget', { step: svc.fmtNum(step) }))
    if (bar) {
      bar.max = budget
      bar.value = Math.min(step, budget)
    }
    let eta = ''
    // The rate over the last events (at most 50): steps per second while it ran.
    const recent = steps.slice(-50)
    if (job.status === 'running' && recent.length >= 2) {
      const a = recent[0]!
      const b = recent[recent.length - 1]!
      const rate = (b.step - a.step) / Math.max(0.001, b.at - a.at)
      if (rate > 0 && step < budget) eta = ' ' + t('job.eta', { time: fmtDuration((budget - step) / rate) })
    }
    set('job-progress-text', t('job.stepOf', { step: svc.fmtNum(step), budget: svc.fmtNum(budget), pct: svc.fmtNum((100 * Math.min(step, budget)) / budget, 0) }) + eta)
  }

  function fmtDuration(s: number): string {
    if (s < 60) return t('job.seconds', { n: Math.max(1, Math.round(s)) })
    if (s < 3600) return t('job.minutes', { n: Math.round(s / 60) })
    return t('job.hours', { n: Math.round(s / 360) / 10 })
  }

  // The stream ends with the job (`end`): no reconnecting to a finished one.
  svc.stream(path + '/metrics/stream', { metrics: (raw) => {
    let d: any
    try {
      d = JSON.parse(raw)
    } catch {
      return
    }
    const at = Date.parse(d.ts) / 1000
    if (typeof d.step === 'number') steps.push({ at, step: d.step })
    if (typeof d.loss !== 'number' && typeof d.throughput !== 'number') return
    xs.push(at)
    loss.push(typeof d.loss === 'number' ? d.loss : null)
    tput.push(typeof d.throughput === 'number' ? d.throughput : null)
    if (xs.length > 2000) for (const a of [xs, loss, tput]) a.splice(0, a.length - 2000)
    draw()
  } })

  let tail: ReturnType<typeof window.svcConsole.logTail> | null = null
  /** The steering button last used with success, until a load hides it. */
  let steered: HTMLElement | null = null

  // A failed load's message ("could not be reached") goes once a later load succeeds; it stayed.
  let loadFailed = false
  async function load() {
    const r = await svc.api('GET', path)
    if (!r.ok) {
      svc.say('job-msg', r.status === 404 ? t('job.notFound') : (r.error ?? ''), 'error')
      loadFailed = true
      const facts = $('job-facts')
      if (facts) facts.hidden = r.status === 404
      return
    }
    if (loadFailed) {
      loadFailed = false
      svc.say('job-msg', '')
      const facts = $('job-facts')
      if (facts) facts.hidden = false
    }
    const j = (job = r.data)
    const [nodes, pool, arts] = await Promise.all([
      svc.api('GET', '/api/v1/cluster/nodes?pool_id=' + encodeURIComponent(j.pool_id)),
      svc.api('GET', '/api/v1/pools/' + encodeURIComponent(j.pool_id)),
      svc.api('GET', '/api/v1/artifacts?job_id=' + encodeURIComponent(j.id)),
    ])
    // Steering is for the job's creator, the pool's owner and admins (the rule of JobService's
    // steerable); other members only look, and were shown buttons that answered 403.
    const mayControl = svc.data('admin') === '1' || (j.created_by !== null && j.created_by === svc.data('user-id')) || (pool.ok && pool.data.my_role === 'owner')
    show('steer-card', mayControl)
    const byId = new Map<string, any>(nodes.ok ? (nodes.data.items as any[]).map((n) => [n.fellow_id, n]) : [])
    svc.render($('job-name'), [j.name], () => [j.name])
    document.title = `${j.name} · svc leader`
    svc.render($('job-status'), [j.status], () => [svc.badge(j.status)])
    // The reason is the leader's (or a runner's) English: marked so, on a German page too.
    svc.render($('job-reason'), [j.reason, j.status], () => [j.reason ? el('span', { lang: 'en', text: j.reason }) : j.status === 'failed' ? t('job.noReason') : '—'])
    const poolName = pool.ok ? pool.data.name : j.pool_id
    svc.render($('job-pool'), [poolName], () => [el('a', { href: '/pools/' + encodeURIComponent(j.pool_id), text: poolName })])
    svc.render($('job-pool-crumb'), [poolName], () => [el('a', { href: '/pools/' + encodeURIComponent(j.pool_id), text: poolName })])
    set('job-runner', j.runner)
    set('job-transport', j.transport ? t('job.transport.' + j.transport) : t('job.transportNone'))
    set('job-step', svc.fmtNum(j.step))
    set('job-loss', svc.fmtNum(j.loss, 4))
    set('job-created', svc.fmtTime(j.created_at))
    set('job-updated', svc.fmtTime(j.updated_at))
    const rows = Array.from({ length: j.stages }, (_, stage) => {
      const a = (j.assignments as any[]).find((x) => x.stage === stage)
      const n = a ? byId.get(a.fellow_id) : undefined
      return { stage, fellow: a?.fellow_id ?? null, host: n?.hostname ?? null, state: n?.state ?? null }
    })
    // Updated in place, as the artifacts below: a rebuilt table took the keyboard focus off its links.
    svc.update($('stages-body'), rows, () =>
      rows.map((s) =>
        el(
          'tr',
          { 'data-stage': s.stage, 'data-key': String(s.stage) },
          el('td', { text: String(s.stage) }),
          el(
            'td',
            {},
            s.fellow
              ? el('span', {}, el('a', { href: '/fellows/' + encodeURIComponent(s.fellow) }, el('strong', { text: s.host ?? '—' })), ' ', el('span', { class: 'muted mono', text: s.fellow.slice(0, 13) }))
              : el('span', { class: 'empty', text: t('job.unassigned') }),
          ),
          el('td', {}, s.state ? svc.badge(s.state) : '—'),
        ),
      ),
    )
    const items = arts.ok ? (arts.data.items as any[]) : []
    svc.update($('artifacts-body'), [arts.ok, items], () =>
      items.length
        ? items.map((x) =>
            el(
              'tr',
              { 'data-artifact': x.id, 'data-key': x.id },
              el('td', {}, svc.artifactLink(x)),
              el('td', { text: t('artifact.' + x.kind) }),
              el('td', { text: x.stage === null ? '—' : String(x.stage) }),
              el('td', { text: svc.fmtNum(x.step) }),
              el('td', { text: svc.fmtBytes(x.size_bytes) }),
              el('td', { text: svc.fmtTime(x.created_at) }),
            ),
          )
        : [el('tr', {}, el('td', { colspan: 6, class: 'empty', text: arts.ok ? t('job.noArtifacts') : t('common.noData') }))],
    )
    show('job-pause', mayControl && (j.status === 'running' || j.status === 'scheduled'))
    show('job-resume', mayControl && j.status === 'paused')
    show('job-checkpoint', mayControl && ACTIVE.includes(j.status))
    show('job-cancel', mayControl && !TERMINAL.includes(j.status))
    // Paused or resumed: the button pressed is hidden now and the other shown; the focus goes to it
    // (it fell to the page), or to what happened when no steering button is left (cancelled).
    if (steered && steered.hidden) {
      const from = steered
      steered = null
      if (document.activeElement === from || document.activeElement === document.body || document.activeElement === null) {
        const to = [from.id === 'job-pause' ? 'job-resume' : 'job-pause', 'job-checkpoint', 'job-cancel'].map((id) => $(id)).find((b) => b && !b.hidden)
        svc.focus(to ?? 'job-msg')
      }
    }
    const sources = rows.filter((s) => s.fellow).map((s) => ({ id: s.fellow as string, name: s.host ?? (s.fellow as string).slice(0, 8) }))
    if (!tail) tail = window.svcConsole.logTail($('job-log')!, sources)
    else tail.add(sources)
    progress()
  }

  const steer = (id: string, confirmKey: string, method: string, suffix: string, doneKey: string) =>
    $(id)?.addEventListener('click', (e) => {
      const button = e.currentTarget as HTMLElement
      void svc.exclusive(button, async () => {
        if (!confirm(t(confirmKey))) return
        const r = await svc.api(method, path + suffix)
        loadFailed = false
        svc.say('job-msg', r.ok ? t(doneKey) : (r.error ?? ''), r.ok ? 'ok' : 'error')
        if (r.ok) steered = button
        poll.now()
      })
    })
  steer('job-pause', 'job.confirmPause', 'POST', '/pause', 'job.paused')
  steer('job-resume', 'job.confirmResume', 'POST', '/resume', 'job.resumed')
  steer('job-checkpoint', 'job.confirmCheckpoint', 'POST', '/checkpoint', 'job.checkpointAsked')
  steer('job-cancel', 'job.confirmCancel', 'DELETE', '', 'job.cancelled')

  const poll = svc.poll(load, 3000)
}
