// The agent's log shipping (src/agent/logship.ts) against the real leader app on a port: a burst
// of long lines reaches the leader whole and in order at default settings (a full batch of 500
// lines of 4096 characters is 2 MB, twice the default SVC_MAX_BODY_BYTES), a leader with a
// smaller body limit makes the batches smaller instead of stalling them, and a line refused even
// alone is dropped with a word, not retried forever.
import { afterEach, describe, expect, test } from 'bun:test'
import { LeaderClient } from '../../src/agent/client'
import { LogBuffer, MAX_BATCH_BYTES } from '../../src/agent/logship'
import { VERSION } from '../../src/version'
import { servedPool } from '../helpers/listen'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

async function leaderWithFellow(env: Record<string, string> = {}) {
  const { h, server, join } = await servedPool(env)
  cleanups.push(() => h.close(), () => server.stop())
  let token: string | null = null
  const client = new LeaderClient(server.url, () => token)
  const r = await client.register(join, { hostname: 'unit', gpus: [], agent_version: VERSION })
  token = r.node_token
  const ship = (lines: string[]) => client.shipLogs(r.fellow_id, lines)
  const held = () => h.services.logs.since(r.fellow_id, 0).map((l) => l.line)
  return { ship, held }
}

/** Flushes until the buffer is empty (a stall fails the test instead of looping forever). */
async function drain(logs: LogBuffer, ship: (lines: string[]) => Promise<void>, onDropped?: Parameters<LogBuffer['flush']>[1]) {
  for (let i = 0; i < 200 && logs.size > 0; i++) await logs.flush(ship, onDropped)
  return logs.size
}

describe('shipping the agent log', () => {
  test('a burst of long lines (quotes doubled by JSON escaping) reaches a leader at default settings whole and in order', async () => {
    const { ship, held } = await leaderWithFellow()
    const logs = new LogBuffer()
    const lines = Array.from({ length: 600 }, (_, i) => `${i} ${'"'.repeat(4090)}`)
    for (const l of lines) logs.add(l)
    const sizes: number[] = []
    expect(await drain(logs, async (batch) => {
      sizes.push(Buffer.byteLength(JSON.stringify({ lines: batch })))
      await ship(batch)
    })).toBe(0)
    expect(held()).toEqual(lines)
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_BATCH_BYTES)
    expect(logs.batchCap).toBe(500) // never refused: the byte cap kept it under the limit
  })

  test('a leader with a smaller body limit answers 413: the batch shrinks until it is taken, nothing lost or reordered', async () => {
    const { ship, held } = await leaderWithFellow({ SVC_MAX_BODY_BYTES: String(40 * 1024) })
    const logs = new LogBuffer()
    const lines = Array.from({ length: 300 }, (_, i) => `${i} ${'x'.repeat(4000)}`)
    for (const l of lines) logs.add(l)
    const refused: number[] = []
    expect(await drain(logs, async (batch) => {
      try {
        await ship(batch)
      } catch (e) {
        refused.push((e as { status?: number }).status ?? 0)
        throw e
      }
    })).toBe(0)
    expect(held()).toEqual(lines)
    expect(refused.length).toBeGreaterThan(0)
    expect(refused.every((s) => s === 413)).toBe(true)
  })

  test('a line refused even alone is dropped with one word about it; the lines after it go on', async () => {
    const { ship, held } = await leaderWithFellow({ SVC_MAX_BODY_BYTES: '1024' })
    const logs = new LogBuffer()
    logs.add('before')
    logs.add('y'.repeat(3000))
    logs.add('after')
    const dropped: { chars: number; error: string }[] = []
    expect(await drain(logs, ship, (d) => dropped.push(d))).toBe(0)
    expect(held()).toEqual(['before', 'after'])
    expect(dropped).toHaveLength(1)
    expect(dropped[0]!.chars).toBe(3000)
    expect(dropped[0]!.error).toContain('413')
    // The refusals halved the batch down to one line; the batches that go through double it back,
    // so the lines after it do not go one per flush for good.
    for (let i = 0; i < 300; i++) logs.add(`line ${i}`)
    let flushes = 0
    while (logs.size > 0 && flushes < 50) {
      await logs.flush(ship)
      flushes++
    }
    expect(logs.size).toBe(0)
    expect(flushes).toBeLessThan(20) // one line a flush was 300
  })

  test('any other failure puts the batch back as it was: shipped later, in order, at least once', async () => {
    const { ship, held } = await leaderWithFellow()
    const logs = new LogBuffer()
    for (const l of ['a', 'b', 'c']) logs.add(l)
    expect(await logs.flush(async () => {
      throw Object.assign(new Error('leader answered 503'), { status: 503 })
    })).toBe(0)
    expect(logs.size).toBe(3)
    expect(logs.batchCap).toBe(500)
    logs.add('d')
    expect(await drain(logs, ship)).toBe(0)
    expect(held()).toEqual(['a', 'b', 'c', 'd'])
  })
})
