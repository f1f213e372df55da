import { describe, expect, test } from 'bun:test'
import { createStage, makeBatch, stageLayers, type Stage, type StageOptions } from '../../src/agent/mlp'

// Runs a whole pipeline in one process, handing tensors from stage to stage the way the data
// plane would: activations 0 -> n-1, gradients n-1 -> 0.
function train(stages: number, steps: number, extra: Partial<StageOptions> = {}): number[] {
  const pipe = Array.from({ length: stages }, (_, stage) => createStage({ stage, stages, seed: 42, ...extra }))
  const first = pipe[0]!
  const last = pipe[stages - 1]!
  const losses: number[] = []
  for (let step = 0; step < steps; step++) {
    const { x } = first.nextBatch(step)
    let a = x
    for (const s of pipe) a = s.forward(a, first.batch)
    const { loss, grad } = last.lossAndGrad(a, last.targetsFor(step))
    losses.push(loss)
    let g = grad
    for (let k = stages - 1; k >= 0; k--) g = pipe[k]!.backward(g)
  }
  return losses
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length

function expectLearns(losses: number[]): void {
  expect(losses.every(Number.isFinite)).toBe(true)
  expect(mean(losses.slice(-20))).toBeLessThan(0.5 * mean(losses.slice(0, 20)))
}

describe('pipeline-parallel MLP', () => {
  test('three stages chained forward and back drive the loss down', () => {
    expectLearns(train(3, 200))
  })

  test('one, two and four stage splits learn too', () => {
    expectLearns(train(1, 200))
    expectLearns(train(2, 200))
    expectLearns(train(4, 200))
  })

  test('the same seed gives the same losses, however the network is split', () => {
    const three = train(3, 30)
    expect(train(3, 30)).toEqual(three)
    expect(train(1, 30)).toEqual(three)
    expect(train(2, 30)).toEqual(three)
    expect(train(3, 30, { seed: 7 })).not.toEqual(three)
  })

  test('every layer belongs to exactly one stage', () => {
    for (const stages of [1, 2, 3, 4, 7]) {
      const spans = Array.from({ length: stages }, (_, k) => stageLayers(k, stages))
      expect(spans[0]![0]).toBe(0)
      expect(spans[stages - 1]![1]).toBe(Math.max(stages, 3))
      spans.forEach(([from, to], k) => {
        expect(to).toBeGreaterThan(from)
        if (k > 0) expect(from).toBe(spans[k - 1]![1])
      })
    }
  })

  test('the first and last stage draw the same batch for a step', () => {
    const first = createStage({ stage: 0, stages: 3, seed: 5, batch: 4 })
    const last = createStage({ stage: 2, stages: 3, seed: 5, batch: 4 })
    expect(last.targetsFor(9)).toEqual(first.nextBatch(9).y)
    expect(first.nextBatch(9).x).toEqual(makeBatch(5, 9, 4).x)
    expect(first.nextBatch(10).x).not.toEqual(first.nextBatch(9).x)
    expect([first.isFirst, first.isLast, last.isFirst, last.isLast]).toEqual([true, false, false, true])
    expect([first.inDim, last.outDim]).toEqual([8, 1])
  })
})

describe('gradients', () => {
  // Loss L = sum(out * r) for a fixed r, so dL/dout = r and backward(r) must give dL/dθ, dL/dx.
  function checkStage(stage: Stage, n: number): void {
    const input = Float32Array.from({ length: n * stage.inDim }, (_, i) => Math.sin(i * 1.7) * 0.8)
    const r = Float32Array.from({ length: n * stage.outDim }, (_, i) => Math.cos(i * 2.3))
    const lossOf = (x: Float32Array) => stage.forward(x, n, { cache: false }).reduce((s, v, i) => s + v * r[i]!, 0)
    stage.forward(input, n)
    const dx = stage.backward(r, { update: false })
    const eps = 1e-2
    const near = (numeric: number, analytic: number) =>
      expect(Math.abs(numeric - analytic)).toBeLessThan(2e-3 + 2e-2 * Math.abs(analytic))

    stage.params().forEach((p, k) => {
      const g = stage.grads()[k]!
      for (let i = 0; i < p.length; i++) {
        const keep = p[i]!
        p[i] = keep + eps
        const up = lossOf(input)
        p[i] = keep - eps
        const down = lossOf(input)
        p[i] = keep
        near((up - down) / (2 * eps), g[i]!)
      }
    })
    for (let i = 0; i < input.length; i++) {
      const x = Float32Array.from(input)
      x[i] = input[i]! + eps
      const up = lossOf(x)
      x[i] = input[i]! - eps
      near((up - lossOf(x)) / (2 * eps), dx[i]!)
    }
  }

  test('a whole tiny network matches finite differences', () => {
    checkStage(createStage({ stage: 0, stages: 1, seed: 3, hidden: 4 }), 3)
  })

  test('a middle stage of tanh layers matches finite differences', () => {
    checkStage(createStage({ stage: 1, stages: 3, seed: 3, hidden: 5 }), 2)
  })

  test('MSE gradient is the derivative of the mean squared error', () => {
    const s = createStage({ stage: 0, stages: 1, seed: 1 })
    const { loss, grad } = s.lossAndGrad(Float32Array.of(1, 2), Float32Array.of(0, 4))
    expect(loss).toBeCloseTo(2.5)
    expect(Array.from(grad)).toEqual([1, -2])
  })

  test('backward pairs with forwards in order when micro-batches overlap', () => {
    const s = createStage({ stage: 1, stages: 3, seed: 2, hidden: 6 })
    const a = Float32Array.from({ length: 12 }, (_, i) => i / 12)
    const b = Float32Array.from({ length: 6 }, (_, i) => -i / 6)
    const ga = Float32Array.from({ length: 12 }, () => 0.5)
    const gb = Float32Array.from({ length: 6 }, () => -0.25)
    s.forward(a, 2)
    const alone = s.backward(ga, { update: false })
    s.forward(a, 2)
    s.forward(b, 1)
    expect(s.backward(ga, { update: false })).toEqual(alone)
    expect(s.backward(gb, { update: false })).toHaveLength(6)
    expect(() => s.backward(gb)).toThrow('without a pending forward')
  })

  test('inputs of the wrong size are refused', () => {
    const s = createStage({ stage: 0, stages: 2, seed: 1 })
    expect(() => s.forward(new Float32Array(7), 1)).toThrow(RangeError)
    expect(() => createStage({ stage: 2, stages: 2, seed: 1 })).toThrow(RangeError)
    expect(() => createStage({ stage: 0, stages: 1, seed: 1, lr: 0 })).toThrow(RangeError)
  })
})

describe('checkpoints', () => {
  test('a round trip gives identical outputs, even into a stage of another seed', () => {
    const opts = { stage: 1, stages: 3, seed: 11 }
    const trained = createStage(opts)
    for (let step = 0; step < 5; step++) {
      trained.forward(new Float32Array(32 * 32).fill(step / 10), 32)
      trained.backward(new Float32Array(32 * 32).fill(0.1))
    }
    const bytes = trained.serialize()
    const restored = createStage({ ...opts, seed: 99 })
    const probe = Float32Array.from({ length: 4 * 32 }, (_, i) => Math.sin(i))
    expect(restored.forward(probe, 4, { cache: false })).not.toEqual(trained.forward(probe, 4, { cache: false }))
    restored.load(bytes)
    expect(restored.forward(probe, 4, { cache: false })).toEqual(trained.forward(probe, 4, { cache: false }))
    expect(restored.serialize()).toEqual(bytes)
  })

  test('a checkpoint of another layout or a truncated one is refused', () => {
    const bytes = createStage({ stage: 0, stages: 3, seed: 1 }).serialize()
    expect(() => createStage({ stage: 1, stages: 3, seed: 1 }).load(bytes)).toThrow()
    expect(() => createStage({ stage: 0, stages: 3, seed: 1, hidden: 16 }).load(bytes)).toThrow()
    expect(() => createStage({ stage: 0, stages: 3, seed: 1 }).load(bytes.subarray(0, bytes.length - 4))).toThrow()
    const offset = new Uint8Array(bytes.length + 3)
    offset.set(bytes, 3)
    expect(() => createStage({ stage: 0, stages: 3, seed: 1 }).load(offset.subarray(3))).not.toThrow()
  })
})
