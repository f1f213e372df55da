// HTTP surface of the model catalog: fellows post manifests, operators list what their pools see.
import { AppError } from '../errors'
import type { AppBase } from '../http/base'
import type { Servables } from './service'
import * as M from './model'

export function servableRoutes(app: AppBase, servables: Servables) {
  return app
    .post(
      '/api/v1/servables',
      ({ caller, body, set }) => {
        // Even with SVC_REQUIRE_NODE_AUTH=0 a manifest needs a token: its fellow's pool is the stamp.
        if (caller.kind !== 'node') throw new AppError('unauthorized', 'A node token is required: its pool stamps the manifest.')
        const { servable, created } = servables.record(caller.fellowId, body)
        set.status = created ? 201 : 200
        return servable
      },
      { policy: 'node', body: M.ServableBody, response: { 200: M.Servable, 201: M.Servable } },
    )
    .get('/api/v1/servables', ({ caller, query }) => ({ items: servables.list(caller, query.pool_id) }), {
      policy: 'operator',
      query: M.ServableFilter,
      response: { 200: M.ServableList },
    })
}
