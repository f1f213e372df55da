// The built-in training workload: a small real MLP split into pipeline stages. It exists so a
// pool can be exercised end to end (activations forward, gradients back, loss going down)
// without any ML framework on the fellow. Everything derives from the job's seed, so fellows
// that never talk to each other agree on the data, the layer shapes and the initial weights.

export const INPUT_DIM = 8
export const OUTPUT_DIM = 1

export interface StageOptions {
  stage: number
  stages: number
  seed: number
  hidden?: number
  lr?: number
  batch?: number
}

export interface Batch {
  x: Float32Array
  y: Float32Array
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// Derives independent streams (per step, per layer) from one seed, so any stage can recreate
// any of them without replaying the others.
function mix(seed: number, salt: number): number {
  let h = (seed ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

// Target: y = sin(w . x), w a fixed random direction scaled so w . x spans about one period.
function projection(seed: number): number[] {
  const rnd = mulberry32(mix(seed, 0x7a11))
  const w = Array.from({ length: INPUT_DIM }, () => rnd() * 2 - 1)
  const norm = Math.hypot(...w) || 1
  return w.map((v) => (2.6 * v) / norm)
}

export function makeBatch(seed: number, step: number, batch: number): Batch {
  const w = projection(seed)
  const rnd = mulberry32(mix(seed, step))
  const x = new Float32Array(batch * INPUT_DIM)
  const y = new Float32Array(batch * OUTPUT_DIM)
  for (let b = 0; b < batch; b++) {
    let dot = 0
    for (let i = 0; i < INPUT_DIM; i++) {
      const v = rnd() * 2 - 1
      x[b * INPUT_DIM + i] = v
      dot += v * w[i]!
    }
    y[b] = Math.sin(dot)
  }
  return { x, y }
}

// Total depth is independent of how many stages there are (up to 3), so 1-, 2- and 3-stage
// runs of the same seed train the very same network and can be compared.
export function layerDims(stages: number, hidden: number): number[] {
  return [INPUT_DIM, ...new Array<number>(Math.max(stages, 3) - 1).fill(hidden), OUTPUT_DIM]
}

export function stageLayers(stage: number, stages: number): [number, number] {
  const layers = Math.max(stages, 3)
  return [Math.floor((stage * layers) / stages), Math.floor(((stage + 1) * layers) / stages)]
}

// One tensor with its gradient and Adam moments. Adam rather than plain SGD: SGD needs
// per-seed learning-rate tuning to learn within a few hundred steps.
class Param {
  readonly g: Float32Array
  private readonly m: Float32Array
  private readonly s: Float32Array
  constructor(readonly v: Float32Array) {
    this.g = new Float32Array(v.length)
    this.m = new Float32Array(v.length)
    this.s = new Float32Array(v.length)
  }

  adam(lr: number, t: number): void {
    const { v, g, m, s } = this
    const c1 = 1 - 0.9 ** t
    const c2 = 1 - 0.999 ** t
    for (let i = 0; i < v.length; i++) {
      const gi = g[i]!
      const mi = 0.9 * m[i]! + 0.1 * gi
      const si = 0.999 * s[i]! + 0.001 * gi * gi
      m[i] = mi
      s[i] = si
      v[i] = v[i]! - (lr * (mi / c1)) / (Math.sqrt(si / c2) + 1e-8)
    }
  }
}

class Dense {
  readonly w: Param
  readonly b: Param

  constructor(readonly nIn: number, readonly nOut: number, readonly tanh: boolean, seed: number) {
    const rnd = mulberry32(seed)
    const limit = Math.sqrt(6 / (nIn + nOut)) // Glorot: keeps tanh out of saturation at start
    this.w = new Param(new Float32Array(nIn * nOut).map(() => (rnd() * 2 - 1) * limit))
    this.b = new Param(new Float32Array(nOut))
  }

  // Row-major weights: w[o * nIn + i].
  forward(x: Float32Array, n: number): Float32Array {
    const { nIn, nOut } = this
    const w = this.w.v
    const b = this.b.v
    const out = new Float32Array(n * nOut)
    for (let r = 0; r < n; r++) {
      for (let o = 0; o < nOut; o++) {
        let z = b[o]!
        for (let i = 0; i < nIn; i++) z += x[r * nIn + i]! * w[o * nIn + i]!
        out[r * nOut + o] = this.tanh ? Math.tanh(z) : z
      }
    }
    return out
  }

  // Overwrites (does not accumulate) the gradients of w and b, and returns dL/dx.
  backward(x: Float32Array, y: Float32Array, dy: Float32Array, n: number): Float32Array {
    const { nIn, nOut } = this
    const w = this.w.v
    const gw = this.w.g.fill(0)
    const gb = this.b.g.fill(0)
    const dz = this.tanh ? dy.map((g, k) => g * (1 - y[k]! * y[k]!)) : dy
    const dx = new Float32Array(n * nIn)
    for (let r = 0; r < n; r++) {
      for (let o = 0; o < nOut; o++) {
        const g = dz[r * nOut + o]!
        if (g === 0) continue
        gb[o] = gb[o]! + g
        for (let i = 0; i < nIn; i++) {
          gw[o * nIn + i] = gw[o * nIn + i]! + g * x[r * nIn + i]!
          dx[r * nIn + i] = dx[r * nIn + i]! + g * w[o * nIn + i]!
        }
      }
    }
    return dx
  }
}

const MAGIC = 0x4d4c5031 // 'MLP1'
const isInt = (v: number, min: number) => Number.isInteger(v) && v >= min

// One fellow's slice of the network. Activations flow forward(), gradients flow backward();
// the last stage turns its output into a loss and the first gradient with lossAndGrad().
export class Stage {
  readonly stage: number
  readonly stages: number
  readonly isFirst: boolean
  readonly isLast: boolean
  readonly inDim: number
  readonly outDim: number
  readonly batch: number
  private readonly seed: number
  private readonly lr: number
  private readonly layers: Dense[] = []
  // Activations per in-flight micro-batch, oldest first: a pipeline may run several forwards
  // before the matching backwards arrive, and they arrive in the same order.
  private readonly pending: { acts: Float32Array[]; n: number }[] = []
  private t = 0

  constructor(opts: StageOptions) {
    const { stage, stages } = opts
    const hidden = opts.hidden ?? 32
    const batch = opts.batch ?? 32
    const lr = opts.lr ?? 0.01
    // A bad job config must fail at START, not as NaN losses a thousand steps later.
    if (!isInt(stages, 1) || !isInt(stage, 0) || stage >= stages) throw new RangeError('stage out of range')
    if (!isInt(hidden, 1) || !isInt(batch, 1)) throw new RangeError('hidden and batch must be integers >= 1')
    if (!(lr > 0 && Number.isFinite(lr))) throw new RangeError('lr must be a positive number')
    this.stage = stage
    this.stages = stages
    this.seed = opts.seed >>> 0
    this.lr = lr
    this.batch = batch
    const dims = layerDims(stages, hidden)
    const [from, to] = stageLayers(stage, stages)
    const last = dims.length - 2
    for (let l = from; l < to; l++) {
      this.layers.push(new Dense(dims[l]!, dims[l + 1]!, l !== last, mix(this.seed, 0x1000 + l)))
    }
    this.isFirst = from === 0
    this.isLast = to === last + 1
    this.inDim = dims[from]!
    this.outDim = dims[to]!
  }

  nextBatch(step: number): Batch {
    return makeBatch(this.seed, step, this.batch)
  }

  targetsFor(step: number): Float32Array {
    return makeBatch(this.seed, step, this.batch).y
  }

  // cache: false evaluates without queueing activations for a backward that will never come.
  forward(input: Float32Array, batchSize: number, opts: { cache?: boolean } = {}): Float32Array {
    if (input.length !== batchSize * this.inDim) {
      throw new RangeError(`stage ${this.stage} expects ${batchSize}x${this.inDim} inputs, got ${input.length}`)
    }
    const acts = [input]
    let a = input
    for (const layer of this.layers) {
      a = layer.forward(a, batchSize)
      acts.push(a)
    }
    if (opts.cache !== false) this.pending.push({ acts, n: batchSize })
    return a
  }

  backward(gradOut: Float32Array, opts: { update?: boolean } = {}): Float32Array {
    const cached = this.pending.shift()
    if (!cached) throw new Error(`stage ${this.stage}: backward without a pending forward`)
    const { acts, n } = cached
    if (gradOut.length !== n * this.outDim) {
      throw new RangeError(`stage ${this.stage} expects ${n}x${this.outDim} gradients, got ${gradOut.length}`)
    }
    let g = gradOut
    for (let l = this.layers.length - 1; l >= 0; l--) {
      g = this.layers[l]!.backward(acts[l]!, acts[l + 1]!, g, n)
    }
    if (opts.update !== false) {
      this.t++
      for (const p of this.layers.flatMap((l) => [l.w, l.b])) p.adam(this.lr, this.t)
    }
    return g
  }

  // After a resend or a reconfigure, old forwards never get their backward: forget them.
  dropPending(): void {
    this.pending.length = 0
  }

  lossAndGrad(output: Float32Array, y: Float32Array): { loss: number; grad: Float32Array } {
    if (output.length !== y.length) throw new RangeError('output and targets differ in length')
    const n = output.length || 1
    const grad = new Float32Array(output.length)
    let loss = 0
    for (let i = 0; i < output.length; i++) {
      const d = output[i]! - y[i]!
      loss += d * d
      grad[i] = (2 * d) / n
    }
    return { loss: loss / n, grad }
  }

  params(): Float32Array[] {
    return this.layers.flatMap((l) => [l.w.v, l.b.v])
  }

  grads(): Float32Array[] {
    return this.layers.flatMap((l) => [l.w.g, l.b.g])
  }

  // Layout (little-endian u32s, then float32s): magic, stage, stages, layer count, (nIn, nOut)
  // per layer, then each layer's weights and biases. Optimizer moments are not kept: a
  // checkpoint is the model, and a resumed run restarts Adam's warm-up.
  private header(): number[] {
    return [MAGIC, this.stage, this.stages, this.layers.length, ...this.layers.flatMap((l) => [l.nIn, l.nOut])]
  }

  serialize(): Uint8Array {
    const words = [...this.header(), ...this.params().flatMap((p) => Array.from(p))]
    const view = new DataView(new ArrayBuffer(4 * words.length))
    const h = this.header().length
    words.forEach((v, k) => (k < h ? view.setUint32(4 * k, v, true) : view.setFloat32(4 * k, v, true)))
    return new Uint8Array(view.buffer)
  }

  // Refuses a checkpoint of another shape rather than loading garbage into a running job.
  load(bytes: Uint8Array): void {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const head = this.header()
    const floats = this.params().reduce((s, p) => s + p.length, 0)
    if (bytes.byteLength !== 4 * (head.length + floats)) throw new Error('checkpoint size does not match this stage')
    if (head.some((v, k) => view.getUint32(4 * k, true) !== v)) throw new Error('checkpoint belongs to another layout')
    let off = 4 * head.length
    for (const p of this.params()) {
      for (let i = 0; i < p.length; i++, off += 4) p[i] = view.getFloat32(off, true)
    }
  }
}

export function createStage(opts: StageOptions): Stage {
  return new Stage(opts)
}
