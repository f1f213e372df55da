// The house's layers, checked on the static imports of every file under src/: the composition
// (src/app.ts) is imported only by the entry points, a feature's routes only by the composition, and
// the shared lower layers (src/http/, src/db/, top-level src/*.ts) do not reach back up into
// features. Imports are read with a regular expression, not a parser: enough for this code base's
// `import ... from '...'` / `export ... from '...'` lines, and simple to check by hand.
import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')
const SRC = join(ROOT, 'src')

const FEATURES = ['accounts', 'pools', 'fellows', 'jobs', 'relay', 'inference', 'admin', 'mail', 'stats', 'pages', 'observability', 'servables', 'artifacts', 'health', 'audit']
/** Composition and entry points: above every feature, so they may import anything. */
const ROOTS = new Set(['src/app.ts', 'src/server.ts', 'src/main.ts', 'src/entry.ts'])
/** Who may import the composition. */
const APP_IMPORTERS = (file: string) => ROOTS.has(file) || file.startsWith('src/cli/')

/**
 * Back-up arrows still standing, each with its reason. `src/http/` has none: nothing in it may
 * import a feature. The features own their loops (`loops()` on their services), so src/loops.ts
 * has none either; what is left is context.ts assembling the outbox.
 */
const KNOWN_BACK_UP_ARROWS: Record<string, string> = {
  'src/context.ts -> src/mail/outbox.ts': 'the one composition arrow: createContext (server, CLI and tests) builds the mail outbox every service gets in Ctx',
}
// Issue 27 measured 32 with this count before the first step (29 of them from src/http/app.ts), 3
// after it, 1 once the token-purge loop moved into accounts/.
const MAX_BACK_UP_ARROWS = 1

// `import x from`, `import { a, type B } from`, `import * as M from`, `import type ... from`,
// `export { a } from`, `export * from`, and side-effect `import '...'`. The clause may span lines
// but holds only identifier characters, braces, commas, `*` and whitespace, so the pattern cannot
// run on from an `export function` into a later statement.
const IMPORT_RE = /^[ \t]*(?:import|export)\s+(?:type\s+)?(?:[\w$*{},\s]+?\s+from\s+)?['"]([^'"\n]+)['"]/gm

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return walk(p)
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [p] : []
  })
}

function resolveImport(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null
  const base = resolve(dirname(from), spec)
  for (const p of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]) {
    if (existsSync(p) && statSync(p).isFile()) return p
  }
  return null
}

interface Edge {
  from: string
  to: string
}

/** Every static relative import between files, as paths relative to the repository root. */
function importEdges(files = walk(SRC)): Edge[] {
  return files.flatMap((f) => edgesOf(relative(ROOT, f), readFileSync(f, 'utf8')))
}

/** The relative imports of one file's text that resolve to a file, as if the text sat at `file`. */
function edgesOf(file: string, text: string): Edge[] {
  const abs = join(ROOT, file)
  return [...text.matchAll(IMPORT_RE)].flatMap((m) => {
    const target = resolveImport(abs, m[1]!)
    return target === null ? [] : [{ from: file, to: relative(ROOT, target) }]
  })
}

const featureOf = (file: string): string | null => {
  const m = /^src\/([^/]+)\//.exec(file)
  return m && FEATURES.includes(m[1]!) ? m[1]! : null
}
/** Shared lower layers: src/http/, src/db/ and the top-level modules that are not entry points. */
const isLower = (file: string) => file.startsWith('src/http/') || file.startsWith('src/db/') || (/^src\/[^/]+\.tsx?$/.test(file) && !ROOTS.has(file))
const isRoutes = (file: string) => featureOf(file) !== null && /^src\/[^/]+\/routes\.tsx?$/.test(file)

const backUpArrows = (edges: Edge[]) => edges.filter((e) => isLower(e.from) && (featureOf(e.to) !== null || e.to === 'src/app.ts'))
const key = (e: Edge) => `${e.from} -> ${e.to}`

describe('import direction', () => {
  const edges = importEdges()

  test('the parser finds the imports it is meant to check (a test that cannot fail is a defect)', () => {
    expect(edges.length).toBeGreaterThan(300)
    expect(edges).toContainEqual({ from: 'src/server.ts', to: 'src/app.ts' })
    expect(edges.some((e) => e.from === 'src/app.ts' && e.to === 'src/accounts/routes.ts')).toBe(true)
    // Planted examples, parsed from text rather than files: a multi-line clause and an export-from.
    const planted = edgesOf('src/http/planted.ts', "import {\n  a,\n  type B,\n} from '../accounts/service'\nexport * from '../app'\nexport function f() { return 'x' }\n")
    expect(planted.map(key)).toEqual(['src/http/planted.ts -> src/accounts/service.ts', 'src/http/planted.ts -> src/app.ts'])
    expect(backUpArrows(planted)).toHaveLength(2)
  })

  test('only the entry points import the composition (src/app.ts)', () => {
    const offenders = edges.filter((e) => e.to === 'src/app.ts' && !APP_IMPORTERS(e.from)).map(key)
    expect(offenders).toEqual([])
  })

  test("only the composition imports a feature's routes", () => {
    const offenders = edges.filter((e) => isRoutes(e.to) && e.from !== 'src/app.ts' && e.from !== `src/${featureOf(e.to)}/index.ts`).map(key)
    expect(offenders).toEqual([])
  })

  test('nothing in src/http/ imports a feature', () => {
    const offenders = edges.filter((e) => e.from.startsWith('src/http/') && featureOf(e.to) !== null).map(key)
    expect(offenders).toEqual([])
  })

  test('pages read through the services, never the schema (src/pages/ does not import src/db/schema.ts)', () => {
    const offenders = edges.filter((e) => e.from.startsWith('src/pages/') && e.to === 'src/db/schema.ts').map(key)
    expect(offenders).toEqual([])
  })

  test(`at most ${MAX_BACK_UP_ARROWS} back-up arrows (lower layers into features or the composition), each listed with its reason`, () => {
    const arrows = backUpArrows(edges).map(key)
    console.log(`back-up arrows: ${arrows.length}${arrows.length ? `\n  ${arrows.join('\n  ')}` : ''}`)
    expect(arrows.length).toBeLessThanOrEqual(MAX_BACK_UP_ARROWS)
    expect(arrows.filter((a) => !(a in KNOWN_BACK_UP_ARROWS))).toEqual([])
  })
})

