// /profile: account details, password change and personal API tokens.
import { escapeHtml } from '@kitajs/html'
import { Layout, Notice, type PageCtx } from './layout'

export interface ProfileUser {
  email: string
  displayName: string | null
  role: string
  status: string
  createdAt: string
  lastLoginAt: string | null
}

export function ProfilePage(props: { ctx: PageCtx; me: ProfileUser }) {
  const me = props.me
  const admin = props.ctx.user?.role === 'admin'
  return (
    <Layout ctx={props.ctx} title="Profile" script="profile.js" data={{ admin: admin ? '1' : '0' }}>
      <h1>Profile</h1>
      <section class="card" aria-labelledby="account-title">
        <h2 id="account-title">Account</h2>
        <dl class="facts">
          <dt>Email</dt>
          <dd safe>{me.email}</dd>
          <dt>Display name</dt>
          <dd safe>{me.displayName ?? '—'}</dd>
          <dt>Role</dt>
          <dd safe>{me.role}</dd>
          <dt>Status</dt>
          <dd safe>{me.status}</dd>
          <dt>Registered</dt>
          <dd>
            <time datetime={me.createdAt} safe>{me.createdAt.replace('T', ' ').slice(0, 16) + ' UTC'}</time>
          </dd>
          <dt>Last login</dt>
          <dd safe>{me.lastLoginAt === null ? '—' : me.lastLoginAt.replace('T', ' ').slice(0, 16) + ' UTC'}</dd>
        </dl>
      </section>
      <div class="grid">
        <section class="card" aria-labelledby="password-title">
          <h2 id="password-title">Change password</h2>
          <form id="password-form" method="post">
            <input type="text" name="username" autocomplete="username" value={escapeHtml(me.email)} hidden />
            <label for="pw-current">Current password</label>
            <input id="pw-current" name="current_password" type="password" autocomplete="current-password" required />
            <label for="pw-new">New password</label>
            <input id="pw-new" name="new_password" type="password" autocomplete="new-password" minlength="10" maxlength="512" required aria-describedby="pw-hint" />
            <p class="hint" id="pw-hint">At least 10 characters. Your other sessions are logged out.</p>
            <label for="pw-confirm">Repeat the new password</label>
            <input id="pw-confirm" name="confirm" type="password" autocomplete="new-password" minlength="10" maxlength="512" required />
            <div class="actions">
              <button type="submit">Change password</button>
            </div>
            <Notice id="password-msg" />
          </form>
        </section>
        <section class="card" aria-labelledby="mint-title">
          <h2 id="mint-title">New API token</h2>
          <p class="muted">API tokens let scripts, the CLI and chat clients act as you. Treat them like passwords.</p>
          <form id="token-form" method="post">
            <label for="token-name">Name</label>
            <input id="token-name" name="name" type="text" required maxlength="100" placeholder="laptop CLI" />
            <label for="token-days">Expires after days (optional)</label>
            <input id="token-days" name="expires_in_days" type="number" min="1" max="3650" />
            <div class="actions">
              <button type="submit">Create token</button>
            </div>
            <Notice id="token-msg" />
          </form>
          <div id="token-once" class="secret" hidden>
            <p>
              <strong>Copy this token now.</strong> It is shown only once.
            </p>
            <div class="cmd">
              <pre id="token-value"></pre>
              <button type="button" data-copy="token-value" data-copy-status="token-msg">Copy token</button>
            </div>
          </div>
        </section>
      </div>
      <section class="card" aria-labelledby="tokens-title">
        <h2 id="tokens-title">{admin ? 'API tokens (all users)' : 'Your API tokens'}</h2>
        <div class="table-wrap">
          <table>
            <caption class="sr-only">API tokens</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                {admin ? <th scope="col">User</th> : ''}
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Status</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody id="tokens-body">
              <tr>
                <td colspan="8" class="empty">Loading…</td>
              </tr>
            </tbody>
          </table>
        </div>
        <Notice id="tokens-msg" />
      </section>
    </Layout>
  )
}
