// The built-in runner's config (src/wire/mlp-config.ts), read by the fellow at START and by the
// leader at submit: a config whose activation frames can never be carried is refused up front.
import { describe, expect, test } from 'bun:test'
import { parseTrainConfig } from '../../src/wire/mlp-config'

describe("the built-in mlp's config", () => {
  test('batch × hidden float32 must fit in one 64 MiB frame: a config whose activations could never be sent is refused, naming the largest batch for its hidden', () => {
    // The exploratory test's job: 8200 × 2048 × 4 bytes is 64.06 MiB; it ran at step 0 for good.
    expect(() => parseTrainConfig({ hidden: 2048, batch: 8200, steps: 5 })).toThrow('config.batch must be at most 8192 with config.hidden 2048')
    expect(parseTrainConfig({ hidden: 2048, batch: 8192 }).batch).toBe(8192)
    expect(parseTrainConfig({ hidden: 4096, batch: 4096 }).hidden).toBe(4096) // exactly 64 MiB
    expect(() => parseTrainConfig({ hidden: 4096, batch: 4097 })).toThrow('config.batch must be at most 4096 with config.hidden 4096')
    // The defaults count: hidden 32 unless given.
    expect(parseTrainConfig({ batch: 65_536 }).batch).toBe(65_536)
  })
})
