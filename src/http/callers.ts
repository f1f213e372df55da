// What a route makes of the admitted caller before it calls a service: the person, the actor a
// service takes, or the fellow a node call acts for. The policy class has already let the caller
// in; these narrow it, and refuse the kinds a route class admits but the route cannot use.
import { AppError } from '../errors'
import type { Actor, AdminActor, Caller, NodeCaller, UserCaller } from '../caller'

export function asUser(caller: Caller): UserCaller {
  if (caller.kind !== 'user') throw new AppError('unauthorized', 'Log in first.')
  return caller
}

/** A person acting on pools. */
export function actorOf(caller: Caller, clientIp: string): Actor {
  const u = asUser(caller)
  return { userId: u.userId, role: u.role, clientIp }
}

/** An admin acting on user accounts. */
export function adminActorOf(caller: Caller, clientIp: string): AdminActor {
  const me = asUser(caller)
  return { userId: me.userId, clientIp, via: me.via }
}

/** The fellow of a node call, or null when node auth is off and no token was sent. */
export function nodeOrOpen(caller: Caller): NodeCaller | null {
  if (caller.kind === 'node') return caller
  if (caller.kind === 'anonymous') return null // SVC_REQUIRE_NODE_AUTH=0 and no token
  throw new AppError('forbidden', 'This route is for fellows.')
}

/** The fellow a node call acts for: its token's fellow, or (node auth off, no token) the body's. */
export function fellowOf(caller: Caller, claimed: string | undefined): string {
  if (caller.kind === 'node') {
    if (claimed !== undefined && claimed !== caller.fellowId) throw new AppError('forbidden', 'This node token belongs to another fellow.')
    return caller.fellowId
  }
  if (caller.kind === 'anonymous' && claimed !== undefined) return claimed
  throw new AppError('unauthorized', 'A node token is required.')
}
