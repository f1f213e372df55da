// The inference transport between a leader and its fellows: a fellow long-polls for requests
// (plain-text messages: content parts are flattened on the leader) and posts back frames of
// tokens. The leader's routes validate these (src/inference/model.ts re-exports them); the agent
// reads and sends them. Plain TypeBox, so that the agent does not load Elysia.
import { Type, type Static } from '@sinclair/typebox'
import { Nullable } from './schema'

const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const InferMessage = Type.Object({ role: Type.String(), content: Type.String() })
export type InferMessage = Static<typeof InferMessage>
export const InferRequest = Type.Object({
  request_id: Type.String(),
  model: Type.String(),
  messages: Type.Array(InferMessage),
  /** Null: the fellow's own default. */
  max_tokens: Nullable(Type.Integer()),
  stream: Type.Boolean(),
  temperature: Type.Optional(Type.Number()),
  top_p: Type.Optional(Type.Number()),
})
export type InferRequest = Static<typeof InferRequest>

export const InferFrame = Type.Object(
  {
    delta: Type.Optional(Type.String({ maxLength: 65_536 })),
    done: Type.Optional(Type.Boolean()),
    usage: Type.Optional(Type.Object({ prompt_tokens: Count, completion_tokens: Count }, { additionalProperties: false })),
    /** The fellow could not finish: the client gets this message as a 502 fellow_failed error. */
    error: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
)
export type InferFrame = Static<typeof InferFrame>
export const InferFramesBody = Type.Object({ frames: Type.Array(InferFrame, { maxItems: 4096 }) }, { additionalProperties: false })
