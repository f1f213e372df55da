// Wire shapes of inference: the OpenAI-compatible chat API (clients) and the transport (fellows).
// The chat request accepts OpenAI's other fields (additionalProperties) so the official clients
// and their newer options keep working; what the leader acts on, and the features it must refuse
// rather than ignore (an answer without them would look like one with them), are declared and checked.
import { t, type Static } from 'elysia'
import { Type } from '@sinclair/typebox'
import { UnionEnum } from '../model'

export const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const
// TypeBox's own integer, not Elysia's t.Integer: that one is a transform (it also takes "12"),
// which makes Elysia decode every body (and encode every answer) of the route, nearly doubling
// the cost of a frame post. Only the query string needs t.Integer's coercion.
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const TokenLimit = t.Optional(t.Nullable(Type.Integer({ minimum: 1, maximum: 10_000_000 })))

// Text parts only: an image, audio or file part would be dropped on the way to a text-only engine,
// and the answer would pretend to have seen it. Refused (400) until an engine takes them.
const ContentPart = t.Object({ type: t.Literal('text'), text: t.String() }, { additionalProperties: true })
export const ChatMessage = t.Object(
  {
    // A missing role is refused, never a system prompt by default (src/wire/schema.ts UnionEnum).
    role: UnionEnum(ROLES),
    content: t.Optional(t.Union([t.String(), t.Null(), t.Array(ContentPart, { maxItems: 1000 })])),
    name: t.Optional(t.String({ maxLength: 256 })),
    tool_calls: t.Optional(t.Nullable(t.Array(t.Object({}, { additionalProperties: true }), { maxItems: 128 }))),
    tool_call_id: t.Optional(t.String({ maxLength: 256 })),
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
    /** Not in OpenAI's shape: route only to this pool's fellows (the caller's own pools, or any for an admin). */
    pool_id: t.Optional(t.String({ format: 'uuid' })),
    // Passed to the engine as they are (the engine checks their content; a refusal reaches the
    // caller as a 400 with the engine's words). The built-in tiny-llm refuses tools and JSON mode.
    stop: t.Optional(t.Nullable(t.Union([t.String({ maxLength: 1000 }), t.Array(t.String({ maxLength: 1000 }), { maxItems: 16 })]))),
    seed: t.Optional(t.Nullable(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }))),
    presence_penalty: t.Optional(t.Nullable(t.Number({ minimum: -2, maximum: 2 }))),
    frequency_penalty: t.Optional(t.Nullable(t.Number({ minimum: -2, maximum: 2 }))),
    response_format: t.Optional(t.Nullable(t.Object({ type: t.String({ maxLength: 64 }) }, { additionalProperties: true }))),
    tools: t.Optional(t.Nullable(t.Array(t.Object({ type: t.String({ maxLength: 64 }) }, { additionalProperties: true }), { maxItems: 128 }))),
    tool_choice: t.Optional(t.Nullable(t.Union([t.String({ maxLength: 64 }), t.Object({}, { additionalProperties: true })]))),
    parallel_tool_calls: t.Optional(t.Nullable(t.Boolean())),
    // OpenAI features the transport does not carry: their neutral values pass (some clients send
    // them by default); anything else is refused with 400 (CHAT_FIELD_RULES) instead of being
    // ignored, so a client never takes a plain answer for one with them.
    functions: t.Optional(t.Nullable(t.Array(t.Unknown(), { maxItems: 0 }))),
    function_call: t.Optional(t.Nullable(t.Literal('none'))),
    logprobs: t.Optional(t.Nullable(t.Literal(false))),
    top_logprobs: t.Optional(t.Nullable(Type.Integer({ minimum: 0, maximum: 0 }))),
    modalities: t.Optional(t.Nullable(t.Array(t.Literal('text'), { maxItems: 1 }))),
    audio: t.Optional(t.Null()),
  },
  { additionalProperties: true },
)
export type ChatCompletionInput = Static<typeof ChatCompletionBody>

const notYet = (what: string, neutral: string) =>
  `${what} is not supported by this leader: fellows do not pass it to their engines. Leave it out (or send ${neutral}).`

/**
 * Plain words for a refused field of the chat routes, in OpenAI's terms (its clients show `message`
 * and `param`). TypeBox's own words for a nullable field ("should be one of: 'integer', 'null'")
 * name neither the rule nor the reason. `unsupported` answers OpenAI's code unsupported_parameter.
 */
export const CHAT_FIELD_RULES: Record<string, { message: string; unsupported?: true }> = {
  model: { message: 'model must be the name of a model, 1 to 200 characters; GET /api/v1/models lists those you may use.' },
  messages: { message: 'messages must be a list of 1 to 10000 messages, each an object with a role and a content.' },
  stream: { message: 'stream must be true, false or null.' },
  stream_options: { message: 'stream_options must be an object such as {"include_usage": true}, or null.' },
  max_tokens: { message: "max_tokens must be at least 1 (an integer up to 10000000), or null for the engine's default." },
  max_completion_tokens: { message: "max_completion_tokens must be at least 1 (an integer up to 10000000), or null for the engine's default." },
  n: { message: 'n must be 1: a fellow generates one choice per request.' },
  temperature: { message: 'temperature must be a number from 0 to 2, or null.' },
  top_p: { message: 'top_p must be a number from 0 to 1, or null.' },
  pool_id: { message: 'pool_id must be the id (a UUID) of a pool you may use.' },
  stop: { message: 'stop must be a string or a list of up to 16 strings (each at most 1000 characters), or null.' },
  seed: { message: 'seed must be an integer, or null.' },
  presence_penalty: { message: 'presence_penalty must be a number from -2 to 2, or null.' },
  frequency_penalty: { message: 'frequency_penalty must be a number from -2 to 2, or null.' },
  response_format: { message: 'response_format must be an object with a type ("text", "json_object" or "json_schema"), or null.' },
  tools: { message: 'tools must be a list of up to 128 tools, each an object with a type (such as "function"), or null.' },
  tool_choice: { message: 'tool_choice must be "none", "auto", "required" or an object naming a tool, or null.' },
  parallel_tool_calls: { message: 'parallel_tool_calls must be true, false or null.' },
  functions: { message: notYet('functions (the legacy form of function calling)', 'null or [], and use tools'), unsupported: true },
  function_call: { message: notYet('function_call (the legacy form of tool_choice)', 'null or "none", and use tool_choice'), unsupported: true },
  logprobs: { message: notYet('logprobs', 'false'), unsupported: true },
  top_logprobs: { message: notYet('top_logprobs', '0'), unsupported: true },
  modalities: { message: notYet('modalities other than ["text"] (audio output)', '["text"]'), unsupported: true },
  audio: { message: notYet('audio (audio output)', 'null'), unsupported: true },
}

/** The same for a field of one message (`messages.3.role`); `{i}` is the message's index. */
export const CHAT_MESSAGE_RULES: Record<string, string> = {
  '': 'messages[{i}] must be an object with a role and a content.',
  role: `messages[{i}].role must be one of ${ROLES.join(', ')}.`,
  content: `messages[{i}].content must be a string, null or a list of text parts ({"type": "text", "text": "..."}); image, audio and file parts are not supported by this leader's engines yet.`,
  name: 'messages[{i}].name must be a string of at most 256 characters.',
  tool_calls: 'messages[{i}].tool_calls must be a list of up to 128 tool calls, as the assistant returned them.',
  tool_call_id: 'messages[{i}].tool_call_id must be the id (at most 256 characters) of the tool call this message answers.',
}

export const Usage = t.Object({
  prompt_tokens: Count,
  completion_tokens: Count,
  total_tokens: Count,
  prompt_tokens_details: t.Optional(t.Unknown()),
  completion_tokens_details: t.Optional(t.Unknown()),
})
export type Usage = Static<typeof Usage>

/** A tool call of a finished (non-streamed) answer, merged from the engine's deltas. */
export const ToolCall = t.Object({
  id: t.String(),
  type: t.String(),
  function: t.Object({ name: t.String(), arguments: t.String() }),
})
export type ToolCall = Static<typeof ToolCall>

export const ChatCompletion = t.Object({
  id: t.String(),
  object: t.Literal('chat.completion'),
  created: Type.Integer(),
  model: t.String(),
  choices: t.Array(
    t.Object({
      index: Type.Integer(),
      message: t.Object({ role: t.Literal('assistant'), content: t.Nullable(t.String()), refusal: t.Null(), tool_calls: t.Optional(t.Array(ToolCall)) }),
      logprobs: t.Null(),
      /** As the engine said it: stop, length, tool_calls or content_filter. */
      finish_reason: t.String(),
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

// The transport: its wire shapes live in src/wire/inference.ts (the agent loads them without Elysia).
export { InferMessage, InferRequest, InferFrame as Frame, InferFramesBody as FramesBody } from '../wire/inference'
export type { InferKind, InferUsage } from '../wire/inference'

// Embeddings: OpenAI's shape, routed like a chat request to a fellow serving the model.
export const EmbeddingsBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 200 }),
    input: t.Union([
      t.String({ maxLength: 1_000_000 }),
      t.Array(t.String({ maxLength: 1_000_000 }), { minItems: 1, maxItems: 2048 }),
      t.Array(Type.Integer({ minimum: 0 }), { minItems: 1, maxItems: 1_000_000 }),
      t.Array(t.Array(Type.Integer({ minimum: 0 }), { maxItems: 1_000_000 }), { minItems: 1, maxItems: 2048 }),
    ]),
    encoding_format: t.Optional(t.Nullable(UnionEnum(['float', 'base64']))),
    dimensions: t.Optional(t.Nullable(Type.Integer({ minimum: 1, maximum: 65_536 }))),
    user: t.Optional(t.String({ maxLength: 256 })),
    /** Not in OpenAI's shape: route only to this pool's fellows, as for chat. */
    pool_id: t.Optional(t.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
)
export type EmbeddingsInput = Static<typeof EmbeddingsBody>

export const EMBEDDING_FIELD_RULES: Record<string, { message: string; unsupported?: true }> = {
  model: CHAT_FIELD_RULES.model!,
  input: { message: 'input must be a string, a list of up to 2048 strings, a list of token ids, or a list of such lists.' },
  encoding_format: { message: 'encoding_format must be "float" or "base64", or null.' },
  dimensions: { message: 'dimensions must be an integer from 1 to 65536, or null.' },
  user: { message: 'user must be a string of at most 256 characters.' },
  pool_id: CHAT_FIELD_RULES.pool_id!,
}

export const Embedding = t.Object({ object: t.Literal('embedding'), index: Type.Integer(), embedding: t.Union([t.Array(t.Number()), t.String()]) })
export const EmbeddingList = t.Object({
  object: t.Literal('list'),
  data: t.Array(Embedding),
  model: t.String(),
  usage: t.Object({ prompt_tokens: Count, total_tokens: Count }),
})
export type EmbeddingList = Static<typeof EmbeddingList>

export const PollQuery = t.Object({ wait_ms: t.Optional(t.Integer({ minimum: 0, maximum: 3_600_000 })) }, { additionalProperties: false })

export const RequestParams = t.Object({ request_id: t.String({ maxLength: 100 }) })

/** Not in OpenAI's API: which online fellows serve each model, what they take at once and hold now. */
export const ServingList = t.Object({
  items: t.Array(
    t.Object({
      model: t.String(),
      fellows: t.Array(t.Object({ id: t.String(), hostname: t.String(), pool_id: t.String(), capacity: Type.Integer(), in_flight: Type.Integer() })),
    }),
  ),
})
