// `svc admin doctor`: named checks of the state file. Each check answers its findings (empty:
// healthy) and may know how to fix them (`--fix`). To add one, append it to CHECKS: the CLI, its
// help and docs/cli.md list whatever is here.
import type { StateDb } from '../db/client'
import { MIGRATIONS } from '../db/migrations.gen'
import { userCountsCheck, userSearchCheck } from './consistency'

export interface DoctorCheck {
  /** Short, kebab-case: shown in the report and accepted by `--check NAME`. */
  name: string
  /** One line: what it looks at. */
  description: string
  /** The problems found; none means healthy. Must not write. */
  run(state: StateDb): string[]
  /** Repairs what run() found, in one transaction; answers what it did, one line each. */
  fix?(state: StateDb): string[]
}

export const integrityCheck: DoctorCheck = {
  name: 'integrity',
  description: 'SQLite integrity_check: pages, indexes and records are intact',
  run({ sqlite }) {
    const rows = sqlite.query('PRAGMA integrity_check').all() as { integrity_check: string }[]
    return rows.map((r) => r.integrity_check).filter((m) => m !== 'ok')
  },
}

export const foreignKeysCheck: DoctorCheck = {
  name: 'foreign-keys',
  description: 'SQLite foreign_key_check: every reference points at an existing row',
  run({ sqlite }) {
    const rows = sqlite.query('PRAGMA foreign_key_check').all() as { table: string; rowid: number | null; parent: string; fkid: number }[]
    const byTable = new Map<string, number>()
    for (const r of rows) byTable.set(`${r.table} -> ${r.parent}`, (byTable.get(`${r.table} -> ${r.parent}`) ?? 0) + 1)
    return [...byTable].map(([edge, n]) => `${n} row(s) of ${edge.replace(' -> ', ' point at missing rows of ')}`)
  },
}

export const migrationsCheck: DoctorCheck = {
  name: 'migrations',
  description: 'every migration this binary carries is applied, and no unknown one',
  run({ sqlite }) {
    let applied: Set<string>
    try {
      applied = new Set((sqlite.query('SELECT tag FROM __migrations').all() as { tag: string }[]).map((r) => r.tag))
    } catch {
      return ['no __migrations table: not a leader\'s state file, or never started']
    }
    const known = new Set(MIGRATIONS.map((m) => m.tag))
    const out: string[] = []
    const missing = MIGRATIONS.filter((m) => !applied.has(m.tag)).map((m) => m.tag)
    if (missing.length > 0) out.push(`not applied (the leader applies them when it starts): ${missing.join(', ')}`)
    const unknown = [...applied].filter((t) => !known.has(t))
    if (unknown.length > 0) out.push(`applied by a newer leader, unknown to this binary: ${unknown.join(', ')}`)
    return out
  },
}

/** Every check, in the order they run; the consistency checks of later features go at the end. */
export const CHECKS: DoctorCheck[] = [integrityCheck, foreignKeysCheck, migrationsCheck, userCountsCheck, userSearchCheck]

export interface CheckResult {
  name: string
  findings: string[]
  /** What --fix did (empty when nothing was asked or needed). */
  fixed: string[]
  /** Findings remain and the check has no fix. */
  fixable: boolean
}

export function runDoctor(state: StateDb, opts: { fix?: boolean; only?: string[]; checks?: DoctorCheck[] } = {}): CheckResult[] {
  const checks = (opts.checks ?? CHECKS).filter((c) => !opts.only || opts.only.includes(c.name))
  return checks.map((c) => {
    let findings: string[]
    try {
      findings = c.run(state)
    } catch (e) {
      findings = [`the check failed: ${(e as Error).message.split('\n')[0]}`]
    }
    let fixed: string[] = []
    if (opts.fix && findings.length > 0 && c.fix) {
      fixed = c.fix(state)
      findings = c.run(state)
    }
    return { name: c.name, findings, fixed, fixable: c.fix !== undefined }
  })
}
