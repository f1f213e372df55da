// What the state file keeps twice for speed, checked against what it derives from, and repaired:
// the users' pool and node counts (kept by triggers on pool_members and pool_nodes) and the
// trigram search index of their emails and names (kept by triggers on users). Both are doctor
// checks (`svc admin doctor`, src/admin/doctor.ts); drift means a write went around the triggers
// (a hand edit, a restore of a file from before migration 0011 done wrong).
import type { Database } from 'bun:sqlite'
import type { DoctorCheck } from './doctor'

const COUNTS_DRIFT = `
  SELECT u.id, u.email, u.pool_count AS kept_pools, u.node_count AS kept_nodes,
    (SELECT count(*) FROM pool_members pm WHERE pm.user_id = u.id) AS pools,
    (SELECT count(*) FROM pool_nodes pn WHERE pn.owner_user_id = u.id) AS nodes
  FROM users u
  WHERE u.pool_count != (SELECT count(*) FROM pool_members pm WHERE pm.user_id = u.id)
     OR u.node_count != (SELECT count(*) FROM pool_nodes pn WHERE pn.owner_user_id = u.id)`

interface CountDrift {
  id: string
  email: string
  kept_pools: number
  kept_nodes: number
  pools: number
  nodes: number
}

/** Users whose kept counts differ from a fresh COUNT. */
export function countDrift(sqlite: Database): CountDrift[] {
  return sqlite.query(COUNTS_DRIFT).all() as CountDrift[]
}

export const userCountsCheck: DoctorCheck = {
  name: 'user-counts',
  description: "each user's pool and node counts (the admin list's columns) equal a fresh count",
  run({ sqlite }) {
    return countDrift(sqlite).map((d) => `${d.email}: pools ${d.kept_pools} kept, ${d.pools} counted; nodes ${d.kept_nodes} kept, ${d.nodes} counted`)
  },
  fix({ sqlite }) {
    const n = sqlite.transaction(() => {
      const drifted = countDrift(sqlite)
      const set = sqlite.query('UPDATE users SET pool_count = ?, node_count = ? WHERE id = ?')
      for (const d of drifted) set.run(d.pools, d.nodes, d.id)
      return drifted.length
    })()
    return [`recounted the pools and nodes of ${n} user(s)`]
  },
}

/**
 * Users missing from the search index or indexed under an old email or name, and entries of no
 * user. The index's rowids are those of users: a VACUUM keeps them (SQLite copies rows whole), but
 * the documentation reserves the right to renumber a table without an INTEGER PRIMARY KEY, which
 * would show here as stale entries.
 */
export function searchDrift(sqlite: Database): { missing: number; stale: number; stray: number } {
  const one = (q: string) => (sqlite.query(q).get() as { n: number }).n
  return {
    missing: one('SELECT count(*) AS n FROM users u WHERE NOT EXISTS (SELECT 1 FROM users_fts f WHERE f.rowid = u.rowid)'),
    stale: one('SELECT count(*) AS n FROM users u JOIN users_fts f ON f.rowid = u.rowid WHERE f.email IS NOT u.email OR f.display_name IS NOT u.display_name'),
    stray: one('SELECT count(*) AS n FROM users_fts f WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.rowid = f.rowid)'),
  }
}

export const userSearchCheck: DoctorCheck = {
  name: 'user-search',
  description: 'the trigram index of user emails and names (admin search) holds every user as they are, and nothing else',
  run({ sqlite }) {
    const d = searchDrift(sqlite)
    const out: string[] = []
    if (d.missing > 0) out.push(`${d.missing} user(s) missing from the search index`)
    if (d.stale > 0) out.push(`${d.stale} user(s) indexed under an old email or name`)
    if (d.stray > 0) out.push(`${d.stray} search index entr${d.stray === 1 ? 'y' : 'ies'} of no user`)
    return out
  },
  fix({ sqlite }) {
    const n = sqlite.transaction(() => {
      sqlite.run('DELETE FROM users_fts')
      sqlite.run('INSERT INTO users_fts (rowid, email, display_name) SELECT rowid, email, display_name FROM users')
      return (sqlite.query('SELECT count(*) AS n FROM users_fts').get() as { n: number }).n
    })()
    return [`rebuilt the search index of ${n} user(s)`]
  },
}
