// /profile: account details, password change and personal API tokens.
import { escapeHtml } from '@kitajs/html'
import { Layout, Notice, Table, Time, type PageCtx } from './layout'
import type { Lang } from './i18n'

export interface ProfileUser {
  email: string
  displayName: string | null
  role: string
  status: string
  createdAt: string
  lastLoginAt: string | null
}

const TEXT = {
  en: {
    title: 'Profile',
    account: 'Account',
    email: 'Email',
    displayName: 'Display name',
    role: 'Role',
    roles: { user: 'user', admin: 'admin' } as Record<string, string>,
    status: 'Status',
    statuses: { active: 'active', disabled: 'disabled', unverified: 'unverified', pending_approval: 'pending approval' } as Record<string, string>,
    registered: 'Registered',
    lastLogin: 'Last login',
    changePassword: 'Change password',
    current: 'Current password',
    newPassword: 'New password',
    pwHint: 'At least 10 characters. Your other sessions are logged out.',
    repeat: 'Repeat the new password',
    newToken: 'New API token',
    tokenLead: 'API tokens let scripts, the CLI and chat clients act as you. Treat them like passwords.',
    name: 'Name',
    days: 'Expires after days (optional)',
    createToken: 'Create token',
    copyNow: 'Copy this token now.',
    shownOnce: 'It is shown only once.',
    copyToken: 'Copy token',
    allTokens: 'API tokens (all users)',
    yourTokens: 'Your API tokens',
    caption: 'API tokens',
    cols: ['Name', 'Prefix', 'Created', 'Last used', 'Expires', 'Status', 'Actions'],
    userCol: 'User',
  },
  de: {
    title: 'Profil',
    account: 'Konto',
    email: 'E-Mail',
    displayName: 'Anzeigename',
    role: 'Rolle',
    roles: { user: 'Benutzer', admin: 'Admin' } as Record<string, string>,
    status: 'Status',
    statuses: { active: 'aktiv', disabled: 'deaktiviert', unverified: 'unbestätigt', pending_approval: 'wartet auf Freigabe' } as Record<string, string>,
    registered: 'Registriert',
    lastLogin: 'Letzte Anmeldung',
    changePassword: 'Passwort ändern',
    current: 'Aktuelles Passwort',
    newPassword: 'Neues Passwort',
    pwHint: 'Mindestens 10 Zeichen. Ihre anderen Sitzungen werden abgemeldet.',
    repeat: 'Neues Passwort wiederholen',
    newToken: 'Neues API-Token',
    tokenLead: 'Mit API-Tokens handeln Skripte, die CLI und Chat-Programme in Ihrem Namen. Behandeln Sie sie wie Passwörter.',
    name: 'Name',
    days: 'Läuft ab nach Tagen (optional)',
    createToken: 'Token erstellen',
    copyNow: 'Kopieren Sie dieses Token jetzt.',
    shownOnce: 'Es wird nur einmal angezeigt.',
    copyToken: 'Token kopieren',
    allTokens: 'API-Tokens (alle Benutzer)',
    yourTokens: 'Ihre API-Tokens',
    caption: 'API-Tokens',
    cols: ['Name', 'Präfix', 'Erstellt', 'Zuletzt benutzt', 'Läuft ab', 'Status', 'Aktionen'],
    userCol: 'Benutzer',
  },
} satisfies Record<Lang, unknown>

export function ProfilePage(props: { ctx: PageCtx; me: ProfileUser }) {
  const me = props.me
  const t = TEXT[props.ctx.lang]
  const admin = props.ctx.user?.role === 'admin'
  const cols = admin ? [t.cols[0]!, t.cols[1]!, t.userCol, ...t.cols.slice(2)] : t.cols
  return (
    <Layout ctx={props.ctx} title={t.title} script="profile.js" data={{ admin: admin ? '1' : '0' }}>
      <h1 safe>{t.title}</h1>
      <section class="card" aria-labelledby="account-title">
        <h2 id="account-title" safe>{t.account}</h2>
        <dl class="facts">
          <dt safe>{t.email}</dt>
          <dd safe>{me.email}</dd>
          <dt safe>{t.displayName}</dt>
          <dd safe>{me.displayName ?? '—'}</dd>
          <dt safe>{t.role}</dt>
          <dd safe>{t.roles[me.role] ?? me.role}</dd>
          <dt safe>{t.status}</dt>
          <dd safe>{t.statuses[me.status] ?? me.status}</dd>
          <dt safe>{t.registered}</dt>
          <dd>
            <Time iso={me.createdAt} />
          </dd>
          <dt safe>{t.lastLogin}</dt>
          <dd>
            <Time iso={me.lastLoginAt} />
          </dd>
        </dl>
      </section>
      <div class="grid">
        <section class="card" aria-labelledby="password-title">
          <h2 id="password-title" safe>{t.changePassword}</h2>
          <form id="password-form" method="post">
            <input type="text" name="username" autocomplete="username" value={escapeHtml(me.email)} hidden />
            <label for="pw-current" safe>{t.current}</label>
            <input id="pw-current" name="current_password" type="password" autocomplete="current-password" required />
            <label for="pw-new" safe>{t.newPassword}</label>
            <input id="pw-new" name="new_password" type="password" autocomplete="new-password" minlength="10" maxlength="512" required aria-describedby="pw-hint" />
            <p class="hint" id="pw-hint" safe>{t.pwHint}</p>
            <label for="pw-confirm" safe>{t.repeat}</label>
            <input id="pw-confirm" name="confirm" type="password" autocomplete="new-password" minlength="10" maxlength="512" required />
            <div class="actions">
              <button type="submit" safe>{t.changePassword}</button>
            </div>
            <Notice id="password-msg" />
          </form>
        </section>
        <section class="card" aria-labelledby="mint-title">
          <h2 id="mint-title" safe>{t.newToken}</h2>
          <p class="muted" safe>{t.tokenLead}</p>
          <form id="token-form" method="post">
            <label for="token-name" safe>{t.name}</label>
            <input id="token-name" name="name" type="text" required maxlength="100" placeholder="laptop CLI" />
            <label for="token-days" safe>{t.days}</label>
            <input id="token-days" name="expires_in_days" type="number" min="1" max="3650" />
            <div class="actions">
              <button type="submit" safe>{t.createToken}</button>
            </div>
            <Notice id="token-msg" />
          </form>
          <div id="token-once" class="secret" hidden>
            <p>
              <strong safe>{t.copyNow}</strong> <span safe>{t.shownOnce}</span>
            </p>
            <div class="cmd">
              <pre id="token-value"></pre>
              <button type="button" data-copy="token-value" data-copy-status="token-msg" safe>{t.copyToken}</button>
            </div>
          </div>
        </section>
      </div>
      <section class="card" aria-labelledby="tokens-title">
        <h2 id="tokens-title" safe>{admin ? t.allTokens : t.yourTokens}</h2>
        <Table id="tokens-body" caption={t.caption} cols={cols} lang={props.ctx.lang} />
        <Notice id="tokens-msg" />
      </section>
    </Layout>
  )
}
