import { describe, expect, test } from 'bun:test'
import { LeaderError, type InferFrame, type LeaderClient } from '../../src/agent/client'
import { serveRequest } from '../../src/agent/inference'
import { silentLogger } from '../../src/log'
import { FakeClock } from '../helpers/clock'

function client(onPost: (frames: InferFrame[], calls: number) => void) {
  const posts: InferFrame[][] = []
  const c = {
    async inferRespond(_id: string, frames: InferFrame[]) {
      posts.push(frames)
      onPost(frames, posts.length)
    },
  } as unknown as LeaderClient
  return { c, posts }
}

const request = (max_tokens: number | null) => ({ request_id: 'r1', model: 'tiny-llm', messages: [{ role: 'user', content: 'It was the best of' }], max_tokens, stream: true })
// A clock that stands still: batches close on their token count alone, the same on every run.
const deps = (c: LeaderClient) => ({ client: c, log: silentLogger, fellowId: () => 'f1', signal: new AbortController().signal, clock: new FakeClock() })

describe('serving the built-in model', () => {
  test('streams the reply in batches of tokens and ends with done and usage', async () => {
    const { c, posts } = client(() => {})
    await serveRequest(deps(c), request(40))
    const frames = posts.flat()
    const text = frames.map((f) => f.delta ?? '').join('')
    expect(text.split(' ')).toHaveLength(40)
    expect(text).toBe(text.trim())
    expect(posts.length).toBeGreaterThan(1) // streamed, not one frame at the end
    expect(posts.length).toBeLessThan(40) // but batched, not a request per token
    expect(frames.at(-1)).toMatchObject({ done: true, usage: { prompt_tokens: 5, completion_tokens: 40 } })
  })

  test('410 Gone (the client went away) stops generation at once', async () => {
    const { c, posts } = client((_, calls) => {
      if (calls === 2) throw new LeaderError(410, 'gone', 'client left', null)
    })
    await serveRequest(deps(c), request(4000))
    expect(posts).toHaveLength(2)
    expect(posts.flat().some((f) => f.done)).toBe(false)
  })
})
