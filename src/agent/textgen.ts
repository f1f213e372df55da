// The built-in model a fellow serves: a word-level Markov chain over two public-domain
// paragraphs. It is not meant to be clever; it lets the inference path (long-poll, streamed
// deltas, abort, usage) be exercised end to end, repeatably, with no weights to download.
import { mulberry32 } from './mlp'

// Charles Dickens, A Tale of Two Cities (1859); Abraham Lincoln, the Gettysburg Address (1863).
const CORPUS = `It was the best of times, it was the worst of times, it was the age of wisdom, it was
the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the
season of Light, it was the season of Darkness, it was the spring of hope, it was the winter of
despair, we had everything before us, we had nothing before us, we were all going direct to
Heaven, we were all going direct the other way - in short, the period was so far like the
present period, that some of its noisiest authorities insisted on its being received, for good
or for evil, in the superlative degree of comparison only.
Four score and seven years ago our fathers brought forth on this continent, a new nation,
conceived in Liberty, and dedicated to the proposition that all men are created equal. Now we
are engaged in a great civil war, testing whether that nation, or any nation so conceived and
so dedicated, can long endure. We are met on a great battle-field of that war. We have come to
dedicate a portion of that field, as a final resting place for those who here gave their lives
that that nation might live. It is altogether fitting and proper that we should do this.`

/** The model's size for its servable manifest: the corpus is all there is. */
export const MODEL_BYTES = new TextEncoder().encode(CORPUS).byteLength

export interface GenerateOptions {
  maxTokens: number
  signal?: AbortSignal
}

// Chain keys ignore case and punctuation so 'times,' and 'times' share successors; the emitted
// words keep theirs.
const keyOf = (word: string) => word.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '')

const WORDS = CORPUS.split(/\s+/).filter((w) => w && keyOf(w))

// Successor lists keep duplicates so frequent transitions stay frequent. The text wraps from
// its last word to its first, so every word has a successor and generation never stalls.
const CHAIN = new Map<string, string[]>()
WORDS.forEach((word, i) => {
  const next = WORDS[(i + 1) % WORDS.length] ?? word
  const list = CHAIN.get(keyOf(word))
  if (list) list.push(next)
  else CHAIN.set(keyOf(word), [next])
})

function pick<T>(items: readonly T[], rnd: () => number): T | undefined {
  return items[Math.floor(rnd() * items.length)]
}

// FNV-1a: the same prompt must give the same continuation on every fellow and every run.
function hashPrompt(prompt: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < prompt.length; i++) h = Math.imul(h ^ prompt.charCodeAt(i), 0x01000193)
  return h >>> 0
}

// Continues from the last prompt word the chain knows, so replies read as a continuation.
function firstWord(prompt: string, rnd: () => number): string {
  const known = prompt
    .split(/\s+/)
    .map(keyOf)
    .filter((k) => CHAIN.has(k))
  const from = known[known.length - 1]
  const successors = from === undefined ? undefined : CHAIN.get(from)
  return (successors && pick(successors, rnd)) ?? pick(WORDS, rnd) ?? 'it'
}

// A macrotask boundary, not just a microtask: lets socket writes and abort events run between
// tokens, so a long reply neither starves the fellow nor outlives its cancellation.
const toEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

export async function* generate(prompt: string, opts: GenerateOptions): AsyncGenerator<string> {
  const max = Number.isFinite(opts.maxTokens) ? Math.max(0, Math.floor(opts.maxTokens)) : 0
  if (max === 0 || opts.signal?.aborted) return
  const rnd = mulberry32(hashPrompt(prompt))
  let word = firstWord(prompt, rnd)
  for (let i = 0; i < max; i++) {
    if (opts.signal?.aborted) return
    yield word + ' '
    await toEventLoop()
    word = pick(CHAIN.get(keyOf(word)) ?? WORDS, rnd) ?? word
  }
}

export function countTokens(text: string): number {
  const trimmed = text.trim()
  return trimmed ? trimmed.split(/\s+/).length : 0
}
