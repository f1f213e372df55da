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

export async function chat({ args, flags, usage }: Invocation): Promise<number> {
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
  if (!stream) {
    printJson(await c.call('POST', '/api/v1/chat/completions', { body, signal: AbortSignal.timeout(600_000), shape: Type.Object({ choices: Type.Array(Type.Object({})) }) }))
    return 0
  }
  let wrote = false
  let done = false
  let finish: string | null = null
  // A leader streams chat.completion.chunk events and ends with [DONE]; anything else is another server's.
  const notLeader = () => new CliError(`POST /api/v1/chat/completions: the answer is not the one a leader gives (is ${c.url} a leader?)`)
  await c.events(
    '/api/v1/chat/completions',
    (_event, data) => {
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
    { method: 'POST', body, signal: AbortSignal.timeout(600_000) },
  )
  if (wrote) out('')
  // Ended without [DONE]: a plain JSON answer (no events at all), or a stream cut short.
  if (!done) throw wrote ? new CliError(`the answer broke off before its end (the leader at ${c.url} closed the stream)`) : notLeader()
  if (finish === 'length' && !flags.quiet) process.stderr.write('svc: (the answer was cut at the token limit; --max-tokens raises it)\n')
  return 0
}
