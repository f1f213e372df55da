import { describe, expect, test } from 'bun:test'
import { Backoff, sleep } from '../../src/fellow/backoff'

describe('jittered exponential backoff', () => {
  test('delays grow by the factor up to the cap, each within [cap * (1 - jitter), cap]', () => {
    for (const random of [() => 0, () => 0.999999, Math.random]) {
      const b = new Backoff({ baseMs: 100, maxMs: 5000, jitter: 0.5, random })
      const caps = [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]
      for (const cap of caps) {
        const d = b.next()
        expect(d).toBeGreaterThanOrEqual(cap * 0.5)
        expect(d).toBeLessThanOrEqual(cap)
      }
    }
  })

  test('the jitter spreads fellows apart: many draws at one attempt are not all equal', () => {
    const draws = new Set(Array.from({ length: 50 }, () => new Backoff({ baseMs: 1000, maxMs: 60_000 }).next()))
    expect(draws.size).toBeGreaterThan(10)
    for (const d of draws) expect(d >= 500 && d <= 1000).toBe(true)
  })

  test('reset starts over from the base; no jitter gives exact powers', () => {
    const b = new Backoff({ baseMs: 10, maxMs: 1000, jitter: 0 })
    expect([b.next(), b.next(), b.next()]).toEqual([10, 20, 40])
    b.reset()
    expect(b.next()).toBe(10)
    expect(b.attempts).toBe(1)
  })

  test('a very long outage never overflows the delay', () => {
    const b = new Backoff({ baseMs: 500, maxMs: 30_000, jitter: 0 })
    for (let i = 0; i < 10_000; i++) b.next()
    expect(b.next()).toBe(30_000)
  })

  test('sleep ends early, with false, when aborted', async () => {
    const ac = new AbortController()
    const t0 = Date.now()
    setTimeout(() => ac.abort(), 20)
    expect(await sleep(5000, ac.signal)).toBe(false)
    expect(Date.now() - t0).toBeLessThan(1000)
    expect(await sleep(1)).toBe(true)
  })
})
