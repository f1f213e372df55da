// Summarises a `bun --cpu-prof` profile: where the samples land, by function (self and inclusive)
// and by file, so "what dominates the heartbeat" is one command instead of a devtools session.
//   bun run bench/profile.ts bench/results/heartbeat.cpuprofile [--top 30]
import { readFileSync } from 'node:fs'
import { ROOT } from './lib/proc'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  hitCount?: number
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileRow {
  name: string
  selfPct: number
  totalPct: number
}

const shortUrl = (url: string) => url.replace(/^file:\/\//, '').replace(ROOT + '/', '').replace(/^.*node_modules\//, '')
const label = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${shortUrl(f.url) || '(native)'}${f.url ? ':' + (f.lineNumber + 1) : ''}`

export function summarize(path: string): { functions: ProfileRow[]; files: ProfileRow[]; samples: number } {
  const p = JSON.parse(readFileSync(path, 'utf8')) as Profile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<number, number>()
  for (const s of p.samples) self.set(s, (self.get(s) ?? 0) + 1)
  // Idle and GC samples are not the request path: leave them out of the denominator.
  const idle = new Set(p.nodes.filter((n) => ['(idle)', '(program)', '(root)'].includes(n.callFrame.functionName)).map((n) => n.id))
  let total = 0
  const fnSelf = new Map<string, number>()
  const fnTotal = new Map<string, number>()
  const fileSelf = new Map<string, number>()
  const fileTotal = new Map<string, number>()
  for (const [id, hits] of self) {
    if (idle.has(id)) continue
    total += hits
    const n = byId.get(id)!
    fnSelf.set(label(n.callFrame), (fnSelf.get(label(n.callFrame)) ?? 0) + hits)
    const file = shortUrl(n.callFrame.url) || '(native)'
    fileSelf.set(file, (fileSelf.get(file) ?? 0) + hits)
    // Inclusive: count each function and file once per sample, however deep the recursion.
    const seenFn = new Set<string>()
    const seenFile = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame
      const l = label(f)
      if (!seenFn.has(l)) (seenFn.add(l), fnTotal.set(l, (fnTotal.get(l) ?? 0) + hits))
      const fl = shortUrl(f.url) || '(native)'
      if (!seenFile.has(fl)) (seenFile.add(fl), fileTotal.set(fl, (fileTotal.get(fl) ?? 0) + hits))
    }
  }
  const rows = (s: Map<string, number>, t: Map<string, number>) =>
    [...t.keys()].map((name) => ({ name, selfPct: (100 * (s.get(name) ?? 0)) / total, totalPct: (100 * t.get(name)!) / total }))
  return { functions: rows(fnSelf, fnTotal), files: rows(fileSelf, fileTotal), samples: total }
}

if (import.meta.main) {
  const path = process.argv[2]
  if (!path) throw new Error('usage: bun run bench/profile.ts FILE.cpuprofile [--top N]')
  const top = Number(process.argv[process.argv.indexOf('--top') + 1] ?? 25) || 25
  const { functions, files, samples } = summarize(path)
  const print = (title: string, rows: ProfileRow[], key: 'selfPct' | 'totalPct') => {
    console.log(`\n${title}`)
    for (const r of [...rows].sort((a, b) => b[key] - a[key]).slice(0, top)) {
      console.log(`${r.selfPct.toFixed(1).padStart(6)}% self ${r.totalPct.toFixed(1).padStart(6)}% total  ${r.name}`)
    }
  }
  console.log(`${samples} busy samples (idle excluded)`)
  print('by function, self time', functions, 'selfPct')
  print('by function, inclusive time', functions, 'totalPct')
  print('by file, inclusive time', files, 'totalPct')
}
