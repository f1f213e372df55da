// The inference transport between a leader and its fellows: a fellow long-polls for requests and
// posts back frames. The leader's routes validate these (src/inference/model.ts re-exports them);
// the agent reads and sends them. Plain TypeBox, so that the agent does not load Elysia.
//
// A request carries what an OpenAI-compatible engine takes: the messages (text content; content
// parts are flattened on the leader) with the fields of a tool-calling conversation, and `params`,
// the other OpenAI fields the caller sent, passed to the engine as they are. The leader decides
// which fields pass (src/inference/service.ts, PASSED_FIELDS); a fellow only forwards them.
import { Type, type Static } from '@sinclair/typebox'
import { Int, Nullable, UnionEnum } from './schema'

const Count = Int({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const InferMessage = Type.Object({
  role: Type.String(),
  content: Nullable(Type.String()),
  name: Type.Optional(Type.String()),
  /** An assistant turn's tool calls, as OpenAI's clients send them back. */
  tool_calls: Type.Optional(Type.Array(Type.Unknown())),
  /** A tool turn's answer names the call it answers. */
  tool_call_id: Type.Optional(Type.String()),
})
export type InferMessage = Static<typeof InferMessage>

/**
 * The OpenAI fields besides model, messages, max_tokens, temperature and top_p that reach an
 * engine, when the caller set them: the leader passes only these in `params`, and a fellow
 * forwards only these (whatever else a request carried).
 */
export const CHAT_PARAMS = ['stop', 'seed', 'presence_penalty', 'frequency_penalty', 'response_format', 'tools', 'tool_choice', 'parallel_tool_calls'] as const
export const EMBEDDING_PARAMS = ['input', 'encoding_format', 'dimensions', 'user'] as const

/** The named fields of `params` that are set (not null). */
export function pickParams(from: Record<string, unknown> | undefined, fields: readonly string[]): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined
  if (!from) return out
  for (const k of fields) {
    const v = Object.hasOwn(from, k) ? from[k] : undefined
    if (v !== undefined && v !== null) (out ??= {})[k] = v
  }
  return out
}

export const INFER_KINDS = ['chat', 'embeddings'] as const
export type InferKind = (typeof INFER_KINDS)[number]

export const InferRequest = Type.Object({
  request_id: Type.String(),
  /** Absent from older leaders: a chat request. */
  kind: Type.Optional(UnionEnum(INFER_KINDS)),
  model: Type.String(),
  /** Empty for embeddings. */
  messages: Type.Array(InferMessage),
  /** Null: the engine's own default. */
  max_tokens: Nullable(Type.Integer()),
  stream: Type.Boolean(),
  temperature: Type.Optional(Type.Number()),
  top_p: Type.Optional(Type.Number()),
  /** The caller's other OpenAI fields (stop, seed, tools, ...; `input` for embeddings). */
  params: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
export type InferRequest = Static<typeof InferRequest>

/** Token counts as engines report them; the detail objects pass to the caller as they came. */
export const InferUsage = Type.Object(
  {
    prompt_tokens: Count,
    completion_tokens: Count,
    total_tokens: Type.Optional(Count),
    prompt_tokens_details: Type.Optional(Type.Unknown()),
    completion_tokens_details: Type.Optional(Type.Unknown()),
  },
  // Engines add their own members (llama.cpp's timings, say): accepted, not passed on.
  { additionalProperties: true },
)
export type InferUsage = Static<typeof InferUsage>

/** The largest piece of a result a frame carries (a post stays under the leader's 1 MiB body limit). */
export const RESULT_CHUNK_CHARS = 128 * 1024

export const InferFrame = Type.Object(
  {
    /** Content text. */
    delta: Type.Optional(Type.String({ maxLength: 65_536 })),
    /** OpenAI tool-call deltas ({index, id?, type?, function: {name?, arguments?}}), as the engine sent them. */
    tool_calls: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 128 })),
    done: Type.Optional(Type.Boolean()),
    /** The engine's finish_reason (stop, length, tool_calls, content_filter); with `done`. */
    finish_reason: Type.Optional(Type.String({ maxLength: 32 })),
    usage: Type.Optional(InferUsage),
    /** The fellow could not finish: the client gets this message as a 502 fellow_failed error. */
    error: Type.Optional(Type.String({ maxLength: 2000 })),
    /**
     * With `error`: the engine refused the request with this HTTP status. A 4xx reaches the
     * caller as a 400 (its request was at fault: too long a prompt, an unknown tool); otherwise 502.
     */
    error_status: Type.Optional(Int({ minimum: 400, maximum: 599 })),
    /** A whole answer that is not a token stream (embeddings): the engine's JSON, with `done`. */
    result: Type.Optional(Type.Unknown()),
    /**
     * The same as JSON text in pieces, for an answer larger than one post may carry: the pieces
     * are joined in order and parsed at `done`.
     */
    result_chunk: Type.Optional(Type.String({ maxLength: RESULT_CHUNK_CHARS })),
  },
  { additionalProperties: false },
)
export type InferFrame = Static<typeof InferFrame>
export const InferFramesBody = Type.Object({ frames: Type.Array(InferFrame, { maxItems: 4096 }) }, { additionalProperties: false })
