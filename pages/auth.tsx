// Login, registration and the two email-link pages. Each form posts JSON to the account API from
// auth.js; the forms are ordinary labelled <form>s, so Enter submits and native validation speaks.
// Every form says method="post": should its script fail to load, a password never lands in a URL.
import { Layout, Notice, type PageCtx } from './layout'

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
