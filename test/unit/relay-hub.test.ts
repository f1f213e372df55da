import { describe, expect, test } from 'bun:test'
import { frameWireBytes, type Frame } from '../../src/wire/frames'
import { MemoryRelayHub } from '../../src/relay/hub'

const frame = (i: number, bytes = 100): Frame => ({ meta: { i }, data: new Uint8Array(bytes) })
const ids = (frames: Frame[]) => frames.map((f) => f.meta.i)
const COST = frameWireBytes(frame(0))
const LONG = 10_000

describe('relay hub', () => {
  test('frames come out in the order they went in, as the same objects', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    const pushed = [frame(0), frame(1)]
    expect(hub.push('j', 'activations', pushed)).toEqual({ ok: true, depthBytes: 2 * COST })
    hub.push('j', 'activations', [frame(2)])
    const got = await hub.pop('j', 'activations', { max: 10, waitMs: 0 })
    expect(ids(got)).toEqual([0, 1, 2])
    expect(got[0]).toBe(pushed[0]!)
    expect(hub.stats()).toEqual({ channels: 0, queuedBytes: 0, waiters: 0 })
  })

  test('channels and jobs are separate queues', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    hub.push('j', 'activations', [frame(1)])
    hub.push('j', 'gradients', [frame(2)])
    hub.push('k', 'activations', [frame(3)])
    expect(hub.stats().channels).toBe(3)
    expect(ids(await hub.pop('j', 'gradients', { max: 10, waitMs: 0 }))).toEqual([2])
    expect(ids(await hub.pop('k', 'activations', { max: 10, waitMs: 0 }))).toEqual([3])
    expect(ids(await hub.pop('j', 'activations', { max: 10, waitMs: 0 }))).toEqual([1])
  })

  test('frames put back go to the head of their queue, ahead of later pushes, counted again, and to waiting pops first', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20, maxPoolBytes: 1 << 20 })
    hub.push('j', 'activations', [0, 1, 2, 3].map((i) => frame(i)), 'p')
    const taken = await hub.pop('j', 'activations', { max: 2, waitMs: 0 })
    hub.push('j', 'activations', [frame(4)], 'p')
    hub.putBack('j', 'activations', taken, 'p')
    expect(hub.stats()).toEqual({ channels: 1, queuedBytes: 5 * COST, waiters: 0 })
    expect(ids(await hub.pop('j', 'activations', { max: 10, waitMs: 0 }))).toEqual([0, 1, 2, 3, 4])
    // Into an emptied (forgotten) queue, with pops waiting: each takes its share at once, in order.
    const first = hub.pop('j', 'activations', { max: 1, waitMs: LONG })
    const second = hub.pop('j', 'activations', { max: 1, waitMs: LONG })
    hub.putBack('j', 'activations', [5, 6, 7].map((i) => frame(i)), 'p')
    expect([ids(await first), ids(await second)]).toEqual([[5], [6]])
    expect(hub.stats()).toEqual({ channels: 1, queuedBytes: COST, waiters: 0 })
    expect(ids(await hub.pop('j', 'activations', { max: 10, waitMs: 0 }))).toEqual([7])
    expect(hub.stats()).toEqual({ channels: 0, queuedBytes: 0, waiters: 0 })
    // The pool's bytes were given back with the last frame: a full pool's worth fits again.
    expect(hub.push('k', 'activations', [frame(8, (1 << 20) - 2 * COST)], 'p').ok).toBe(true)
  })

  test('pop returns at most max frames', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    hub.push('j', 'activations', [0, 1, 2, 3, 4].map((i) => frame(i)))
    expect(ids(await hub.pop('j', 'activations', { max: 2, waitMs: 0 }))).toEqual([0, 1])
    expect(ids(await hub.pop('j', 'activations', { max: 2, waitMs: 0 }))).toEqual([2, 3])
    expect(ids(await hub.pop('j', 'activations', { max: 2, waitMs: 0 }))).toEqual([4])
    expect(() => hub.pop('j', 'activations', { max: 0, waitMs: 0 })).toThrow()
  })

  test('a popped frame is not kept alive by a queue that has not run empty', async () => {
    // A channel with a steady backlog never runs empty: the frames it has handed out must still be
    // collectable (4 MiB relay bodies each; holding them cost the relay half its throughput).
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 30 })
    const popped: WeakRef<Frame>[] = []
    const round = async (i: number) => {
      hub.push('j', 'activations', [frame(i, 1 << 16)])
      if (i > 0) for (const f of await hub.pop('j', 'activations', { max: 1, waitMs: 0 })) popped.push(new WeakRef(f))
    }
    for (let i = 0; i < 40; i++) await round(i)
    expect(hub.stats().queuedBytes).toBe(frameWireBytes(frame(39, 1 << 16)))
    Bun.gc(true)
    await Bun.sleep(0)
    Bun.gc(true)
    // The garbage collector scans the stack conservatively: allow a stray reference or two.
    expect(popped.filter((r) => r.deref() !== undefined).length).toBeLessThan(5)
  })

  test('a blocked pop is woken by the push itself, not by its timeout', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    const started = performance.now()
    const popped = hub.pop('j', 'gradients', { max: 10, waitMs: LONG })
    expect(hub.stats().waiters).toBe(1)
    const f = frame(7)
    expect(hub.push('j', 'gradients', [f])).toEqual({ ok: true, depthBytes: 0 })
    expect(await popped).toEqual([f])
    expect(performance.now() - started).toBeLessThan(LONG / 2)
    expect(hub.stats()).toEqual({ channels: 0, queuedBytes: 0, waiters: 0 })
  })

  test('a waiter takes at most max frames and the rest stay queued', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    const popped = hub.pop('j', 'activations', { max: 2, waitMs: LONG })
    expect(hub.push('j', 'activations', [0, 1, 2].map((i) => frame(i)))).toEqual({ ok: true, depthBytes: COST })
    expect(ids(await popped)).toEqual([0, 1])
    expect(ids(await hub.pop('j', 'activations', { max: 10, waitMs: 0 }))).toEqual([2])
  })

  test('several waiters on one channel each get distinct frames, first come first served', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    const waiters = [0, 1, 2].map(() => hub.pop('j', 'activations', { max: 1, waitMs: LONG }))
    hub.push('j', 'activations', [frame(10), frame(11)])
    expect(ids(await waiters[0]!)).toEqual([10])
    expect(ids(await waiters[1]!)).toEqual([11])
    expect(hub.stats().waiters).toBe(1)
    hub.push('j', 'activations', [frame(12)])
    expect(ids(await waiters[2]!)).toEqual([12])
    expect(hub.stats()).toEqual({ channels: 0, queuedBytes: 0, waiters: 0 })
  })

  test('a pop resolves [] after a short wait when nothing comes', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    expect(await hub.pop('j', 'activations', { max: 1, waitMs: 5 })).toEqual([])
    expect(await hub.pop('j', 'activations', { max: 1, waitMs: 0 })).toEqual([])
    expect(hub.stats()).toEqual({ channels: 0, queuedBytes: 0, waiters: 0 })
  })

  test('an aborted waiter leaves at once and does not swallow later frames', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    const gone = new AbortController()
    const first = hub.pop('j', 'activations', { max: 10, waitMs: LONG, signal: gone.signal })
    const second = hub.pop('j', 'activations', { max: 10, waitMs: LONG })
    gone.abort()
    expect(await first).toEqual([])
    expect(hub.stats().waiters).toBe(1)
    hub.push('j', 'activations', [frame(1)])
    expect(ids(await second)).toEqual([1])

    const alone = new AbortController()
    const third = hub.pop('j', 'activations', { max: 10, waitMs: LONG, signal: alone.signal })
    alone.abort()
    expect(await third).toEqual([])
    hub.push('j', 'activations', [frame(2)])
    expect(await hub.pop('j', 'activations', { max: 10, waitMs: 0, signal: alone.signal })).toEqual([])
    expect(ids(await hub.pop('j', 'activations', { max: 10, waitMs: 0 }))).toEqual([2])
  })

  test('a full channel refuses a push whole, then accepts it once a pop frees space', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 3 * COST })
    expect(hub.push('j', 'activations', [frame(0), frame(1)]).ok).toBe(true)
    const before = hub.stats()
    expect(hub.push('j', 'activations', [frame(2), frame(3)])).toEqual({ ok: false, retryAfterS: 1, reason: 'full', scope: 'channel' })
    expect(hub.stats()).toEqual(before)
    expect(hub.push('j', 'gradients', [frame(9), frame(9)]).ok).toBe(true)
    await hub.pop('j', 'activations', { max: 1, waitMs: 0 })
    expect(hub.push('j', 'activations', [frame(2), frame(3)])).toEqual({ ok: true, depthBytes: 3 * COST })
    expect(ids(await hub.pop('j', 'activations', { max: 10, waitMs: 0 }))).toEqual([1, 2, 3])
  })

  test('a push larger than a whole channel is refused as never fitting', () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: COST })
    expect(hub.push('j', 'activations', [frame(0), frame(1)])).toEqual({
      ok: false,
      retryAfterS: 1,
      reason: 'exceeds_capacity',
    })
    expect(hub.stats()).toEqual({ channels: 0, queuedBytes: 0, waiters: 0 })
  })

  test('empty-data frames still count against the cap, so tiny floods meet backpressure', () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1024 })
    let accepted = 0
    while (hub.push('j', 'activations', [frame(accepted, 0)]).ok) accepted++
    expect(accepted).toBeGreaterThan(0)
    expect(hub.stats().queuedBytes).toBeLessThanOrEqual(1024)
  })

  test('a satisfied or aborted waiter leaves no timer behind, so the process can exit', () => {
    // A leaked 30 s timer would keep this child alive until the kill below.
    const hubPath = new URL('../../src/relay/hub.ts', import.meta.url).pathname
    const script = `
      import { MemoryRelayHub } from ${JSON.stringify(hubPath)}
      const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
      const p = hub.pop('j', 'activations', { max: 1, waitMs: 30_000 })
      hub.push('j', 'activations', [{ meta: {}, data: new Uint8Array(1) }])
      const a = new AbortController()
      const q = hub.pop('j', 'gradients', { max: 1, waitMs: 30_000, signal: a.signal })
      a.abort()
      const d = hub.pop('k', 'gradients', { max: 1, waitMs: 30_000 })
      hub.dropJob('k')
      console.log((await p).length, (await q).length, (await d).length)
    `
    const child = Bun.spawnSync([process.execPath, '-e', script], { timeout: 3_000 })
    expect(child.exitedDueToTimeout ?? false).toBe(false)
    expect(child.stdout.toString().trim()).toBe('1 0 0')
  })

  test('dropJob resolves its waiters with [] and frees its bytes, leaving other jobs alone', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 1 << 20 })
    hub.push('j', 'activations', [frame(1), frame(2)])
    hub.push('k', 'activations', [frame(3)])
    const waiting = hub.pop('j', 'gradients', { max: 1, waitMs: LONG })
    expect(hub.stats()).toEqual({ channels: 3, queuedBytes: 3 * COST, waiters: 1 })
    hub.dropJob('j')
    expect(await waiting).toEqual([])
    expect(hub.stats()).toEqual({ channels: 1, queuedBytes: COST, waiters: 0 })
    expect(await hub.pop('j', 'activations', { max: 10, waitMs: 0 })).toEqual([])
    expect(ids(await hub.pop('k', 'activations', { max: 10, waitMs: 0 }))).toEqual([3])
  })
})

// Issue 26, item 8: per-channel caps alone let 8 channels x 60 MiB sit unpopped (RSS 270 -> 751 MiB).
describe('relay hub caps across channels', () => {
  test('the relay as a whole refuses a push past its total cap, on any job or channel, until a pop frees room', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 4 * COST, maxTotalBytes: 4 * COST })
    expect(hub.push('j', 'activations', [frame(0), frame(1)]).ok).toBe(true)
    expect(hub.push('k', 'gradients', [frame(2), frame(3)]).ok).toBe(true)
    const before = hub.stats()
    expect(hub.push('m', 'activations', [frame(4)])).toEqual({ ok: false, retryAfterS: 1, reason: 'full', scope: 'relay' })
    expect(hub.stats()).toEqual(before)
    expect(ids(await hub.pop('j', 'activations', { max: 1, waitMs: 0 }))).toEqual([0])
    expect(hub.push('m', 'activations', [frame(4)])).toEqual({ ok: true, depthBytes: COST })
    expect(hub.stats().queuedBytes).toBe(4 * COST)
  })

  test("one pool's jobs share the per-pool cap while other pools still push; pops and job ends give the bytes back", async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 10 * COST, maxTotalBytes: 10 * COST, maxPoolBytes: 3 * COST })
    expect(hub.push('j', 'activations', [frame(0), frame(1)], 'pool-a').ok).toBe(true)
    expect(hub.push('k', 'activations', [frame(2)], 'pool-a').ok).toBe(true)
    expect(hub.push('k', 'gradients', [frame(3)], 'pool-a')).toEqual({ ok: false, retryAfterS: 1, reason: 'full', scope: 'pool' })
    expect(hub.push('x', 'activations', [frame(4), frame(5), frame(6)], 'pool-b').ok).toBe(true)
    expect([hub.poolQueuedBytes('pool-a'), hub.poolQueuedBytes('pool-b')]).toEqual([3 * COST, 3 * COST])
    await hub.pop('k', 'activations', { max: 1, waitMs: 0 })
    expect(hub.poolQueuedBytes('pool-a')).toBe(2 * COST)
    expect(hub.push('k', 'gradients', [frame(3)], 'pool-a').ok).toBe(true)
    hub.dropJob('j')
    expect(hub.poolQueuedBytes('pool-a')).toBe(COST)
    hub.dropJob('k')
    hub.dropJob('x')
    expect([hub.poolQueuedBytes('pool-a'), hub.poolQueuedBytes('pool-b')]).toEqual([0, 0])
    expect(hub.stats()).toEqual({ channels: 0, queuedBytes: 0, waiters: 0 })
  })

  test('a push larger than the pool cap is refused as never fitting (413), not as full (429)', () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 10 * COST, maxPoolBytes: COST })
    expect(hub.push('j', 'activations', [frame(0), frame(1)], 'pool-a')).toEqual({ ok: false, retryAfterS: 1, reason: 'exceeds_capacity' })
    expect(hub.push('j', 'activations', [frame(0), frame(1)]).ok).toBe(true) // no pool named: only the channel cap applies
  })

  test('frames a waiting pop takes at once pass a full relay, since they are never held', async () => {
    const hub = new MemoryRelayHub({ maxQueueBytes: 2 * COST, maxTotalBytes: 2 * COST })
    expect(hub.push('j', 'activations', [frame(0), frame(1)]).ok).toBe(true)
    const waiting = hub.pop('k', 'activations', { max: 1, waitMs: LONG })
    expect(hub.push('k', 'activations', [frame(2)]).ok).toBe(true)
    expect(ids(await waiting)).toEqual([2])
    const again = hub.pop('k', 'activations', { max: 1, waitMs: LONG })
    expect(hub.push('k', 'activations', [frame(3), frame(4)])).toMatchObject({ ok: false, scope: 'relay' }) // frame 4 would be held
    expect(hub.push('k', 'activations', [frame(3)]).ok).toBe(true)
    expect(ids(await again)).toEqual([3])
    expect(hub.stats().queuedBytes).toBe(2 * COST)
  })
})
