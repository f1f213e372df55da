// The shared budget of the log lines fellows ship (src/fellows/logs.ts), without a leader around it:
// the HTTP tests in test/http/fellows.test.ts ship through the route.
import { describe, expect, test } from 'bun:test'
import { LogRings } from '../../src/fellows/logs'

describe('the shared log budget', () => {
  test('hundreds of fellows in one pool (token-less ones land in the default pool) shrink no other pool\'s share', () => {
    const budget = 1024 * 1024
    const poolOf = (id: string) => (id.startsWith('flood-') ? 'default' : 'lab')
    const logs = new LogRings(budget, () => 0, poolOf)
    const mine = ['x'.repeat(4000), 'y'.repeat(4000)]
    logs.append('gpu-1', mine, 0)
    for (let round = 0; round < 3; round++) for (let i = 0; i < 300; i++) logs.append(`flood-${i}`, Array.from({ length: 20 }, () => 'z'.repeat(100)), 0)
    expect(logs.since('gpu-1', 0).map((l) => l.line)).toEqual(mine)
    expect(logs.totalBytes).toBeLessThanOrEqual(budget)
    // The default pool keeps its half, spread over its fellows: the latest of each is kept.
    expect(logs.since('flood-299', 0).length).toBeGreaterThan(0)
    // Dropped fellows leave the count: a pool's share grows back.
    for (let i = 0; i < 300; i++) logs.drop(`flood-${i}`)
    logs.append('gpu-2', Array.from({ length: 100 }, () => 'w'.repeat(4000)), 0)
    expect(logs.since('gpu-2', 0)).toHaveLength(100)
  })
})
