import { describe, expect, test } from 'bun:test'
import { HashPool, HASH_CONCURRENCY, HASH_QUEUE_DEFAULT } from '../../src/accounts/passwords'
import { AppError } from '../../src/errors'

/**
 * How a call stands once the event loop has turned once: refused, done, or still pending (without
 * the bound, an overflow call would wait in line forever).
 */
async function atOnce<T>(p: Promise<T>): Promise<{ error: unknown } | { value: T } | 'pending'> {
  const turn = new Promise<'pending'>((r) => setImmediate(() => r('pending')))
  return Promise.race([p.then((value) => ({ value }), (error: unknown) => ({ error })), turn])
}

/** A job the test finishes by hand: no scrypt, no timers. */
function held() {
  const { promise, resolve } = Promise.withResolvers<string>()
  return { fn: () => promise, finish: resolve }
}

describe('the password-hashing pool (issue 26)', () => {
  test('past its running and waiting slots a call is refused at once with a 429 rate_limited AppError and Retry-After 1', async () => {
    const pool = new HashPool(1, 1)
    const a = held()
    const b = held()
    const running = pool.run(a.fn)
    const waiting = pool.run(b.fn)
    expect(pool.load).toBe(2)
    let ran = false
    const outcome = await atOnce(pool.run(async () => ((ran = true), 'never')))
    expect(ran).toBe(false)
    const refused = outcome !== 'pending' && 'error' in outcome ? outcome.error : outcome
    expect(refused).toBeInstanceOf(AppError)
    expect((refused as AppError).code).toBe('rate_limited')
    expect((refused as AppError).extra.retryAfterS).toBe(1)
    expect(pool.load).toBe(2) // the refused call took no place
    a.finish('a')
    expect(await running).toBe('a')
    // The waiting call moved up into the running slot, so one more may wait now.
    const c = held()
    const next = pool.run(c.fn)
    expect(pool.load).toBe(2)
    b.finish('b')
    c.finish('c')
    expect([await waiting, await next]).toEqual(['b', 'c'])
    expect(pool.load).toBe(0)
  })

  test('a failing hash frees its slot for the next in line', async () => {
    const pool = new HashPool(1, 1)
    const first = pool.run(() => Promise.reject(new Error('boom'))).catch((e: Error) => e.message)
    const second = pool.run(async () => 'ok')
    expect([await first, await second]).toEqual(['boom', 'ok'])
    expect(pool.load).toBe(0)
  })

  test('with no waiting slots only the running ones are taken', async () => {
    const pool = new HashPool(2, 0)
    const a = held()
    const b = held()
    const runs = [pool.run(a.fn), pool.run(b.fn)]
    const outcome = await atOnce(pool.run(async () => 'x'))
    expect(outcome !== 'pending' && 'error' in outcome && outcome.error instanceof AppError).toBe(true)
    a.finish('a')
    b.finish('b')
    expect(await Promise.all(runs)).toEqual(['a', 'b'])
  })

  test('the default line is twice the concurrency', () => {
    expect([HASH_CONCURRENCY, HASH_QUEUE_DEFAULT]).toEqual([2, 4])
  })
})
