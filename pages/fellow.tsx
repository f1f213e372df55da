// /fellows/{id}: one machine: its state, current job, GPUs (or CPU and memory) as charts over the
// last hour or day, the engines it offers (name, model, healthy now) and its runners, its log tail,
// release and remove.
// The facts come from /api/v1/workers/{id} (fellow.js), which also decides who may see it.
import { Layout, Notice, Table, type PageCtx } from './layout'
import type { Lang } from './i18n'

const TEXT = {
  en: {
    title: 'Machine',
    dashboard: 'Dashboard',
    state: 'State',
    status: 'Status',
    pool: 'Pool',
    job: 'Current job',
    lastSeen: 'Last seen',
    registered: 'Joined',
    cpu: 'CPU',
    memory: 'Memory free',
    runners: 'Runners it offers',
    models: 'Models its engines serve',
    usage: 'Usage over time',
    range: 'Period',
    ranges: [['1h', 'Last hour'], ['1d', 'Last day'], ['30d', 'Last 30 days']],
    gpus: 'GPUs',
    gpusCaption: 'GPUs of this machine, as last reported',
    gpuCols: ['GPU', 'VRAM used', 'Utilisation', 'Temperature'],
    engines: 'Engines',
    enginesCaption: 'Inference engines of this machine, as last reported',
    engineCols: ['Engine', 'Model', 'Health now'],
    logs: 'Log',
    manage: 'Manage',
    manageText: 'Release stops the machine and revokes its token; it stays listed as released. Remove deletes it and its history.',
    release: 'Release this machine',
    remove: 'Remove this machine',
  },
  de: {
    title: 'Maschine',
    dashboard: 'Übersicht',
    state: 'Zustand',
    status: 'Status',
    pool: 'Pool',
    job: 'Aktueller Auftrag',
    lastSeen: 'Zuletzt gesehen',
    registered: 'Beigetreten',
    cpu: 'CPU',
    memory: 'Freier Arbeitsspeicher',
    runners: 'Angebotene Runner',
    models: 'Modelle ihrer Engines',
    usage: 'Auslastung im Verlauf',
    range: 'Zeitraum',
    ranges: [['1h', 'Letzte Stunde'], ['1d', 'Letzter Tag'], ['30d', 'Letzte 30 Tage']],
    gpus: 'GPUs',
    gpusCaption: 'GPUs dieser Maschine, zuletzt gemeldet',
    gpuCols: ['GPU', 'VRAM belegt', 'Auslastung', 'Temperatur'],
    engines: 'Engines',
    enginesCaption: 'Inferenz-Engines dieser Maschine, zuletzt gemeldet',
    engineCols: ['Engine', 'Modell', 'Zustand jetzt'],
    logs: 'Protokoll',
    manage: 'Verwalten',
    manageText: 'Freigeben hält die Maschine an und widerruft ihr Token; sie bleibt als freigegeben gelistet. Entfernen löscht sie samt Verlauf.',
    release: 'Diese Maschine freigeben',
    remove: 'Diese Maschine entfernen',
  },
} satisfies Record<Lang, unknown>

export function FellowPage(props: { ctx: PageCtx; fellowId: string }) {
  const t = TEXT[props.ctx.lang]
  const u = props.ctx.user!
  const fact = (id: string, label: string) => (
    <>
      <dt safe>{label}</dt>
      <dd id={id}>—</dd>
    </>
  )
  return (
    <Layout ctx={props.ctx} title={t.title} script={['uplot.js', 'console.js', 'fellow.js']} data={{ 'fellow-id': props.fellowId, 'user-id': u.id, admin: u.role === 'admin' ? '1' : '0' }}>
      <p class="muted">
        <a href="/dashboard" safe>{t.dashboard}</a> / <span id="fellow-pool-crumb" safe>{t.title}</span>
      </p>
      <h1 id="fellow-name" safe>{t.title}</h1>
      <Notice id="fellow-msg" />
      <div id="fellow-body">
        <dl class="facts card" id="fellow-facts">
          {fact('fellow-state', t.state)}
          {fact('fellow-status', t.status)}
          {fact('fellow-pool', t.pool)}
          {fact('fellow-job', t.job)}
          {fact('fellow-last-seen', t.lastSeen)}
          {fact('fellow-registered', t.registered)}
          {fact('fellow-cpu', t.cpu)}
          {fact('fellow-mem', t.memory)}
          {fact('fellow-runners', t.runners)}
          {fact('fellow-models', t.models)}
        </dl>
        <section class="card" aria-labelledby="gpus-title" id="gpus-card" hidden>
          <h2 id="gpus-title" safe>{t.gpus}</h2>
          <Table id="gpus-body" caption={t.gpusCaption} cols={t.gpuCols} lang={props.ctx.lang} />
        </section>
        {/* Hidden until a heartbeat names engines (agents older than the field never do). */}
        <section class="card" aria-labelledby="engines-title" id="engines-card" hidden>
          <h2 id="engines-title" safe>{t.engines}</h2>
          <Table id="engines-body" caption={t.enginesCaption} cols={t.engineCols} lang={props.ctx.lang} />
        </section>
        <section class="card" aria-labelledby="usage-title">
          <h2 id="usage-title" safe>{t.usage}</h2>
          <div class="actions">
            <label for="usage-range" class="inline" safe>{t.range}</label>
            <select id="usage-range">
              {t.ranges.map(([v, label]) => (
                <option value={v} safe>{label}</option>
              ))}
            </select>
          </div>
          <div class="charts">
            <div id="chart-a"></div>
            <div id="chart-b"></div>
          </div>
        </section>
        <section class="card" aria-labelledby="logs-title">
          <h2 id="logs-title" safe>{t.logs}</h2>
          <div id="fellow-log"></div>
        </section>
        <section class="card" aria-labelledby="manage-title" id="manage-card" hidden>
          <h2 id="manage-title" safe>{t.manage}</h2>
          <p safe>{t.manageText}</p>
          <div class="actions">
            <button type="button" class="secondary" id="fellow-release" safe>{t.release}</button>
            <button type="button" class="danger" id="fellow-remove" safe>{t.remove}</button>
          </div>
          <Notice id="manage-msg" />
        </section>
      </div>
    </Layout>
  )
}
