// HTTP surface of pools: the admin surface /api/v1/admin/pools and the user surface /api/v1/pools.
import type { AppBase } from '../http/base'
import { actorOf } from '../http/callers'
import type { Actor } from '../caller'
import type { Pools } from './service'
import type { Memberships } from './membership'
import type { PoolTelemetry } from './telemetry'
import { PoolTelemetrySeries, TelemetryQuery } from '../fellows/model'
import * as M from './model'
import { t } from 'elysia'

export interface PoolRouteDeps {
  /** Fills in the per-node telemetry routes (the Fellows feature); empty until fellows exist. */
  telemetry: PoolTelemetry
  /** Told which fellows a forced delete detached, so it can stop them. */
  onDetached?: (fellowIds: string[], reason: string) => void
  /** Told which pools are gone, so what is kept in memory for them goes too. */
  onPoolsDeleted?: (poolIds: string[]) => void
}

export function poolRoutes(app: AppBase, pools: Pools, memberships: Memberships, deps: PoolRouteDeps) {
  const del = (actor: Actor, id: string, force: boolean) => {
    const r = pools.delete(actor, id, force)
    if (r.fellowIds.length > 0) deps.onDetached?.(r.fellowIds, 'pool deleted')
    deps.onPoolsDeleted?.([id])
    return { deleted: true as const, detached_nodes: r.detached }
  }
  return (
    app
      // Admin surface.
      .get('/api/v1/admin/pools', ({ caller, clientIp }) => ({ items: pools.list(actorOf(caller, clientIp)) }), {
        policy: 'admin',
        response: { 200: M.PoolList },
      })
      .post(
        '/api/v1/admin/pools',
        ({ caller, clientIp, body, set }) => {
          set.status = 201
          return pools.create(actorOf(caller, clientIp), body, { adminSurface: true })
        },
        { policy: 'admin', body: M.CreatePoolBody, response: { 201: M.Pool } },
      )
      .get('/api/v1/admin/pools/:id', ({ caller, clientIp, params }) => pools.get(actorOf(caller, clientIp), params.id), {
        policy: 'admin',
        params: M.PoolParams,
        response: { 200: M.Pool },
      })
      .patch('/api/v1/admin/pools/:id', ({ caller, clientIp, params, body }) => pools.update(actorOf(caller, clientIp), params.id, body), {
        policy: 'admin',
        params: M.PoolParams,
        body: M.UpdatePoolBody,
        response: { 200: M.Pool },
      })
      .delete('/api/v1/admin/pools/:id', ({ caller, clientIp, params, query }) => del(actorOf(caller, clientIp), params.id, query.force === 'true'), {
        policy: 'admin',
        params: M.PoolParams,
        query: M.DeleteQuery,
        response: { 200: M.DeleteResult },
      })
      .get('/api/v1/admin/role-limits', () => ({ items: pools.listRoleLimits() }), { policy: 'admin', response: { 200: M.RoleLimitsList } })
      .patch(
        '/api/v1/admin/role-limits/:role',
        ({ caller, clientIp, params, body }) => pools.updateRoleLimits(actorOf(caller, clientIp), params.role, body),
        { policy: 'admin', params: t.Object({ role: t.String({ maxLength: 32 }) }), body: M.RoleLimitsPatch },
      )
      // User surface, held to the caller's plan.
      .get('/api/v1/pools', ({ caller, clientIp, query }) => ({ items: pools.list(actorOf(caller, clientIp), { mine: query.mine === 'true' }) }), {
        policy: 'operator',
        query: t.Object({ mine: t.Optional(t.Union([t.Literal('true'), t.Literal('false')])) }, { additionalProperties: false }),
        response: { 200: M.PoolList },
      })
      .post(
        '/api/v1/pools',
        ({ caller, clientIp, body, set }) => {
          set.status = 201
          return pools.create(actorOf(caller, clientIp), body)
        },
        { policy: 'operator', body: M.CreatePoolBody, response: { 201: M.Pool } },
      )
      .get('/api/v1/pools/limits', ({ caller, clientIp }) => pools.limits(actorOf(caller, clientIp)), { policy: 'operator', response: { 200: M.Limits } })
      .get('/api/v1/pools/invites/mine', ({ caller, clientIp }) => ({ items: memberships.listMyInvites(actorOf(caller, clientIp).userId) }), {
        policy: 'operator',
        response: { 200: M.InviteList },
      })
      .post('/api/v1/pools/invites/:invite_id/accept', ({ caller, clientIp, params, body }) => memberships.accept(actorOf(caller, clientIp), params.invite_id, body?.token), {
        policy: 'operator',
        params: M.InviteParams,
        body: M.AcceptInviteBody,
        response: { 200: M.Invite },
      })
      .get('/api/v1/pools/join-requests', ({ caller, clientIp }) => ({ items: memberships.listOwnedJoinRequests(actorOf(caller, clientIp)) }), {
        policy: 'operator',
        response: { 200: M.OwnedJoinRequestList },
      })
      .get('/api/v1/pools/:id', ({ caller, clientIp, params }) => pools.get(actorOf(caller, clientIp), params.id), {
        policy: 'operator',
        params: M.PoolParams,
        response: { 200: M.Pool },
      })
      .patch('/api/v1/pools/:id', ({ caller, clientIp, params, body }) => pools.update(actorOf(caller, clientIp), params.id, body), {
        policy: 'operator',
        params: M.PoolParams,
        body: M.UpdatePoolBody,
        response: { 200: M.Pool },
      })
      .delete('/api/v1/pools/:id', ({ caller, clientIp, params, query }) => del(actorOf(caller, clientIp), params.id, query.force === 'true'), {
        policy: 'operator',
        params: M.PoolParams,
        query: M.DeleteQuery,
        response: { 200: M.DeleteResult },
      })
      .post(
        '/api/v1/pools/:id/invites',
        ({ caller, clientIp, params, body, set }) => {
          const { invite, created } = memberships.invite(actorOf(caller, clientIp), params.id, body.email)
          set.status = created ? 201 : 200
          set.headers['cache-control'] = 'no-store' // the invite link carries its token
          return invite
        },
        { policy: 'operator', params: M.PoolParams, body: M.InviteBody, response: { 200: M.InviteCreated, 201: M.InviteCreated } },
      )
      .get('/api/v1/pools/:id/invites', ({ caller, clientIp, params, set }) => {
        set.headers['cache-control'] = 'no-store' // the invite links carry their tokens
        return { items: memberships.listPoolInvites(actorOf(caller, clientIp), params.id) }
      }, {
        policy: 'operator',
        params: M.PoolParams,
        response: { 200: M.PoolInviteList },
      })
      .delete('/api/v1/pools/:id/invites/:invite_id', ({ caller, clientIp, params, set }) => {
        memberships.revokeInvite(actorOf(caller, clientIp), params.id, params.invite_id)
        set.status = 204
      }, { policy: 'operator', params: M.PoolInviteParams })
      .post('/api/v1/pools/:id/join', ({ caller, clientIp, params, set }) => {
        const r = memberships.join(actorOf(caller, clientIp), params.id)
        set.status = r.status === 'pending' ? 202 : 200
        return r
      }, { policy: 'operator', params: M.PoolParams, response: { 200: M.JoinResult, 202: M.JoinResult } })
      .get('/api/v1/pools/:id/join-requests', ({ caller, clientIp, params }) => ({ items: memberships.listJoinRequests(actorOf(caller, clientIp), params.id) }), {
        policy: 'operator',
        params: M.PoolParams,
        response: { 200: M.JoinRequestList },
      })
      .post(
        '/api/v1/pools/:id/join-requests/:user_id/approve',
        ({ caller, clientIp, params }) => memberships.approve(actorOf(caller, clientIp), params.id, params.user_id),
        { policy: 'operator', params: M.PoolUserParams, response: { 200: t.Object({ status: t.Literal('joined') }) } },
      )
      .post(
        '/api/v1/pools/:id/join-requests/:user_id/reject',
        ({ caller, clientIp, params }) => memberships.reject(actorOf(caller, clientIp), params.id, params.user_id),
        { policy: 'operator', params: M.PoolUserParams, response: { 200: t.Object({ status: t.Literal('rejected') }) } },
      )
      .get('/api/v1/pools/:id/members', ({ caller, clientIp, params }) => ({ items: memberships.listMembers(actorOf(caller, clientIp), params.id) }), {
        policy: 'operator',
        params: M.PoolParams,
        response: { 200: M.MemberList },
      })
      .delete('/api/v1/pools/:id/members/:user_id', ({ caller, clientIp, params, set }) => {
        const { fellowIds } = memberships.remove(actorOf(caller, clientIp), params.id, params.user_id)
        if (fellowIds.length > 0) deps.onDetached?.(fellowIds, 'the member who added this fellow left the pool')
        set.status = 204
      }, { policy: 'operator', params: M.PoolUserParams })
      // Per-node telemetry: membership required, not just visibility.
      .get('/api/v1/pools/:id/metrics', ({ caller, clientIp, params }) => deps.telemetry.metrics(actorOf(caller, clientIp), params.id), {
        policy: 'operator',
        params: M.PoolParams,
      })
      .get('/api/v1/pools/:id/events', ({ caller, clientIp, params, query }) => deps.telemetry.events(actorOf(caller, clientIp), params.id, query.limit ?? 100), {
        policy: 'operator',
        params: M.PoolParams,
        query: t.Object({ limit: t.Optional(t.Integer({ minimum: 1, maximum: 1000 })) }, { additionalProperties: false }),
      })
      .get('/api/v1/pools/:id/metrics/history', ({ caller, clientIp, params }) => deps.telemetry.history(actorOf(caller, clientIp), params.id), {
        policy: 'operator',
        params: M.PoolParams,
      })
      // The pool's machines over time (online, VRAM), from the telemetry buckets.
      .get('/api/v1/pools/:id/telemetry', ({ caller, clientIp, params, query }) => deps.telemetry.poolTelemetry(actorOf(caller, clientIp), params.id, query.range ?? '1d'), {
        policy: 'operator',
        params: M.PoolParams,
        query: TelemetryQuery,
        response: { 200: PoolTelemetrySeries },
      })
  )
}
