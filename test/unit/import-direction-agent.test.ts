// The agent (src/agent/) is a client of a leader that ships in the same binary: what it loads must
// not bring the leader with it (Elysia, Drizzle, the database, the features), or `svc fellow` pays
// for a server it never runs and the agent's code grows hooks into the leader's internals. What the
// two share on the wire lives in src/wire/, in plain TypeBox. Walked from every file of src/agent/
// and src/wire/ over every static import and re-export, `import type` included (a type-only arrow
// into a feature is the first step of a value one), transitively. Imports are read with a regular
// expression, cross-checked against Bun's own scanner, as in import-direction.test.ts.
import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')

/** The shared leaf modules the agent may load, each with its reason. They import nothing of the leader. */
const SHARED: Record<string, string> = {
  'src/time.ts': "the clock the agent's timers run on",
  'src/log.ts': 'the logger and its levels',
  'src/version.ts': 'the version the agent reports (reads package.json)',
  'src/errors.ts': 'AppError, which the frame codec throws for a malformed body',
}
/** Packages the agent may load: the runtime's own modules and TypeBox (the wire schemas). */
const PACKAGES = (name: string) => name.startsWith('node:') || name === 'bun' || name === '@sinclair/typebox'
const mayLoad = (file: string) => file.startsWith('src/agent/') || file.startsWith('src/wire/') || file in SHARED || !file.startsWith('src/')

// `import x from`, `import { a, type B } from`, `import * as M from`, `import type ... from`,
// `export { a } from`, `export * from`, and side-effect `import '...'`, on one line or several.
const IMPORT_RE = /^[ \t]*(?:import|export)\s+(?:type\s+)?(?:[\w$*{},\s]+?\s+from\s+)?['"]([^'"\n]+)['"]/gm

const tsFiles = (dir: string): string[] =>
  readdirSync(join(ROOT, dir)).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(join(ROOT, p)).isDirectory()) return tsFiles(p)
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [p] : []
  })

/** A relative specifier as a repository path (null when no file is there); a bare one as its package name. */
function target(from: string, spec: string): { file: string } | { pkg: string } | null {
  if (!spec.startsWith('.')) {
    const parts = spec.split('/')
    return { pkg: spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]! }
  }
  const base = resolve(dirname(join(ROOT, from)), spec)
  for (const p of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) {
    if (existsSync(p) && statSync(p).isFile()) return { file: relative(ROOT, p) }
  }
  return null
}

interface Walk {
  /** Every file and package reached, with the chain of imports that first reached it. */
  reached: Map<string, { chain: string[]; pkg: boolean }>
  unresolved: string[]
}

/** Follows every static import from `roots`; `read` gives a file's text (tests plant files through it). */
function walk(roots: string[], read: (file: string) => string): Walk {
  const reached: Walk['reached'] = new Map()
  const unresolved: string[] = []
  const queue = roots.map((r) => [r])
  for (const r of roots) reached.set(r, { chain: [r], pkg: false })
  while (queue.length > 0) {
    const chain = queue.shift()!
    const file = chain.at(-1)!
    if (!/\.tsx?$/.test(file)) continue // package.json and the like: data, no imports
    for (const m of read(file).matchAll(IMPORT_RE)) {
      const t = target(file, m[1]!)
      if (t === null) unresolved.push(`${file}: ${m[1]}`)
      else if ('pkg' in t) {
        if (!reached.has(t.pkg)) reached.set(t.pkg, { chain: [...chain, t.pkg], pkg: true })
      } else if (!reached.has(t.file)) {
        reached.set(t.file, { chain: [...chain, t.file], pkg: false })
        queue.push([...chain, t.file])
      }
    }
  }
  return { reached, unresolved }
}

/** What the agent must not load, each as the chain of imports that reaches it. */
function offenders(w: Walk): string[] {
  const bad: string[] = []
  for (const [name, { chain, pkg }] of w.reached) if (pkg ? !PACKAGES(name) : !mayLoad(name)) bad.push(chain.join(' -> '))
  return bad.sort()
}

const ROOTS = [...tsFiles('src/agent'), ...tsFiles('src/wire')]
const disk = (file: string) => readFileSync(join(ROOT, file), 'utf8')

describe('the agent does not load the leader', () => {
  const w = walk(ROOTS, disk)

  test('the walk finds what it is meant to check (a test that cannot fail is a defect)', () => {
    expect(ROOTS).toContain('src/agent/agent.ts')
    expect(ROOTS).toContain('src/wire/frames.ts')
    expect(w.unresolved).toEqual([])
    expect(w.reached.get('src/time.ts')).toBeDefined()
    expect(w.reached.get('@sinclair/typebox')).toBeDefined()
    // Bun's own scanner agrees: every import it keeps for run time is one the walk followed.
    const scanner = new Bun.Transpiler({ loader: 'ts' })
    for (const file of [...w.reached.keys()].filter((f) => /\.tsx?$/.test(f))) {
      const ours = new Set([...disk(file).matchAll(IMPORT_RE)].map((m) => m[1]))
      const missed = scanner.scan(disk(file)).imports.filter((i) => i.kind === 'import-statement' && !ours.has(i.path))
      expect(missed.map((i) => `${file}: ${i.path}`)).toEqual([])
    }
    // Planted: a value import of Elysia, and a type-only one from a feature (itself on Elysia).
    const planted = (file: string) =>
      file === 'src/agent/planted.ts' ? "import 'elysia'\nimport type {\n  Job,\n} from '../jobs/model'\nexport const x = 1\n" : disk(file)
    const found = offenders(walk(['src/agent/planted.ts'], planted))
    expect(found).toContain('src/agent/planted.ts -> elysia')
    expect(found).toContain('src/agent/planted.ts -> src/jobs/model.ts')
  })

  test('src/agent/ and src/wire/ reach only each other, the shared leaf modules, TypeBox and the runtime', () => {
    expect(offenders(w)).toEqual([])
  })

  test('in particular no Elysia, Drizzle, database, HTTP layer or feature folder, by any path', () => {
    const leader = /^(elysia|@elysiajs\/|drizzle-orm|bun:sqlite|nodemailer)|^src\/(db|http|accounts|pools|fellows|jobs|relay|inference|admin|mail|stats|pages|observability|servables|health|audit)\//
    expect([...w.reached.keys()].filter((n) => leader.test(n))).toEqual([])
  })

  test('the shared leaf modules import nothing but the runtime, package.json and each other', () => {
    for (const file of Object.keys(SHARED)) {
      const targets = [...disk(file).matchAll(IMPORT_RE)].map((m) => target(file, m[1]!))
      const foreign = targets.filter((t) => t !== null && ('pkg' in t ? !t.pkg.startsWith('node:') : !(t.file in SHARED) && t.file !== 'package.json'))
      expect({ file, foreign }).toEqual({ file, foreign: [] })
    }
  })

  test('`svc fellow` (src/cli/fellow.ts) loads no Elysia either', () => {
    const reached = [...walk(['src/cli/fellow.ts'], disk).reached.keys()]
    expect(reached).toContain('src/agent/agent.ts')
    expect(reached.filter((n) => n === 'elysia' || n.startsWith('@elysiajs/'))).toEqual([])
  })
})
