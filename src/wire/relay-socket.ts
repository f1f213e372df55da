// The relay's WebSocket data channel (`/ws/relay/{job_id}`), shared by the leader and the agent.
// One socket per fellow and job carries both channels of its stage, both ways:
//   binary message = 1 byte channel tag | frames in the relay's encoding (src/wire/frames.ts)
// A fellow sends frames for its neighbours (activations forward, gradients back); the leader
// answers each binary message with one text message, in order (PushAck), and sends the fellow
// the frames queued for its own stage the same way, as fast as the socket drains. A fellow keeps
// at most a few pushes unanswered: that, and the relay's queue caps, are the backpressure.
export const CHANNEL_TAG = { activations: 0, gradients: 1 } as const
export type RelayChannelName = keyof typeof CHANNEL_TAG
export const CHANNEL_OF_TAG: readonly RelayChannelName[] = ['activations', 'gradients']

/** The leader's answer to one pushed message. */
export type PushAck =
  | { ok: true; queued_frames: number; depth_bytes: number }
  /** rate_limited: a queue is full, send again after retry_after_s; the message was not queued. */
  | { ok: false; code: 'rate_limited'; detail: string; retry_after_s: number }
  /** payload_too_large: the message alone is larger than the relay can hold; do not resend it. */
  | { ok: false; code: 'payload_too_large' | 'conflict' | 'bad_request'; detail: string }

/** Close codes: the standard ones, with the reason in the close frame's text. */
export const RELAY_CLOSE = {
  /** A message larger than SVC_RELAY_MAX_FRAME_BYTES allows (nothing of it is queued). */
  tooBig: 1009,
  /** A text message, an unknown channel tag or frames that do not decode. */
  unsupported: 1003,
  /** The fellow is no longer assigned to the job (it ended, or moved the stage). */
  policy: 1008,
} as const

/** Unanswered pushes a sender keeps in flight on one socket. */
export const PUSH_WINDOW = 2
