// Who is calling: the caller the policy layer admits (a person, a fellow, or nobody) and the
// actor shapes services take. Plain types, below every feature and the HTTP layer alike, so a
// service, a loop or the CLI can name a caller without importing HTTP.

export interface UserCaller {
  kind: 'user'
  userId: string
  role: 'user' | 'admin'
  via: 'session' | 'api_token'
  /** The session row or API token row that authenticated this call. */
  credentialId: string
  fromCookie: boolean
}
export interface NodeCaller {
  kind: 'node'
  fellowId: string
  /** Null for a fellow detached from its pool (the pool was force-deleted). */
  poolId: string | null
  credentialId: string
}
/** No credential. `open` marks an operator route let through by SVC_REQUIRE_OPERATOR_AUTH=0. */
export interface AnonymousCaller {
  kind: 'anonymous'
  open: boolean
}
export type Caller = UserCaller | NodeCaller | AnonymousCaller

/** Turns a presented token into the caller it stands for, or null when it is not valid now. */
export type CredentialResolver = (token: string, source: 'cookie' | 'bearer') => UserCaller | NodeCaller | null

/** A person acting on pools (and the fellows in them). */
export interface Actor {
  userId: string
  role: 'user' | 'admin'
  clientIp?: string
}

/** An admin acting on user accounts. */
export interface AdminActor {
  userId: string
  clientIp: string
  /** How the acting admin authenticated: own-account changes need a browser session. */
  via: 'session' | 'api_token'
}
