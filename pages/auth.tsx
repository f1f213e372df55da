// Login, registration and the two email-link pages. Each form posts JSON to the account API from
// auth.js; the forms are ordinary labelled <form>s, so Enter submits and native validation speaks.
// Every form says method="post": should its script fail to load, a password never lands in a URL.
import { Layout, Notice, type PageCtx } from './layout'
import type { Lang } from './i18n'

export function LoginPage(props: { ctx: PageCtx; next: string }) {
  return (
    <Layout ctx={props.ctx} title="Log in" script="auth.js" data={{ next: props.next }}>
      <div class="card legal">
        <h1>Log in</h1>
        <form id="login-form" method="post">
          <label for="login-email">Email</label>
          <input id="login-email" name="email" type="email" autocomplete="username" required />
          <label for="login-password">Password</label>
          <input id="login-password" name="password" type="password" autocomplete="current-password" required />
          <div class="actions">
            <button type="submit">Log in</button>
          </div>
          <Notice id="login-msg" />
        </form>
        <p class="muted">
          <a href="/forgot-password">Forgot your password?</a>
        </p>
        <p class="muted">
          No account yet? <a href="/register">Register</a>.
        </p>
      </div>
    </Layout>
  )
}

export function RegisterPage(props: { ctx: PageCtx }) {
  return (
    <Layout ctx={props.ctx} title="Register" script="auth.js">
      <div class="card legal">
        <h1>Create an account</h1>
        <p class="muted">The first account on a new leader becomes its administrator.</p>
        <form id="register-form" method="post">
          <label for="reg-email">Email</label>
          <input id="reg-email" name="email" type="email" autocomplete="email" required />
          <label for="reg-name">Display name (optional)</label>
          <input id="reg-name" name="display_name" type="text" autocomplete="name" maxlength="100" />
          <label for="reg-password">Password</label>
          <input id="reg-password" name="password" type="password" autocomplete="new-password" minlength="10" maxlength="512" required aria-describedby="reg-password-hint" />
          <p class="hint" id="reg-password-hint">At least 10 characters, and not your email address.</p>
          <div class="actions">
            <button type="submit">Register</button>
          </div>
          <Notice id="register-msg" />
        </form>
        <p class="muted">
          Already registered? <a href="/login">Log in</a>.
        </p>
      </div>
    </Layout>
  )
}

export function VerifyEmailPage(props: { ctx: PageCtx }) {
  return (
    <Layout ctx={props.ctx} title="Confirm your email" script="auth.js">
      <div class="card legal">
        <h1>Confirm your email</h1>
        <form id="verify-form" method="post">
          <p>Confirm that this email address belongs to you.</p>
          <div class="actions">
            <button type="submit">Confirm my email</button>
          </div>
          <Notice id="verify-msg" />
        </form>
      </div>
    </Layout>
  )
}

export function ResetPasswordPage(props: { ctx: PageCtx }) {
  return (
    <Layout ctx={props.ctx} title="Choose a new password" script="auth.js">
      <div class="card legal">
        <h1>Choose a new password</h1>
        <form id="reset-form" method="post">
          <label for="reset-password">New password</label>
          <input id="reset-password" name="new_password" type="password" autocomplete="new-password" minlength="10" maxlength="512" required aria-describedby="reset-hint" />
          <p class="hint" id="reset-hint">At least 10 characters, and not your email address.</p>
          <label for="reset-confirm">Repeat the new password</label>
          <input id="reset-confirm" name="confirm" type="password" autocomplete="new-password" minlength="10" maxlength="512" required />
          <div class="actions">
            <button type="submit">Set password</button>
          </div>
          <Notice id="reset-msg" />
        </form>
      </div>
    </Layout>
  )
}

const FORGOT: Record<Lang, { title: string; intro: string; mail: string; noMail: string; back: string }> = {
  en: {
    title: 'Forgot your password?',
    intro: 'This leader has no self-service password reset. Ask an administrator of this leader to reset your password.',
    mail: 'They can have a reset link mailed to you; it works once, for 24 hours.',
    noMail: 'This leader sends no mail, so they will hand you a reset link themselves; it works once, for 24 hours.',
    back: 'Back to log in',
  },
  de: {
    title: 'Passwort vergessen?',
    intro: 'Dieser Leader bietet kein Zurücksetzen des Passworts in Eigenregie. Bitten Sie eine Administratorin oder einen Administrator dieses Leaders, Ihr Passwort zurückzusetzen.',
    mail: 'Sie bekommen dann einen Link per E-Mail; er gilt einmal, für 24 Stunden.',
    noMail: 'Dieser Leader verschickt keine E-Mails; Sie bekommen den Link deshalb direkt von der Administration. Er gilt einmal, für 24 Stunden.',
    back: 'Zurück zur Anmeldung',
  },
}

/**
 * There is no public "mail me a reset link" route (only an admin can start a reset), so this page
 * says whom to ask, in the interface language, and how the link will reach them.
 */
export function ForgotPasswordPage(props: { ctx: PageCtx; mail: boolean }) {
  const t = FORGOT[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.title} bodyLang={props.ctx.lang}>
      <div class="card legal">
        <h1 safe>{t.title}</h1>
        <p safe>{t.intro}</p>
        <p safe>{props.mail ? t.mail : t.noMail}</p>
        <p>
          <a href="/login" safe>{t.back}</a>
        </p>
      </div>
    </Layout>
  )
}
