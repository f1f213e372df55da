import { describe, expect, test } from 'bun:test'
import { Backoff } from '../../src/agent/backoff'
import { sleep } from '../../src/time'
import { FakeClock } from '../helpers/clock'

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

  test('sleep ends on the clock, or early with false when aborted (and leaves no timer behind)', async () => {
    const clock = new FakeClock()
    const ac = new AbortController()
    const aborted = sleep(clock, 5000, ac.signal)
    clock.advance(4999)
    ac.abort()
    expect(await aborted).toBe(false)
    expect(clock.pending).toBe(0)
    const slept = sleep(clock, 1000)
    let done = false
    void slept.then(() => (done = true))
    clock.advance(999)
    await Promise.resolve()
    expect(done).toBe(false)
    clock.advance(1)
    expect(await slept).toBe(true)
    expect(await sleep(clock, 1000, ac.signal)).toBe(false) // already aborted: no wait at all
  })
})
