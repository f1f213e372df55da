// Access that ends while a request is on its way. The caller is decided when a request arrives,
// but its body comes at the sender's pace and an event stream stays open for hours: a password
// change, a revoked token, a demotion or a removal from the pool that lands meanwhile must hold
// for that request too (found by driving the built binary with bodies held back).
import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { makeHarness, PASSWORD, seedUser, sessionClient, tokenClient, type Client, type Harness } from '../helpers/harness'
import { poolMembers, users } from '../../src/db/schema'
import { hashPassword } from '../../src/accounts/passwords'

const all: Harness[] = []
afterAll(() => all.forEach((h) => h.close()))

async function setup() {
  const h = makeHarness()
  all.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const alice = await seedUser(h, 'alice@example.com')
  const carol = await seedUser(h, 'carol@example.com')
  const A = sessionClient(h, admin.id)
  const a = sessionClient(h, alice.id)
  const pool = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
  // Carol is a plain member of Alice's pool.
  h.ctx.db.insert(poolMembers).values({ poolId: pool.id, userId: carol.id, role: 'member', createdAt: h.clock.now() }).run()
  return { h, admin, alice, carol, A, a, pool }
}

/**
 * A request whose headers are in and whose body is held back after `first` bytes: `finish()` sends
 * the rest. The leader has admitted it (and waits for the body) once `admitted` resolves.
 */
function held(h: Harness, c: Client, method: string, path: string, body: string | Uint8Array, contentType = 'application/json') {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  const cut = Math.max(1, Math.floor(bytes.byteLength / 2))
  let finish = () => {}
  let admitted = () => {}
  const asked = new Promise<void>((r) => (admitted = r))
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        finish = () => {
          controller.enqueue(bytes.subarray(cut))
          controller.close()
        }
      },
      pull(controller) {
        controller.enqueue(bytes.subarray(0, cut))
        admitted()
        return new Promise(() => {}) // nothing more until finish()
      },
    },
    { highWaterMark: 0 },
  )
  const headers: Record<string, string> = { 'content-type': contentType, 'content-length': String(bytes.byteLength) }
  if (c.opts.bearer) headers.authorization = `Bearer ${c.opts.bearer}`
  if (c.cookies.size > 0) headers.cookie = [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  const csrf = c.cookies.get('svc_csrf')
  if (csrf) headers['x-csrf-token'] = csrf
  const response = h.app.handle(new Request(`http://leader.test${path}`, { method, headers, body: stream, duplex: 'half' } as RequestInit))
  return {
    admitted: asked,
    async finish() {
      finish()
      const res = await response
      const text = await res.text()
      return { status: res.status, body: text === '' ? null : JSON.parse(text) }
    },
  }
}

describe('a body held back past the end of its access', () => {
  test('a session ended by a password change mints no API token, though its request came before the change', async () => {
    const { h, alice, a } = await setup()
    const thief = sessionClient(h, alice.id)
    const mint = held(h, thief, 'POST', '/api/v1/api-tokens', JSON.stringify({ name: 'kept access' }))
    await mint.admitted
    const changed = await a.post('/api/v1/auth/password', { current_password: PASSWORD, new_password: 'a brand new passphrase 42' })
    expect(changed.status).toBe(204)
    const r = await mint.finish()
    expect(r.status).toBe(401)
    expect(r.body.token).toBeUndefined()
    expect((await a.get('/api/v1/api-tokens')).body.items).toEqual([])
  })

  test('a revoked API token creates no pool with a request it began before the revocation', async () => {
    const { h, alice, a } = await setup()
    const t = tokenClient(h, alice.id)
    const create = held(h, t, 'POST', '/api/v1/pools', JSON.stringify({ name: 'Planted' }))
    await create.admitted
    expect((await a.delete(`/api/v1/api-tokens/${t.tokenId}`)).status).toBe(200)
    expect((await create.finish()).status).toBe(401)
    expect((await a.get('/api/v1/pools?mine=true')).body.items.map((p: { name: string }) => p.name)).toEqual(['Alice GPUs'])
  })

  test('an admin demoted while sending changes no plan, and a deleted account gets a refusal, not a 500', async () => {
    const { h, alice } = await setup()
    const second = await seedUser(h, 'second@example.com', { role: 'admin' })
    const S = sessionClient(h, second.id)
    const first = sessionClient(h, (await seedUser(h, 'first@example.com', { role: 'admin' })).id)
    const limits = held(h, S, 'PATCH', '/api/v1/admin/role-limits/user', JSON.stringify({ max_pools: 1000 }))
    await limits.admitted
    expect((await first.patch(`/api/v1/admin/users/${second.id}`, { role: 'user' })).status).toBe(200)
    expect((await limits.finish()).status).toBe(403)
    expect((await first.get('/api/v1/admin/role-limits')).body.items.find((l: { role: string }) => l.role === 'user').max_pools).not.toBe(1000)

    const gone = held(h, sessionClient(h, alice.id), 'POST', '/api/v1/pools', JSON.stringify({ name: 'After me' }))
    await gone.admitted
    expect((await first.delete(`/api/v1/admin/users/${alice.id}`)).status).toBe(200)
    expect((await gone.finish()).status).toBe(401)
  })

  test("a member removed from the pool while uploading does not complete the upload; a revoked token's upload neither", async () => {
    const { h, carol, a, pool } = await setup()
    const data = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7) & 0xff)
    const sha256 = new Bun.CryptoHasher('sha256').update(data).digest('hex')
    const send = async (c: Client, name: string) => {
      const begun = await c.post('/api/v1/artifacts/uploads', { kind: 'file', name, size_bytes: data.byteLength, sha256, pool_id: pool.id })
      expect(begun.status).toBe(201)
      return held(h, c, 'PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, data, 'application/octet-stream')
    }
    const member = tokenClient(h, carol.id)
    const put = await send(member, 'planted.bin')
    await put.admitted
    expect((await a.delete(`/api/v1/pools/${pool.id}/members/${carol.id}`)).status).toBe(204)
    expect((await put.finish()).status).toBe(404)

    h.ctx.db.insert(poolMembers).values({ poolId: pool.id, userId: carol.id, role: 'member', createdAt: h.clock.now() }).run()
    const again = tokenClient(h, carol.id)
    const put2 = await send(again, 'planted-2.bin')
    await put2.admitted
    expect((await sessionClient(h, carol.id).delete(`/api/v1/api-tokens/${again.tokenId}`)).status).toBe(200)
    expect((await put2.finish()).status).toBe(401)
    expect((await a.get(`/api/v1/artifacts?pool_id=${pool.id}`)).body.items).toEqual([])
  })
})

describe('logins and password changes that overlap', () => {
  test('a login with the old password that was hashing while the password changed opens no session', async () => {
    const { h, alice } = await setup()
    const changed = await hashPassword('a brand new passphrase 42')
    const login = h.client().post('/api/v1/auth/login', { email: alice.email, password: PASSWORD })
    await Bun.sleep(0) // the login is hashing now (a few hundred milliseconds): the change lands meanwhile
    h.ctx.db.update(users).set({ passwordHash: changed }).where(eq(users.id, alice.id)).run()
    const r = await login
    expect(r.status).toBe(401)
    expect(r.headers.getSetCookie()).toEqual([])
  })

  test('a login racing the deletion of its account is refused, not a 500', async () => {
    const { h, A, alice } = await setup()
    const login = h.client().post('/api/v1/auth/login', { email: alice.email, password: PASSWORD })
    await Bun.sleep(0) // the login is hashing now
    expect((await A.delete(`/api/v1/admin/users/${alice.id}`)).status).toBe(200)
    expect((await login).status).toBe(401)
  })

  test("a password change revokes the join tokens the user made: a thief's token adds no machine afterwards", async () => {
    const { h, a, pool } = await setup()
    const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    expect((await a.post('/api/v1/auth/password', { current_password: PASSWORD, new_password: 'a brand new passphrase 42' })).status).toBe(204)
    const r = await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'planted' })
    expect(r.status).toBe(401)
    const audit = (await sessionClient(h, (await seedUser(h, 'root@example.com', { role: 'admin' })).id).get('/api/v1/admin/audit?kind=auth.password_change')).body.items
    expect(audit[0].detail).toMatchObject({ join_sessions_revoked: 1 })
  })
})

describe('event streams end when their viewer loses access', () => {
  async function streamOf(h: Harness, c: Client, path: string) {
    const headers: Record<string, string> = {}
    if (c.opts.bearer) headers.authorization = `Bearer ${c.opts.bearer}`
    const res = await h.app.handle(new Request(`http://leader.test${path}`, { headers }))
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let seen = ''
    return {
      /** Reads until the stream ends; answers what came. */
      async rest(): Promise<string> {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return seen
          seen += decoder.decode(value)
        }
      },
      /** Reads until `needle` has come (what came so far), or the stream ended without it (''). */
      async until(needle: string): Promise<string> {
        while (!seen.includes(needle)) {
          const { done, value } = await reader.read()
          if (done) return ''
          seen += decoder.decode(value)
        }
        return seen
      },
    }
  }

  test("a member removed from the pool, or whose token is revoked, reads no more of a machine's log", async () => {
    const { h, alice, carol, a, pool } = await setup()
    const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const fellow = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu-1' })).body
    const node = h.client({ bearer: fellow.node_token })
    const log = (line: string) => node.post(`/api/v1/workers/${fellow.fellow_id}/logs`, { lines: [line] })
    expect((await log('before')).status).toBeLessThan(300)

    const removed = await streamOf(h, tokenClient(h, carol.id), `/api/v1/workers/${fellow.fellow_id}/logs/stream`)
    const dave = await seedUser(h, 'dave@example.com')
    h.ctx.db.insert(poolMembers).values({ poolId: pool.id, userId: dave.id, role: 'member', createdAt: h.clock.now() }).run()
    const revoked = tokenClient(h, dave.id)
    const revokedStream = await streamOf(h, revoked, `/api/v1/workers/${fellow.fellow_id}/logs/stream`)
    const owner = await streamOf(h, tokenClient(h, alice.id), `/api/v1/workers/${fellow.fellow_id}/logs/stream`)
    expect(await removed.until('before')).toContain('before')
    expect(await revokedStream.until('before')).toContain('before')
    expect(await owner.until('before')).toContain('before')

    expect((await a.delete(`/api/v1/pools/${pool.id}/members/${carol.id}`)).status).toBe(204)
    expect((await sessionClient(h, dave.id).delete(`/api/v1/api-tokens/${revoked.tokenId}`)).status).toBe(200)
    expect((await log('SECRET after')).status).toBeLessThan(300)
    expect(await removed.rest()).not.toContain('SECRET')
    expect(await revokedStream.rest()).not.toContain('SECRET')
    expect(await owner.until('SECRET after')).toContain('SECRET after')
  })

  test("a disabled account's open job metrics stream ends", async () => {
    const { h, A, alice, carol, a, pool } = await setup()
    const join = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
    const fellow = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu-1' })).body
    const node = h.client({ bearer: fellow.node_token })
    await node.post('/api/v1/workers/heartbeat', {
      status: 'idle',
      hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: 40_000, utilization_pct: 0 }] },
    })
    const job = (await a.post('/api/v1/jobs', { name: 'train', pool_id: pool.id })).body
    expect(job.assignments[0].fellow_id).toBe(fellow.fellow_id)
    expect((await node.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step: 1, loss: 0.9 })).status).toBe(200)
    const viewer = await streamOf(h, tokenClient(h, carol.id), `/api/v1/jobs/${job.id}/metrics/stream`)
    const owner = await streamOf(h, tokenClient(h, alice.id), `/api/v1/jobs/${job.id}/metrics/stream`)
    expect(await viewer.until('"step":1')).toContain('"step":1')
    expect(await owner.until('"step":1')).toContain('"step":1')
    expect((await A.post(`/api/v1/admin/users/${carol.id}/status`, { status: 'disabled' })).status).toBe(200)
    expect((await node.post(`/api/v1/jobs/${job.id}/status`, { status: 'running', step: 7, loss: 0.5 })).status).toBe(200)
    expect(await viewer.rest()).not.toContain('"step":7')
    expect(await owner.until('"step":7')).toContain('"step":7')
  })
})
