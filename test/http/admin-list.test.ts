import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, passwordHash, seedUser, sessionClient } from '../helpers/harness'
import { newId } from '../../src/crypto'

// 1,000 users with a known spread of names, statuses, roles, times, pools and nodes; every
// expectation below is computed from this table in JS and compared with what the API answers.
const h = makeHarness()
afterAll(() => h.close())

interface Seed {
  id: string
  email: string
  display_name: string | null
  role: 'user' | 'admin'
  status: 'unverified' | 'pending_approval' | 'active' | 'disabled'
  created: number
  lastLogin: number | null
  pools: number
  nodes: number
}

let state = 42
const rand = (n: number) => {
  state = (state * 1103515245 + 12345) % 2147483648
  return Math.floor(state / 65536) % n
}
const WORDS = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'ken', 'dennis', 'margaret', 'linus']
const BASE = Date.UTC(2025, 0, 1)

const admin = await seedUser(h, 'zz-the-admin@example.com', { role: 'admin', displayName: 'The Admin' })
const A = sessionClient(h, admin.id)

const seeds: Seed[] = []
{
  const hash = await passwordHash()
  const order = Array.from({ length: 1000 }, (_, i) => i).sort(() => rand(3) - 1)
  for (let i = 0; i < 1000; i++) {
    const word = WORDS[rand(WORDS.length)]!
    seeds.push({
      id: newId(),
      email: `${word}.${String(rand(100000)).padStart(5, '0')}.${i}@${i % 3 === 0 ? 'lab' : 'example'}.org`,
      // Mixed case and missing names, so NOCASE and "empty last" are both exercised.
      display_name: i % 10 === 0 ? null : `${i % 2 ? word.toUpperCase() : word} ${String.fromCharCode(97 + rand(26))}${rand(1000)}`,
      role: i % 50 === 0 ? 'admin' : 'user',
      status: i % 7 === 0 ? 'pending_approval' : i % 11 === 0 ? 'unverified' : i % 13 === 0 ? 'disabled' : 'active',
      created: BASE + order[i]! * 60_000,
      lastLogin: i % 4 === 0 ? null : BASE + rand(500) * 3_600_000,
      pools: 0,
      nodes: 0,
    })
  }
  const db = h.ctx.sqlite
  db.transaction(() => {
    const insUser = db.prepare('INSERT INTO users (id, email, password_hash, display_name, role, status, created_at, updated_at, last_login_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
    for (const s of seeds) insUser.run(s.id, s.email, hash, s.display_name, s.role, s.status, s.created, s.created, s.lastLogin)
    const insPool = db.prepare("INSERT INTO pools (id, name, slug, description, visibility, node_limit, open_join, owner_user_id, is_default, created_at, updated_at) VALUES (?, ?, ?, '', 'private', NULL, 0, ?, 0, ?, ?)")
    const insMember = db.prepare('INSERT OR IGNORE INTO pool_members (pool_id, user_id, role, created_at) VALUES (?, ?, ?, ?)')
    const insFellow = db.prepare("INSERT INTO fellows (id, hostname, token_hash, state, registered_at) VALUES (?, 'gpu', ?, 'active', ?)")
    const insNode = db.prepare('INSERT INTO pool_nodes (fellow_id, pool_id, owner_user_id, attached_at) VALUES (?, ?, ?, ?)')
    const poolIds: string[] = []
    for (let p = 0; p < 40; p++) {
      const owner = seeds[p * 7]!
      const id = newId()
      insPool.run(id, `Pool ${p}`, `pool-${p}`, owner.id, BASE, BASE)
      insMember.run(id, owner.id, 'owner', BASE)
      poolIds.push(id)
    }
    for (const s of seeds) {
      for (let k = rand(4); k > 0; k--) {
        insMember.run(poolIds[rand(poolIds.length)]!, s.id, 'member', BASE)
      }
      for (let k = rand(6) === 0 ? rand(5) : 0; k > 0; k--) {
        const f = newId()
        insFellow.run(f, `h-${f}`, BASE)
        insNode.run(f, poolIds[rand(poolIds.length)]!, s.id, BASE)
        s.nodes++
      }
    }
  })()
  seeds.push({ id: admin.id, email: admin.email, display_name: 'The Admin', role: 'admin', status: 'active', created: h.clock.now(), lastLogin: null, pools: 0, nodes: 0 })
}

// A random pick may repeat a pool (ignored above): count memberships from the table.
for (const s of seeds) {
  s.pools = (h.ctx.sqlite.query('SELECT count(*) AS n FROM pool_members WHERE user_id = ?').get(s.id) as { n: number }).n
}

type Key = 'email' | 'display_name' | 'created_at' | 'last_login_at' | 'pool_count' | 'node_count'
const value = (s: Seed, key: Key): string | number | null =>
  ({ email: s.email, display_name: s.display_name?.toLowerCase() ?? null, created_at: s.created, last_login_at: s.lastLogin, pool_count: s.pools, node_count: s.nodes })[key]

/**
 * The documented order: the key, then the email, both in `dir`. No display name sorts last either
 * way; never logged in counts as the oldest login.
 */
function expectedOrder(rows: Seed[], key: Key, dir: 'asc' | 'desc'): string[] {
  const sign = dir === 'asc' ? 1 : -1
  const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0)
  return [...rows]
    .sort((x, y) => {
      const a = value(x, key) ?? (key === 'last_login_at' ? -1 : null)
      const b = value(y, key) ?? (key === 'last_login_at' ? -1 : null)
      if (a === null || b === null) {
        if (a !== b) return a === null ? 1 : -1
      } else if (a !== b) return sign * cmp(a, b)
      return sign * cmp(x.email, y.email)
    })
    .map((s) => s.id)
}

async function list(query: string) {
  const r = await A.get(`/api/v1/admin/users?${query}`)
  expect(r.status).toBe(200)
  return r.body as { items: { id: string; [k: string]: unknown }[]; total: number; page: number; page_size: number }
}

describe('admin user list with 1,000 users', () => {
  test('the default is newest first, 50 a page, with the total', async () => {
    const r = await list('')
    expect(r.total).toBe(1001)
    expect(r.page).toBe(1)
    expect(r.page_size).toBe(50)
    expect(r.items.map((i) => i.id)).toEqual(expectedOrder(seeds, 'created_at', 'desc').slice(0, 50))
  })

  test('an item carries the account fields and its pool and node counts', async () => {
    const s = seeds.find((x) => x.pools > 1 && x.nodes > 0 && x.lastLogin !== null && x.display_name !== null)!
    const r = await list(`q=${encodeURIComponent(s.email)}`)
    expect(r.items).toEqual([
      {
        id: s.id,
        email: s.email,
        display_name: s.display_name,
        role: s.role,
        status: s.status,
        created_at: new Date(s.created).toISOString(),
        last_login_at: new Date(s.lastLogin!).toISOString(),
        pool_count: s.pools,
        node_count: s.nodes,
      },
    ])
  })

  for (const key of ['email', 'display_name', 'created_at', 'last_login_at', 'pool_count', 'node_count'] as const) {
    for (const dir of ['asc', 'desc'] as const) {
      test(`sort=${key}&order=${dir} orders every page like the table does`, async () => {
        const want = expectedOrder(seeds, key, dir)
        const p1 = await list(`sort=${key}&order=${dir}&page_size=200`)
        const p3 = await list(`sort=${key}&order=${dir}&page_size=200&page=3`)
        expect(p1.items.map((i) => i.id)).toEqual(want.slice(0, 200))
        expect(p3.items.map((i) => i.id)).toEqual(want.slice(400, 600))
      })
    }
  }

  test('names sort A to Z by default, times and counts largest first', async () => {
    expect((await list('sort=email')).items[0]!.id).toBe(expectedOrder(seeds, 'email', 'asc')[0]!)
    expect((await list('sort=display_name')).items[0]!.id).toBe(expectedOrder(seeds, 'display_name', 'asc')[0]!)
    expect((await list('sort=pool_count')).items[0]!.id).toBe(expectedOrder(seeds, 'pool_count', 'desc')[0]!)
    expect((await list('sort=last_login_at')).items[0]!.id).toBe(expectedOrder(seeds, 'last_login_at', 'desc')[0]!)
  })

  test('walking every page visits each user exactly once', async () => {
    const seen: string[] = []
    for (let page = 1; page <= 6; page++) seen.push(...(await list(`sort=node_count&page_size=200&page=${page}`)).items.map((i) => i.id))
    expect(seen).toEqual(expectedOrder(seeds, 'node_count', 'desc'))
    expect(new Set(seen).size).toBe(1001)
  })

  test('a page past the end is empty but still carries the total', async () => {
    const r = await list('page=99&page_size=200')
    expect(r).toEqual({ items: [], total: 1001, page: 99, page_size: 200 })
  })

  test('q searches email and display name, case-insensitively', async () => {
    const byEmail = seeds.filter((s) => s.email.endsWith('@lab.org'))
    const r = await list('q=%40LAB.org&page_size=200&sort=email')
    expect(r.total).toBe(byEmail.length)
    expect(r.items.map((i) => i.id)).toEqual(expectedOrder(byEmail, 'email', 'asc').slice(0, 200))

    const target = seeds.find((s) => s.display_name !== null && /[A-Z]/.test(s.display_name))!
    const needle = target.display_name!.toLowerCase()
    const want = seeds.filter((s) => s.display_name?.toLowerCase().includes(needle) || s.email.includes(needle))
    const r2 = await list(`q=${encodeURIComponent(needle)}&page_size=200`)
    expect(r2.items.map((i) => i.id).sort()).toEqual(want.map((s) => s.id).sort())
    expect(r2.items.map((i) => i.id)).toContain(target.id)
  })

  test('% and _ in q are plain characters, not wildcards', async () => {
    expect((await list('q=%25')).total).toBe(0)
    expect((await list('q=_')).total).toBe(0)
    expect((await list('q=a_a')).total).toBe(0)
  })

  test('status and role filter, alone and combined with q and a sort', async () => {
    for (const status of ['unverified', 'pending_approval', 'active', 'disabled'] as const) {
      expect((await list(`status=${status}`)).total).toBe(seeds.filter((s) => s.status === status).length)
    }
    expect((await list('role=admin')).total).toBe(seeds.filter((s) => s.role === 'admin').length)
    const want = seeds.filter((s) => s.role === 'user' && s.status === 'active' && s.email.includes('ada'))
    const r = await list('q=ADA&status=active&role=user&sort=pool_count&order=desc&page_size=200')
    expect(r.total).toBe(want.length)
    expect(r.items.map((i) => i.id)).toEqual(expectedOrder(want, 'pool_count', 'desc').slice(0, 200))
  })

  test('pending-count counts accounts waiting for approval', async () => {
    const r = await A.get('/api/v1/admin/users/pending-count')
    expect(r.body).toEqual({ count: seeds.filter((s) => s.status === 'pending_approval').length })
  })

  test('an unknown sort, a bad order or filter, and out-of-range paging answer 422', async () => {
    const bad = [
      'sort=password_hash',
      'sort=',
      'order=up',
      'status=banned',
      'role=root',
      'page=0',
      'page=-1',
      'page=abc',
      'page=1.5',
      'page_size=0',
      'page_size=201',
      'page_size=ten',
      'unknown=1',
    ]
    for (const q of bad) {
      const r = await A.get(`/api/v1/admin/users?${q}`)
      expect([q, r.status, r.body.code]).toEqual([q, 422, 'validation_failed'])
    }
    expect((await list('page_size=200')).items.length).toBe(200)
    expect((await list('page_size=1')).items.length).toBe(1)
  })
})
