import { beforeEach, describe, expect, test } from 'bun:test'
import {
  NVIDIA_SMI_ARGS,
  cpuPercent,
  parseMemAvailableMb,
  parseNvidiaSmi,
  parseProcStat,
  readTelemetry,
  resetCpuBaseline,
  type Runner,
  type Telemetry,
} from '../../src/agent/telemetry'

// Outputs of `nvidia-smi --query-gpu=index,name,memory.total,memory.free,utilization.gpu,temperature.gpu
// --format=csv,noheader,nounits` as printed on real machines.
const ONE_GPU = '0, NVIDIA GeForce RTX 3090, 24576, 23811, 7, 41\n'

const EIGHT_GPUS = `0, NVIDIA A100-SXM4-80GB, 81920, 81038, 0, 33
1, NVIDIA A100-SXM4-80GB, 81920, 3124, 100, 71
2, NVIDIA A100-SXM4-80GB, 81920, 81038, 0, 34
3, NVIDIA A100-SXM4-80GB, 81920, 40211, 57, 58
4, NVIDIA A100-SXM4-80GB, 81920, 81038, 0, 32
5, NVIDIA A100-SXM4-80GB, 81920, 81038, 0, 33
6, NVIDIA A100-SXM4-80GB, 81920, 12, 99, 80
7, NVIDIA A100-SXM4-80GB, 81920, 81038, 1, 35

`

// MIG mode reports no utilization; a fallen-off-the-bus GPU reports nothing at all; some boards
// (passively cooled, or behind a vGPU) report no temperature.
const NA_FIELDS = `0, NVIDIA A100-SXM4-40GB, 40960, 40367, [N/A], 36
1, NVIDIA H100 80GB HBM3, [N/A], [N/A], [N/A], [N/A]
2, Quadro K2200, 4096, 4043, [Not Supported], [Not Supported]
3, GRID T4-16Q, 16384, 15000, 5, [N/A]
`

const GARBAGE = `Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU
0, Tesla T4, 15360, 15098, 0, 40
No devices were found
index, name, memory.total [MiB], memory.free [MiB], utilization.gpu [%], temperature.gpu
x, broken, 1, 1, 1, 1
2, Tesla T4, 15360, 15098, 0
1,Tesla T4,15360,14000,12,52\r
`

const DRIVER_FAILED =
  "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n\n"

describe('parseNvidiaSmi', () => {
  test('the query asks for the six fields in the order the parser reads them', () => {
    expect(NVIDIA_SMI_ARGS).toEqual([
      '--query-gpu=index,name,memory.total,memory.free,utilization.gpu,temperature.gpu',
      '--format=csv,noheader,nounits',
    ])
  })

  test('one GPU becomes one heartbeat entry', () => {
    expect(parseNvidiaSmi(ONE_GPU)).toEqual([
      { index: 0, name: 'NVIDIA GeForce RTX 3090', memory_total_mb: 24576, memory_free_mb: 23811, utilization_pct: 7, temperature_c: 41 },
    ])
  })

  test('eight GPUs keep their order and figures, blank trailing lines ignored', () => {
    const gpus = parseNvidiaSmi(EIGHT_GPUS)
    expect(gpus.map((g) => g.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    expect(gpus.every((g) => g.name === 'NVIDIA A100-SXM4-80GB' && g.memory_total_mb === 81920)).toBe(true)
    expect(gpus[1]).toMatchObject({ memory_free_mb: 3124, utilization_pct: 100, temperature_c: 71 })
    expect(gpus[6]).toMatchObject({ memory_free_mb: 12, utilization_pct: 99, temperature_c: 80 })
    expect(gpus.map((g) => g.temperature_c)).toEqual([33, 71, 34, 58, 32, 33, 80, 35])
  })

  test('unknown utilization reads as 0, an unknown temperature is left out, and a GPU with unknown memory is left out', () => {
    const gpus = parseNvidiaSmi(NA_FIELDS)
    expect(gpus).toEqual([
      { index: 0, name: 'NVIDIA A100-SXM4-40GB', memory_total_mb: 40960, memory_free_mb: 40367, utilization_pct: 0, temperature_c: 36 },
      { index: 2, name: 'Quadro K2200', memory_total_mb: 4096, memory_free_mb: 4043, utilization_pct: 0 },
      { index: 3, name: 'GRID T4-16Q', memory_total_mb: 16384, memory_free_mb: 15000, utilization_pct: 5 },
    ])
    // Left out, not undefined: the heartbeat's JSON carries no temperature_c key at all.
    expect(gpus.map((g) => 'temperature_c' in g)).toEqual([true, false, false])
  })

  test('noise lines, headers and CRLF are skipped without throwing', () => {
    const gpus = parseNvidiaSmi(GARBAGE)
    // A line of the old five-column format has too few fields to read safely: skipped.
    expect(gpus.map((g) => [g.index, g.name, g.memory_free_mb, g.utilization_pct, g.temperature_c])).toEqual([
      [0, 'Tesla T4', 15098, 0, 40],
      [1, 'Tesla T4', 14000, 12, 52],
    ])
    expect(parseNvidiaSmi(DRIVER_FAILED)).toEqual([])
  })

  test('empty output means no GPUs', () => {
    expect(parseNvidiaSmi('')).toEqual([])
    expect(parseNvidiaSmi('\n\n  \n')).toEqual([])
  })

  test('a name with commas survives, extra columns are folded into it', () => {
    const [gpu] = parseNvidiaSmi('3, Acme, Inc. Accelerator, 8192, 1024, 42, 67\n')
    expect(gpu).toEqual({ index: 3, name: 'Acme, Inc. Accelerator', memory_total_mb: 8192, memory_free_mb: 1024, utilization_pct: 42, temperature_c: 67 })
    const [na] = parseNvidiaSmi('4, Acme, Inc., Model 2, 8192, 1024, 42, [N/A]\n')
    expect(na).toEqual({ index: 4, name: 'Acme, Inc., Model 2', memory_total_mb: 8192, memory_free_mb: 1024, utilization_pct: 42 })
  })

  test('unit suffixes and out-of-range figures are normalised', () => {
    const [gpu] = parseNvidiaSmi('0, X, 1000 MiB, 1200 MiB, 140 %, 45 C')
    expect(gpu).toMatchObject({ memory_total_mb: 1000, memory_free_mb: 1000, utilization_pct: 100, temperature_c: 45 })
    // A reading the leader's schema would refuse (and the heartbeat with it) is dropped instead.
    expect(parseNvidiaSmi('0, X, 1000, 500, 5, 4000')[0]).not.toHaveProperty('temperature_c')
    expect(parseNvidiaSmi('0, X, 1000, 500, 5, 61.6')[0]).toMatchObject({ temperature_c: 62 })
  })

  test('a repeated index is reported once', () => {
    expect(parseNvidiaSmi(ONE_GPU + ONE_GPU)).toHaveLength(1)
  })
})

describe('cpu and memory readings', () => {
  test('/proc/stat busy share is computed from deltas, guest time not counted twice', () => {
    const a = parseProcStat('cpu  100 0 100 800 0 0 0 0 50 0\ncpu0 1 2 3 4\n')
    const b = parseProcStat('cpu  200 0 150 1050 0 0 0 0 90 0\n')
    expect(a).toEqual({ busy: 200, total: 1000 })
    expect(cpuPercent(a!, b!)).toBe(37.5)
  })

  test('no elapsed ticks gives no reading instead of NaN', () => {
    const a = { busy: 10, total: 100 }
    expect(cpuPercent(a, a)).toBeNull()
    expect(parseProcStat('garbage')).toBeNull()
  })

  test('MemAvailable is preferred and converted to MiB', () => {
    const text = 'MemTotal:       16305152 kB\nMemFree:          512000 kB\nMemAvailable:    8388608 kB\n'
    expect(parseMemAvailableMb(text)).toBe(8192)
    expect(parseMemAvailableMb('MemTotal: 1 kB\n')).toBeNull()
  })
})

describe('readTelemetry', () => {
  beforeEach(() => resetCpuBaseline())

  function expectSane(t: Telemetry): void {
    expect(t.cpu_pct).toBeGreaterThanOrEqual(0)
    expect(t.cpu_pct).toBeLessThanOrEqual(100)
    expect(Number.isFinite(t.mem_free_mb)).toBe(true)
    expect(t.mem_free_mb).toBeGreaterThan(0)
  }

  test('a missing nvidia-smi yields no GPUs and sane cpu and memory figures', async () => {
    const enoent: Runner = async () => {
      throw Object.assign(new Error('spawn nvidia-smi ENOENT'), { code: 'ENOENT' })
    }
    const first = await readTelemetry(enoent)
    expect(first.gpus).toEqual([])
    expectSane(first)
    const second = await readTelemetry(enoent)
    expectSane(second)
  })

  test('a failing nvidia-smi yields no GPUs even if it printed something', async () => {
    const failing: Runner = async () => ({ code: 9, stdout: ONE_GPU })
    const t = await readTelemetry(failing)
    expect(t.gpus).toEqual([])
    expectSane(t)
  })

  test('the runner is asked for the documented query and its output is parsed', async () => {
    const calls: string[][] = []
    const ok: Runner = async (cmd) => {
      calls.push(cmd)
      return { code: 0, stdout: EIGHT_GPUS }
    }
    const t = await readTelemetry(ok)
    expect(calls).toEqual([['nvidia-smi', ...NVIDIA_SMI_ARGS]])
    expect(t.gpus).toHaveLength(8)
    expect(t.gpus[0]).toMatchObject({ index: 0, temperature_c: 33 })
  })

  test('the real probe on this machine never throws', async () => {
    const t = await readTelemetry()
    expect(Array.isArray(t.gpus)).toBe(true)
    expectSane(t)
  })
})
