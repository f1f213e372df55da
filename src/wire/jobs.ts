// What a fellow reports to its leader about its part of a job. The leader's route validates it
// (src/jobs/model.ts builds its body from this); the agent sends it. Plain TypeBox, so that the
// agent does not load Elysia.
import { Type, type Static } from '@sinclair/typebox'
import { Int, Nullable, UnionEnum } from './schema'

export const REPORT_STATUSES = ['running', 'paused', 'checkpointed', 'completed', 'failed'] as const
export type ReportStatus = (typeof REPORT_STATUSES)[number]

export const StatusReport = Type.Object(
  {
    // A report without a status is refused (422), not taken as "running" (schema.ts UnionEnum).
    status: UnionEnum(REPORT_STATUSES),
    step: Type.Optional(Int({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    loss: Type.Optional(Nullable(Type.Number({ minimum: -1e15, maximum: 1e15 }))),
    throughput: Type.Optional(Type.Number({ minimum: 0, maximum: 1e15 })),
    reason: Type.Optional(Type.String({ maxLength: 1000 })),
    /** With the first `running` of a stage that took over from a stored checkpoint: that checkpoint's step. */
    resumed_from_step: Type.Optional(Int({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  },
  { additionalProperties: false },
)
export type StatusReport = Static<typeof StatusReport>
