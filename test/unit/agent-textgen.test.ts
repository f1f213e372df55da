import { describe, expect, test } from 'bun:test'
import { countTokens, generate, type GenerateOptions } from '../../src/agent/textgen'

async function collect(prompt: string, opts: GenerateOptions): Promise<string[]> {
  const out: string[] = []
  for await (const token of generate(prompt, opts)) out.push(token)
  return out
}

describe('built-in text generator', () => {
  test('the same prompt always gives the same tokens', async () => {
    const a = await collect('Tell me about the war', { maxTokens: 40 })
    const b = await collect('Tell me about the war', { maxTokens: 40 })
    expect(b).toEqual(a)
    const others = await Promise.all(['hello', 'It was', 'a new nation'].map((p) => collect(p, { maxTokens: 40 })))
    expect(others.some((o) => o.join('') !== a.join(''))).toBe(true)
  })

  test('each token is one word followed by a space', async () => {
    for (const token of await collect('It was', { maxTokens: 25 })) expect(token).toMatch(/^\S+ $/)
  })

  test('maxTokens is honoured and a shorter run is a prefix of a longer one', async () => {
    const long = await collect('seven years', { maxTokens: 50 })
    expect(long).toHaveLength(50)
    expect(await collect('seven years', { maxTokens: 7 })).toEqual(long.slice(0, 7))
    expect(await collect('seven years', { maxTokens: 0 })).toEqual([])
    expect(await collect('seven years', { maxTokens: -3 })).toEqual([])
    expect(await collect('seven years', { maxTokens: 2.9 })).toHaveLength(2)
  })

  test('an empty or unknown prompt still produces text', async () => {
    expect(await collect('', { maxTokens: 5 })).toHaveLength(5)
    expect(await collect('zzzz qqqq', { maxTokens: 5 })).toHaveLength(5)
  })

  test('aborting stops the stream early', async () => {
    const ctl = new AbortController()
    const out: string[] = []
    for await (const token of generate('It was the best', { maxTokens: 1000, signal: ctl.signal })) {
      out.push(token)
      if (out.length === 3) ctl.abort()
    }
    expect(out).toHaveLength(3)
  })

  test('an abort from another task lands between tokens', async () => {
    const ctl = new AbortController()
    setImmediate(() => ctl.abort()) // another task, on the next turn of the event loop
    const out = await collect('Four score', { maxTokens: 1_000_000, signal: ctl.signal })
    expect(out.length).toBeGreaterThan(0)
    expect(out.length).toBeLessThan(1_000_000)
  })

  test('an already aborted request yields nothing', async () => {
    expect(await collect('It was', { maxTokens: 10, signal: AbortSignal.abort() })).toEqual([])
  })

  test('usage counts whitespace-separated tokens', async () => {
    expect(countTokens('')).toBe(0)
    expect(countTokens('  \n\t ')).toBe(0)
    expect(countTokens('hello')).toBe(1)
    expect(countTokens('  It was\tthe best\nof times, ')).toBe(6)
    const tokens = await collect('a new nation', { maxTokens: 12 })
    expect(countTokens(tokens.join(''))).toBe(12)
  })
})
