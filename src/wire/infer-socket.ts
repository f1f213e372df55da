// The inference channel (`/ws/infer/{fellow_id}`), shared by the leader and the agent: one socket
// per fellow carries the requests routed to it and the frames it answers with, instead of a
// long-poll per request and a POST per batch of frames. Text messages, one JSON object each:
//
//   fellow -> leader   {"t":"credit","n":K}                   K more requests may come (the agent's free slots)
//                      {"t":"frames","id":R,"seq":S,"frames":[...]}  frames of request R (InferFrame, as the POST)
//   leader -> fellow   {"t":"request","request":{...}}       an InferRequest, as the long-poll answers it
//                      {"t":"ack","seq":S,"result":"ok"|"gone"|"full"|"not_yours"}
//
// Every frames message gets one ack, with the seq the fellow gave it; the results mean what the
// POST's statuses do: gone = 410 (stop generating), full = 429 (the client has not read the earlier
// frames: send the same batch again shortly), not_yours = 403. A fellow keeps one frames message
// of a request unanswered at a time, so a request's frames stay in order. The leader sends a
// request only against credit: a fellow is never handed more than it said it can take.
import { Type, type Static } from '@sinclair/typebox'
import { Int } from './schema'
import { InferFrame, type InferRequest } from './inference'

export const CreditMessage = Type.Object({ t: Type.Literal('credit'), n: Int({ minimum: 1, maximum: 1024 }) }, { additionalProperties: false })
export const FramesMessage = Type.Object(
  {
    t: Type.Literal('frames'),
    id: Type.String({ minLength: 1, maxLength: 64 }),
    seq: Int({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    frames: Type.Array(InferFrame, { maxItems: 4096 }),
  },
  { additionalProperties: false },
)
export const FellowMessage = Type.Union([CreditMessage, FramesMessage])
export type FellowMessage = Static<typeof FellowMessage>

export type AckResult = 'ok' | 'gone' | 'full' | 'not_yours'
export type LeaderMessage = { t: 'request'; request: InferRequest } | { t: 'ack'; seq: number; result: AckResult }

/** Close codes, with the reason in the close frame's text. */
export const INFER_CLOSE = {
  /** A message larger than the leader's body limit (SVC_MAX_BODY_BYTES). */
  tooBig: 1009,
  /** A binary message, or one that is not JSON or not one of the messages above. */
  unsupported: 1003,
  /** The fellow was released or removed. */
  policy: 1008,
} as const
