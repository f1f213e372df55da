// HTTP surface of accounts: /api/v1/auth/* and /api/v1/api-tokens.
import { SESSION_COOKIE } from '../http/policy'
import { CSRF_COOKIE, mintCsrfToken } from '../http/csrf'
import { asUser } from '../http/callers'
import type { AppBase } from '../http/base'
import type { Ctx } from '../context'
import type { Accounts } from './service'
import type { NewSession } from './sessions'
import { listApiTokens, mintApiToken, requireLiveSession, revokeApiToken } from './api-tokens'
import * as M from './model'

type CookieJar = Record<string, { set(v: Record<string, unknown>): unknown; remove(): unknown }>

export function setSessionCookies(ctx: Ctx, cookie: CookieJar, session: NewSession): void {
  // Max-Age as well as Expires: a browser whose clock runs days ahead of the leader's dropped a
  // cookie with only the leader's date in it at once (browsers read Max-Age first).
  const maxAge = Math.max(0, Math.floor((session.expiresAt - ctx.clock.now()) / 1000))
  const common = { path: '/', sameSite: 'lax' as const, secure: ctx.cfg.cookieSecure, expires: new Date(session.expiresAt), maxAge }
  cookie[SESSION_COOKIE]!.set({ value: session.token, httpOnly: true, ...common })
  cookie[CSRF_COOKIE]!.set({ value: mintCsrfToken(ctx.cfg.secretKey, session.token), httpOnly: false, ...common })
}

export function clearSessionCookies(ctx: Ctx, cookie: CookieJar): void {
  for (const name of [SESSION_COOKIE, CSRF_COOKIE]) {
    cookie[name]!.set({ value: '', path: '/', sameSite: 'lax', secure: ctx.cfg.cookieSecure, httpOnly: name === SESSION_COOKIE, maxAge: 0, expires: new Date(0) })
  }
}

export function accountRoutes(app: AppBase, ctx: Ctx, accounts: Accounts) {
  return app
    .post(
      '/api/v1/auth/register',
      async ({ body, clientIp, cookie, set }) => {
        const { user, session } = await accounts.register(body, { clientIp })
        if (session) setSessionCookies(ctx, cookie as unknown as CookieJar, session)
        set.status = 201
        return { user, logged_in: session !== null }
      },
      { policy: 'public', body: M.RegisterBody, response: { 201: M.RegisterResult } },
    )
    .post(
      '/api/v1/auth/login',
      async ({ body, clientIp, cookie }) => {
        const { user, session } = await accounts.login(body.email, body.password, { clientIp })
        setSessionCookies(ctx, cookie as unknown as CookieJar, session)
        return { user }
      },
      { policy: 'public', body: M.LoginBody, response: { 200: M.LoginResult } },
    )
    .post(
      '/api/v1/auth/logout',
      ({ caller, clientIp, cookie, set }) => {
        const me = asUser(caller)
        accounts.logout(me.userId, me.credentialId, { clientIp })
        clearSessionCookies(ctx, cookie as unknown as CookieJar)
        set.status = 204
      },
      { policy: 'session' },
    )
    .get('/api/v1/auth/me', ({ caller }) => accounts.me(asUser(caller).userId), {
      policy: 'operator',
      response: { 200: M.Me },
    })
    .post(
      '/api/v1/auth/password',
      async ({ body, caller, clientIp, set }) => {
        const me = asUser(caller)
        await accounts.changePassword(me.userId, me.credentialId, body.current_password, body.new_password, { clientIp })
        set.status = 204
      },
      { policy: 'session', body: M.PasswordChangeBody },
    )
    .post('/api/v1/auth/verify-email', ({ body, clientIp }) => accounts.verifyEmail(body.token, { clientIp }), {
      policy: 'public',
      body: M.TokenBody,
      response: { 200: M.StatusResult },
    })
    .post(
      '/api/v1/auth/reset-password',
      async ({ body, clientIp }) => ({ account_status: await accounts.resetPassword(body.token, body.new_password, { clientIp }) }),
      { policy: 'public', body: M.ResetPasswordBody, response: { 200: M.ResetResult } },
    )
    .post(
      '/api/v1/api-tokens',
      ({ body, caller, set }) => {
        set.status = 201
        set.headers['cache-control'] = 'no-store' // the token, shown once
        const me = asUser(caller)
        requireLiveSession(ctx, me.userId, me.credentialId)
        return mintApiToken(ctx, me.userId, body.name, body.expires_in_days)
      },
      { policy: 'session', body: M.MintTokenBody, response: { 201: M.MintedToken } },
    )
    .get('/api/v1/api-tokens', ({ caller }) => ({ items: listApiTokens(ctx, asUser(caller)) }), {
      policy: 'operator',
      response: { 200: M.ApiTokenList },
    })
    .delete('/api/v1/api-tokens/:id', ({ caller, params }) => revokeApiToken(ctx, asUser(caller), params.id), {
      policy: 'operator',
      params: M.IdParams,
      response: { 200: M.ApiTokenRecord },
    })
}

