// The limit on a runner's or engine's lines in the agent's log (src/agent/lines.ts): so many a
// second, the rest counted and said once; its seconds are not the wall clock's.
import { describe, expect, test } from 'bun:test'
import { LineLimiter } from '../../src/agent/lines'
import { FakeClock } from '../helpers/clock'

describe('the line limiter', () => {
  test('lets so many lines a second through and says how many it held back; a step back of the wall clock does not silence it for the step (it dropped every line for an hour)', () => {
    const clock = new FakeClock()
    const said: number[] = []
    const limit = new LineLimiter(3, clock, (n) => said.push(n))
    const second = () => Array.from({ length: 5 }, () => limit.allow())
    clock.advance(1000)
    expect(second()).toEqual([true, true, true, false, false])
    clock.advance(1000)
    expect(said).toEqual([2])
    clock.set(clock.now() - 3600_000) // NTP steps the fellow's clock an hour back
    clock.advance(1000)
    expect(second()).toEqual([true, true, true, false, false])
    clock.advance(1000)
    expect(said).toEqual([2, 2])
  })
})
