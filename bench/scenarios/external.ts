// The benchmarks other engineers own, run as they are (bench/inference.ts, bench/admin-list.ts):
// each prints its own table with its own floor; this reads the figures back by column name, so
// a new column in their output does not break the runner.
import { join } from 'node:path'
import { ROOT } from '../lib/proc'

export interface MdTable {
  head: string[]
  rows: Record<string, string>[]
}

/** Markdown tables in a text, by their header row. */
export function tablesIn(text: string): MdTable[] {
  const out: MdTable[] = []
  let cur: MdTable | null = null
  for (const line of text.split('\n')) {
    const t = line.trim()
    if (!t.startsWith('|')) {
      cur = null
      continue
    }
    const cells = t.slice(1, t.endsWith('|') ? -1 : undefined).split('|').map((c) => c.trim())
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue
    if (!cur) {
      cur = { head: cells, rows: [] }
      out.push(cur)
    } else cur.rows.push(Object.fromEntries(cur.head.map((h, i) => [h, cells[i] ?? ''])))
  }
  return out
}

const num = (s: string | undefined) => Number((s ?? '').replace(/[,x\s]/g, ''))

async function runScript(file: string, args: string[], env: Record<string, string>): Promise<string> {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'bench', file), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`bench/${file} failed (${code}):\n${out.slice(-2000)}\n${err.slice(-2000)}`)
  return out
}

export interface InferenceResult {
  args: string[]
  /** The paced load per stream, from the script's own header line. */
  paceMs: number
  output: string
  floorFloodFps: number
  leaderFloodFps: number
  /** Added latency per frame (leader minus direct SSE), by load: p50 and p99 in ms. */
  added: Record<string, { p50: number; p99: number }>
}

export async function inference(args: string[]): Promise<InferenceResult> {
  const output = await runScript('inference.ts', args, {})
  const paceMs = Number(/a frame every (\d+) ms per stream/.exec(output)?.[1] ?? NaN)
  const t = tablesIn(output).find((x) => x.head.includes('frames/s') && x.head.includes('load'))
  if (!t) throw new Error(`bench/inference.ts printed no frames/s table:\n${output}`)
  const fps = (floor: boolean, load: string) => num(t.rows.find((r) => /floor/i.test(r.path ?? '') === floor && r.load === load)?.['frames/s'])
  const added: InferenceResult['added'] = {}
  for (const m of output.matchAll(/added latency per frame, (\w+): p50 (-?[\d.]+) ms.*?p99 (-?[\d.]+) ms/g)) added[m[1]!] = { p50: Number(m[2]), p99: Number(m[3]) }
  return { args, paceMs, output, floorFloodFps: fps(true, 'flood'), leaderFloodFps: fps(false, 'flood'), added }
}

export interface AdminListCase {
  name: string
  appP50: number
  appP99: number
  floorP50: number
  floorP99: number
}

export interface AdminListResult {
  output: string
  users: number
  runs: number
  cases: AdminListCase[]
  auditEntries: number
  auditCases: AdminListCase[]
}

export async function adminList(runs: number): Promise<AdminListResult> {
  const users = 100_000 // the script's deep-page cases assume 100,000 users
  const output = await runScript('admin-list.ts', [], { BENCH_USERS: String(users), BENCH_RUNS: String(runs) })
  const t = tablesIn(output).find((x) => x.head.includes('case') && x.head.includes('app p50 ms'))
  const a = tablesIn(output).find((x) => x.head.includes('audit case'))
  if (!t || !a) throw new Error(`bench/admin-list.ts printed no user and audit tables:\n${output}`)
  const cases = t.rows.map((r) => ({ name: r.case!, appP50: num(r['app p50 ms']), appP99: num(r['app p99 ms']), floorP50: num(r['floor p50 ms']), floorP99: num(r['floor p99 ms']) }))
  const auditCases = a.rows.map((r) => ({ name: r['audit case']!, appP50: num(r['app p50 ms']), appP99: num(r['app p99 ms']), floorP50: num(r['floor p50 ms']), floorP99: num(r['floor p99 ms']) }))
  return { output, users, runs, cases, auditEntries: 1_000_000, auditCases }
}
