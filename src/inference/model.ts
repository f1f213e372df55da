// Wire shapes of inference: the OpenAI-compatible chat API (clients) and the transport (fellows).
// The chat request accepts OpenAI's other fields (additionalProperties) so the official clients
// and their newer options keep working; only what the leader acts on is declared and checked.
import { t, type Static } from 'elysia'
import { Type } from '@sinclair/typebox'

export const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const
// TypeBox's own integer, not Elysia's t.Integer: that one is a transform (it also takes "12"),
// which makes Elysia decode every body (and encode every answer) of the route, nearly doubling
// the cost of a frame post. Only the query string needs t.Integer's coercion.
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const TokenLimit = t.Optional(t.Nullable(Type.Integer({ minimum: 1, maximum: 10_000_000 })))

const ContentPart = t.Object({ type: t.String({ maxLength: 64 }), text: t.Optional(t.String()) }, { additionalProperties: true })
export const ChatMessage = t.Object(
  {
    // default: undefined: t.UnionEnum's default (its first value, 'system') would turn a message
    // without a role into a system prompt; a missing role must be refused.
    role: t.UnionEnum(ROLES, { default: undefined }),
    content: t.Optional(t.Union([t.String(), t.Null(), t.Array(ContentPart, { maxItems: 1000 })])),
    name: t.Optional(t.String({ maxLength: 256 })),
  },
  { additionalProperties: true },
)
export type ChatMessage = Static<typeof ChatMessage>

export const ChatCompletionBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 200 }),
    messages: t.Array(ChatMessage, { minItems: 1, maxItems: 10_000 }),
    stream: t.Optional(t.Nullable(t.Boolean())),
    stream_options: t.Optional(t.Nullable(t.Object({ include_usage: t.Optional(t.Boolean()) }, { additionalProperties: true }))),
    max_tokens: TokenLimit,
    max_completion_tokens: TokenLimit,
    // One choice per request: a fellow generates one sequence.
    n: t.Optional(t.Nullable(Type.Integer({ minimum: 1, maximum: 1 }))),
    temperature: t.Optional(t.Nullable(t.Number({ minimum: 0, maximum: 2 }))),
    top_p: t.Optional(t.Nullable(t.Number({ minimum: 0, maximum: 1 }))),
  },
  { additionalProperties: true },
)
export type ChatCompletionInput = Static<typeof ChatCompletionBody>

export const Usage = t.Object({ prompt_tokens: Count, completion_tokens: Count, total_tokens: Count })
export type Usage = Static<typeof Usage>

export const ChatCompletion = t.Object({
  id: t.String(),
  object: t.Literal('chat.completion'),
  created: Type.Integer(),
  model: t.String(),
  choices: t.Array(
    t.Object({
      index: Type.Integer(),
      message: t.Object({ role: t.Literal('assistant'), content: t.String(), refusal: t.Null() }),
      logprobs: t.Null(),
      finish_reason: t.UnionEnum(['stop', 'length']),
    }),
  ),
  usage: Usage,
})
export type ChatCompletion = Static<typeof ChatCompletion>

export const ModelObject = t.Object({
  id: t.String(),
  object: t.Literal('model'),
  created: Type.Integer(),
  owned_by: t.String(),
  /** Not in OpenAI's shape: how many online fellows in the caller's pools serve it now (0: a 503). */
  fellows: Type.Integer(),
})
export type ModelObject = Static<typeof ModelObject>
export const ModelList = t.Object({ object: t.Literal('list'), data: t.Array(ModelObject) })
export const ModelParams = t.Object({ model: t.String({ maxLength: 200 }) })

// The transport. A fellow gets plain-text messages: content parts are flattened on the leader.
export const InferMessage = t.Object({ role: t.String(), content: t.String() })
export type InferMessage = Static<typeof InferMessage>
export const InferRequest = t.Object({
  request_id: t.String(),
  model: t.String(),
  messages: t.Array(InferMessage),
  /** Null: the fellow's own default. */
  max_tokens: t.Nullable(Type.Integer()),
  stream: t.Boolean(),
  temperature: t.Optional(t.Number()),
  top_p: t.Optional(t.Number()),
})
export type InferRequest = Static<typeof InferRequest>

export const PollQuery = t.Object({ wait_ms: t.Optional(t.Integer({ minimum: 0, maximum: 3_600_000 })) }, { additionalProperties: false })

export const Frame = t.Object(
  {
    delta: t.Optional(t.String({ maxLength: 65_536 })),
    done: t.Optional(t.Boolean()),
    usage: t.Optional(t.Object({ prompt_tokens: Count, completion_tokens: Count }, { additionalProperties: false })),
    /** The fellow could not finish: the client gets this message as a 502 fellow_failed error. */
    error: t.Optional(t.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
)
export type Frame = Static<typeof Frame>
export const FramesBody = t.Object({ frames: t.Array(Frame, { maxItems: 4096 }) }, { additionalProperties: false })
export const RequestParams = t.Object({ request_id: t.String({ maxLength: 100 }) })
