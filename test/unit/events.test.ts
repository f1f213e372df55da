import { describe, expect, test } from 'bun:test'
import { EventRings } from '../../src/events'
import { lastEventId, sseStream } from '../../src/http/sse'

describe('event rings', () => {
  test('a ring past its cap drops its oldest events and hands them back; ids keep increasing', () => {
    const r = new EventRings<{ v: string }>(2)
    expect(r.append('a', [{ v: 'x' }, { v: 'y' }])).toEqual([])
    expect(r.append('a', [{ v: 'z' }])).toEqual([{ v: 'x', id: 1 }])
    expect(r.since('a', 0).map((e) => e.id)).toEqual([2, 3])
    expect(r.trim('a', 2).map((e) => e.v)).toEqual(['y', 'z'])
    r.append('a', [{ v: 'w' }])
    expect(r.since('a', 0)).toEqual([{ v: 'w', id: 4 }])
    expect(r.since('b', 0)).toEqual([])
  })

  test('with a clock, a ring numbers from its making (ms x 1000): one made later, after a drop or a restart, numbers above the old ids', () => {
    let now = 1_000
    const before = new EventRings<{ v: number }>(10, () => now)
    before.append('a', [{ v: 1 }, { v: 2 }])
    expect(before.since('a', 0).map((e) => e.id)).toEqual([1_000_001, 1_000_002])
    const seen = before.since('a', 0).at(-1)!.id
    now = 1_005
    before.drop('a')
    before.append('a', [{ v: 3 }])
    // The next leader, its rings empty, numbers from its own start.
    const after = new EventRings<{ v: number }>(10, () => now)
    after.append('a', [{ v: 4 }])
    // A viewer resuming with the id it saw last gets what came since, from either.
    expect(before.since('a', seen).map((e) => e.v)).toEqual([3])
    expect(after.since('a', seen).map((e) => e.v)).toEqual([4])
  })

  test('a waiter wakes on the next append of its key, not of another key, and on abort', async () => {
    const r = new EventRings<{ v: number }>(10)
    let woke = false
    const w = r.wait('a', new AbortController().signal, 10_000).then(() => (woke = true))
    r.append('b', [{ v: 1 }])
    await Bun.sleep(1)
    expect(woke).toBe(false)
    r.append('a', [{ v: 2 }])
    await w
    expect(woke).toBe(true)
    const ac = new AbortController()
    const aborted = r.wait('a', ac.signal, 10_000)
    ac.abort()
    await aborted
  })
})

describe('sseStream', () => {
  test('replays the events after Last-Event-ID and, once the source has ended, sends end and closes', async () => {
    const r = new EventRings<{ n: number }>(10)
    r.append('k', [{ n: 1 }, { n: 2 }, { n: 3 }])
    r.end('k')
    const res = sseStream(
      { since: (id) => r.since('k', id), wait: (s, ms) => r.wait('k', s, ms), ended: () => r.ended('k') },
      { event: 'tick', data: (e) => ({ n: e.n }), after: lastEventId('1'), signal: new AbortController().signal },
    )
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    expect(await res.text()).toBe('id: 2\nevent: tick\ndata: {"n":2}\n\nid: 3\nevent: tick\ndata: {"n":3}\n\nevent: end\ndata: {}\n\n')
  })

  test('a Last-Event-ID that is not a non-negative safe integer starts from the beginning', () => {
    for (const bad of [undefined, '', 'x', '-3', '1.5', '1e400']) expect(lastEventId(bad)).toBe(0)
    expect(lastEventId('42')).toBe(42)
  })
})
