// Serving the built-in text generator. The fellow long-polls the leader for chat requests,
// streams tokens back as frames in small batches (a frame per token would cost a request per
// word), and stops generating as soon as the leader answers 410: the client went away, and
// every further token would be work nobody reads.
import { countTokens, generate, MODEL_BYTES } from './textgen'
import { Backoff } from './backoff'
import { LeaderError, isRetryable, type InferFrame, type LeaderClient } from './client'
import { VERSION } from '../version'
import type { InferRequest } from '../wire/inference'
import { sleep, type TimerClock } from '../time'
import type { Logger } from '../log'

export const MODEL_NAME = 'tiny-llm'
export const DEFAULT_MAX_TOKENS = 64
const MAX_TOKENS_CAP = 4096
const BATCH_TOKENS = 8
const BATCH_MS = 50
const POLL_WAIT_MS = 25_000

export interface InferenceDeps {
  client: LeaderClient
  log: Logger
  fellowId: () => string
  signal: AbortSignal
  clock: TimerClock
}

export async function announceServable(client: LeaderClient, log: Logger): Promise<boolean> {
  try {
    await client.announceServable({ name: MODEL_NAME, version: VERSION, format: 'markov-text', size_bytes: MODEL_BYTES })
    log.info('servable announced', { name: MODEL_NAME, version: VERSION })
    return true
  } catch (e) {
    log.warn('servable not announced', { name: MODEL_NAME, error: (e as Error).message })
    return false
  }
}

/** Polls and answers requests one at a time until the signal aborts. */
export async function inferenceLoop(deps: InferenceDeps): Promise<void> {
  const { client, log, signal, clock } = deps
  const backoff = new Backoff({ baseMs: 500, maxMs: 60_000 })
  while (!signal.aborted) {
    try {
      const polled = clock.now()
      const req = await client.inferPoll(deps.fellowId(), POLL_WAIT_MS, signal)
      backoff.reset()
      if (req) await serveRequest(deps, req)
      // A leader that answers 204 without holding the poll must not turn this into a busy loop.
      else if (clock.now() - polled < 1000) await sleep(clock, 500, signal)
    } catch (e) {
      if (signal.aborted) return
      const ms = backoff.next()
      // A leader without the inference transport answers 403/404 for good: say so once, poll rarely.
      if (backoff.attempts === 1) log.warn('inference poll failed; retrying', { error: (e as Error).message, retry_ms: ms })
      await sleep(clock, ms, signal)
    }
  }
}

export function promptOf(req: InferRequest): string {
  return req.messages.map((m) => m.content).join('\n')
}

export async function serveRequest(deps: InferenceDeps, req: InferRequest): Promise<void> {
  const { client, log, clock } = deps
  const started = clock.now()
  const abort = new AbortController()
  const signal = AbortSignal.any([abort.signal, deps.signal])
  const prompt = promptOf(req)
  const maxTokens = Math.min(MAX_TOKENS_CAP, req.max_tokens ?? DEFAULT_MAX_TOKENS)
  let gone = false
  const send = async (frames: InferFrame[]): Promise<void> => {
    for (let attempt = 1; !gone; attempt++) {
      try {
        return await client.inferRespond(req.request_id, frames, deps.signal)
      } catch (e) {
        if (e instanceof LeaderError && (e.status === 410 || e.status === 404)) {
          gone = true
          abort.abort()
          return log.info('inference request gone; generation aborted', { request_id: req.request_id })
        }
        if (!isRetryable(e) || attempt >= 3 || deps.signal.aborted) {
          gone = true
          abort.abort()
          return log.warn('inference response failed; generation aborted', { request_id: req.request_id, error: (e as Error).message })
        }
        await sleep(clock, 100 * attempt, deps.signal)
      }
    }
  }
  let pending = ''
  let inBatch = 0
  let tokens = 0
  let flushedAt = clock.now()
  for await (const word of generate(prompt, { maxTokens, signal })) {
    // Words joined by single spaces, none trailing: the reply reads as plain text.
    pending += (tokens === 0 ? '' : ' ') + word.trimEnd()
    tokens++
    inBatch++
    if (inBatch >= BATCH_TOKENS || clock.now() - flushedAt >= BATCH_MS) {
      await send([{ delta: pending }])
      pending = ''
      inBatch = 0
      flushedAt = clock.now()
    }
    if (gone) return
  }
  if (gone || deps.signal.aborted) return
  const usage = { prompt_tokens: countTokens(prompt), completion_tokens: tokens }
  await send([...(pending ? [{ delta: pending }] : []), { done: true, usage }])
  if (!gone) log.info('inference answered', { request_id: req.request_id, model: req.model, tokens, ms: clock.now() - started })
}
