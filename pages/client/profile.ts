// profile.js: password change, API token mint (shown once), list and revoke.
import type {} from './types'

export function profileClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const admin = svc.data('admin') === '1'
  const cols = admin ? 8 : 7

  const stateOf = (tok: any) => (tok.revoked_at ? 'revoked' : tok.expires_at && new Date(tok.expires_at).getTime() < Date.now() ? 'expired' : 'active')

  async function revoke(tok: any): Promise<void> {
    if (!confirm(t('tokens.confirmRevoke', { name: tok.name }))) return
    const r = await svc.api('DELETE', '/api/v1/api-tokens/' + encodeURIComponent(tok.id))
    svc.say('tokens-msg', r.ok ? t('tokens.revoked', { name: tok.name }) : (r.error ?? ''), r.ok ? 'ok' : 'error')
    // A revoked token has no button: the focus goes to what happened (it fell to the page).
    if (r.ok) svc.focus('tokens-msg')
    void load()
  }

  const row = (tok: any) => {
    const state = stateOf(tok)
    return el(
      'tr',
      {},
      el('td', { text: tok.name }),
      el('td', { class: 'mono', text: tok.prefix }),
      admin ? el('td', { text: String(tok.user_email) }) : null,
      el('td', { text: svc.fmtTime(tok.created_at) }),
      el('td', { text: svc.fmtTime(tok.last_used_at) }),
      el('td', { text: tok.expires_at ? svc.fmtTime(tok.expires_at) : t('common.never') }),
      el('td', {}, svc.badge(state)),
      el('td', {}, state === 'active' ? el('button', { type: 'button', class: 'small danger', 'aria-label': t('tokens.revokeLabel', { name: tok.name }), onclick: (e: Event) => void svc.exclusive(e.currentTarget as Element, () => revoke(tok)) }, t('tokens.revoke')) : ''),
    )
  }

  // An admin sees every user's tokens: 50 rows at a time.
  const list = svc.showMore($('tokens-body'), () => void load())
  async function load() {
    const r = await svc.api('GET', '/api/v1/api-tokens')
    const body = $('tokens-body')
    if (!r.ok) return svc.render(body, { s: r.status }, () => [el('tr', {}, el('td', { colspan: cols, class: 'empty', text: t('common.loadFailed', { error: r.error ?? '' }) }))])
    const items = r.data.items as any[]
    const shown = items.slice(0, list.limit())
    svc.render(body, shown, () => (shown.length ? shown.map(row) : [el('tr', {}, el('td', { colspan: cols, class: 'empty', text: t('tokens.none') }))]))
    list.shown(shown.length, items.length)
  }

  svc.clearOnInput('token-form', 'token-msg')
  // One request at a time: a double click minted two tokens, and the first was never shown.
  svc.onSubmit('token-form', async (form) => {
    const f = svc.formJson(form)
    const body: Record<string, unknown> = { name: f.name }
    if (f.expires_in_days) body.expires_in_days = Number(f.expires_in_days)
    const r = await svc.api('POST', '/api/v1/api-tokens', body)
    if (!r.ok) return svc.formError('token-msg', svc.refusedFields(r, { '/name': ['token-name'], '/expires_in_days': ['token-days'] }), r.error ?? '')
    const once = $('token-once')
    const value = $('token-value')
    if (value) value.textContent = r.data.token
    if (once) once.hidden = false
    form.reset()
    svc.say('token-msg', t('tokens.created', { name: r.data.name }), 'ok')
    void load()
  })

  svc.onSubmit('password-form', async (form) => {
    const f = svc.formJson(form)
    if (f.new_password !== f.confirm) return svc.formError('password-msg', ['pw-confirm'], t('auth.differ'))
    const r = await svc.api('POST', '/api/v1/auth/password', { current_password: f.current_password, new_password: f.new_password })
    if (!r.ok) return svc.formError('password-msg', svc.refusedFields(r, { wrong_password: ['pw-current'], '/current_password': ['pw-current'], '/new_password': ['pw-new'] }), r.error ?? '')
    form.reset()
    svc.say('password-msg', t('profile.changed'), 'ok')
  })

  void load()
}
