// The authorization matrix: what each kind of caller must get from a route of each class.
import type { PolicyClass } from '../../src/http/policy'

export type CallerKind =
  | 'none'
  | 'garbage_bearer'
  | 'garbage_cookie'
  | 'revoked_token'
  | 'user_session'
  | 'user_token'
  | 'other_pool_member'
  | 'admin_session'
  | 'admin_token'
  | 'own_node'
  | 'foreign_node'
  | 'revoked_node'

export type Expect = 'allowed' | 401 | 403

const DENIED_CODES = new Set(['unauthorized', 'forbidden', 'session_required', 'csrf_failed'])

/** What a caller must get from a route of class `cls` with every enforcement flag on. */
export function expected(cls: PolicyClass, who: CallerKind): Expect {
  const bad = who === 'none' || who === 'garbage_bearer' || who === 'garbage_cookie' || who === 'revoked_token' || who === 'revoked_node'
  const user = who === 'user_session' || who === 'user_token' || who === 'other_pool_member' || who === 'admin_session' || who === 'admin_token'
  const node = who === 'own_node' || who === 'foreign_node'
  switch (cls) {
    case 'public':
    case 'page':
      return 'allowed'
    case 'node':
      if (bad) return 401
      if (user) return 403
      return 'allowed' // node-specific ownership is checked by the route (404/403 per resource)
    case 'chat':
      if (bad) return 401
      return who === 'user_token' || who === 'admin_token' ? 'allowed' : 403
    case 'session':
      if (bad) return 401
      return who === 'user_session' || who === 'other_pool_member' || who === 'admin_session' ? 'allowed' : 403
    case 'operator':
      if (bad) return 401
      return node ? 403 : 'allowed'
    case 'admin':
      if (bad) return 401
      return who === 'admin_session' || who === 'admin_token' ? 'allowed' : 403
  }
}

export function verdict(status: number, body: unknown): Expect {
  const code = (body as { code?: string } | null)?.code
  if (status === 401) return 401
  if (status === 403 && code !== undefined && DENIED_CODES.has(code)) return 403
  return 'allowed'
}
