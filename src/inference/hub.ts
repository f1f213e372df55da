// The inference transport as a small interface, so a shared bus can replace the in-memory queues
// (memory-hub.ts) when there is more than one leader. A request is queued for the one fellow
// routing chose, handed to that fellow's long-poll, and its frames flow back to the one client
// reading it.
import type { ErrorCode } from '../errors'
import type { Frame, InferKind, InferMessage, InferRequest, InferUsage } from './model'

export interface InferJob {
  kind: InferKind
  model: string
  messages: InferMessage[]
  max_tokens: number | null
  stream: boolean
  temperature?: number
  top_p?: number
  /** The caller's other OpenAI fields, passed to the engine (src/inference/service.ts decides which). */
  params?: Record<string, unknown>
}

/** Token counts as the engine reported them (total and details when it sent them). */
export type TokenUsage = InferUsage

export type Ending =
  | { ok: true; usage: TokenUsage; finish: string; /** A whole answer (embeddings): the engine's JSON. */ result?: unknown }
  | { ok: false; code: ErrorCode; message: string }

/** Tool-call deltas of one chunk, in OpenAI's shape. */
export interface ToolCallsDelta {
  tool_calls: unknown[]
}
/** Content text (most of a stream, so a plain string) or a chunk's tool-call deltas. */
export type Delta = string | ToolCallsDelta

/**
 * The most output a request holds, in UTF-16 code units: unread by a streaming client, or
 * collected whole for a non-streamed answer (a fellow posting without end grew the leader by
 * gigabytes in seconds collecting one).
 */
export const MAX_ANSWER_CHARS = 1 << 20

/** The characters tool-call deltas take in memory, about: their JSON text. */
export function toolCallsChars(calls: unknown[]): number {
  return calls.length === 0 ? 0 : JSON.stringify(calls).length
}

/** What a delta takes of a request's output limit. */
export function deltaChars(d: Delta): number {
  return typeof d === 'string' ? d.length : toolCallsChars(d.tool_calls)
}

/** What a client read returns: deltas in order; `end` once the request is over and drained. */
export interface Output {
  deltas: Delta[]
  end: Ending | null
}

export interface Ticket {
  readonly id: string
  /** Settles with null when a fellow picks the request up, or with the ending if it ends first. */
  readonly pickedUp: Promise<Ending | null>
  /** Waits up to waitMs for output; an empty Output without `end` means nothing came yet. */
  read(waitMs: number): Promise<Output>
  /** The client went away: the request ends and the fellow's next post answers 410. */
  cancel(): void
}

export type PostResult = 'ok' | 'gone' | 'not_yours' | 'full'

export interface InferenceStats {
  open: number
  queued: number
  waiters: number
  bufferedChars: number
}

export interface InferenceHub {
  /**
   * Queues a request for one fellow; throws service_unavailable when the leader is at its limit, or
   * `share` (the pool it was routed to; the fellow unless told) at its part of it.
   */
  submit(fellowId: string, job: InferJob, share?: string): Ticket
  /**
   * The fellow's next request, waiting up to waitMs for one; null when none came. `onEvicted` is
   * called (before the null) when the wait was ended early because the fellow holds more waits
   * than the hub keeps for it: a caller must not wait again at once, or two such callers end each
   * other's waits for good.
   */
  next(fellowId: string, waitMs: number, signal?: AbortSignal, onEvicted?: () => void): Promise<InferRequest | null>
  /** Frames from a fellow; `fellowId` null only for an unauthenticated fellow (node auth off). */
  post(requestId: string, fellowId: string | null, frames: Frame[]): PostResult
  /**
   * Requests queued for or being served by the fellow, and those that ended while it served them
   * (timed out, client gone) until it hears so: routing sends work to the least loaded.
   */
  inFlight(fellowId: string): number
  /** Ends requests no fellow picked up, or whose fellow went silent, for timeoutMs; returns how many. */
  expire(now: number): number
  /** Ends the requests queued for or served by a fellow that is gone (offline, detached): returns how many. */
  abandon(fellowId: string, why: string): number
  stats(): InferenceStats
  closeAll(): void
}
