// Login, registration and the two email-link pages. Each form posts JSON to the account API from
// auth.js; the forms are ordinary labelled <form>s, so Enter submits and native validation speaks.
// Every form says method="post": should its script fail to load, a password never lands in a URL.
// Their buttons are off until app.js turns them on (data-needs-js): without JavaScript a form was
// posted to the page's own address, which answered with raw JSON; the layout's notice says why.
import { Layout, Notice, type PageCtx } from './layout'
import type { Lang } from './i18n'

const AUTH = {
  en: {
    login: 'Log in',
    email: 'Email',
    password: 'Password',
    forgot: 'Forgot your password?',
    noAccount: 'No account yet?',
    register: 'Register',
    registerTitle: 'Create an account',
    registerTab: 'Register',
    firstAdmin: 'The first account on a new leader becomes its administrator.',
    displayName: 'Display name (optional)',
    pwHint: 'At least 10 characters, and not your email address.',
    already: 'Already registered?',
    verifyTitle: 'Confirm your email',
    verifyText: 'Confirm that this email address belongs to you.',
    verifyButton: 'Confirm my email',
    resetTitle: 'Choose a new password',
    newPassword: 'New password',
    repeat: 'Repeat the new password',
    setPassword: 'Set password',
  },
  de: {
    login: 'Anmelden',
    email: 'E-Mail',
    password: 'Passwort',
    forgot: 'Passwort vergessen?',
    noAccount: 'Noch kein Konto?',
    register: 'Registrieren',
    registerTitle: 'Konto anlegen',
    registerTab: 'Registrieren',
    firstAdmin: 'Das erste Konto auf einem neuen Leader wird dessen Administrator.',
    displayName: 'Anzeigename (optional)',
    pwHint: 'Mindestens 10 Zeichen und nicht Ihre E-Mail-Adresse.',
    already: 'Schon registriert?',
    verifyTitle: 'E-Mail-Adresse bestätigen',
    verifyText: 'Bestätigen Sie, dass diese E-Mail-Adresse Ihnen gehört.',
    verifyButton: 'Meine E-Mail-Adresse bestätigen',
    resetTitle: 'Neues Passwort wählen',
    newPassword: 'Neues Passwort',
    repeat: 'Neues Passwort wiederholen',
    setPassword: 'Passwort setzen',
  },
} satisfies Record<Lang, unknown>

export function LoginPage(props: { ctx: PageCtx; next: string }) {
  const t = AUTH[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.login} script="auth.js" data={{ next: props.next }}>
      <div class="card legal">
        <h1 safe>{t.login}</h1>
        <form id="login-form" method="post">
          <label for="login-email" safe>{t.email}</label>
          <input id="login-email" name="email" type="email" autocomplete="username" required />
          <label for="login-password" safe>{t.password}</label>
          <input id="login-password" name="password" type="password" autocomplete="current-password" required />
          <div class="actions">
            <button type="submit" disabled data-needs-js="" safe>{t.login}</button>
          </div>
          <Notice id="login-msg" />
        </form>
        <p class="muted">
          <a href="/forgot-password" safe>{t.forgot}</a>
        </p>
        <p class="muted">
          <span safe>{t.noAccount}</span> <a href={props.next === '/dashboard' ? '/register' : `/register?next=${encodeURIComponent(props.next)}`} safe>{t.register}</a>.
        </p>
      </div>
    </Layout>
  )
}

export function RegisterPage(props: { ctx: PageCtx; next: string }) {
  const t = AUTH[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.registerTab} script="auth.js" data={{ next: props.next }}>
      <div class="card legal">
        <h1 safe>{t.registerTitle}</h1>
        <p class="muted" safe>{t.firstAdmin}</p>
        <form id="register-form" method="post">
          <label for="reg-email" safe>{t.email}</label>
          <input id="reg-email" name="email" type="email" autocomplete="email" required />
          <label for="reg-name" safe>{t.displayName}</label>
          <input id="reg-name" name="display_name" type="text" autocomplete="name" maxlength="100" />
          <label for="reg-password" safe>{t.password}</label>
          <input id="reg-password" name="password" type="password" autocomplete="new-password" minlength="10" maxlength="512" required aria-describedby="reg-password-hint" />
          <p class="hint" id="reg-password-hint" safe>{t.pwHint}</p>
          <div class="actions">
            <button type="submit" disabled data-needs-js="" safe>{t.register}</button>
          </div>
          <Notice id="register-msg" />
        </form>
        <p class="muted">
          <span safe>{t.already}</span> <a href="/login" safe>{t.login}</a>.
        </p>
      </div>
    </Layout>
  )
}

export function VerifyEmailPage(props: { ctx: PageCtx }) {
  const t = AUTH[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.verifyTitle} script="auth.js">
      <div class="card legal">
        <h1 safe>{t.verifyTitle}</h1>
        <form id="verify-form" method="post">
          <p safe>{t.verifyText}</p>
          <div class="actions">
            <button type="submit" disabled data-needs-js="" safe>{t.verifyButton}</button>
          </div>
          <Notice id="verify-msg" />
        </form>
      </div>
    </Layout>
  )
}

export function ResetPasswordPage(props: { ctx: PageCtx }) {
  const t = AUTH[props.ctx.lang]
  return (
    <Layout ctx={props.ctx} title={t.resetTitle} script="auth.js">
      <div class="card legal">
        <h1 safe>{t.resetTitle}</h1>
        <form id="reset-form" method="post">
          <label for="reset-password" safe>{t.newPassword}</label>
          <input id="reset-password" name="new_password" type="password" autocomplete="new-password" minlength="10" maxlength="512" required aria-describedby="reset-hint" />
          <p class="hint" id="reset-hint" safe>{t.pwHint}</p>
          <label for="reset-confirm" safe>{t.repeat}</label>
          <input id="reset-confirm" name="confirm" type="password" autocomplete="new-password" minlength="10" maxlength="512" required />
          <div class="actions">
            <button type="submit" disabled data-needs-js="" safe>{t.setPassword}</button>
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
