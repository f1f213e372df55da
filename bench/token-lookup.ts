// First-sight node-token lookups (a token not yet in the leader's cache: every fellow's first call
// after a start): the query built through drizzle on every call, as src/fellows/service.ts did
// before, against the same query prepared once, as it does now. Same process, same state file.
//   bun run bench/token-lookup.ts            (100,000 fellows, 3 passes)
import { eq, sql } from 'drizzle-orm'
import { openDb } from '../src/db/client'
import { fellows } from '../src/db/schema'
import { sha256 } from '../src/crypto'
import { seedState } from './lib/seed'
import { tempDir } from './lib/proc'

const n = Number(process.env.BENCH_FELLOWS ?? 100_000)
const seed = seedState(tempDir('token-lookup'), n)
const store = openDb(seed.dbPath)
const hashes = seed.fellows.map((f) => sha256(f.token))
const prepared = store.db.select({ id: fellows.id, state: fellows.state }).from(fellows).where(eq(fellows.tokenHash, sql.placeholder('hash'))).prepare()
for (let pass = 1; pass <= 3; pass++) {
  let t = performance.now()
  for (const h of hashes) store.db.select({ id: fellows.id, state: fellows.state }).from(fellows).where(eq(fellows.tokenHash, h)).get()
  const built = ((performance.now() - t) / n) * 1000
  t = performance.now()
  for (const h of hashes) prepared.get({ hash: h })
  const once = ((performance.now() - t) / n) * 1000
  console.log(`pass ${pass}: built per call ${built.toFixed(1)} µs, prepared once ${once.toFixed(1)} µs a lookup (${n.toLocaleString('en')} distinct tokens)`)
}
store.close()
