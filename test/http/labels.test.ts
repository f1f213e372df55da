// Names people and fellows give things (pools, jobs, API tokens, a fellow's host name): visible
// text only. A blank name (spaces became "" once trimmed: a pool with no name) or one with control
// characters (which break lines in logs, mails and terminals) is a 422 in plain words; any other
// text, emoji and accents included, is kept as given.
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'

const h = makeHarness()
afterAll(() => h.close())
// An admin: no plan limits the pools this creates.
const alice = sessionClient(h, (await seedUser(h, 'alice@example.com', { role: 'admin' })).id)
const pool = (await alice.post('/api/v1/pools', { name: 'Lab' })).body

/** Each route that takes a name, with the rest of a body it accepts. */
const routes: [string, string, (name: string) => Record<string, unknown>][] = [
  ['POST', '/api/v1/pools', (name) => ({ name })],
  ['PATCH', `/api/v1/pools/${pool.id}`, (name) => ({ name })],
  ['POST', '/api/v1/jobs', (name) => ({ name, pool_id: pool.id })],
  ['POST', '/api/v1/api-tokens', (name) => ({ name })],
  ['POST', '/api/v1/workers/register', (hostname) => ({ hostname })],
]
const field = (path: string) => (path.endsWith('/register') ? 'hostname' : 'name')

describe('names', () => {
  test('blank, or holding a control character: 422 naming the field in plain words, nothing stored', async () => {
    const pools = (h.ctx.sqlite.query('SELECT count(*) AS n FROM pools').get() as { n: number }).n
    for (const [method, path, body] of routes) {
      for (const bad of ['   ', '\u00a0\u2003', 'a\u0000b', 'line\nbreak', 'tab\there', 'esc\u001b[31m', 'c1\u0085']) {
        const res = await alice.call(method, path, body(bad))
        expect([path, JSON.stringify(bad), res.status, res.body.detail]).toEqual([path, JSON.stringify(bad), 422, `body /${field(path)}: must not be blank or hold control characters`])
      }
    }
    expect((h.ctx.sqlite.query('SELECT count(*) AS n FROM pools').get() as { n: number }).n).toBe(pools)
    expect((h.ctx.sqlite.query('SELECT name FROM pools WHERE id = ?').get(pool.id) as { name: string }).name).toBe('Lab')
  })

  test('any visible text is kept: emoji, accents, other scripts, inner spaces (a name is trimmed)', async () => {
    for (const good of ['GPU 🚀', 'Müller’s Labor', '研究室', '  padded  ']) {
      const res = await alice.post('/api/v1/pools', { name: good })
      expect([good, res.status, res.body.name]).toEqual([good, 201, good.trim()])
    }
    const reg = await h.client().post('/api/v1/workers/register', { hostname: 'gpu-7.lab' })
    expect(reg.status).toBe(201)
  })

  test('a name of invisible characters alone is blank; a text-direction override is refused anywhere (a name could pass for another); marks and joiners inside text stay', async () => {
    for (const bad of ['\u200b\u200d', '\u00ad', '\u2060\ufeff', 'report\u202efdp.exe', '\u2066isolated\u2069', 'a\u202ab']) {
      const res = await alice.post('/api/v1/pools', { name: bad })
      expect([JSON.stringify(bad), res.status, res.body.detail]).toEqual([JSON.stringify(bad), 422, 'body /name: must not be blank or hold control characters'])
    }
    const file = await alice.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'invoice\u202efdp.exe', size_bytes: 1, sha256: 'a'.repeat(64), pool_id: pool.id })
    expect([file.status, file.body.detail]).toEqual([422, "body /name: must not hold '/' or control characters"])
    for (const good of ['👩\u200d💻 lab', 'שלום\u200f team', 'Zero\u200bwidth']) {
      const res = await alice.post('/api/v1/pools', { name: good })
      expect([JSON.stringify(good), res.status]).toEqual([JSON.stringify(good), 201])
    }
  })

  test('half of a UTF-16 surrogate pair (a \\ud800 escape) is no text: 422 naming the field, in a value or a key', async () => {
    for (const [body, at] of [['{"name":"a\\ud800b"}', '/name'], ['{"name":"x\\uDC00"}', '/name'], ['{"name":"ok","\\ud83d":1}', '/\ud83d']] as const) {
      const res = await alice.post('/api/v1/pools', body, { 'content-type': 'application/json' })
      expect([body, res.status, res.body.errors?.[0]]).toEqual([body, 422, { path: at, message: 'holds half of a UTF-16 surrogate pair, which is no text' }])
    }
    // A whole pair, escaped, is an emoji like any other.
    const rocket = await alice.post('/api/v1/pools', '{"name":"GPU \\ud83d\\ude80"}', { 'content-type': 'application/json' })
    expect([rocket.status, rocket.body.name]).toEqual([201, 'GPU 🚀'])
  })

  test('an artifact named "." or ".." is refused: whoever downloads it saves it under that name', async () => {
    for (const name of ['.', '..']) {
      const res = await alice.post('/api/v1/artifacts/uploads', { kind: 'file', name, size_bytes: 1, sha256: 'a'.repeat(64), pool_id: pool.id })
      expect([name, res.status, res.body.errors]).toEqual([name, 422, [{ path: '/name', message: 'must not be "." or ".."' }]])
    }
    expect((await alice.post('/api/v1/artifacts/uploads', { kind: 'file', name: '...', size_bytes: 1, sha256: 'a'.repeat(64), pool_id: pool.id })).status).toBe(201)
  })

  test('a blank value far over the length limit gets the same words beside the length refusal', async () => {
    // TypeBox reports every rule a value breaks: the pattern runs on all 900 KiB of it.
    const res = await alice.post('/api/v1/pools', { name: ' '.repeat(900 * 1024) })
    expect(res.status).toBe(422)
    expect(res.body.errors.map((e: { message: string }) => e.message)).toContain('must not be blank or hold control characters')
  })
})

describe('display names and the admin search', () => {
  test('a display name holding a control character is a 422 in plain words on register and on an admin edit; nothing is stored', async () => {
    const admin = sessionClient(h, (await seedUser(h, 'root@example.com', { role: 'admin' })).id)
    const bob = await seedUser(h, 'bob@example.com', { displayName: 'Bob' })
    for (const bad of ['a\u0007b', 'x\u001b[31mred', '<b>Bold</b>\r\nBcc: evil@example.net', 'nul\u0000byte']) {
      const reg = await h.client().post('/api/v1/auth/register', { email: 'new@example.com', password: 'a long password', display_name: bad })
      expect([JSON.stringify(bad), reg.status, reg.body.detail]).toEqual([JSON.stringify(bad), 422, 'body /display_name: must not hold control characters'])
      const edit = await admin.patch(`/api/v1/admin/users/${bob.id}`, { display_name: bad })
      expect([edit.status, edit.body.detail]).toEqual([422, 'body /display_name: must be null or a string of 1 to 100 characters; it must not hold control characters'])
    }
    expect((h.ctx.sqlite.query('SELECT display_name FROM users WHERE id = ?').get(bob.id) as { display_name: string }).display_name).toBe('Bob')
    expect((h.ctx.sqlite.query("SELECT count(*) AS n FROM users WHERE email = 'new@example.com'").get() as { n: number }).n).toBe(0)
    // Emoji, accents and other scripts stay welcome.
    expect((await admin.patch(`/api/v1/admin/users/${bob.id}`, { display_name: 'Bob 🚀 Müller 研究' })).body.display_name).toBe('Bob 🚀 Müller 研究')
  })

  test('a search holding a control character is a 422 (a NUL byte reached the full-text index: 500; alone it matched everyone)', async () => {
    const admin = sessionClient(h, (await seedUser(h, 'root2@example.com', { role: 'admin' })).id)
    for (const q of ['ab%00', '%00abc', 'abc%00', '%00', '%0A', 'a%1Fb']) {
      const r = await admin.get(`/api/v1/admin/users?q=${q}`)
      expect([q, r.status, r.body.detail]).toEqual([q, 422, 'query /q: must not hold control characters'])
    }
    expect((await admin.get('/api/v1/admin/users?q=%C3%BCller')).status).toBe(200)
  })

  test('a value outside a fixed set names the set (it read "should be one of: \'string\', \'string\'")', async () => {
    const admin = sessionClient(h, (await seedUser(h, 'root3@example.com', { role: 'admin' })).id)
    const cases: [string, string][] = [
      ['status=bogus', 'query /status: must be one of: "unverified", "pending_approval", "active", "disabled"'],
      ['order=up', 'query /order: must be one of: "asc", "desc"'],
      ['role=root', 'query /role: must be one of: "user", "admin"'],
    ]
    for (const [q, detail] of cases) {
      const r = await admin.get(`/api/v1/admin/users?${q}`)
      expect([r.status, r.body.detail]).toEqual([422, detail])
    }
    const patch = await admin.patch(`/api/v1/admin/users/${(await seedUser(h, 'carl@example.com')).id}`, { role: 'superuser' })
    expect([patch.status, patch.body.detail]).toEqual([422, 'body /role: must be one of: "user", "admin"'])
  })
})

describe('lengths and formats in words', () => {
  test('an empty name, a too long one, a malformed email and id read plainly (they read "Expected string length greater or equal to 1", "should be email")', async () => {
    const empty = await alice.post('/api/v1/pools', { name: '' })
    expect([empty.status, empty.body.errors.map((e: { message: string }) => e.message)]).toEqual([422, expect.arrayContaining(['must not be empty'])])
    const long = await alice.post('/api/v1/api-tokens', { name: 'x'.repeat(101) })
    expect(long.body.errors.map((e: { message: string }) => e.message)).toContain('must be at most 100 characters')
    const invite = await alice.post(`/api/v1/pools/${pool.id}/invites`, { email: 'a@b' })
    expect([invite.status, invite.body.detail]).toEqual([422, 'body /email: must be an email address (name@example.org)'])
    const job = await alice.post('/api/v1/jobs', { name: 'x', pool_id: 'not-an-id' })
    expect([job.status, job.body.detail]).toEqual([422, 'body /pool_id: must be an id (a UUID)'])
  })
})

describe('numbers in a JSON body are JSON numbers', () => {
  test('a number sent as text is refused, not read ("0x10" became 16 days, "7" a node limit of 7)', async () => {
    const cases: [string, string, Record<string, unknown>, string][] = [
      ['POST', '/api/v1/api-tokens', { name: 't', expires_in_days: '0x10' }, 'body /expires_in_days: must be an integer from 1 to 3650'],
      ['POST', '/api/v1/admin/pools', { name: 'Typed', node_limit: '7' }, 'body /node_limit: must be null or an integer from 0 to 1000000'],
      ['POST', '/api/v1/jobs', { name: 'x', pool_id: pool.id, stages: '2' }, 'body /stages: must be an integer from 1 to 64'],
      ['POST', '/api/v1/artifacts/uploads', { kind: 'file', name: 'x', size_bytes: '10', sha256: 'a'.repeat(64), pool_id: pool.id }, 'body /size_bytes: must be an integer from 0 to 9007199254740991'],
    ]
    for (const [method, path, body, detail] of cases) {
      const r = await alice.call(method, path, body)
      expect([path, r.status, r.body.detail]).toEqual([path, 422, detail])
    }
    expect((await alice.post('/api/v1/api-tokens', { name: 't', expires_in_days: 16 })).status).toBe(201)
  })
})

describe('a request that takes no body', () => {
  test('refuses one with something in it (it was dropped without a word); none, or {}, is fine', async () => {
    const root = sessionClient(h, (await seedUser(h, 'root4@example.com', { role: 'admin' })).id)
    const target = await seedUser(h, 'pending@example.com', { status: 'pending_approval' })
    const refused = await root.post(`/api/v1/admin/users/${target.id}/approve`, { force: true })
    expect([refused.status, refused.body.detail]).toEqual([422, 'body: this request takes no body; send none (or {}).'])
    expect((await root.post('/api/v1/admin/mail/test', { to: 'x@example.org' })).status).toBe(422)
    expect((await root.post(`/api/v1/admin/users/${target.id}/reset-password`, { deliver: 'link' })).status).toBe(422)
    expect((await root.post(`/api/v1/admin/users/${target.id}/approve`, [1])).status).toBe(422)
    expect((h.ctx.sqlite.query('SELECT status FROM users WHERE id = ?').get(target.id) as { status: string }).status).toBe('pending_approval')
    expect((await root.post(`/api/v1/admin/users/${target.id}/approve`, {})).status).toBe(200)
    expect((await root.post(`/api/v1/admin/users/${target.id}/reset-password`)).status).toBe(200)
  })
})

describe('a body that should be an object', () => {
  test('a JSON list is refused as such (it read "Property \'0\' should not be provided")', async () => {
    const r = await alice.call('POST', '/api/v1/pools', [1, 2])
    expect([r.status, r.body.detail]).toEqual([422, 'body: must be a JSON object ({...}), not a list.'])
  })
})

describe('a refused credential', () => {
  test('a wrong token reads the same on admin routes as on the others (admin routes said a credential was missing)', async () => {
    for (const path of ['/api/v1/admin/users', '/api/v1/pools']) {
      const wrong = await h.client({ bearer: 'svc_pat_not-a-real-token' }).get(path)
      expect([path, wrong.status, wrong.body.detail]).toEqual([path, 401, 'The credential is wrong, expired or revoked.'])
    }
    expect((await h.client().get('/api/v1/admin/users')).body.detail).toBe('A valid credential is required.')
  })
})

describe('a missing value', () => {
  test('is said to be missing, once (a missing ?offset read twice as "must be an integer ...")', async () => {
    const r = await alice.call('PUT', '/api/v1/artifacts/uploads/01a20184-99e9-7296-9fc7-75b6e5358e98', undefined)
    expect([r.status, r.body.detail]).toEqual([422, 'query /offset: is missing'])
    expect(r.body.errors.filter((e: { path: string; message: string }) => e.path === '/offset' && e.message === 'is missing')).toHaveLength(1)
    expect(new Set(r.body.errors.map((e: { path: string; message: string }) => `${e.path} ${e.message}`)).size).toBe(r.body.errors.length)
  })
})
