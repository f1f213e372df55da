// The authorization matrix: what each kind of caller must get from a route of each class, and,
// when the route's path names a resource of the caller's own pool, what pool scoping adds.
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

/** 'allowed': not refused by the policy layer. 404: hidden by pool scoping. 'refused': 403 or 404. */
export type Expect = 'allowed' | 401 | 403 | 404 | 'refused'

/**
 * What a route's path names. 'none': nothing of anyone (random ids), so only the class decides.
 * 'pool': a resource of the own user's pool (pool, job, fellow, join session, servable, artifact,
 * upload, own API token): a person outside the pool must get 404, a fellow of another pool a refusal. 'refused': a
 * resource an outsider must be refused but may learn exists (an invite: 403 email mismatch or 404).
 * 'own_node': a resource only the fellow that made it may touch (its upload under way): anyone else
 * the class lets through, people of the pool and admins included, gets 404.
 */
export type Scope = 'none' | 'pool' | 'refused' | 'own_node'

const DENIED_CODES = new Set(['unauthorized', 'forbidden', 'session_required', 'csrf_failed'])

/** What a caller must get from a route of class `cls` with every enforcement flag on. */
export function classExpected(cls: PolicyClass, who: CallerKind): Expect {
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
    case 'member':
      if (bad) return 401
      return 'allowed' // people and fellows alike; the pool is checked by the service (404)
    case 'admin':
      if (bad) return 401
      return who === 'admin_session' || who === 'admin_token' ? 'allowed' : 403
  }
}

/** The class's answer, narrowed by pool scoping when the path names the own pool's resources. */
export function expected(cls: PolicyClass, who: CallerKind, scope: Scope = 'none'): Expect {
  const base = classExpected(cls, who)
  if (base !== 'allowed' || scope === 'none') return base
  if (scope === 'own_node') return who === 'own_node' ? 'allowed' : 404
  if (who === 'other_pool_member' && (cls === 'operator' || cls === 'member' || cls === 'session' || cls === 'page' || cls === 'chat')) return scope === 'pool' ? 404 : 'refused'
  if (who === 'foreign_node' && cls === 'member') return scope === 'pool' ? 404 : 'refused'
  if (who === 'foreign_node' && cls === 'node') return 'refused'
  return 'allowed'
}

/** The policy-level reading of an answer (problem+json or OpenAI's error shape). */
export function verdict(status: number, body: unknown): Expect {
  const b = body as { code?: string; error?: { code?: string } } | null
  const code = b?.code ?? b?.error?.code
  if (status === 401) return 401
  if (status === 403 && code !== undefined && DENIED_CODES.has(code)) return 403
  return 'allowed'
}

export function matches(want: Expect, status: number, body: unknown): boolean {
  switch (want) {
    case 'allowed':
      // A 404 for an allowed caller is a resource answer (random id, or one an earlier call removed).
      return verdict(status, body) === 'allowed'
    case 401:
    case 403:
      return verdict(status, body) === want
    case 404:
      return status === 404
    case 'refused':
      return status === 403 || status === 404
  }
}

/** Ids of the resources hanging off the calling user's pool (see test/helpers/world.ts Chain). */
export interface OwnRefs {
  userId: string
  memberId: string
  poolId: string
  jobId: string
  fellowId: string
  joinSessionId: string
  apiTokenId: string
  inviteId: string
  servable: string
  artifactId: string
  uploadId: string
}

const RANDOM_ID = '01a20184-99e9-7296-9fc7-75b6e5358e98'
const RANK: Record<Scope, number> = { none: 0, refused: 1, pool: 2, own_node: 3 }

/**
 * Fills a route's path parameters with the own pool's resources where the name says what they are,
 * else with a random id. `bound` is false when any parameter got a random id (a route added later
 * with a new parameter name is still walked, with the class alone deciding).
 */
export function bindPath(path: string, refs: OwnRefs): { path: string; scope: Scope; bound: boolean } {
  let scope: Scope = 'none'
  let bound = true
  const widen = (s: Scope) => {
    if (RANK[s] > RANK[scope]) scope = s
  }
  const filled = path.replace(/:([A-Za-z_]+)/g, (_, name: string) => {
    const [value, s] = bindOne(name, path, refs)
    if (value === null) {
      bound = false
      return RANDOM_ID
    }
    widen(s)
    return encodeURIComponent(value)
  })
  return { path: filled, scope, bound }
}

function bindOne(name: string, path: string, refs: OwnRefs): [string | null, Scope] {
  switch (name) {
    case 'id':
      if (path.includes('/api-tokens/')) return [refs.apiTokenId, 'pool']
      if (path.includes('/join-sessions/')) return [refs.joinSessionId, 'pool']
      if (path.includes('/admin/users/')) return [refs.userId, 'none']
      if (path.includes('/pools/')) return [refs.poolId, 'pool']
      if (path.includes('/artifacts/')) return [refs.artifactId, 'pool']
      return [null, 'none']
    case 'fellow_id':
      return [refs.fellowId, 'pool']
    case 'job_id':
      return [refs.jobId, 'pool']
    case 'user_id':
      return [refs.memberId, 'none']
    case 'invite_id':
      return [refs.inviteId, 'refused']
    case 'upload_id':
      return [refs.uploadId, 'own_node']
    case 'model':
      return [refs.servable, 'pool']
    case 'channel':
      return ['activations', 'none']
    case 'role':
      return ['user', 'none']
    case 'code':
      return ['en', 'none']
    default:
      return [null, 'none']
  }
}
