// HTTP surface of the admin features: /api/v1/admin/users, /api/v1/admin/audit, /api/v1/admin/mail.
import type { AppBase } from '../http/base'
import { adminActorOf } from '../http/callers'
import type { Admin } from './service'
import type { AdminUsers } from './users'
import * as M from './model'

export interface AdminRouteDeps {
  /** Told which fellows a user deletion detached (with the user's pools), so it can stop them. */
  onDetached?: (fellowIds: string[], reason: string) => void
  /** Told which pools are gone (an account's own, deleted with it). */
  onPoolsDeleted?: (poolIds: string[]) => void
}

export function adminRoutes(app: AppBase, admin: Admin, users: AdminUsers, deps: AdminRouteDeps = {}) {
  return app
    .get('/api/v1/admin/users', ({ query }) => users.list(query), {
      policy: 'admin',
      query: M.UserListQuery,
      response: { 200: M.UserList },
    })
    .get('/api/v1/admin/users/pending-count', () => ({ count: users.pendingCount() }), {
      policy: 'admin',
      response: { 200: M.PendingCount },
    })
    .patch('/api/v1/admin/users/:id', ({ caller, clientIp, params, body }) => users.update(adminActorOf(caller, clientIp), params.id, body), {
      policy: 'admin',
      params: M.UserParams,
      body: M.UpdateUserBody,
      response: { 200: M.AdminUser },
    })
    .post('/api/v1/admin/users/:id/status', ({ caller, clientIp, params, body }) => users.setStatus(adminActorOf(caller, clientIp), params.id, body.status), {
      policy: 'admin',
      params: M.UserParams,
      body: M.StatusBody,
      response: { 200: M.AdminUser },
    })
    .post(
      '/api/v1/admin/users/:id/reset-password',
      ({ caller, clientIp, params, set }) => {
        // The answer may carry a one-time link: no cache may keep it.
        set.headers['cache-control'] = 'no-store'
        return users.issuePasswordReset(adminActorOf(caller, clientIp), params.id)
      },
      { policy: 'admin', params: M.UserParams, response: { 200: M.ResetResult } },
    )
    .post('/api/v1/admin/users/:id/approve', ({ caller, clientIp, params }) => users.approve(adminActorOf(caller, clientIp), params.id), {
      policy: 'admin',
      params: M.UserParams,
      response: { 200: M.AdminUser },
    })
    .post(
      '/api/v1/admin/users/:id/resend-verification',
      ({ caller, clientIp, params }) => users.resendVerification(adminActorOf(caller, clientIp), params.id),
      { policy: 'admin', params: M.UserParams, response: { 200: M.ResendResult } },
    )
    .delete(
      '/api/v1/admin/users/:id',
      ({ caller, clientIp, params }) => {
        const { fellowIds, poolIds, ...result } = users.delete(adminActorOf(caller, clientIp), params.id)
        if (fellowIds.length > 0) deps.onDetached?.(fellowIds, 'the account that added this fellow was deleted')
        if (poolIds.length > 0) deps.onPoolsDeleted?.(poolIds)
        return result
      },
      { policy: 'admin', params: M.UserParams, response: { 200: M.DeleteResult } },
    )
    .get('/api/v1/admin/audit', ({ query }) => admin.listAudit(query), {
      policy: 'admin',
      query: M.AuditQuery,
      response: { 200: M.AuditList },
    })
    .get('/api/v1/admin/mail', () => admin.mailState(), { policy: 'admin', response: { 200: M.MailState } })
    .post('/api/v1/admin/mail/test', ({ caller, clientIp }) => admin.sendTestMail(adminActorOf(caller, clientIp)), {
      policy: 'admin',
      response: { 200: M.MailTestResult },
    })
}
