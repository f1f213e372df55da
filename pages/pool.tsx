// /pools/{id}: live nodes, the pool's join command, jobs, models, files, members; owner edit and delete.
import { escapeHtml } from '@kitajs/html'
import { Layout, Notice, Table, type PageCtx } from './layout'
import type { Lang } from './i18n'
import { LoopbackWarning } from './ops'
import type { Pool } from '../src/pools/model'

export interface PoolPageProps {
  ctx: PageCtx
  pool: Pool
  /** Owner or admin: may invite, edit and delete. */
  canManage: boolean
  isMember: boolean
  /** The viewer asked to join and the owner has not decided yet. */
  requested: boolean
  allowedVisibilities: string[]
}

const TEXT = {
  en: {
    crumb: 'Pool',
    dashboard: 'Dashboard',
    slug: 'Slug',
    visibility: 'Visibility',
    vis: { public: 'public', private: 'private' } as Record<string, string>,
    openJoin: ' (open join)',
    nodeLimit: 'Machine limit',
    unlimited: 'no limit',
    yourRole: 'Your role',
    roles: { owner: 'owner', member: 'member' } as Record<string, string>,
    adminNotMember: 'admin (not a member)',
    notMember: 'not a member',
    publicNotMember: 'You are not a member of this public pool.',
    join: 'Join this pool',
    ask: 'Ask to join',
    asked: 'You asked to join this pool. The owner decides; you will find it on your dashboard once you are in.',
    machines: 'Machines',
    machinesCaption: 'Machines in this pool, refreshed every few seconds',
    machineCols: ['Machine', 'State', 'Status', 'Step', 'Loss', 'GPUs', 'Last seen'],
    addMachine: 'Add a machine',
    addIntro: 'Create a join command and run it on the new machine. The machine joins this pool and shows up above. For step-by-step help, use the',
    guided: 'guided join',
    mint: 'Create join command',
    copy: 'Copy command',
    noCommand: 'No command yet.',
    jobs: 'Jobs',
    jobsCaption: 'Jobs of this pool',
    fleet: 'Machines over time',
    range: 'Period',
    ranges: [['1h', 'Last hour'], ['1d', 'Last day'], ['30d', 'Last 30 days']],
    submit: 'Submit a job',
    submitIntro: 'The job waits until enough machines of this pool are online and free; its page then shows the training live.',
    jobName: 'Name',
    runner: 'Runner',
    runnerHint: 'The runners this pool\'s machines offer; mlp is built in.',
    stages: 'Stages (machines in the pipeline)',
    minVram: 'Minimum free VRAM per stage, in MiB (0: any machine)',
    config: 'Configuration (JSON object, optional)',
    configHint: 'Handed to the runner. For mlp, e.g. {"steps": 500, "report_every": 10}.',
    submitButton: 'Submit job',
    jobCols: ['Name', 'Status', 'Stages', 'Step', 'Loss', 'Updated'],
    models: 'Models',
    files: 'Files',
    filesIntro: 'Checkpoints this pool\'s jobs wrote and model files for its machines\' engines (an engine takes one with model_artifact = "<id>").',
    uploadTitle: 'Upload a file',
    uploadFile: 'File from this computer',
    uploadKind: 'Kind',
    uploadKinds: [['model', 'Model (weights for an engine)'], ['file', 'Other file']],
    uploadName: 'Name (optional)',
    uploadNameHint: 'The file\'s own name when left empty.',
    uploadButton: 'Upload',
    uploadCancel: 'Cancel upload',
    uploadCli: 'Or from a machine with the command line (resumes a broken upload, fits large files best):',
    filesCaption: 'Files kept for this pool, newest first',
    fileCols: ['Name', 'Kind', 'Size', 'Job', 'Id', 'Added', 'Actions'],
    members: 'Members',
    membersCaption: 'Members of this pool',
    memberCols: ['Name', 'Email', 'Role', 'Joined', 'Actions'],
    loading: 'Loading…',
    invite: 'Invite someone',
    email: 'Email address',
    sendInvite: 'Invite',
    inviteLink: 'Invitation link: it works only for the account with the invited address',
    copyLink: 'Copy link',
    pendingInvites: 'Pending invitations',
    requests: 'Join requests',
    edit: 'Edit pool',
    name: 'Name',
    description: 'Description',
    openJoinLabel: 'Anyone may join (public pools) without approval',
    limitLabel: 'Machine limit (empty: no limit)',
    save: 'Save changes',
    del: 'Delete pool',
    delText: 'Deleting the pool removes its memberships and invitations. Attached machines are detached.',
    delButton: 'Delete this pool',
  },
  de: {
    crumb: 'Pool',
    dashboard: 'Übersicht',
    slug: 'Kurzname',
    visibility: 'Sichtbarkeit',
    vis: { public: 'öffentlich', private: 'privat' } as Record<string, string>,
    openJoin: ' (freier Beitritt)',
    nodeLimit: 'Maschinen-Grenze',
    unlimited: 'keine Grenze',
    yourRole: 'Ihre Rolle',
    roles: { owner: 'Eigentümer', member: 'Mitglied' } as Record<string, string>,
    adminNotMember: 'Admin (kein Mitglied)',
    notMember: 'kein Mitglied',
    publicNotMember: 'Sie sind kein Mitglied dieses öffentlichen Pools.',
    join: 'Diesem Pool beitreten',
    ask: 'Um Beitritt bitten',
    asked: 'Sie haben um Beitritt gebeten. Der Eigentümer entscheidet; danach finden Sie den Pool in Ihrer Übersicht.',
    machines: 'Maschinen',
    machinesCaption: 'Maschinen in diesem Pool, alle paar Sekunden aktualisiert',
    machineCols: ['Maschine', 'Zustand', 'Status', 'Schritt', 'Loss', 'GPUs', 'Zuletzt gesehen'],
    addMachine: 'Maschine hinzufügen',
    addIntro: 'Erstellen Sie einen Beitrittsbefehl und führen Sie ihn auf der neuen Maschine aus. Sie tritt diesem Pool bei und erscheint oben. Schritt für Schritt hilft der',
    guided: 'geführte Beitritt',
    mint: 'Beitrittsbefehl erstellen',
    copy: 'Befehl kopieren',
    noCommand: 'Noch kein Befehl.',
    jobs: 'Aufträge',
    jobsCaption: 'Aufträge dieses Pools',
    fleet: 'Maschinen im Verlauf',
    range: 'Zeitraum',
    ranges: [['1h', 'Letzte Stunde'], ['1d', 'Letzter Tag'], ['30d', 'Letzte 30 Tage']],
    submit: 'Auftrag starten',
    submitIntro: 'Der Auftrag wartet, bis genug Maschinen dieses Pools online und frei sind; seine Seite zeigt dann das Training live.',
    jobName: 'Name',
    runner: 'Runner',
    runnerHint: 'Die Runner, die die Maschinen dieses Pools anbieten; mlp ist eingebaut.',
    stages: 'Stufen (Maschinen in der Pipeline)',
    minVram: 'Mindestens freier VRAM je Stufe, in MiB (0: jede Maschine)',
    config: 'Konfiguration (JSON-Objekt, optional)',
    configHint: 'Wird an den Runner übergeben. Für mlp z. B. {"steps": 500, "report_every": 10}.',
    submitButton: 'Auftrag starten',
    jobCols: ['Name', 'Status', 'Stufen', 'Schritt', 'Loss', 'Aktualisiert'],
    models: 'Modelle',
    files: 'Dateien',
    filesIntro: 'Checkpoints der Aufträge dieses Pools und Modelldateien für die Engines seiner Maschinen (eine Engine nimmt eine mit model_artifact = "<id>").',
    uploadTitle: 'Datei hochladen',
    uploadFile: 'Datei von diesem Rechner',
    uploadKind: 'Art',
    uploadKinds: [['model', 'Modell (Gewichte für eine Engine)'], ['file', 'Andere Datei']],
    uploadName: 'Name (optional)',
    uploadNameHint: 'Leer gelassen: der Name der Datei.',
    uploadButton: 'Hochladen',
    uploadCancel: 'Hochladen abbrechen',
    uploadCli: 'Oder von einer Maschine mit der Kommandozeile (setzt ein abgebrochenes Hochladen fort, am besten für große Dateien):',
    filesCaption: 'Dateien dieses Pools, neueste zuerst',
    fileCols: ['Name', 'Art', 'Größe', 'Auftrag', 'Id', 'Hinzugefügt', 'Aktionen'],
    members: 'Mitglieder',
    membersCaption: 'Mitglieder dieses Pools',
    memberCols: ['Name', 'E-Mail', 'Rolle', 'Beigetreten', 'Aktionen'],
    loading: 'Wird geladen…',
    invite: 'Jemanden einladen',
    email: 'E-Mail-Adresse',
    sendInvite: 'Einladen',
    inviteLink: 'Einladungslink: Er gilt nur für das Konto mit der eingeladenen Adresse',
    copyLink: 'Link kopieren',
    pendingInvites: 'Offene Einladungen',
    requests: 'Beitrittsanfragen',
    edit: 'Pool bearbeiten',
    name: 'Name',
    description: 'Beschreibung',
    openJoinLabel: 'Jede Person darf ohne Freigabe beitreten (öffentliche Pools)',
    limitLabel: 'Maschinen-Grenze (leer: keine Grenze)',
    save: 'Änderungen speichern',
    del: 'Pool löschen',
    delText: 'Beim Löschen gehen Mitgliedschaften und Einladungen verloren. Angeschlossene Maschinen werden getrennt.',
    delButton: 'Diesen Pool löschen',
  },
} satisfies Record<Lang, unknown>

function Manage(props: PoolPageProps) {
  const p = props.pool
  const t = TEXT[props.ctx.lang]
  const admin = props.ctx.user?.role === 'admin'
  return (
    <>
      <section class="card" aria-labelledby="invite-title">
        <h2 id="invite-title" safe>{t.invite}</h2>
        <form id="invite-form" method="post">
          <label for="invite-email" safe>{t.email}</label>
          <input id="invite-email" name="email" type="email" required maxlength="254" />
          <div class="actions">
            <button type="submit" safe>{t.sendInvite}</button>
          </div>
          <Notice id="invite-form-msg" />
        </form>
        <div id="invite-link-box" hidden>
          <label for="invite-link" safe>{t.inviteLink}</label>
          <input id="invite-link" type="text" readonly />
          <div class="actions">
            <button type="button" class="small" data-copy="invite-link" data-copy-status="invite-link-msg" safe>{t.copyLink}</button>
          </div>
          <Notice id="invite-link-msg" />
        </div>
        <h3 safe>{t.pendingInvites}</h3>
        <div id="pool-invites">
          <p class="empty" safe>{t.loading}</p>
        </div>
        <Notice id="pool-invites-msg" />
        <h3 safe>{t.requests}</h3>
        <div id="requests">
          <p class="empty" safe>{t.loading}</p>
        </div>
        <Notice id="requests-msg" />
      </section>
      <section class="card" aria-labelledby="edit-title">
        <h2 id="edit-title" safe>{t.edit}</h2>
        <form id="edit-form" method="post">
          <label for="edit-name" safe>{t.name}</label>
          <input id="edit-name" name="name" type="text" required maxlength="100" value={escapeHtml(p.name)} />
          <label for="edit-description" safe>{t.description}</label>
          <input id="edit-description" name="description" type="text" maxlength="2000" value={escapeHtml(p.description)} />
          <label for="edit-visibility" safe>{t.visibility}</label>
          <select id="edit-visibility" name="visibility">
            {props.allowedVisibilities.map((v) => (
              <option value={v} selected={v === p.visibility} safe>{t.vis[v] ?? v}</option>
            ))}
          </select>
          <label class="check">
            <input type="checkbox" name="open_join" checked={p.open_join} /> <span safe>{t.openJoinLabel}</span>
          </label>
          {admin ? (
            <>
              <label for="edit-limit" safe>{t.limitLabel}</label>
              <input id="edit-limit" name="node_limit" type="number" min="0" value={p.node_limit === null ? '' : String(p.node_limit)} />
            </>
          ) : (
            ''
          )}
          <div class="actions">
            <button type="submit" safe>{t.save}</button>
          </div>
          <Notice id="edit-msg" />
        </form>
      </section>
      <section class="card" aria-labelledby="delete-title">
        <h2 id="delete-title" safe>{t.del}</h2>
        <p safe>{t.delText}</p>
        <button type="button" class="danger" id="delete-pool" safe>{t.delButton}</button>
        <Notice id="delete-msg" />
      </section>
    </>
  )
}

export function PoolPage(props: PoolPageProps) {
  const p = props.pool
  const lang = props.ctx.lang
  const t = TEXT[lang]
  const canJoinCmd = props.isMember || props.ctx.user?.role === 'admin'
  const role = p.my_role !== null ? (t.roles[p.my_role] ?? p.my_role) : props.ctx.user?.role === 'admin' ? t.adminNotMember : t.notMember
  return (
    <Layout
      ctx={props.ctx}
      title={p.name}
      script={['pool.js', 'pool-manage.js', 'uplot.js', 'console.js', 'pool-console.js', 'sha256.js', 'pool-upload.js']}
      data={{ 'pool-id': p.id, 'can-manage': props.canManage ? '1' : '0', 'is-member': props.isMember ? '1' : '0', 'user-id': props.ctx.user?.id ?? '' }}
    >
      <p class="muted">
        <a href="/dashboard" safe>{t.dashboard}</a> / <span safe>{t.crumb}</span>
      </p>
      <h1 id="pool-name" safe>{p.name}</h1>
      <p class="lead" id="pool-description" hidden={!p.description} safe>{p.description ?? ''}</p>
      <dl class="facts card">
        <dt safe>{t.slug}</dt>
        <dd class="mono" safe>{p.slug}</dd>
        <dt safe>{t.visibility}</dt>
        <dd id="pool-visibility-fact" data-open-join={t.openJoin} safe>{(t.vis[p.visibility] ?? p.visibility) + (p.visibility === 'public' && p.open_join ? t.openJoin : '')}</dd>
        <dt safe>{t.nodeLimit}</dt>
        <dd id="pool-limit-fact" data-unlimited={t.unlimited} safe>{p.node_limit === null ? t.unlimited : String(p.node_limit)}</dd>
        <dt safe>{t.yourRole}</dt>
        <dd safe>{role}</dd>
      </dl>
      {!props.isMember && p.visibility === 'public' ? (
        <div class="card">
          <p safe>{t.publicNotMember}</p>
          <button type="button" id="join-pool" disabled={props.requested} safe>{p.open_join ? t.join : t.ask}</button>
          <p id="join-pool-msg" class={props.requested ? 'notice ok' : 'notice'} role="status" aria-live="polite">{props.requested ? t.asked : ''}</p>
        </div>
      ) : (
        ''
      )}
      <section class="card" aria-labelledby="nodes-title">
        <h2 id="nodes-title" safe>{t.machines}</h2>
        <p id="nodes-summary" class="muted" role="status" aria-live="polite"></p>
        <Table id="nodes-body" caption={t.machinesCaption} cols={t.machineCols} lang={lang} />
      </section>
      {canJoinCmd ? (
        <section class="card" aria-labelledby="join-title" id="join-section">
          <h2 id="join-title" safe>{t.addMachine}</h2>
          <LoopbackWarning ctx={props.ctx} />
          <p>
            <span safe>{t.addIntro}</span> <a href={`/ops/join-v2?pool=${encodeURIComponent(p.id)}`} safe>{t.guided}</a>.
          </p>
          <div class="actions">
            <button type="button" id="mint-join" class="secondary" safe>{t.mint}</button>
          </div>
          <div class="cmd">
            <pre id="join-cmd" data-empty={t.noCommand}></pre>
            <button type="button" id="copy-join" data-copy="join-cmd" data-copy-status="join-msg" safe>{t.copy}</button>
          </div>
          <p id="join-expiry" class="hint"></p>
          <Notice id="join-msg" />
        </section>
      ) : (
        ''
      )}
      {props.isMember || props.ctx.user?.role === 'admin' ? (
        <>
          <section class="card" aria-labelledby="fleet-title">
            <h2 id="fleet-title" safe>{t.fleet}</h2>
            <div class="actions">
              <label for="fleet-range" class="inline" safe>{t.range}</label>
              <select id="fleet-range">
                {t.ranges.map(([v, label]) => (
                  <option value={v} selected={v === '1d'} safe>{label}</option>
                ))}
              </select>
            </div>
            <div class="charts">
              <div id="fleet-online"></div>
              <div id="fleet-vram"></div>
            </div>
          </section>
          <section class="card" aria-labelledby="jobs-title">
            <h2 id="jobs-title" safe>{t.jobs}</h2>
            <Table id="jobs-body" caption={t.jobsCaption} cols={t.jobCols} lang={lang} />
          </section>
          <section class="card" aria-labelledby="submit-title">
            <h2 id="submit-title" safe>{t.submit}</h2>
            <p class="muted" safe>{t.submitIntro}</p>
            <form id="submit-job" method="post" novalidate>
              <label for="job-name-input" safe>{t.jobName}</label>
              <input id="job-name-input" name="name" type="text" required maxlength="100" aria-describedby="job-name-input-error" />
              <p class="field-error" id="job-name-input-error"></p>
              <label for="job-runner-input" safe>{t.runner}</label>
              <input id="job-runner-input" name="runner" type="text" list="job-runner-options" value="mlp" required maxlength="64" autocomplete="off" aria-describedby="job-runner-input-hint job-runner-input-error" />
              <datalist id="job-runner-options">
                <option value="mlp"></option>
              </datalist>
              <p class="hint" id="job-runner-input-hint" safe>{t.runnerHint}</p>
              <p class="field-error" id="job-runner-input-error"></p>
              <label for="job-stages-input" safe>{t.stages}</label>
              <input id="job-stages-input" name="stages" type="number" min="1" max="64" step="1" value="1" required aria-describedby="job-stages-input-error" />
              <p class="field-error" id="job-stages-input-error"></p>
              <label for="job-vram-input" safe>{t.minVram}</label>
              <input id="job-vram-input" name="min_free_vram_mb" type="number" min="0" step="1" value="0" aria-describedby="job-vram-input-error" />
              <p class="field-error" id="job-vram-input-error"></p>
              <label for="job-config-input" safe>{t.config}</label>
              <textarea id="job-config-input" name="config" rows="4" spellcheck="false" class="mono" aria-describedby="job-config-input-hint job-config-input-error"></textarea>
              <p class="hint" id="job-config-input-hint" safe>{t.configHint}</p>
              <p class="field-error" id="job-config-input-error"></p>
              <div class="actions">
                <button type="submit" id="submit-job-button" safe>{t.submitButton}</button>
              </div>
              <Notice id="submit-msg" />
            </form>
          </section>
          <section class="card" aria-labelledby="models-title">
            <h2 id="models-title" safe>{t.models}</h2>
            <div id="models">
              <p class="empty" safe>{t.loading}</p>
            </div>
          </section>
          <section class="card" aria-labelledby="files-title">
            <h2 id="files-title" safe>{t.files}</h2>
            <p class="muted" safe>{t.filesIntro}</p>
            <form id="upload-form" novalidate aria-labelledby="upload-title">
              <h3 id="upload-title" safe>{t.uploadTitle}</h3>
              <label for="upload-file-input" safe>{t.uploadFile}</label>
              <input id="upload-file-input" name="file" type="file" required aria-describedby="upload-file-input-error" />
              <p class="field-error" id="upload-file-input-error"></p>
              <label for="upload-kind-input" safe>{t.uploadKind}</label>
              <select id="upload-kind-input" name="kind">
                {t.uploadKinds.map(([v, label]) => (
                  <option value={v} safe>
                    {label}
                  </option>
                ))}
              </select>
              <label for="upload-name-input" safe>{t.uploadName}</label>
              <input id="upload-name-input" name="name" type="text" maxlength="200" autocomplete="off" aria-describedby="upload-name-input-hint upload-name-input-error" />
              <p class="hint" id="upload-name-input-hint" safe>{t.uploadNameHint}</p>
              <p class="field-error" id="upload-name-input-error"></p>
              <div class="actions">
                <button type="submit" id="upload-button" safe>{t.uploadButton}</button>
                <button type="button" id="upload-cancel" class="secondary" hidden safe>{t.uploadCancel}</button>
              </div>
              <progress id="upload-progress" max="1" value="0" aria-label={t.uploadTitle} hidden></progress>
              <Notice id="upload-msg" />
            </form>
            <p class="muted" safe>{t.uploadCli}</p>
            <div class="cmd">
              <pre id="files-upload-cmd" safe>{`svc artifacts upload FILE --pool ${p.slug}`}</pre>
              <button type="button" id="copy-files-upload" data-copy="files-upload-cmd" data-copy-status="files-msg" safe>{t.copy}</button>
            </div>
            <Table id="files-body" caption={t.filesCaption} cols={t.fileCols} lang={lang} />
            <Notice id="files-msg" />
          </section>
          <section class="card" aria-labelledby="members-title">
            <h2 id="members-title" safe>{t.members}</h2>
            <Table id="members-body" caption={t.membersCaption} cols={t.memberCols} lang={lang} />
            <Notice id="members-msg" />
          </section>
        </>
      ) : (
        ''
      )}
      {props.canManage ? <Manage {...props} /> : ''}
    </Layout>
  )
}
