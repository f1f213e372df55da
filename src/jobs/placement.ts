// Placement: which online fellows of a pool can take a job's pipeline stages, and why not.
import type { LiveFellow } from '../fellows/live'

export interface Candidate {
  id: string
  freeVramMb: number
  registeredAt: number
  address: string | null
}

/** A fellow's capacity for one stage: the free memory of its best GPU (0 without GPUs). */
export function candidateOf(f: LiveFellow): Candidate {
  const gpus = f.hardware?.gpus ?? []
  return { id: f.id, freeVramMb: gpus.reduce((m, g) => Math.max(m, g.memory_free_mb), 0), registeredAt: f.registeredAt, address: f.address }
}

export type Placement = { ok: true; fellows: Candidate[] } | { ok: false; eligible: number }

/** The `stages` roomiest eligible fellows (oldest first among equals), in pipeline order. */
export function place(candidates: Candidate[], stages: number, minFreeVramMb: number): Placement {
  const eligible = candidates.filter((c) => c.freeVramMb >= minFreeVramMb)
  if (eligible.length < stages) return { ok: false, eligible: eligible.length }
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

/** "needs 3 fellows with >= 20 GiB free; pool has 2" */
export function pendingReason(stages: number, minFreeVramMb: number, eligible: number): string {
  const who = `${stages} fellow${stages === 1 ? '' : 's'}`
  const need = minFreeVramMb > 0 ? `needs ${who} with >= ${formatVram(minFreeVramMb)} free` : `needs ${who} online and free`
  return `${need}; pool has ${eligible}`
}
