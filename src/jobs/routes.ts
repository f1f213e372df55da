// HTTP surface of jobs: submit, list, get, cancel, pause/resume, checkpoint, purge, status reports
// from fellows, and the metrics stream.
import { t } from 'elysia'
import { Int } from '../model'
import { asUser, nodeOrOpen } from '../http/callers'
import type { AppBase } from '../http/base'
import { stopOrLeave, type Ctx } from '../context'
import type { JobService } from './service'
import { metricsStream } from './metrics'
import { lastEventId, stillSees } from '../http/sse'
import * as M from './model'

export function jobRoutes(app: AppBase, ctx: Ctx, jobs: JobService) {
  return app
    .post(
      '/api/v1/jobs',
      ({ caller, clientIp, body, set }) => {
        set.status = 201
        return jobs.submit(caller, body, clientIp)
      },
      { policy: 'operator', body: M.SubmitBody, response: { 201: M.Job } },
    )
    .get('/api/v1/jobs', ({ caller, query }) => jobs.list(caller, query), {
      policy: 'operator',
      query: M.JobListQuery,
      response: { 200: M.JobList },
    })
    .delete(
      '/api/v1/jobs',
      ({ caller, clientIp }) => jobs.purgeAll(asUser(caller).userId, clientIp),
      { policy: 'admin', response: { 200: t.Object({ purged: Int(), signalled: Int() }) } },
    )
    .get('/api/v1/jobs/:job_id', ({ caller, params }) => jobs.get(caller, params.job_id), {
      policy: 'operator',
      params: M.JobParams,
      response: { 200: M.Job },
    })
    .delete('/api/v1/jobs/:job_id', ({ caller, clientIp, params }) => jobs.cancel(caller, params.job_id, clientIp), {
      policy: 'operator',
      params: M.JobParams,
      response: { 200: M.Job },
    })
    .post('/api/v1/jobs/:job_id/pause', ({ caller, params }) => jobs.pause(caller, params.job_id, true), {
      policy: 'operator',
      params: M.JobParams,
      response: { 200: M.Job },
    })
    .post('/api/v1/jobs/:job_id/resume', ({ caller, params }) => jobs.pause(caller, params.job_id, false), {
      policy: 'operator',
      params: M.JobParams,
      response: { 200: M.Job },
    })
    .post('/api/v1/jobs/:job_id/checkpoint', ({ caller, params }) => jobs.checkpoint(caller, params.job_id), {
      policy: 'operator',
      params: M.JobParams,
      response: { 200: t.Object({ job_id: t.String(), signalled: Int() }) },
    })
    .post(
      '/api/v1/jobs/:job_id/status',
      ({ caller, params, body }) => jobs.report(nodeOrOpen(caller), params.job_id, body, body.fellow_id),
      {
        policy: 'node',
        params: M.JobParams,
        body: t.Composite([M.StatusReport, t.Object({ fellow_id: t.Optional(t.String({ format: 'uuid' })) })], { additionalProperties: false }),
        response: { 200: M.Job },
      },
    )
    .get(
      '/api/v1/jobs/:job_id/metrics/stream',
      ({ caller, params, headers, request, reauthorize }) => {
        jobs.visible(caller, params.job_id)
        // A job deleted meanwhile is not a viewer's loss of access: its stream ends with `end`.
        const allowed = () => !jobs.exists(params.job_id) || stillSees(() => jobs.visible(reauthorize(), params.job_id))
        return metricsStream(jobs.metrics, params.job_id, lastEventId(headers['last-event-id']), stopOrLeave(ctx, request), () => jobs.over(params.job_id), allowed)
      },
      { policy: 'operator', params: M.JobParams },
    )
}
