// The fake clock the agent's tests run on: if it fired timers early, late or out of order, those
// tests would pass or fail for the wrong reason.
import { describe, expect, test } from 'bun:test'
import { sleep } from '../../src/time'
import { FakeClock } from '../helpers/clock'

describe('fake clock', () => {
  test('advance runs the timers that fall due, in order, each at its own time, and those they arm', () => {
    const clock = new FakeClock(1000)
    const fired: [string, number][] = []
    clock.setTimeout(() => fired.push(['b', clock.now()]), 200)
    clock.setTimeout(() => {
      fired.push(['a', clock.now()])
      clock.setTimeout(() => fired.push(['a+50', clock.now()]), 50)
    }, 100)
    clock.setTimeout(() => fired.push(['late', clock.now()]), 1000)
    clock.advance(300)
    expect(fired).toEqual([['a', 1100], ['a+50', 1150], ['b', 1200]])
    expect(clock.now()).toBe(1300)
    expect(clock.pending).toBe(1)
  })

  test('a cancelled timer never fires; timers at the same time fire in the order they were armed', () => {
    const clock = new FakeClock()
    const fired: string[] = []
    const cancel = clock.setTimeout(() => fired.push('cancelled'), 10)
    clock.setTimeout(() => fired.push('first'), 10)
    clock.setTimeout(() => fired.push('second'), 10)
    cancel()
    clock.advance(9)
    expect(fired).toEqual([])
    clock.advance(1)
    expect(fired).toEqual(['first', 'second'])
  })

  test('sleep on it resolves when the clock passes its time', async () => {
    const clock = new FakeClock()
    const slept = sleep(clock, 60_000)
    clock.advance(60_000)
    expect(await slept).toBe(true)
  })
})
