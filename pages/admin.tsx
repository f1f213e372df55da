// /admin/users, /admin/pools and /admin/audit. The lists are fetched and paged by admin-users.js,
// admin-pools.js and admin-audit.js.
import { Layout, Notice, Table, type PageCtx } from './layout'
import { plural, type Lang } from './i18n'

function Select(props: { id: string; name: string; label: string; options: [string, string][] }) {
  return (
    <div>
      <label for={props.id} safe>{props.label}</label>
      <select id={props.id} name={props.name}>
        {props.options.map(([v, text]) => (
          <option value={v} safe>{text}</option>
        ))}
      </select>
    </div>
  )
}

const USERS = {
  en: {
    title: 'Users',
    pending: { one: '{n} pending approval', other: '{n} pending approval' },
    mail: 'Email',
    mailLoading: 'Loading mail status…',
    mailTest: 'Send test email',
    accounts: 'Accounts',
    filter: 'Filter users',
    search: 'Search',
    searchPlaceholder: 'email or name',
    status: 'Status',
    statuses: [['', 'Any status'], ['pending_approval', 'Pending approval'], ['unverified', 'Unverified'], ['active', 'Active'], ['disabled', 'Disabled']] as [string, string][],
    role: 'Role',
    roles: [['', 'Any role'], ['user', 'User'], ['admin', 'Admin']] as [string, string][],
    sort: 'Sort by',
    sorts: [['created_at', 'Registered'], ['last_login_at', 'Last login'], ['email', 'Email'], ['display_name', 'Name'], ['pool_count', 'Pools'], ['node_count', 'Machines']] as [string, string][],
    order: 'Order',
    orders: [['desc', 'Descending'], ['asc', 'Ascending']] as [string, string][],
    perPage: 'Per page',
    apply: 'Apply',
    caption: 'User accounts',
    cols: ['Email', 'Name', 'Role', 'Status', 'Registered', 'Last login', 'Pools', 'Machines', 'Actions'],
    prev: 'Previous page',
    next: 'Next page',
    resetOnce: 'One-time password reset link.',
    resetText: 'Send it to the user over a channel you trust; it works once, for 24 hours.',
    copyLink: 'Copy link',
  },
  de: {
    title: 'Benutzer',
    pending: { one: '{n} wartet auf Freigabe', other: '{n} warten auf Freigabe' },
    mail: 'E-Mail',
    mailLoading: 'E-Mail-Status wird geladen…',
    mailTest: 'Test-E-Mail senden',
    accounts: 'Konten',
    filter: 'Benutzer filtern',
    search: 'Suche',
    searchPlaceholder: 'E-Mail oder Name',
    status: 'Status',
    statuses: [['', 'Jeder Status'], ['pending_approval', 'Wartet auf Freigabe'], ['unverified', 'Unbestätigt'], ['active', 'Aktiv'], ['disabled', 'Deaktiviert']] as [string, string][],
    role: 'Rolle',
    roles: [['', 'Jede Rolle'], ['user', 'Benutzer'], ['admin', 'Admin']] as [string, string][],
    sort: 'Sortieren nach',
    sorts: [['created_at', 'Registriert'], ['last_login_at', 'Letzte Anmeldung'], ['email', 'E-Mail'], ['display_name', 'Name'], ['pool_count', 'Pools'], ['node_count', 'Maschinen']] as [string, string][],
    order: 'Reihenfolge',
    orders: [['desc', 'Absteigend'], ['asc', 'Aufsteigend']] as [string, string][],
    perPage: 'Pro Seite',
    apply: 'Anwenden',
    caption: 'Benutzerkonten',
    cols: ['E-Mail', 'Name', 'Rolle', 'Status', 'Registriert', 'Letzte Anmeldung', 'Pools', 'Maschinen', 'Aktionen'],
    prev: 'Vorige Seite',
    next: 'Nächste Seite',
    resetOnce: 'Einmaliger Link zum Zurücksetzen des Passworts.',
    resetText: 'Geben Sie ihn über einen vertrauenswürdigen Weg weiter; er gilt einmal, für 24 Stunden.',
    copyLink: 'Link kopieren',
  },
} satisfies Record<Lang, unknown>

export function AdminUsersPage(props: { ctx: PageCtx }) {
  const t = USERS[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title} script="admin-users.js">
      <h1>
        <span safe>{t.title}</span>{' '}
        <span id="pending-badge" class="badge" hidden={props.ctx.pendingCount === 0} safe>
          {plural(props.ctx.lang, props.ctx.pendingCount, t.pending)}
        </span>
      </h1>
      <section class="card" aria-labelledby="mail-title">
        <h2 id="mail-title" safe>{t.mail}</h2>
        <p id="mail-status" safe>{t.mailLoading}</p>
        <div id="mail-failures"></div>
        <button type="button" id="mail-test" class="secondary" safe>{t.mailTest}</button>
        <Notice id="mail-msg" />
      </section>
      <section class="card" aria-labelledby="users-title">
        <h2 id="users-title" safe>{t.accounts}</h2>
        <form id="user-filters" class="filters" role="search" aria-label={t.filter}>
          <div>
            <label for="f-q" safe>{t.search}</label>
            <input id="f-q" name="q" type="search" placeholder={t.searchPlaceholder} maxlength="200" />
          </div>
          <Select id="f-status" name="status" label={t.status} options={t.statuses} />
          <Select id="f-role" name="role" label={t.role} options={t.roles} />
          <Select id="f-sort" name="sort" label={t.sort} options={t.sorts} />
          <Select id="f-order" name="order" label={t.order} options={t.orders} />
          <Select id="f-size" name="page_size" label={t.perPage} options={[['25', '25'], ['10', '10'], ['50', '50'], ['100', '100']]} />
          <div>
            <button type="submit" safe>{t.apply}</button>
          </div>
        </form>
        <Table id="users-body" caption={t.caption} cols={t.cols} lang={props.ctx.lang} />
        <div class="pager">
          <button type="button" class="secondary small" id="page-prev" disabled safe>{t.prev}</button>
          <span id="page-info" aria-live="polite"></span>
          <button type="button" class="secondary small" id="page-next" disabled safe>{t.next}</button>
        </div>
        <Notice id="users-msg" />
        <div id="reset-once" class="secret" hidden>
          <p>
            <strong safe>{t.resetOnce}</strong> <span safe>{t.resetText}</span>
          </p>
          <div class="cmd">
            <pre id="reset-link"></pre>
            <button type="button" data-copy="reset-link" data-copy-status="users-msg" safe>{t.copyLink}</button>
          </div>
        </div>
      </section>
    </Layout>
  )
}

const POOLS = {
  en: {
    title: 'All pools',
    pools: 'Pools',
    caption: 'Every pool on this leader',
    cols: ['Name', 'Slug', 'Visibility', 'Machines', 'Members', 'Created', 'Actions'],
    edit: 'Edit pool',
    save: 'Save changes',
    cancel: 'Cancel',
    create: 'Create a pool',
    slug: 'Slug (optional, fixed once created)',
    name: 'Name',
    description: 'Description',
    visibility: 'Visibility',
    vis: [['private', 'private'], ['public', 'public']] as [string, string][],
    limit: 'Machine limit (empty: no limit)',
    openJoin: 'Open join (public pools)',
  },
  de: {
    title: 'Alle Pools',
    pools: 'Pools',
    caption: 'Alle Pools dieses Leaders',
    cols: ['Name', 'Kurzname', 'Sichtbarkeit', 'Maschinen', 'Mitglieder', 'Angelegt', 'Aktionen'],
    edit: 'Pool bearbeiten',
    save: 'Änderungen speichern',
    cancel: 'Abbrechen',
    create: 'Pool anlegen',
    slug: 'Kurzname (optional, nach dem Anlegen fest)',
    name: 'Name',
    description: 'Beschreibung',
    visibility: 'Sichtbarkeit',
    vis: [['private', 'privat'], ['public', 'öffentlich']] as [string, string][],
    limit: 'Maschinen-Grenze (leer: keine Grenze)',
    openJoin: 'Freier Beitritt (öffentliche Pools)',
  },
} satisfies Record<Lang, unknown>

function PoolFields(props: { prefix: string; lang: Lang }) {
  const p = props.prefix
  const t = POOLS[props.lang]
  return (
    <>
      <label for={`${p}-name`} safe>{t.name}</label>
      <input id={`${p}-name`} name="name" type="text" required maxlength="100" />
      <label for={`${p}-description`} safe>{t.description}</label>
      <input id={`${p}-description`} name="description" type="text" maxlength="2000" />
      <label for={`${p}-visibility`} safe>{t.visibility}</label>
      <select id={`${p}-visibility`} name="visibility">
        {t.vis.map(([v, text]) => (
          <option value={v} safe>{text}</option>
        ))}
      </select>
      <label for={`${p}-limit`} safe>{t.limit}</label>
      <input id={`${p}-limit`} name="node_limit" type="number" min="0" />
      <label class="check">
        <input type="checkbox" name="open_join" id={`${p}-open`} /> <span safe>{t.openJoin}</span>
      </label>
    </>
  )
}

export function AdminPoolsPage(props: { ctx: PageCtx }) {
  const t = POOLS[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title} script="admin-pools.js">
      <h1 safe>{t.title}</h1>
      <section class="card" aria-labelledby="list-title">
        <h2 id="list-title" safe>{t.pools}</h2>
        <Table id="pools-body" caption={t.caption} cols={t.cols} lang={props.ctx.lang} />
        <Notice id="pools-msg" />
      </section>
      <section class="card" aria-labelledby="edit-title" id="edit-section" hidden>
        <h2 id="edit-title" safe>{t.edit}</h2>
        <form id="edit-form" method="post">
          <PoolFields prefix="edit" lang={props.ctx.lang} />
          <div class="actions">
            <button type="submit" safe>{t.save}</button>
            <button type="button" class="secondary" id="edit-cancel" safe>{t.cancel}</button>
          </div>
          <Notice id="edit-msg" />
        </form>
      </section>
      <section class="card" aria-labelledby="create-title">
        <h2 id="create-title" safe>{t.create}</h2>
        <form id="create-form" method="post">
          <PoolFields prefix="create" lang={props.ctx.lang} />
          <label for="create-slug" safe>{t.slug}</label>
          <input id="create-slug" name="slug" type="text" maxlength="48" pattern="[a-z0-9](?:[a-z0-9\-]{0,46}[a-z0-9])?" />
          <div class="actions">
            <button type="submit" safe>{t.create}</button>
          </div>
          <Notice id="create-msg" />
        </form>
      </section>
    </Layout>
  )
}

const AUDIT = {
  en: {
    title: 'Audit log',
    lead: 'Sign-ins, account and pool changes and admin actions, newest first, each with the address it came from.',
    filter: 'Filter the audit log',
    kind: 'Kind',
    // The kinds recorded (recordAudit in src/, docs/api.md "Admin"): a prefix ending in "." or one exact kind.
    kinds: [
      ['', 'Everything'],
      ['auth.', 'Sign-ins and accounts (auth.*)'],
      ['admin.', 'Admin actions (admin.*)'],
      ['pool.', 'Pools (pool.*)'],
      ['worker.', 'Machines (worker.*)'],
      ['job.', 'Jobs (job.*)'],
      ['jobs.purge', 'All jobs deleted (jobs.purge)'],
      ['artifact.', 'Files (artifact.*)'],
      ['cli.', 'Command line (cli.*)'],
    ] as [string, string][],
    apply: 'Apply',
    caption: 'Audit log entries',
    cols: ['When', 'What', 'Who', 'From', 'Target', 'Details'],
    prev: 'Previous page',
    next: 'Next page',
  },
  de: {
    title: 'Protokoll',
    lead: 'Anmeldungen, Änderungen an Konten und Pools und Aktionen der Administration, neueste zuerst, jeweils mit der Adresse, von der sie kamen.',
    filter: 'Protokoll filtern',
    kind: 'Art',
    kinds: [
      ['', 'Alles'],
      ['auth.', 'Anmeldungen und Konten (auth.*)'],
      ['admin.', 'Aktionen der Administration (admin.*)'],
      ['pool.', 'Pools (pool.*)'],
      ['worker.', 'Maschinen (worker.*)'],
      ['job.', 'Aufträge (job.*)'],
      ['jobs.purge', 'Alle Aufträge gelöscht (jobs.purge)'],
      ['artifact.', 'Dateien (artifact.*)'],
      ['cli.', 'Kommandozeile (cli.*)'],
    ] as [string, string][],
    apply: 'Anwenden',
    caption: 'Einträge im Protokoll',
    cols: ['Wann', 'Was', 'Wer', 'Von', 'Ziel', 'Details'],
    prev: 'Vorige Seite',
    next: 'Nächste Seite',
  },
} satisfies Record<Lang, unknown>

export function AdminAuditPage(props: { ctx: PageCtx }) {
  const t = AUDIT[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title} script="admin-audit.js">
      <h1 safe>{t.title}</h1>
      <p class="lead" safe>{t.lead}</p>
      <section class="card" aria-labelledby="audit-title">
        <h2 id="audit-title" class="sr-only" safe>{t.title}</h2>
        <form id="audit-filters" class="filters" role="search" aria-label={t.filter}>
          <Select id="a-kind" name="kind" label={t.kind} options={t.kinds} />
          <div>
            <button type="submit" safe>{t.apply}</button>
          </div>
        </form>
        <Table id="audit-body" caption={t.caption} cols={t.cols} lang={props.ctx.lang} />
        <div class="pager">
          <button type="button" class="secondary small" id="page-prev" disabled safe>{t.prev}</button>
          <span id="page-info" aria-live="polite"></span>
          <button type="button" class="secondary small" id="page-next" disabled safe>{t.next}</button>
        </div>
        <Notice id="audit-msg" />
      </section>
    </Layout>
  )
}
