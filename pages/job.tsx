// /jobs/{id}: one job's status, the reason it waits or failed, its stages and their machines, with
// cancel. The facts come from /api/v1/jobs/{id} (job.js), which also decides who may see the job.
import { Layout, Notice, Table, type PageCtx } from './layout'
import type { Lang } from './i18n'

const TEXT = {
  en: {
    title: 'Job',
    dashboard: 'Dashboard',
    status: 'Status',
    reason: 'Reason',
    pool: 'Pool',
    runner: 'Runner',
    step: 'Step',
    loss: 'Loss',
    created: 'Created',
    updated: 'Updated',
    stages: 'Stages',
    stagesCaption: 'Stages of this job and the machines running them',
    cols: ['Stage', 'Machine', 'State'],
    cancel: 'Cancel this job',
  },
  de: {
    title: 'Auftrag',
    dashboard: 'Übersicht',
    status: 'Status',
    reason: 'Grund',
    pool: 'Pool',
    runner: 'Runner',
    step: 'Schritt',
    loss: 'Loss',
    created: 'Angelegt',
    updated: 'Aktualisiert',
    stages: 'Stufen',
    stagesCaption: 'Stufen dieses Auftrags und die Maschinen, die sie ausführen',
    cols: ['Stufe', 'Maschine', 'Zustand'],
    cancel: 'Diesen Auftrag abbrechen',
  },
} satisfies Record<Lang, unknown>

export function JobPage(props: { ctx: PageCtx; jobId: string }) {
  const t = TEXT[props.ctx.lang]
  const fact = (id: string, label: string) => (
    <>
      <dt safe>{label}</dt>
      <dd id={id}>—</dd>
    </>
  )
  return (
    <Layout ctx={props.ctx} title={t.title} script="job.js" data={{ 'job-id': props.jobId }}>
      <p class="muted">
        <a href="/dashboard" safe>{t.dashboard}</a> / <span id="job-pool-crumb" safe>{t.title}</span>
      </p>
      <h1 id="job-name" safe>{t.title}</h1>
      <Notice id="job-msg" />
      <dl class="facts card" id="job-facts">
        {fact('job-status', t.status)}
        {fact('job-reason', t.reason)}
        {fact('job-pool', t.pool)}
        {fact('job-runner', t.runner)}
        {fact('job-step', t.step)}
        {fact('job-loss', t.loss)}
        {fact('job-created', t.created)}
        {fact('job-updated', t.updated)}
      </dl>
      <section class="card" aria-labelledby="stages-title">
        <h2 id="stages-title" safe>{t.stages}</h2>
        <Table id="stages-body" caption={t.stagesCaption} cols={t.cols} lang={props.ctx.lang} />
      </section>
      <div class="actions">
        <button type="button" class="danger" id="job-cancel" hidden safe>{t.cancel}</button>
      </div>
    </Layout>
  )
}
