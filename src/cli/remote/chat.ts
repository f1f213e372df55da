// `svc models list` and `svc chat MODEL PROMPT` over the OpenAI-compatible routes.
import { Type, type Static } from '@sinclair/typebox'
import * as I from '../../inference/model'
import { checkInput, clientFor } from '../client'
import { readLine } from '../prompt'
import { cleanText, modeOf, out, printJson, printList, writeOut } from '../output'
import type { Invocation } from '../spec'
import { CliError, UsageError } from '../usage'
import { resolvePool } from './refs'

export async function models({ flags }: Invocation): Promise<number> {
  const res = await clientFor(flags).get<Static<typeof I.ModelList>>('/api/v1/models')
  printList(
    modeOf(flags),
    res,
    res.data,
    [
      { head: 'MODEL', get: (m) => m.id },
      { head: 'FELLOWS', get: (m) => m.fellows },
      { head: 'SINCE', get: (m) => new Date(m.created * 1000).toISOString() },
    ],
    (m) => m.id,
    'no models (a fellow serves tiny-llm unless it declares engines)',
  )
  return 0
}

async function readAll(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin) chunks.push(Buffer.from(c))
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * How long svc chat waits. A streamed answer is cut only by silence: the leader sends a keep-alive
 * at least every 15 s while an answer is under way, so 2 minutes without a byte means the
 * connection is dead (a total limit gave up on a long answer while its tokens still came). A
 * non-streamed one (--json) sends nothing until it is whole: that wait has a total limit.
 */
export const CHAT_LIMITS = { idleMs: 120_000, wholeMs: 600_000 }

const minutes = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`)

export async function chat({ args, flags, usage }: Invocation, limits = CHAT_LIMITS): Promise<number> {
  let prompt = args.PROMPT!
  if (prompt === '-') prompt = process.stdin.isTTY ? await readLine() : await readAll()
  if (prompt.trim() === '') throw new UsageError('the prompt is empty', usage)
  const messages: I.ChatMessage[] = []
  if (flags.system !== undefined) messages.push({ role: 'system', content: flags.system as string })
  messages.push({ role: 'user', content: prompt })
  const stream = flags.json !== true
  const body: I.ChatCompletionInput = { model: args.MODEL!, messages, stream }
  if (flags['max-tokens'] !== undefined) body.max_tokens = flags['max-tokens'] as number
  if (flags.temperature !== undefined) {
    const t = Number(flags.temperature)
    if (!Number.isFinite(t)) throw new UsageError(`--temperature must be a number from 0 to 2; got ${JSON.stringify(flags.temperature)}`, usage)
    body.temperature = t
  }
  checkInput(I.ChatCompletionBody, body, usage, { model: 'MODEL', messages: 'PROMPT' })
  const c = clientFor(flags)
  if (flags.pool !== undefined) body.pool_id = (await resolvePool(c, flags.pool as string)).id
  const limit = new AbortController()
  let timer = setTimeout(() => limit.abort(), stream ? limits.idleMs : limits.wholeMs)
  // A byte came: the idle limit starts again.
  const touch = () => {
    clearTimeout(timer)
    timer = setTimeout(() => limit.abort(), limits.idleMs)
  }
  // Its own limit, said as such: the leader and the fellow may well be busy with the answer still.
  const gaveUp = () =>
    new CliError(
      stream
        ? `svc chat gave up: nothing came from the leader for ${minutes(limits.idleMs)} (svc chat's own limit; a leader sends a keep-alive every 15 s while an answer is under way, so the connection is likely dead)`
        : `svc chat gave up waiting ${minutes(limits.wholeMs)} for the whole answer (svc chat's own limit with --json; without --json the answer streams and only ${minutes(limits.idleMs)} without a byte ends it)`,
    )
  try {
    if (!stream) {
      printJson(await c.call('POST', '/api/v1/chat/completions', { body, signal: limit.signal, shape: Type.Object({ choices: Type.Array(Type.Object({})) }) }))
      return 0
    }
    return await streamed(c, body, flags, limit.signal, touch)
  } catch (e) {
    throw limit.signal.aborted ? gaveUp() : e
  } finally {
    clearTimeout(timer)
  }
}

/** The answer as it streams in; `touch` is told of every event and keep-alive. */
async function streamed(c: ReturnType<typeof clientFor>, body: I.ChatCompletionInput, flags: Invocation['flags'], signal: AbortSignal, touch: () => void): Promise<number> {
  let wrote = false
  let done = false
  let finish: string | null = null
  // A leader streams chat.completion.chunk events and ends with [DONE]; anything else is another server's.
  const notLeader = () => new CliError(`POST /api/v1/chat/completions: the answer is not the one a leader gives (is ${c.url} a leader?)`)
  await c.events(
    '/api/v1/chat/completions',
    (_event, data) => {
      touch()
      if (data === '[DONE]') return ((done = true), false)
      let chunk: { choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[]; error?: { message?: string } }
      try {
        chunk = JSON.parse(data)
      } catch {
        throw notLeader()
      }
      if (typeof chunk !== 'object' || chunk === null) throw notLeader()
      if (chunk.error) throw new CliError(chunk.error.message ?? 'the model failed mid-answer')
      if (!Array.isArray(chunk.choices)) throw notLeader()
      const choice = chunk.choices[0]
      const text = choice?.delta?.content
      if (text) {
        // Replaced whether or not standard output is a terminal, as `jobs logs` does: a file or a
        // pipe is read on a terminal later (cat, less -R). --json keeps the text as it came.
        writeOut(cleanText(text))
        wrote = true
      }
      if (choice?.finish_reason) finish = choice.finish_reason
    },
    { method: 'POST', body, signal, onComment: touch },
  )
  if (wrote) out('')
  if (signal.aborted) throw new CliError('gave up') // said as its own limit by the caller
  // Ended without [DONE]: a plain JSON answer (no events at all), or a stream cut short.
  if (!done) throw wrote ? new CliError(`the answer broke off before its end (the leader at ${c.url} closed the stream)`) : notLeader()
  if (finish === 'length' && !flags.quiet) process.stderr.write('svc: (the answer was cut at the token limit; --max-tokens raises it)\n')
  return 0
}
