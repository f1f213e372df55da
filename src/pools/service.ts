// Pools: plans (role_limits), creation under quota, visibility, edits and deletion.
// Every check runs in the same synchronous transaction as the write it guards.
// Service style: the service is the `Pools` class, built once in app.ts `createServices` and handed
// to the routes. The plain exported functions take a `Db` (or transaction) first: they are
// transaction helpers other services compose (fellows, jobs, admin, pages), not a second style.
import { and, asc, count, eq, inArray, isNull, or, sql, type SQL } from 'drizzle-orm'
import { joinSessions, poolInvites, poolMembers, poolNodes, pools, roleLimits } from '../db/schema'
import { AppError, notFound, invalid } from '../errors'
import { newId } from '../crypto'
import { recordAudit } from '../audit/service'
import { iso } from '../time'
import type { Ctx } from '../context'
import type { Clock } from '../time'
import type { Db } from '../db/client'
import type { Actor } from '../caller'
import type { CreatePoolInput, Pool, UpdatePoolInput } from './model'

export type Visibility = 'public' | 'private'
export type PoolRow = typeof pools.$inferSelect

export interface Plan {
  role: string
  maxPools: number | null
  maxNodesPerPool: number | null
  allowedVisibilities: Visibility[]
}

export function planFor(db: Db, role: string): Plan {
  const row = db.select().from(roleLimits).where(eq(roleLimits.role, role)).get()
  // A role without a row gets nothing: fail closed rather than unlimited.
  if (!row) return { role, maxPools: 0, maxNodesPerPool: 0, allowedVisibilities: [] }
  const vis = row.allowedVisibilities.split(',').map((v) => v.trim()).filter((v): v is Visibility => v === 'public' || v === 'private')
  return { role, maxPools: row.maxPools, maxNodesPerPool: row.maxNodesPerPool, allowedVisibilities: vis }
}

/** `n thing`/`n things`, or `any number of things` for null (unlimited). */
export function countOf(n: number | null, one: string, many: string): string {
  return n === null ? `any number of ${many}` : `${n} ${n === 1 ? one : many}`
}

export function planSentence(plan: Plan): string {
  const nodes = plan.maxNodesPerPool === null ? 'any number of nodes' : `up to ${countOf(plan.maxNodesPerPool, 'node', 'nodes')}`
  return `Your plan allows ${countOf(plan.maxPools, 'pool', 'pools')} with ${nodes} each.`
}

function quota(plan: Plan, extra = ''): AppError {
  return new AppError('quota_exceeded', (planSentence(plan) + ' ' + extra).trim(), { plan: plan.role })
}

const ownedCount = (db: Db, userId: string) =>
  db.select({ n: count() }).from(pools).where(eq(pools.ownerUserId, userId)).get()?.n ?? 0

const poolColumns = (viewerId: string | null) => ({
  pool: pools,
  nodeCount: sql<number>`(SELECT count(*) FROM pool_nodes n WHERE n.pool_id = ${pools.id})`,
  memberCount: sql<number>`(SELECT count(*) FROM pool_members m WHERE m.pool_id = ${pools.id})`,
  myRole: sql<'owner' | 'member' | null>`(SELECT m.role FROM pool_members m WHERE m.pool_id = ${pools.id} AND m.user_id = ${viewerId})`,
})

type PoolSelection = { pool: PoolRow; nodeCount: number; memberCount: number; myRole: 'owner' | 'member' | null }

function toPool(r: PoolSelection): Pool {
  const p = r.pool
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    description: p.description,
    visibility: p.visibility,
    node_limit: p.nodeLimit,
    open_join: p.openJoin,
    owner_user_id: p.ownerUserId,
    is_default: p.isDefault,
    node_count: r.nodeCount,
    member_count: r.memberCount,
    created_at: iso(p.createdAt),
    my_role: r.myRole,
  }
}

/** Who may see a pool: admins, its members, and for public pools every logged-in user. */
function visibleTo(actor: Actor): SQL | undefined {
  if (actor.role === 'admin') return undefined
  return or(
    eq(pools.visibility, 'public'),
    sql`EXISTS (SELECT 1 FROM pool_members m WHERE m.pool_id = ${pools.id} AND m.user_id = ${actor.userId})`,
  )
}

function listPools(db: Db, actor: Actor, opts: { mine?: boolean } = {}): Pool[] {
  const where = opts.mine
    ? sql`EXISTS (SELECT 1 FROM pool_members m WHERE m.pool_id = ${pools.id} AND m.user_id = ${actor.userId})`
    : visibleTo(actor)
  return db.select(poolColumns(actor.userId)).from(pools).where(where).orderBy(asc(pools.createdAt)).all().map(toPool)
}

/** A pool the actor may see; anything else (missing or private to others) is "not found". */
export function getVisiblePool(db: Db, actor: Actor, id: string): Pool {
  const r = db.select(poolColumns(actor.userId)).from(pools).where(and(eq(pools.id, id), visibleTo(actor))).get()
  if (!r) throw notFound('Pool')
  return toPool(r)
}

export function memberRole(db: Db, poolId: string, userId: string): 'owner' | 'member' | null {
  return db.select({ role: poolMembers.role }).from(poolMembers).where(and(eq(poolMembers.poolId, poolId), eq(poolMembers.userId, userId))).get()?.role ?? null
}

/** Owner or admin, else 403 (the pool is visible, so its existence is no secret). */
export function requireOwner(db: Db, actor: Actor, pool: Pool): void {
  if (actor.role !== 'admin' && pool.my_role !== 'owner') throw new AppError('forbidden', 'Only the pool owner or an admin can do this.')
}

/** Membership (or admin) for per-node data; non-members get 404 like any foreign resource. */
export function requireMember(db: Db, actor: Actor, poolId: string): Pool {
  const pool = getVisiblePool(db, actor, poolId)
  if (actor.role !== 'admin' && pool.my_role === null) throw notFound('Pool')
  return pool
}

export function slugify(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '')
  return s === '' ? 'pool' : s
}

function uniqueSlug(db: Db, base: string): string {
  const taken = (s: string) => db.select({ id: pools.id }).from(pools).where(eq(pools.slug, s)).get() !== undefined
  if (!taken(base)) return base
  for (let i = 2; i < 10_000; i++) if (!taken(`${base}-${i}`)) return `${base}-${i}`
  return `${base}-${newId().slice(-8)}`
}

export class Pools {
  constructor(private readonly ctx: Ctx) {}

  /** Pools the actor may see, or (`mine`) those it is a member of. */
  list(actor: Actor, opts: { mine?: boolean } = {}): Pool[] {
    return listPools(this.ctx.db, actor, opts)
  }

  /** A pool the actor may see; anything else is "not found". */
  get(actor: Actor, id: string): Pool {
    return getVisiblePool(this.ctx.db, actor, id)
  }

  /** Creates a pool owned by the actor, within the actor's plan (admins: the admin plan). */
  create(actor: Actor, input: CreatePoolInput, opts: { adminSurface?: boolean } = {}): Pool {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      const plan = planFor(tx, actor.role)
      const visibility = input.visibility ?? 'private'
      if (!plan.allowedVisibilities.includes(visibility)) throw quota(plan, `${visibility === 'public' ? 'Public' : 'Private'} pools are not part of it.`)
      if (plan.maxPools !== null && ownedCount(tx, actor.userId) >= plan.maxPools) throw quota(plan)
      let nodeLimit: number | null
      if (opts.adminSurface || actor.role === 'admin') nodeLimit = input.node_limit ?? plan.maxNodesPerPool
      else {
        if (input.node_limit !== undefined) {
          throw invalid('body /node_limit: set by your plan; only an admin can change it.', { errors: [{ path: '/node_limit', message: 'set by your plan; only an admin can change it' }] })
        }
        nodeLimit = plan.maxNodesPerPool // snapshot of the plan at creation
      }
      let slug: string
      if (input.slug !== undefined) {
        if (tx.select({ id: pools.id }).from(pools).where(eq(pools.slug, input.slug)).get()) throw new AppError('slug_taken', `The slug "${input.slug}" is taken.`)
        slug = input.slug
      } else slug = uniqueSlug(tx, slugify(input.name))
      const now = ctx.clock.now()
      const row: PoolRow = {
        id: newId(),
        name: input.name.trim(),
        slug,
        description: input.description ?? '',
        visibility,
        nodeLimit,
        openJoin: input.open_join ?? false,
        ownerUserId: actor.userId,
        isDefault: false,
        createdAt: now,
        updatedAt: now,
      }
      tx.insert(pools).values(row).run()
      tx.insert(poolMembers).values({ poolId: row.id, userId: actor.userId, role: 'owner', createdAt: now }).run()
      recordAudit(tx, ctx.clock, { kind: 'pool.create', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: row.id, detail: { slug, visibility } })
      return toPool({ pool: row, nodeCount: 0, memberCount: 1, myRole: 'owner' })
    })
  }

  update(actor: Actor, id: string, input: UpdatePoolInput): Pool {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, id)
      requireOwner(tx, actor, pool)
      const set: Partial<PoolRow> = { updatedAt: ctx.clock.now() }
      if (input.name !== undefined) set.name = input.name.trim()
      if (input.description !== undefined) set.description = input.description
      if (input.open_join !== undefined) set.openJoin = input.open_join
      if (input.visibility !== undefined && input.visibility !== pool.visibility) {
        const plan = planFor(tx, actor.role)
        if (!plan.allowedVisibilities.includes(input.visibility)) {
          throw quota(plan, `${input.visibility === 'public' ? 'Public' : 'Private'} pools are not part of it.`)
        }
        set.visibility = input.visibility
      }
      if (input.node_limit !== undefined) {
        if (actor.role !== 'admin') throw new AppError('forbidden', 'Only an admin can change a pool node limit.')
        set.nodeLimit = input.node_limit
      }
      tx.update(pools).set(set).where(eq(pools.id, id)).run()
      recordAudit(tx, ctx.clock, { kind: 'pool.update', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'pool', targetId: id, detail: { fields: Object.keys(input) } })
      return getVisiblePool(tx, actor, id)
    })
  }

  /** Deletes a pool; refuses (409) while nodes are attached unless forced, which detaches them. */
  delete(actor: Actor, id: string, force: boolean): { detached: number; fellowIds: string[] } {
    return this.ctx.db.transaction((tx) => {
      const pool = getVisiblePool(tx, actor, id)
      requireOwner(tx, actor, pool)
      dropPoolInviteMail(this.ctx, tx, id)
      return deletePoolRow(tx, this.ctx.clock, id, force, actor)
    })
  }

  /** The actor's plan and how much of it is used. */
  limits(actor: Actor) {
    const db = this.ctx.db
    const plan = planFor(db, actor.role)
    return {
      role: plan.role,
      max_pools: plan.maxPools,
      max_nodes_per_pool: plan.maxNodesPerPool,
      allowed_visibilities: plan.allowedVisibilities,
      pools_owned: ownedCount(db, actor.userId),
      plan: planSentence(plan),
    }
  }

  listRoleLimits() {
    return listRoleLimits(this.ctx.db)
  }

  updateRoleLimits(actor: Actor, role: string, patch: { max_pools?: number | null; max_nodes_per_pool?: number | null; allowed_visibilities?: Visibility[] }) {
    const ctx = this.ctx
    return ctx.db.transaction((tx) => {
      if (!tx.select().from(roleLimits).where(eq(roleLimits.role, role)).get()) throw notFound('Role')
      const set: Partial<typeof roleLimits.$inferInsert> = {}
      if (patch.max_pools !== undefined) set.maxPools = patch.max_pools
      if (patch.max_nodes_per_pool !== undefined) set.maxNodesPerPool = patch.max_nodes_per_pool
      if (patch.allowed_visibilities !== undefined) set.allowedVisibilities = patch.allowed_visibilities.join(',')
      tx.update(roleLimits).set(set).where(eq(roleLimits.role, role)).run()
      recordAudit(tx, ctx.clock, { kind: 'admin.role_limits', actorUserId: actor.userId, clientIp: actor.clientIp, targetType: 'role', targetId: role, detail: patch })
      return listRoleLimits(tx).find((r) => r.role === role)!
    })
  }

  /** The deployment's default pool, created on first use. */
  ensureDefault(): PoolRow {
    return ensureDefaultPool(this.ctx.db, this.ctx.clock)
  }
}

/**
 * Unbinds the fellows a user added, in one pool or (no poolId) in every pool: someone leaving a
 * pool, or deleted, keeps no machines in it. Runs in the caller's transaction; the caller tells
 * the returned fellows to stop (Fellows.detach).
 */
export function detachNodesOf(tx: Db, userId: string, poolId?: string): string[] {
  const owned = eq(poolNodes.ownerUserId, userId)
  const ids = tx
    .select({ id: poolNodes.fellowId })
    .from(poolNodes)
    .where(poolId === undefined ? owned : and(eq(poolNodes.poolId, poolId), owned))
    .all()
    .map((r) => r.id)
  if (ids.length > 0) tx.delete(poolNodes).where(inArray(poolNodes.fellowId, ids)).run()
  return ids
}

/**
 * Revokes the join tokens a user made, for one pool or (no poolId) every pool: a member leaving a
 * pool, or an account disabled, admits no more machines (a token revoked stays revoked when the
 * account comes back). Runs in the caller's transaction; answers how many.
 */
export function revokeJoinTokensOf(tx: Db, now: number, userId: string, poolId?: string): number {
  const mine = and(eq(joinSessions.createdBy, userId), isNull(joinSessions.revokedAt))
  return tx
    .update(joinSessions)
    .set({ revokedAt: now })
    .where(poolId === undefined ? mine : and(eq(joinSessions.poolId, poolId), mine))
    .run().changes as number
}

/** The invite a queued invite mail's link names (by id: the base URL may have changed since). */
function linkedInvite(link: string | undefined): string | null {
  if (link === undefined || !URL.canParse(link)) return null
  return new URL(link).searchParams.get('invite')
}

/**
 * Invite mail still waiting for the SMTP server when its invite goes (withdrawn, or its pool
 * deleted) is not sent: it went out after the withdrawal, with a link that no longer worked.
 */
export function dropInviteMail(ctx: Ctx, tx: Db, invites: readonly { id: string; email: string }[]): void {
  for (const invite of invites) ctx.mail.drop(tx, 'pool-invite', invite.email, (vars) => linkedInvite(vars.link) === invite.id)
}

/** `dropInviteMail` for every pending invite of a pool about to be deleted. */
export function dropPoolInviteMail(ctx: Ctx, tx: Db, poolId: string): void {
  dropInviteMail(ctx, tx, tx.select({ id: poolInvites.id, email: poolInvites.email }).from(poolInvites).where(and(eq(poolInvites.poolId, poolId), eq(poolInvites.status, 'pending'))).all())
}

/** The deletion itself, shared with the account-deletion cascade. Runs inside the caller's transaction. */
export function deletePoolRow(tx: Db, clock: Clock, id: string, force: boolean, actor: Actor | null): { detached: number; fellowIds: string[] } {
  const attached = tx.select({ fellowId: poolNodes.fellowId }).from(poolNodes).where(eq(poolNodes.poolId, id)).all()
  if (attached.length > 0 && !force) {
    throw new AppError('pool_has_nodes', `The pool has ${countOf(attached.length, 'node', 'nodes')} attached; detach ${attached.length === 1 ? 'it' : 'them'} or delete with force=true.`, { node_count: attached.length })
  }
  tx.delete(poolNodes).where(eq(poolNodes.poolId, id)).run()
  tx.delete(pools).where(eq(pools.id, id)).run()
  recordAudit(tx, clock, { kind: 'pool.delete', actorUserId: actor?.userId ?? null, clientIp: actor?.clientIp, targetType: 'pool', targetId: id, detail: { detached_nodes: attached.length, force } })
  return { detached: attached.length, fellowIds: attached.map((a) => a.fellowId) }
}

export const DEFAULT_POOL_SLUG = 'default'

/** The deployment's default pool, created on first use; token-less fellows land here. */
export function ensureDefaultPool(db: Db, clock: Clock): PoolRow {
  const existing = db.select().from(pools).where(eq(pools.isDefault, true)).get()
  if (existing) return existing
  const now = clock.now()
  const row: PoolRow = {
    id: newId(),
    name: 'Default pool',
    slug: uniqueSlug(db, DEFAULT_POOL_SLUG),
    description: 'Fellows that register without a join token land here. Visible to admins.',
    visibility: 'private',
    nodeLimit: null,
    openJoin: false,
    ownerUserId: null,
    isDefault: true,
    createdAt: now,
    updatedAt: now,
  }
  db.insert(pools).values(row).run()
  return row
}

function listRoleLimits(db: Db) {
  return db
    .select()
    .from(roleLimits)
    .orderBy(asc(roleLimits.role))
    .all()
    .map((r) => {
      const p = planFor(db, r.role)
      return { role: p.role, max_pools: p.maxPools, max_nodes_per_pool: p.maxNodesPerPool, allowed_visibilities: p.allowedVisibilities }
    })
}
