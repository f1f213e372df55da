// Placement: which online fellows of a pool can take a job's pipeline stages, and why not.
import type { LiveFellow } from '../fellows/live'

export interface Candidate {
  id: string
  freeVramMb: number
  registeredAt: number
  address: string | null
  /** The runners its operator declared, from its heartbeats (an agent that says none offers `mlp`). */
  runners: readonly string[]
}

/** The built-in runner: every fellow offers it. */
export const BUILTIN_RUNNER = 'mlp'
const BUILTIN_ONLY: readonly string[] = [BUILTIN_RUNNER]

/** A fellow's capacity for one stage: the free memory of its best GPU (0 without GPUs). */
export function candidateOf(f: LiveFellow): Candidate {
  const gpus = f.hardware?.gpus ?? []
  return { id: f.id, freeVramMb: gpus.reduce((m, g) => Math.max(m, g.memory_free_mb), 0), registeredAt: f.registeredAt, address: f.address, runners: f.runners ?? BUILTIN_ONLY }
}

/** `lacking`: fellows with the room that do not offer the runner (named in the pending reason). */
export type Placement = { ok: true; fellows: Candidate[] } | { ok: false; eligible: number; lacking: number }

/** The `stages` roomiest eligible fellows offering `runner` (oldest first among equals), in pipeline order. */
export function place(candidates: Candidate[], stages: number, minFreeVramMb: number, runner = BUILTIN_RUNNER): Placement {
  const roomy = candidates.filter((c) => c.freeVramMb >= minFreeVramMb)
  const eligible = roomy.filter((c) => c.runners.includes(runner))
  if (eligible.length < stages) return { ok: false, eligible: eligible.length, lacking: roomy.length - eligible.length }
  eligible.sort((a, b) => b.freeVramMb - a.freeVramMb || a.registeredAt - b.registeredAt || a.id.localeCompare(b.id))
  return { ok: true, fellows: eligible.slice(0, stages) }
}

export function formatVram(mb: number): string {
  if (mb >= 1024) {
    const gib = mb / 1024
    return `${Number.isInteger(gib) ? gib : gib.toFixed(1)} GiB`
  }
  return `${mb} MiB`
}

/**
 * "needs 3 fellows with >= 20 GiB free; pool has 2", and for a declared runner "needs 2 fellows
 * offering the runner 'torch' online and free; pool has 1 (3 more without that runner)".
 */
export function pendingReason(stages: number, minFreeVramMb: number, eligible: number, runner = BUILTIN_RUNNER, lacking = 0): string {
  const who = `${stages} fellow${stages === 1 ? '' : 's'}${runner === BUILTIN_RUNNER ? '' : ` offering the runner '${runner}'`}`
  const need = minFreeVramMb > 0 ? `needs ${who} with >= ${formatVram(minFreeVramMb)} free` : `needs ${who} online and free`
  const without = runner !== BUILTIN_RUNNER && lacking > 0 ? ` (${lacking} more without that runner)` : ''
  return `${need}; pool has ${eligible}${without}`
}
