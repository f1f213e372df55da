// auth.js: login, register, verify-email and reset-password forms.
import type {} from './types'

export function authClient(): void {
  const svc = window.svc
  const t = svc.t
  const tokenFromUrl = () => new URLSearchParams(location.search).get('token') ?? ''
  // One request at a time per form (svc.onSubmit: its button is off while one is under way).
  const on = svc.onSubmit
  // Only a same-origin path may be a post-login destination (no open redirect).
  const safeNext = (n: string) => (/^\/(?!\/)[^\s\\]*$/.test(n) ? n : '/dashboard')

  on('login-form', async (form) => {
    svc.say('login-msg', t('auth.loggingIn'))
    const r = await svc.api('POST', '/api/v1/auth/login', svc.formJson(form))
    if (!r.ok) return svc.formError('login-msg', svc.refusedFields(r, { invalid_credentials: ['login-password', 'login-email'], '/email': ['login-email'], '/password': ['login-password'] }), r.error ?? '')
    location.href = safeNext(svc.data('next') || '/dashboard')
  })

  on('register-form', async (form) => {
    const body = svc.formJson(form)
    if (body.display_name === '') delete body.display_name
    svc.say('register-msg', t('auth.creating'))
    const r = await svc.api('POST', '/api/v1/auth/register', body)
    if (!r.ok) return svc.formError('register-msg', svc.refusedFields(r, { email_taken: ['reg-email'], '/email': ['reg-email'], '/display_name': ['reg-name'], '/password': ['reg-password'] }), r.error ?? '')
    if (r.data.logged_in) {
      location.href = safeNext(svc.data('next') || '/dashboard')
      return
    }
    const status = r.data.user?.status
    svc.say(
      'register-msg',
      status === 'unverified'
        ? t('auth.createdVerify')
        : t('auth.createdApprove'),
      'ok',
    )
    form.reset()
  })

  on('verify-form', async () => {
    const token = tokenFromUrl()
    if (!token) return svc.say('verify-msg', t('auth.noTokenMail'), 'error')
    const r = await svc.api('POST', '/api/v1/auth/verify-email', { token })
    if (!r.ok) return svc.say('verify-msg', r.error ?? '', 'error')
    const msg = document.getElementById('verify-msg')
    svc.say(
      msg,
      r.data.status === 'pending_approval'
        ? t('auth.confirmedApprove')
        : t('auth.confirmed'),
      'ok',
    )
    msg?.append(' ', svc.el('a', { href: '/login', text: t('auth.login') }))
  })

  on('reset-form', async (form) => {
    const token = tokenFromUrl()
    const body = svc.formJson(form)
    if (!token) return svc.say('reset-msg', t('auth.noTokenAdmin'), 'error')
    if (body.new_password !== body.confirm) return svc.formError('reset-msg', ['reset-confirm'], t('auth.differ'))
    const r = await svc.api('POST', '/api/v1/auth/reset-password', { token, new_password: body.new_password })
    if (!r.ok) return svc.formError('reset-msg', svc.refusedFields(r, { '/new_password': ['reset-password'] }), r.error ?? '')
    form.reset()
    const msg = document.getElementById('reset-msg')
    // A new password opens only an active account: said here, not at the next login's refusal.
    const status = String(r.data?.account_status ?? 'active')
    svc.say(msg, status === 'active' ? t('auth.passwordSet') : t('auth.passwordSetInactive', { status: t('state.' + status) }), 'ok')
    msg?.append(' ', svc.el('a', { href: '/login', text: t('auth.login') }))
  })
}
