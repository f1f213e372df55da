// pool-console.js: the pool page's training console: submit a job (checked here first: a clear
// message beside the field and nothing sent when the JSON is bad, the stages outnumber the pool's
// machines or nobody offers the runner), the pending reason while it waits, and the fleet chart
// (machines online, VRAM) from /api/v1/pools/{id}/telemetry.
import type {} from './types'

export function poolConsoleClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const poolId = svc.data('pool-id')
  const q = encodeURIComponent(poolId)
  const form = $('submit-job') as HTMLFormElement | null

  // null until the first answer: a form sent before it asks first (it said "no machines"). The
  // answers are the machine table's (pool.js polls the list and passes each one on): this script
  // polled the same list on its own.
  let machines: any[] | null = null
  function takeMachines(items: any[]) {
    machines = items.filter((n) => n.state !== 'released')
    const offered = [...new Set(['mlp', ...machines.flatMap((n) => (n.runners as string[]) ?? [])])].sort()
    svc.render($('job-runner-options'), offered, () => offered.map((name) => el('option', { value: name })))
  }
  document.addEventListener('svc:pool-nodes', (e) => takeMachines((e as CustomEvent<any[]>).detail))
  async function loadMachines() {
    const r = await svc.api('GET', `/api/v1/cluster/nodes?pool_id=${q}`)
    if (r.ok) takeMachines(r.data.items as any[])
  }

  const fieldError = svc.fieldError

  /** The body to submit, or null after saying beside each bad field what is wrong. */
  function check(): Record<string, unknown> | null {
    const name = ($('job-name-input') as HTMLInputElement).value.trim()
    const runner = ($('job-runner-input') as HTMLInputElement).value.trim()
    const stagesText = ($('job-stages-input') as HTMLInputElement).value.trim()
    const vramText = ($('job-vram-input') as HTMLInputElement).value.trim()
    const configText = ($('job-config-input') as HTMLTextAreaElement).value.trim()
    const stages = Number(stagesText)
    const vram = vramText === '' ? 0 : Number(vramText)
    const known = machines ?? []
    const offering = known.filter((n) => ((n.runners as string[]) ?? ['mlp']).includes(runner)).length
    let config: unknown = undefined
    let configError = ''
    if (configText !== '') {
      try {
        config = JSON.parse(configText)
        if (config === null || typeof config !== 'object' || Array.isArray(config)) configError = t('submit.configNotObject')
      } catch (e) {
        configError = t('submit.configInvalid', { error: e instanceof Error ? e.message : String(e) })
      }
    }
    const ok = [
      fieldError('job-name-input', name === '' ? t('submit.nameMissing') : ''),
      fieldError(
        'job-runner-input',
        runner === '' ? t('submit.runnerMissing') : !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(runner) ? t('submit.runnerName') : runner !== 'mlp' && machines !== null && offering === 0 ? t('submit.runnerNobody', { runner }) : '',
      ),
      fieldError(
        'job-stages-input',
        !Number.isInteger(stages) || stages < 1 || stages > 64
          ? t('submit.stagesRange')
          : machines === null
            ? ''
            : known.length === 0
              ? t('submit.noMachines')
              : stages > known.length
                ? t('submit.stagesOver', { n: known.length, stages })
                : '',
      ),
      fieldError('job-vram-input', !Number.isInteger(vram) || vram < 0 ? t('submit.vramRange') : ''),
      fieldError('job-config-input', configError),
    ].every(Boolean)
    if (!ok) return null
    const body: Record<string, unknown> = { name, pool_id: poolId, stages, runner }
    if (vram > 0) body.min_free_vram_mb = vram
    if (config !== undefined) body.config = config
    return body
  }

  // What the leader refused, beside the field it concerns (a setting of the config: beside the
  // config, naming the setting), as the form's own checks do.
  const FIELD_OF: Record<string, string> = { name: 'job-name-input', runner: 'job-runner-input', stages: 'job-stages-input', min_free_vram_mb: 'job-vram-input', config: 'job-config-input' }
  function placeErrors(errors: unknown): boolean {
    if (!Array.isArray(errors)) return false
    let placed = false
    for (const e of errors as { path?: unknown; message?: unknown }[]) {
      const path = typeof e.path === 'string' ? e.path.split('/').filter(Boolean) : []
      const id = FIELD_OF[path[0] ?? '']
      if (!id || typeof e.message !== 'string') continue
      fieldError(id, path.length > 1 ? `${path.slice(1).join('.')}: ${e.message}` : e.message)
      placed = true
    }
    return placed
  }

  let submitted: string | null = null
  // One submit at a time: a double click sent two jobs.
  svc.onSubmit(form, async (form) => {
    if (machines === null) await loadMachines()
    const body = check()
    if (!body) {
      svc.say('submit-msg', t('submit.fix'), 'error')
      ;(form.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus()
      return
    }
    svc.say('submit-msg', t('submit.sending'))
    const r = await svc.api('POST', '/api/v1/jobs', body)
    if (!r.ok && placeErrors(r.data?.errors)) {
      svc.say('submit-msg', t('submit.fix'), 'error')
      ;(form.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus()
      return
    }
    if (!r.ok) return svc.say('submit-msg', r.error ?? '', 'error')
    submitted = r.data.id
    form.reset()
    announce(r.data)
    // The job list (pool.js) shows it now, not at its next slow beat.
    document.dispatchEvent(new CustomEvent('svc:jobs-changed'))
  })

  function announce(j: any) {
    const msg = $('submit-msg')
    if (!msg) return
    // The leader's reason (English) inside the page's sentence is marked lang="en".
    const [before = '', after = ''] = t('submit.waiting', { reason: '\u0000' }).split('\u0000')
    const said = j.status === 'queued' ? [before, j.reason ? el('span', { lang: 'en', text: j.reason }) : t('submit.noReason'), after] : [t('submit.placed', { status: t('state.' + j.status) })]
    svc.render(msg, [j.id, j.status, j.reason], () => [t('submit.done', { name: j.name }) + ' ', ...said, ' ', el('a', { href: '/jobs/' + encodeURIComponent(j.id), text: t('submit.open') })])
    msg.className = 'notice ok'
    msg.setAttribute('role', 'status')
  }

  async function followSubmitted() {
    if (!submitted) return
    const r = await svc.api('GET', '/api/v1/jobs/' + encodeURIComponent(submitted))
    if (r.ok) announce(r.data)
  }

  // The fleet: machines online and VRAM, per minute (or quarter hour) over the chosen period.
  const onlineChart = $('fleet-online') ? window.svcConsole.chart($('fleet-online')!, t('fleet.onlineTitle'), [{ label: t('fleet.online'), color: 'green', fmt: (n) => svc.fmtNum(n) }], { height: 160 }) : null
  const vramChart = $('fleet-vram')
    ? window.svcConsole.chart($('fleet-vram')!, t('fleet.vramTitle'), [
        { label: t('fleet.vramFree'), color: 'blue', fmt: (n) => svc.fmtNum(n, 1) + ' GiB' },
        { label: t('fleet.vramTotal'), color: 'purple', fmt: (n) => svc.fmtNum(n, 1) + ' GiB' },
      ], { height: 160 })
    : null
  async function loadFleet() {
    if (!onlineChart || !vramChart) return
    const range = ($('fleet-range') as HTMLSelectElement).value
    const r = await svc.api('GET', `/api/v1/pools/${q}/telemetry?range=${encodeURIComponent(range)}`)
    // The range changed while this was under way: the load the change asked for draws the chart.
    if (!r.ok || range !== ($('fleet-range') as HTMLSelectElement).value) return
    const pts = r.data.points as any[]
    const xs = pts.map((p) => Date.parse(p.ts) / 1000)
    const now = Date.now() / 1000
    const period: [number, number] = [now - ({ '1h': 3600, '1d': 86400, '30d': 30 * 86400 } as Record<string, number>)[range]!, now]
    const gib = (mb: number) => Math.round((mb / 1024) * 100) / 100
    onlineChart.set(xs, [pts.map((p) => p.online)], period)
    vramChart.set(xs, [pts.map((p) => gib(p.vram_free_mb)), pts.map((p) => gib(p.vram_total_mb))], period)
  }
  if (form) svc.poll(followSubmitted, 3000)
  const fleet = svc.poll(loadFleet, 30000)
  $('fleet-range')?.addEventListener('change', () => fleet.now())
}
