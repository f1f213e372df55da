// profile.js: password change, API token mint (shown once), list and revoke.
import type {} from './types'

export function profileClient(): void {
  const svc = window.svc
  const el = svc.el
  const $ = (id: string) => document.getElementById(id)
  const admin = svc.data('admin') === '1'
  const cols = admin ? 8 : 7

  const stateOf = (t: any) => (t.revoked_at ? 'revoked' : t.expires_at && new Date(t.expires_at).getTime() < Date.now() ? 'expired' : 'active')

  async function revoke(t: any) {
    if (!confirm(`Revoke the token "${t.name}"? Anything using it stops working.`)) return
    const r = await svc.api('DELETE', '/api/v1/api-tokens/' + encodeURIComponent(t.id))
    svc.say('tokens-msg', r.ok ? `Token "${t.name}" revoked.` : (r.error ?? ''), r.ok ? 'ok' : 'error')
    void load()
  }

  const row = (t: any) => {
    const state = stateOf(t)
    return el(
      'tr',
      {},
      el('td', { text: t.name }),
      el('td', { class: 'mono', text: t.prefix }),
      admin ? el('td', { class: 'mono', text: String(t.user_id).slice(0, 13) }) : null,
      el('td', { text: svc.fmtTime(t.created_at) }),
      el('td', { text: svc.fmtTime(t.last_used_at) }),
      el('td', { text: t.expires_at ? svc.fmtTime(t.expires_at) : 'never' }),
      el('td', {}, svc.badge(state === 'active' ? 'active' : state === 'revoked' ? 'disabled' : 'offline')),
      el('td', {}, state === 'active' ? el('button', { type: 'button', class: 'small danger', 'aria-label': `Revoke token ${t.name}`, onclick: () => void revoke(t) }, 'Revoke') : ''),
    )
  }

  async function load() {
    const r = await svc.api('GET', '/api/v1/api-tokens')
    const body = $('tokens-body')
    if (!r.ok) return svc.render(body, { s: r.status }, () => [el('tr', {}, el('td', { colspan: cols, class: 'empty', text: 'Could not load: ' + r.error }))])
    const items = r.data.items as any[]
    svc.render(body, items, () => (items.length ? items.map(row) : [el('tr', {}, el('td', { colspan: cols, class: 'empty', text: 'No API tokens yet.' }))]))
  }

  $('token-form')?.addEventListener('submit', (e) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = svc.formJson(form)
    const body: Record<string, unknown> = { name: f.name }
    if (f.expires_in_days) body.expires_in_days = Number(f.expires_in_days)
    void svc.api('POST', '/api/v1/api-tokens', body).then((r) => {
      if (!r.ok) return svc.say('token-msg', r.error ?? '', 'error')
      const once = $('token-once')
      const value = $('token-value')
      if (value) value.textContent = r.data.token
      if (once) once.hidden = false
      form.reset()
      svc.say('token-msg', `Token "${r.data.name}" created. Copy it now: it will not be shown again.`, 'ok')
      void load()
    })
  })

  $('password-form')?.addEventListener('submit', (e) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = svc.formJson(form)
    if (f.new_password !== f.confirm) return svc.say('password-msg', 'The two new passwords differ.', 'error')
    void svc.api('POST', '/api/v1/auth/password', { current_password: f.current_password, new_password: f.new_password }).then((r) => {
      if (!r.ok) return svc.say('password-msg', r.error ?? '', 'error')
      form.reset()
      svc.say('password-msg', 'Password changed. Your other sessions were logged out.', 'ok')
    })
  })

  void load()
}
