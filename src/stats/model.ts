// What the stats routes answer (src/stats/routes.ts), named in the OpenAPI document.
import { t } from 'elysia'
import { Int } from '../model'

const Count = t.Nullable(Int())
export const PublicStatsShape = t.Object({
  nodes_online: Count,
  gpus_online: Count,
  pools: Count,
  users: Count,
  gpu_hours_contributed: Count,
  tokens_served: Count,
  requests_served: Count,
  generated_at: t.String(),
})
export const ContributionShape = t.Object({
  gpu_seconds: t.Number(),
  tokens_served: Int(),
  requests_served: Int(),
  credits_status: t.Literal('not_implemented'),
  updated_at: t.Nullable(t.String()),
})
