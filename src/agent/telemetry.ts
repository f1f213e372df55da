// Live hardware telemetry for heartbeats. The leader refreshes per-GPU free VRAM from it and
// schedules on it, so a reading is best effort and never fails a heartbeat: every probe here
// degrades to "no GPUs" or a fallback number instead of throwing.
import { readFileSync } from 'node:fs'
import os from 'node:os'

export interface Gpu {
  index: number
  name: string
  memory_total_mb: number
  memory_free_mb: number
  utilization_pct: number
  /** Absent where the driver does not report it ('[N/A]', '[Not Supported]'). */
  temperature_c?: number
}

export interface Telemetry {
  gpus: Gpu[]
  cpu_pct: number
  mem_free_mb: number
  mem_total_mb: number
}

export type Runner = (cmd: string[]) => Promise<{ code: number; stdout: string }>

export const NVIDIA_SMI_ARGS: readonly string[] = [
  '--query-gpu=index,name,memory.total,memory.free,utilization.gpu,temperature.gpu',
  '--format=csv,noheader,nounits',
]

// A wedged driver can make nvidia-smi hang for minutes; a heartbeat must not wait on it.
export const NVIDIA_SMI_TIMEOUT_MS = 3000

// Leading number of a field; '[N/A]', '[Not Supported]' and the like give NaN. A unit suffix
// ('81920 MiB', '3 %') is tolerated in case the nounits flag is ignored by an old driver.
function numberOf(field: string): number {
  const m = /^-?\d+(?:\.\d+)?/.exec(field.trim())
  return m ? Number(m[0]) : NaN
}

/** The columns after the name: memory.total, memory.free, utilization.gpu, temperature.gpu. */
const TAIL_FIELDS = 4
// The wire schema's bounds (src/wire/fellow.ts); a reading outside them is a driver glitch, not a
// temperature, and would get the whole heartbeat refused.
const TEMP_MIN_C = -100
const TEMP_MAX_C = 300

// Splits at the first comma and the last TAIL_FIELDS, so a name containing commas survives intact.
function parseLine(line: string): Gpu | null {
  const first = line.indexOf(',')
  if (first < 0) return null
  const cuts: number[] = []
  let end = line.length
  for (let k = 0; k < TAIL_FIELDS; k++) {
    const at = line.lastIndexOf(',', end - 1)
    if (at <= first) return null
    cuts.unshift(at)
    end = at
  }
  const fields = cuts.map((at, k) => line.slice(at + 1, cuts[k + 1] ?? line.length))
  const indexField = line.slice(0, first).trim()
  if (!/^\d+$/.test(indexField)) return null
  const name = line.slice(first + 1, cuts[0]).trim()
  const [total, free, util, temp] = fields.map(numberOf) as [number, number, number, number]
  // Without memory figures the leader cannot place work on the GPU, so it is not reported.
  if (!Number.isFinite(total) || !Number.isFinite(free) || total <= 0 || free < 0) return null
  return {
    index: Number(indexField),
    name: name || 'unknown',
    memory_total_mb: Math.round(total),
    memory_free_mb: Math.round(Math.min(free, total)),
    utilization_pct: Number.isFinite(util) ? Math.min(100, Math.max(0, Math.round(util))) : 0,
    // Unknown is left out rather than sent as 0: a page would show a cold GPU that is not.
    ...(Number.isFinite(temp) && temp >= TEMP_MIN_C && temp <= TEMP_MAX_C ? { temperature_c: Math.round(temp) } : {}),
  }
}

export function parseNvidiaSmi(csv: string): Gpu[] {
  const gpus: Gpu[] = []
  const seen = new Set<number>()
  for (const raw of csv.split(/\r?\n/)) {
    const line = raw.trim()
    if (!line) continue
    const gpu = parseLine(line)
    if (!gpu || seen.has(gpu.index)) continue
    seen.add(gpu.index)
    gpus.push(gpu)
  }
  return gpus
}

async function spawnRunner(cmd: string[]): Promise<{ code: number; stdout: string }> {
  const [bin] = cmd
  // A machine without NVIDIA drivers is normal, not an error worth an exception per heartbeat.
  if (!bin || !Bun.which(bin)) return { code: 127, stdout: '' }
  const proc = Bun.spawn(cmd, {
    stdout: 'pipe',
    stderr: 'ignore',
    stdin: 'ignore',
    timeout: NVIDIA_SMI_TIMEOUT_MS,
    killSignal: 'SIGKILL',
  })
  const stdout = new Response(proc.stdout).text().catch(() => '')
  const code = await proc.exited
  // After a kill the pipe may stay open (a wrapper script's child holds it); do not wait on it.
  return { code, stdout: code === 0 ? await stdout : '' }
}

// Bounds any runner, injected ones included, so a hung probe cannot stall the heartbeat loop.
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('telemetry probe timed out')), ms)
  })
  return Promise.race([p, expired]).finally(() => clearTimeout(timer))
}

export async function readGpus(run: Runner = spawnRunner): Promise<Gpu[]> {
  try {
    const { code, stdout } = await withTimeout(run(['nvidia-smi', ...NVIDIA_SMI_ARGS]), NVIDIA_SMI_TIMEOUT_MS + 500)
    return code === 0 ? parseNvidiaSmi(stdout) : []
  } catch {
    return []
  }
}

export interface CpuSample {
  busy: number
  total: number
}

// First line of /proc/stat: "cpu user nice system idle iowait irq softirq steal guest ...".
// guest and guest_nice are already counted in user and nice, so only the first eight count.
export function parseProcStat(text: string): CpuSample | null {
  const line = text.split('\n').find((l) => l.startsWith('cpu '))
  if (!line) return null
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number)
  if (f.length < 4 || f.some((v) => !Number.isFinite(v))) return null
  const total = f.reduce((a, b) => a + b, 0)
  const idle = (f[3] ?? 0) + (f[4] ?? 0)
  return { busy: total - idle, total }
}

export function cpuPercent(prev: CpuSample, cur: CpuSample): number | null {
  const dTotal = cur.total - prev.total
  const dBusy = cur.busy - prev.busy
  // Two reads within one clock tick (or a counter reset) carry no information.
  if (dTotal <= 0 || dBusy < 0) return null
  return clampPct((100 * dBusy) / dTotal)
}

function clampPct(v: number): number {
  return Math.round(Math.min(100, Math.max(0, v)) * 10) / 10
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return null
  }
}

// Off Linux there is no /proc/stat; os.cpus() exposes the same counters per core.
function sampleCpu(): CpuSample | null {
  const text = readText('/proc/stat')
  const fromProc = text ? parseProcStat(text) : null
  if (fromProc) return fromProc
  let busy = 0
  let total = 0
  for (const c of os.cpus()) {
    const t = c.times
    const all = t.user + t.nice + t.sys + t.idle + t.irq
    total += all
    busy += all - t.idle
  }
  return total > 0 ? { busy, total } : null
}

// Deltas need a previous reading; the heartbeat interval between calls is the window.
let previous: CpuSample | null = null
let lastPct = 0

export function readCpuPct(): number {
  try {
    const cur = sampleCpu()
    if (!cur) return lastPct
    if (previous) {
      const pct = cpuPercent(previous, cur)
      if (pct !== null) lastPct = pct
    } else {
      const cores = os.cpus().length || 1
      const load = os.loadavg()[0] ?? 0
      // Without a previous sample, the 1-minute load average approximates recent use; where
      // it is always 0 (Windows), the average since boot is the best figure available.
      lastPct = load > 0 ? clampPct((100 * load) / cores) : clampPct((100 * cur.busy) / cur.total)
    }
    previous = cur
    return lastPct
  } catch {
    return lastPct
  }
}

// MemAvailable counts reclaimable page cache, which is what a new job can actually get;
// MemFree (os.freemem on Linux) understates it badly on a busy box.
export function parseMemAvailableMb(text: string): number | null {
  const m = /^MemAvailable:\s+(\d+)\s*kB/m.exec(text)
  return m ? Math.floor(Number(m[1]) / 1024) : null
}

export function readMemFreeMb(): number {
  const text = readText('/proc/meminfo')
  const available = text ? parseMemAvailableMb(text) : null
  return available ?? Math.floor(os.freemem() / (1024 * 1024))
}

// Forgets the CPU baseline; for tests, and for a fellow that re-registers after a long gap.
export function resetCpuBaseline(): void {
  previous = null
  lastPct = 0
}

export async function readTelemetry(run?: Runner): Promise<Telemetry> {
  const gpus = await readGpus(run)
  let mem = 0
  try {
    mem = readMemFreeMb()
  } catch {
    // keep 0: an unknown figure must not fail the heartbeat that carries it
  }
  return { gpus, cpu_pct: readCpuPct(), mem_free_mb: mem, mem_total_mb: Math.floor(os.totalmem() / (1024 * 1024)) }
}
