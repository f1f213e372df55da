// Seeds a state directory fast: registering 100,000 fellows over HTTP would take longer than the
// benchmark, so fellows, pools and their bindings go straight into the state file with SQL, each
// with a known node token whose SHA-256 is what the leader stores. The leader loads them at start.
import type { Statement } from 'bun:sqlite'
import { copyFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openDb } from '../../src/db/client'
import { newId, randomToken, sha256, TOKEN_PREFIX } from '../../src/crypto'

/** Fellows per pool; the signal scenario broadcasts to the first pool. */
export const POOL_SIZE = 1000

export interface Seed {
  stateDir: string
  dbPath: string
  /** One node token a line, fellow i on line i (read by the wrk script and the Bun load generator). */
  tokensFile: string
  /** Fellow ids, one a line, in the same order as the tokens. */
  idsFile: string
  fellows: { id: string; token: string }[]
  poolIds: string[]
  adminToken: string
  /** A running two-stage job on fellows 0 and 1 (the relay scenario), when asked for. */
  jobId: string | null
}

export const dbPathOf = (stateDir: string) => join(stateDir, 'join_state.sqlite3')

export function seedState(stateDir: string, n: number, opts: { relayJob?: boolean } = {}): Seed {
  const dbPath = dbPathOf(stateDir)
  const store = openDb(dbPath) // creates the file and applies the embedded migrations
  const db = store.sqlite
  const now = Date.now()
  const adminId = newId()
  const adminToken = randomToken(TOKEN_PREFIX.apiToken)
  const fellows: { id: string; token: string }[] = []
  const poolIds: string[] = []
  let jobId: string | null = null
  // Statements are finalized before close: a live one keeps the connection open after close(),
  // and the leader, opening the file next, would find it locked.
  const statements: Statement[] = []
  const prepare = (sql: string) => {
    const st = db.prepare(sql)
    statements.push(st)
    return st
  }
  db.transaction(() => {
    prepare("INSERT INTO users (id, email, password_hash, display_name, role, status, created_at, updated_at) VALUES (?, 'bench@example.com', 'x', 'Bench', 'admin', 'active', ?, ?)").run(adminId, now, now)
    prepare('INSERT INTO api_tokens (id, user_id, name, prefix, token_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
      newId(),
      adminId,
      'bench',
      adminToken.slice(0, TOKEN_PREFIX.apiToken.length + 4),
      sha256(adminToken),
      now,
    )
    const insPool = prepare("INSERT INTO pools (id, name, slug, description, visibility, node_limit, open_join, owner_user_id, is_default, created_at, updated_at) VALUES (?, ?, ?, '', 'private', NULL, 0, ?, 0, ?, ?)")
    const insMember = prepare("INSERT INTO pool_members (pool_id, user_id, role, created_at) VALUES (?, ?, 'owner', ?)")
    for (let p = 0; p * POOL_SIZE < Math.max(n, 1); p++) {
      const id = newId()
      insPool.run(id, `Bench pool ${p}`, `bench-${p}`, adminId, now, now)
      insMember.run(id, adminId, now)
      poolIds.push(id)
    }
    const insFellow = prepare("INSERT INTO fellows (id, hostname, token_hash, state, registered_at) VALUES (?, ?, ?, 'active', ?)")
    const insNode = prepare('INSERT INTO pool_nodes (fellow_id, pool_id, owner_user_id, attached_at) VALUES (?, ?, ?, ?)')
    for (let i = 0; i < n; i++) {
      const id = newId()
      const token = randomToken(TOKEN_PREFIX.nodeToken)
      insFellow.run(id, `gpu-${i}`, sha256(token), now)
      insNode.run(id, poolIds[Math.floor(i / POOL_SIZE)]!, adminId, now)
      fellows.push({ id, token })
    }
    if (opts.relayJob) {
      if (n < 2) throw new Error('the relay job needs two fellows')
      jobId = newId()
      prepare("INSERT INTO jobs (id, name, pool_id, created_by, status, stages, min_free_vram_mb, config, assignments, step, created_at, updated_at) VALUES (?, 'relay bench', ?, ?, 'running', 2, 0, '{}', ?, 0, ?, ?)").run(
        jobId,
        poolIds[0]!,
        adminId,
        JSON.stringify([
          { stage: 0, fellow_id: fellows[0]!.id },
          { stage: 1, fellow_id: fellows[1]!.id },
        ]),
        now,
        now,
      )
    }
  })()
  for (const st of statements) st.finalize()
  // Everything into the main file: the floors get a copy of that file alone.
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  store.close()
  const tokensFile = join(stateDir, 'tokens.txt')
  writeFileSync(tokensFile, fellows.map((f) => f.token).join('\n') + '\n')
  const idsFile = join(stateDir, 'ids.txt')
  writeFileSync(idsFile, fellows.map((f) => f.id).join('\n') + '\n')
  return { stateDir, dbPath, tokensFile, idsFile, fellows, poolIds, adminToken, jobId }
}

/** A private copy of the seeded state file for a floor, so leader and floor never share writes. */
export function copyState(seed: Seed, to: string): string {
  const path = join(to, 'floor.sqlite3')
  copyFileSync(seed.dbPath, path)
  return path
}
