// The model catalog (servable manifests) and the scoping of the OpenAI-shaped model list, plus the
// error shape of the chat routes and their use by the web page's session.
import { afterAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { makeHarness, seedUser, sessionClient, tokenClient, type Client } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { servables } from '../../src/db/schema'
import { newId } from '../../src/crypto'

const h = makeHarness()
const server = listen(h)
afterAll(async () => {
  await server.stop()
  h.close()
})

const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
const alice = await seedUser(h, 'alice@example.com')
const bob = await seedUser(h, 'bob@example.com')
const a = sessionClient(h, alice.id)
const b = sessionClient(h, bob.id)
const poolA = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
const poolB = (await b.post('/api/v1/pools', { name: 'Bob GPUs' })).body

async function fellow(owner: Client, poolId: string, servables: string[]) {
  const join = (await owner.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
  const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu' })).body
  const c = h.client({ bearer: reg.node_token })
  expect((await c.post('/api/v1/workers/heartbeat', { status: 'idle', servables })).status).toBe(200)
  return { id: reg.fellow_id as string, c }
}
const fa = await fellow(a, poolA.id, ['tiny-llm'])
const fb = await fellow(b, poolB.id, ['secret-b'])
const manifest = (name: string, over: Record<string, unknown> = {}) => ({ name, version: '1', format: 'safetensors', size_bytes: 1000, ...over })
// A manifest from before stamping: no pool.
h.ctx.db.insert(servables).values({ id: newId(), name: 'legacy-llm', version: '0', format: 'gguf', sizeBytes: 5, poolId: null, jobId: null, fellowId: null, createdAt: h.clock.now() }).run()

const openai = (userId: string) => new OpenAI({ baseURL: `${server.url}/api/v1`, apiKey: tokenClient(h, userId).opts.bearer!, maxRetries: 0 })

describe('servable manifests', () => {
  test('a fellow publishes a manifest stamped with its pool; posting it again refreshes the same row', async () => {
    const r = await fa.c.post('/api/v1/servables', manifest('tiny-llm'))
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({ name: 'tiny-llm', version: '1', format: 'safetensors', size_bytes: 1000, pool_id: poolA.id, job_id: null, fellow_id: fa.id })
    const again = await fa.c.post('/api/v1/servables', manifest('tiny-llm', { size_bytes: 2000 }))
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ id: r.body.id, size_bytes: 2000 })
    expect((await fb.c.post('/api/v1/servables', manifest('secret-b'))).body.pool_id).toBe(poolB.id)
  })

  test('the stamp is the producing job\'s pool: a job of another pool is not found, an unknown (purged) job leaves the fellow\'s pool', async () => {
    const jobA = (await a.post('/api/v1/jobs', { name: 'train', pool_id: poolA.id })).body
    const jobB = (await b.post('/api/v1/jobs', { name: 'train', pool_id: poolB.id })).body
    const own = await fa.c.post('/api/v1/servables', manifest('tiny-llm', { version: '2', job_id: jobA.id }))
    expect(own.status).toBe(201)
    expect(own.body).toMatchObject({ pool_id: poolA.id, job_id: jobA.id })
    const foreign = await fa.c.post('/api/v1/servables', manifest('tiny-llm', { version: '3', job_id: jobB.id }))
    expect(foreign.status).toBe(404)
    const purged = await fa.c.post('/api/v1/servables', manifest('tiny-llm', { version: '4', job_id: '01a20184-99e9-7296-9fc7-75b6e5358e98' }))
    expect(purged.body.pool_id).toBe(poolA.id)
  })

  test('only fellows post manifests, and malformed ones are refused', async () => {
    expect((await a.post('/api/v1/servables', manifest('x'))).status).toBe(403)
    expect((await h.client().post('/api/v1/servables', manifest('x'))).status).toBe(401)
    expect((await fa.c.post('/api/v1/servables', manifest('../etc/passwd'))).status).toBe(422)
    expect((await fa.c.post('/api/v1/servables', manifest('x', { size_bytes: -1 }))).status).toBe(422)
    expect((await fa.c.post('/api/v1/servables', manifest('x', { pool_id: poolB.id }))).status).toBe(422)
  })

  test('members list their pools\' manifests plus unstamped ones; admins see all; fellows are refused', async () => {
    const names = async (c: Client, q = '') => ((await c.get(`/api/v1/servables${q}`)).body.items as { name: string }[]).map((s) => s.name)
    expect(new Set(await names(a))).toEqual(new Set(['legacy-llm', 'tiny-llm']))
    expect(new Set(await names(b))).toEqual(new Set(['legacy-llm', 'secret-b']))
    expect(new Set(await names(sessionClient(h, admin.id)))).toEqual(new Set(['legacy-llm', 'secret-b', 'tiny-llm']))
    expect(await names(a, `?pool_id=${poolB.id}`)).toEqual([])
    expect(new Set(await names(a, `?pool_id=${poolA.id}`))).toEqual(new Set(['tiny-llm']))
    expect((await fa.c.get('/api/v1/servables')).status).toBe(403)
  })
})

describe('models are scoped to the caller\'s pools', () => {
  test('a model only in pool B is invisible to a member of A: not listed, and asking for it is 404 model_not_found', async () => {
    const ids = async (userId: string) => (await openai(userId).models.list()).data.map((m) => m.id)
    expect(await ids(alice.id)).toEqual(['legacy-llm', 'tiny-llm'])
    expect(await ids(bob.id)).toEqual(['legacy-llm', 'secret-b'])
    expect(await ids(admin.id)).toEqual(['legacy-llm', 'secret-b', 'tiny-llm'])
    const err = await openai(alice.id).chat.completions.create({ model: 'secret-b', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e)
    expect(err).toBeInstanceOf(OpenAI.NotFoundError)
    expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found' })
    expect(await openai(alice.id).models.retrieve('secret-b').catch((e) => e.status)).toBe(404)
    expect(await openai(alice.id).models.retrieve('tiny-llm')).toMatchObject({ id: 'tiny-llm', object: 'model', fellows: 1 })
    expect(await openai(alice.id).models.retrieve('legacy-llm')).toMatchObject({ fellows: 0 })
  })
})

describe('the chat routes answer errors in OpenAI\'s shape', () => {
  const chat = { model: 'tiny-llm', messages: [{ role: 'user', content: 'hi' }] }

  test('no credential 401, a fellow\'s token 403, a bad body 400 naming the field (OpenAI\'s status), n > 1 refused', async () => {
    const none = await h.client().post('/api/v1/chat/completions', chat)
    expect(none.status).toBe(401)
    expect(none.headers.get('content-type')).toStartWith('application/json')
    expect(none.body.error).toMatchObject({ type: 'authentication_error', code: 'unauthorized', param: null })
    expect((await fa.c.get('/api/v1/models')).body.error).toMatchObject({ type: 'permission_error', code: 'forbidden' })
    const bad = await tokenClient(h, alice.id).post('/api/v1/chat/completions', { model: 'tiny-llm' })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatchObject({ type: 'invalid_request_error', code: 'validation_failed', param: 'messages' })
    expect((await tokenClient(h, alice.id).post('/api/v1/chat/completions', { ...chat, n: 2 })).status).toBe(400)
    // The rest of the API keeps problem+json.
    expect((await h.client().get('/api/v1/servables')).headers.get('content-type')).toStartWith('application/problem+json')
  })

  test('the web page may call with its session, CSRF header included', async () => {
    const page = sessionClient(h, alice.id)
    const refused = await page.post('/api/v1/chat/completions', chat, { 'x-csrf-token': 'wrong' })
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe('csrf_failed')
    const pending = page.post('/api/v1/chat/completions', chat)
    let req: { request_id: string } | null = null
    for (let i = 0; i < 100 && !req; i++) {
      const r = await fa.c.get(`/api/v1/infer/requests/${fa.id}?wait_ms=50`)
      if (r.status === 200) req = r.body
    }
    expect((await fa.c.post(`/api/v1/infer/responses/${req!.request_id}`, { frames: [{ delta: 'hi there' }, { done: true }] })).status).toBe(204)
    const res = await pending
    expect(res.status).toBe(200)
    expect(res.body.choices[0].message.content).toBe('hi there')
  })
})
