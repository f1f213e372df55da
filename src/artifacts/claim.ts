// Which leader a bucket prefix belongs to: a small object beside the blobs (`<prefix>/leader.json`)
// names the leader that claimed it first, by an id kept in its state directory. Two leaders must
// not share a prefix (blobs are named by their content: one leader's delete takes the object the
// other still names); a leader that finds another's claim says so at start and deletes no blob
// there, so a staging leader or a restore drill with production's environment cannot wipe it.
// node:os (the host name) is loaded only when a claim is made, on a bucket: loaded at every
// start (with node:crypto for the id) it cost every leader 1.1 MiB of idle memory.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface LeaderClaim {
  leader_id: string
  host: string
  state_dir: string
  claimed_at: string
}

/** This leader's claim: its id is made once and kept in `<state>/artifacts/leader-id`. */
export async function claimOf(stateDir: string, now: number): Promise<LeaderClaim> {
  const dir = join(stateDir, 'artifacts')
  const file = join(dir, 'leader-id')
  let id: string
  try {
    id = readFileSync(file, 'utf8').trim()
  } catch {
    id = ''
  }
  if (!/^[0-9a-f-]{36}$/.test(id)) {
    id = crypto.randomUUID()
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    writeFileSync(file, `${id}\n`, { mode: 0o600 })
  }
  const { hostname } = await import('node:os')
  return { leader_id: id, host: hostname(), state_dir: stateDir, claimed_at: new Date(now).toISOString() }
}

/** Reads a claim object's text; null when it is not one (treated as none). */
export function parseClaim(text: string): LeaderClaim | null {
  try {
    const c = JSON.parse(text) as Partial<LeaderClaim>
    return typeof c.leader_id === 'string' && typeof c.host === 'string' && typeof c.state_dir === 'string' ? (c as LeaderClaim) : null
  } catch {
    return null
  }
}
