// The table a run prints and the machine it ran on.
import { readFileSync } from 'node:fs'
import { availableParallelism, loadavg, release } from 'node:os'

export interface Row {
  scenario: string
  leader: string
  floor: string
  /** Leader over floor, oriented so that 1.0 means "as good as the floor" (higher is better). */
  ratio: number | null
  target: string
  /** null: no target for this figure, it is reported for the record. */
  met: boolean | null
}

export const fmt = {
  int: (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en') : 'n/a'),
  ms: (x: number) => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms` : 'n/a'),
  mb: (bytes: number) => (Number.isFinite(bytes) ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : 'n/a'),
  ratio: (x: number | null) => (x === null || !Number.isFinite(x) ? '—' : `${x.toFixed(2)}x`),
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

export function table(rows: Row[]): string {
  const head = ['scenario', 'leader', 'floor', 'ratio', 'target', 'met?']
  const cells = rows.map((r) => [r.scenario, r.leader, r.floor, fmt.ratio(r.ratio), r.target, r.met === null ? '—' : r.met ? 'yes' : 'NO'])
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const line = (c: string[]) => '| ' + c.map((v, i) => v.padEnd(widths[i]!)).join(' | ') + ' |'
  return [line(head), '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|', ...cells.map(line)].join('\n')
}

export interface Machine {
  cpus: number
  cpuModel: string
  memTotalGiB: number
  bun: string
  kernel: string
  wrk: string | null
  loadAvgAtStart: number[]
}

export function machine(wrk: string | null): Machine {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8')
  const meminfo = readFileSync('/proc/meminfo', 'utf8')
  let wrkVersion: string | null = null
  if (wrk) {
    const r = Bun.spawnSync([wrk, '--version'])
    wrkVersion = (r.stdout.toString() + r.stderr.toString()).split('\n')[0]!.trim() || 'wrk'
  }
  return {
    cpus: availableParallelism(),
    cpuModel: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    memTotalGiB: Math.round((Number(/MemTotal:\s+(\d+)/.exec(meminfo)?.[1] ?? 0) / 1024 / 1024) * 10) / 10,
    bun: Bun.version,
    kernel: release(),
    wrk: wrkVersion,
    loadAvgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
  }
}
