// /jobs/{id}: one job's status, the reason it waits or failed, its stages and their machines (and
// the transport between them), a live loss and throughput chart from the metrics stream, step
// progress with the time left, pause/resume/checkpoint/cancel, its checkpoints and artifacts, and
// the log tail of its machines. The facts come from /api/v1/jobs/{id} (job.js), which also decides
// who may see the job.
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
    transport: 'Transport',
    progress: 'Progress',
    steer: 'Control',
    pause: 'Pause',
    resume: 'Resume',
    checkpoint: 'Save a checkpoint',
    cancel: 'Cancel this job',
    artifacts: 'Checkpoints and artifacts',
    artifactsCaption: 'Checkpoints and other files this job stored',
    artifactCols: ['Name', 'Kind', 'Stage', 'Step', 'Size', 'Stored'],
    logs: 'Log of its machines',
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
    transport: 'Übertragung',
    progress: 'Fortschritt',
    steer: 'Steuerung',
    pause: 'Pausieren',
    resume: 'Fortsetzen',
    checkpoint: 'Checkpoint sichern',
    cancel: 'Diesen Auftrag abbrechen',
    artifacts: 'Checkpoints und Artefakte',
    artifactsCaption: 'Checkpoints und andere Dateien, die dieser Auftrag gespeichert hat',
    artifactCols: ['Name', 'Art', 'Stufe', 'Schritt', 'Größe', 'Gespeichert'],
    logs: 'Protokoll seiner Maschinen',
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
    <Layout ctx={props.ctx} title={t.title} script={['uplot.js', 'console.js', 'job.js']} data={{ 'job-id': props.jobId, 'user-id': props.ctx.user?.id ?? '', admin: props.ctx.user?.role === 'admin' ? '1' : '0' }}>
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
        {fact('job-transport', t.transport)}
        {fact('job-step', t.step)}
        {fact('job-loss', t.loss)}
        {fact('job-created', t.created)}
        {fact('job-updated', t.updated)}
      </dl>
      <section class="card" aria-labelledby="steer-title" id="steer-card" hidden>
        <h2 id="steer-title" safe>{t.steer}</h2>
        <div class="actions">
          <button type="button" class="secondary" id="job-pause" hidden safe>{t.pause}</button>
          <button type="button" id="job-resume" hidden safe>{t.resume}</button>
          <button type="button" class="secondary" id="job-checkpoint" hidden safe>{t.checkpoint}</button>
          <button type="button" class="danger" id="job-cancel" hidden safe>{t.cancel}</button>
        </div>
      </section>
      <section class="card" aria-labelledby="progress-title">
        <h2 id="progress-title" safe>{t.progress}</h2>
        <div id="job-progress-box" hidden>
          <progress id="job-progress" max="1" value="0" aria-labelledby="progress-title" aria-describedby="job-progress-text"></progress>
        </div>
        <p id="job-progress-text"></p>
        <div id="job-chart"></div>
      </section>
      <section class="card" aria-labelledby="stages-title">
        <h2 id="stages-title" safe>{t.stages}</h2>
        <Table id="stages-body" caption={t.stagesCaption} cols={t.cols} lang={props.ctx.lang} />
      </section>
      <section class="card" aria-labelledby="artifacts-title">
        <h2 id="artifacts-title" safe>{t.artifacts}</h2>
        <Table id="artifacts-body" caption={t.artifactsCaption} cols={t.artifactCols} lang={props.ctx.lang} />
      </section>
      <section class="card" aria-labelledby="logs-title">
        <h2 id="logs-title" safe>{t.logs}</h2>
        <div id="job-log"></div>
      </section>
    </Layout>
  )
}
