// The admin user list at 100,000 users: GET /api/v1/admin/users through app.handle (policy,
// validation, service, response schema, JSON) against a bare floor that answers the same page
// with hand-written SQL on bun:sqlite and JSON.stringify, nothing else. Same process, same file.
//
//   bun run bench/admin-list.ts            (BENCH_USERS=100000 BENCH_RUNS=100 by default)
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { systemClock } from '../src/time'
import { silentLogger } from '../src/log'
import { createApp } from '../src/app'
import { hashPassword } from '../src/accounts/passwords'
import { createSession } from '../src/accounts/sessions'
import { newId } from '../src/crypto'
import { closeContext, createContext, type Ctx } from '../src/context'

const USERS = Number(process.env.BENCH_USERS ?? 100_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 100)
const WARMUP = 5
const POOLS = Math.max(10, Math.floor(USERS / 50))

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-admin-'))
const cfg = loadConfig({ SVC_STATE_DIR: dir, SVC_COOKIE_SECURE: '0' })
const ctx: Ctx = createContext(cfg, silentLogger, systemClock, { mailEnabled: false })

// Deterministic data (mulberry32): the same table on every run.
let seed = 7
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const rand = (n: number) => Math.floor(random() * n)
/** Skewed towards the first users: most users have no pool or node, a few have many. */
const someUser = (ids: string[]) => ids[Math.floor(ids.length * random() ** 3)]!
const WORDS = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'ken', 'dennis', 'margaret', 'linus', 'frances', 'john']
const STATUSES = ['active', 'active', 'active', 'active', 'active', 'active', 'pending_approval', 'unverified', 'disabled']

function seedData(db: Database, hash: string): string {
  const t0 = Date.UTC(2024, 0, 1)
  const ids: string[] = []
  db.transaction(() => {
    const insUser = db.prepare('INSERT INTO users (id, email, password_hash, display_name, role, status, created_at, updated_at, last_login_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
    for (let i = 0; i < USERS; i++) {
      const id = newId()
      ids.push(id)
      const w = WORDS[rand(WORDS.length)]!
      const created = t0 + i * 60_000 + rand(60_000)
      insUser.run(id, `${w}.${i}@example${rand(50)}.org`, hash, i % 10 === 0 ? null : `${w[0]!.toUpperCase()}${w.slice(1)} ${rand(100000)}`, i === 0 ? 'admin' : 'user', i === 0 ? 'active' : STATUSES[rand(STATUSES.length)]!, created, created, i % 5 === 0 ? null : created + rand(1e9))
    }
    const insPool = db.prepare("INSERT INTO pools (id, name, slug, description, visibility, node_limit, open_join, owner_user_id, is_default, created_at, updated_at) VALUES (?, ?, ?, '', 'private', NULL, 0, ?, 0, ?, ?)")
    const insMember = db.prepare('INSERT OR IGNORE INTO pool_members (pool_id, user_id, role, created_at) VALUES (?, ?, ?, ?)')
    const insFellow = db.prepare("INSERT INTO fellows (id, hostname, token_hash, state, registered_at) VALUES (?, 'gpu', ?, 'active', ?)")
    const insNode = db.prepare('INSERT INTO pool_nodes (fellow_id, pool_id, owner_user_id, attached_at) VALUES (?, ?, ?, ?)')
    const poolIds: string[] = []
    for (let p = 0; p < POOLS; p++) {
      const id = newId()
      const owner = ids[rand(USERS)]!
      insPool.run(id, `Pool ${p}`, `pool-${p}`, owner, t0, t0)
      insMember.run(id, owner, 'owner', t0)
      poolIds.push(id)
    }
    // About 1.5 memberships and 0.2 nodes per user, skewed: most have none, some have many.
    for (let m = 0; m < USERS * 1.5; m++) insMember.run(poolIds[rand(POOLS)]!, someUser(ids), 'member', t0)
    for (let n = 0; n < USERS / 5; n++) {
      const f = newId()
      insFellow.run(f, `h-${f}`, t0)
      insNode.run(f, poolIds[rand(POOLS)]!, someUser(ids), t0)
    }
  })()
  // No ANALYZE: the plans a fresh state file gets, before `PRAGMA optimize` has gathered statistics.
  return ids[0]!
}

// ---- the bare floor: the same answers, hand-written --------------------------------------------
// The counts are columns kept by triggers (migration 0011): the floor reads them as the app does.
const COUNTS = 'u.pool_count, u.node_count'
interface FloorCase {
  where: string
  order: string
  args: (string | number)[]
}
function floor(db: Database, c: FloorCase, page: number, size: number): string {
  const where = c.where === '' ? '' : `WHERE ${c.where}`
  const total = (db.query(`SELECT count(*) AS n FROM users u ${where}`).get(...c.args) as { n: number }).n
  // The page first (ids only), counts for those rows alone, in one statement.
  const rows = db
    .query(`SELECT u.id, u.email, u.display_name, u.role, u.status, u.created_at, u.last_login_at, ${COUNTS}
      FROM (SELECT id FROM users u ${where} ORDER BY ${c.order} LIMIT ? OFFSET ?) p JOIN users u ON u.id = p.id ORDER BY ${c.order}`)
    .all(...c.args, size, (page - 1) * size) as Record<string, unknown>[]
  const items = rows.map((r) => ({ ...r, created_at: new Date(r.created_at as number).toISOString(), last_login_at: r.last_login_at === null ? null : new Date(r.last_login_at as number).toISOString() }))
  return JSON.stringify({ items, total, page, page_size: size })
}

interface Case {
  name: string
  query: string
  floor: FloorCase
  page: number
  size: number
}
const POOL_ORDER = 'u.pool_count DESC, u.email DESC'
const CASES: Case[] = [
  { name: 'default (created_at desc), page 1', query: '', floor: { where: '', order: 'u.created_at DESC, u.email DESC', args: [] }, page: 1, size: 50 },
  { name: 'q=ada (email or name), page 1', query: 'q=ada', floor: { where: "(u.email LIKE ? ESCAPE '\\' OR u.display_name LIKE ? ESCAPE '\\')", order: 'u.created_at DESC, u.email DESC', args: ['%ada%', '%ada%'] }, page: 1, size: 50 },
  { name: 'sort=pool_count desc, page 1', query: 'sort=pool_count&order=desc', floor: { where: '', order: POOL_ORDER, args: [] }, page: 1, size: 50 },
  { name: 'sort=email, page 1000 (deep)', query: 'sort=email&page=1000', floor: { where: '', order: 'u.email ASC', args: [] }, page: 1000, size: 50 },
  { name: 'sort=display_name desc, page 1500', query: 'sort=display_name&order=desc&page=1500', floor: { where: '', order: 'u.display_name IS NULL, u.display_name COLLATE NOCASE DESC, u.email DESC', args: [] }, page: 1500, size: 50 },
  { name: 'default, page 1999 (last)', query: 'page=1999', floor: { where: '', order: 'u.created_at DESC, u.email DESC', args: [] }, page: 1999, size: 50 },
  { name: 'status=pending_approval, page 1', query: 'status=pending_approval', floor: { where: "u.status = 'pending_approval'", order: 'u.created_at DESC, u.email DESC', args: [] }, page: 1, size: 50 },
  { name: 'status=pending_approval, sort=last_login_at', query: 'status=pending_approval&sort=last_login_at', floor: { where: "u.status = 'pending_approval'", order: 'u.last_login_at DESC, u.email DESC', args: [] }, page: 1, size: 50 },
]

function percentiles(ms: number[]): { p50: number; p99: number } {
  const s = [...ms].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!
  return { p50: at(0.5), p99: at(0.99) }
}

async function time(fn: () => Promise<unknown> | unknown): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < WARMUP; i++) await fn()
  const ms: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const t = Bun.nanoseconds()
    await fn()
    ms.push((Bun.nanoseconds() - t) / 1e6)
  }
  return percentiles(ms)
}

// ---- the audit log at AUDIT_ENTRIES ------------------------------------------------------------
const AUDIT_ENTRIES = Number(process.env.BENCH_AUDIT ?? 1_000_000)
const KINDS = ['auth.login', 'auth.login', 'auth.login_failed', 'auth.logout', 'pool.create', 'pool.member_remove', 'job.submit', 'job.cancel', 'worker.release', 'admin.user.status']

/** AUDIT_ENTRIES entries over a year, a thousand actors and targets; 'admin.' is one in ten, 'rare.thing' one in 5,000. */
function seedAudit(db: Database, actors: string[]): { t0: number; span: number } {
  const t0 = Date.UTC(2025, 0, 1)
  const span = 365 * 86_400_000
  const ins = db.prepare('INSERT INTO audit_log (id, ts, kind, actor_user_id, client_ip, target_type, target_id, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
  db.transaction(() => {
    for (let i = 0; i < AUDIT_ENTRIES; i++) {
      const ts = t0 + Math.floor((i / AUDIT_ENTRIES) * span)
      const kind = i % 5000 === 0 ? 'rare.thing' : KINDS[rand(KINDS.length)]!
      ins.run(Bun.randomUUIDv7('hex', ts), ts, kind, actors[rand(actors.length)]!, '198.51.100.7', 'pool', `pool-${rand(1000)}`, '{"from":"active","to":"disabled"}')
    }
  })()
  return { t0, span }
}

interface AuditCase {
  name: string
  query: string
  /** The same page straight from SQL: the keyset walk of the same index, no count. */
  floor: { where: string; args: (string | number)[] }
}

function auditFloor(db: Database, c: AuditCase['floor']): string {
  const rows = db.query(`SELECT * FROM audit_log ${c.where === '' ? '' : `WHERE ${c.where}`} ORDER BY ts DESC, id DESC LIMIT 50`).all(...c.args)
  return JSON.stringify(rows)
}

async function main() {
  const t = Bun.nanoseconds()
  const adminId = seedData(ctx.sqlite, await hashPassword('bench password 1234'))
  const seeded = (Bun.nanoseconds() - t) / 1e9
  const app = createApp(ctx)
  const session = createSession(ctx, adminId, '127.0.0.1')
  const get = async (q: string) => {
    const res = await app.handle(new Request(`http://leader.test/api/v1/admin/users?${q}`, { headers: { cookie: `svc_session=${session.token}` } }))
    if (res.status !== 200) throw new Error(`${q}: ${res.status} ${await res.text()}`)
    return res.text()
  }
  const counts = ctx.sqlite.query('SELECT (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM pools) AS pools, (SELECT count(*) FROM pool_members) AS members, (SELECT count(*) FROM pool_nodes) AS nodes').get() as Record<string, number>
  console.log(`seeded ${counts.users} users, ${counts.pools} pools, ${counts.members} memberships, ${counts.nodes} nodes in ${seeded.toFixed(1)} s; ${RUNS} runs per case after ${WARMUP} warm-up`)
  console.log(`bun ${Bun.version}, ${process.platform}/${process.arch}\n`)
  const rows: string[][] = [['case', 'app p50 ms', 'app p99 ms', 'floor p50 ms', 'floor p99 ms', 'p50 ratio']]
  for (const c of CASES) {
    // Same answer first: the comparison means nothing if the floor lists other users.
    const ids = (s: string) => (JSON.parse(s).items as { id: string }[]).map((i) => i.id).join()
    const viaApp = await get(c.query)
    if (ids(viaApp) !== ids(floor(ctx.sqlite, c.floor, c.page, c.size)) || JSON.parse(viaApp).items.length === 0) throw new Error(`${c.name}: app and floor disagree`)
    const a = await time(() => get(c.query))
    const f = await time(() => floor(ctx.sqlite, c.floor, c.page, c.size))
    rows.push([c.name, a.p50.toFixed(2), a.p99.toFixed(2), f.p50.toFixed(2), f.p99.toFixed(2), `${(a.p50 / f.p50).toFixed(2)}x`])
  }
  printTable(rows)

  // The audit log: AUDIT_ENTRIES entries, each filter's first page and a page deep in the log.
  const ta = Bun.nanoseconds()
  const actors = ctx.sqlite.query('SELECT id FROM users LIMIT 1000').all().map((r) => (r as { id: string }).id)
  const { t0, span } = seedAudit(ctx.sqlite, actors)
  ctx.sqlite.run('PRAGMA optimize')
  console.log(`\nseeded ${AUDIT_ENTRIES} audit entries in ${((Bun.nanoseconds() - ta) / 1e9).toFixed(1)} s\n`)
  const audit = async (q: string) => {
    const res = await app.handle(new Request(`http://leader.test/api/v1/admin/audit?${q}`, { headers: { cookie: `svc_session=${session.token}` } }))
    if (res.status !== 200) throw new Error(`audit ${q}: ${res.status} ${await res.text()}`)
    return res.text()
  }
  const actor = actors[3]!
  const day = new Date(t0 + span / 2).toISOString()
  const dayEnd = new Date(t0 + span / 2 + 86_400_000).toISOString()
  const deep = JSON.parse(await audit('page_size=50&page=2000')) as { next_cursor: string }
  const deepAt = Buffer.from(deep.next_cursor, 'base64url').toString().split('.')
  const auditCases: AuditCase[] = [
    { name: 'newest first, page 1', query: '', floor: { where: '', args: [] } },
    { name: 'kind=auth.login (exact)', query: 'kind=auth.login', floor: { where: "kind = 'auth.login'", args: [] } },
    { name: 'kind=auth. (common prefix)', query: 'kind=auth.', floor: { where: "+kind >= 'auth.' AND +kind < 'auth/'", args: [] } },
    { name: 'kind=rare. (rare prefix)', query: 'kind=rare.', floor: { where: "kind >= 'rare.' AND kind < 'rare/'", args: [] } },
    { name: 'actor', query: `actor=${actor}`, floor: { where: 'actor_user_id = ?', args: [actor] } },
    { name: 'target', query: 'target=pool-7', floor: { where: "target_id = 'pool-7'", args: [] } },
    { name: 'one day (since/until)', query: `since=${day}&until=${dayEnd}`, floor: { where: 'ts >= ? AND ts < ?', args: [Date.parse(day), Date.parse(dayEnd)] } },
    { name: 'cursor 100,000 entries deep', query: `cursor=${deep.next_cursor}`, floor: { where: '(ts, id) < (?, ?)', args: [Number(deepAt[0]), deepAt[1]!] } },
  ]
  const arows: string[][] = [['audit case', 'app p50 ms', 'app p99 ms', 'floor p50 ms', 'floor p99 ms', 'p50 ratio']]
  for (const c of auditCases) {
    const ids = (s: string) => (JSON.parse(s) as { id: string }[]).map((i) => i.id).join()
    const viaApp = (JSON.parse(await audit(`page_size=50&${c.query}`)) as { items: { id: string }[] }).items
    if (viaApp.map((i) => i.id).join() !== ids(auditFloor(ctx.sqlite, c.floor)) || viaApp.length === 0) throw new Error(`audit ${c.name}: app and floor disagree`)
    const a = await time(() => audit(`page_size=50&${c.query}`))
    const f = await time(() => auditFloor(ctx.sqlite, c.floor))
    arows.push([c.name, a.p50.toFixed(2), a.p99.toFixed(2), f.p50.toFixed(2), f.p99.toFixed(2), `${(a.p50 / f.p50).toFixed(2)}x`])
  }
  printTable(arows)
}

function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  for (const [i, r] of rows.entries()) {
    console.log('| ' + r.map((v, j) => (j === 0 ? v.padEnd(widths[j]!) : v.padStart(widths[j]!))).join(' | ') + ' |')
    if (i === 0) console.log('|' + widths.map((w, j) => (j === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|')
  }
}

try {
  await main()
} finally {
  closeContext(ctx)
  if (process.env.BENCH_KEEP_DB) console.log(`kept ${cfg.dbPath}`)
  else rmSync(dir, { recursive: true, force: true })
}
