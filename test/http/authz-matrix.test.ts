import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient, tokenClient, type Client } from '../helpers/harness'
import { expected, verdict, type CallerKind } from '../helpers/matrix'
import type { PolicyClass } from '../../src/http/policy'

const h = makeHarness()
afterAll(() => h.close())

const user = await seedUser(h, 'matrix-user@example.com')
const admin = await seedUser(h, 'matrix-admin@example.com', { role: 'admin' })
const otherMember = await seedUser(h, 'matrix-other@example.com')
await sessionClient(h, otherMember.id).post('/api/v1/pools', { name: 'Other pool' })
const revoked = tokenClient(h, user.id)
await revoked.delete(`/api/v1/api-tokens/${revoked.tokenId}`)

/** A fresh client per request: some routes (logout) end the session they are called with. */
function callerFor(kind: CallerKind): Client {
  switch (kind) {
    case 'none':
      return h.client()
    case 'garbage_bearer':
      return h.client({ bearer: 'svc_pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })
    case 'garbage_cookie': {
      const c = h.client()
      c.cookies.set('svc_session', 'not-a-session')
      return c
    }
    case 'revoked_token':
      return h.client({ bearer: revoked.opts.bearer! })
    case 'user_session':
      return sessionClient(h, user.id)
    case 'user_token':
      return tokenClient(h, user.id)
    case 'other_pool_member':
      return sessionClient(h, otherMember.id)
    case 'admin_session':
      return sessionClient(h, admin.id)
    case 'admin_token':
      return tokenClient(h, admin.id)
    default:
      throw new Error(`no ${kind} caller in this suite`)
  }
}

const KINDS: CallerKind[] = ['none', 'garbage_bearer', 'garbage_cookie', 'revoked_token', 'user_session', 'user_token', 'other_pool_member', 'admin_session', 'admin_token']
const routes = h.app.routes
  .filter((r) => r.method !== 'WS')
  .map((r) => ({ method: r.method, path: r.path, cls: r.hooks?.detail?.['x-policy'] as PolicyClass }))
routes.push({ method: 'GET', path: '/api/v1/no-such-route', cls: 'admin' })
routes.push({ method: 'POST', path: '/api/v1/no-such-route', cls: 'admin' })

describe('authorization matrix', () => {
  for (const r of routes) {
    test(`${r.method} ${r.path} (${r.cls})`, async () => {
      const path = r.path.replace(/:[a-zA-Z_]+/g, '01a20184-99e9-7296-9fc7-75b6e5358e98')
      const rows: string[] = []
      for (const kind of KINDS) {
        const c = callerFor(kind)
        const body = r.method === 'GET' || r.method === 'DELETE' ? undefined : {}
        const res = await c.call(r.method, path, body)
        const got = verdict(res.status, res.body)
        const want = expected(r.cls, kind)
        if (got !== want) rows.push(`${kind}: expected ${want}, got ${res.status} ${JSON.stringify(res.body)}`)
      }
      expect(rows).toEqual([])
    })
  }
})
