// Cancelling an upload (DELETE /api/v1/artifacts/uploads/{id}): its uploader drops it, row and temp
// file, and its declared size leaves the pool's quota at once; nobody else can (404), nor anyone
// while a request writes it (409). On a full disk this is how a partial temp file is let go of.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'

const QUOTA = 100_000
const h = makeHarness({ SVC_ARTIFACT_POOL_QUOTA_BYTES: String(QUOTA) })
afterAll(() => h.close())

const sha256 = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')
const octets = { 'content-type': 'application/octet-stream' }
const alice = await seedUser(h, 'alice@example.com')
const a = sessionClient(h, alice.id)
const pool = (await a.post('/api/v1/pools', { name: 'Pool' })).body
const join1 = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
const fellow = h.client({ bearer: (await h.client({ bearer: join1 }).post('/api/v1/workers/register', { hostname: 'gpu' })).body.node_token })

describe('cancelling an upload', () => {
  test('its uploader drops it with its temp file, its size leaves the quota, and it is gone (404)', async () => {
    const data = new Uint8Array(80_000).fill(3)
    const begun = await a.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'big.bin', size_bytes: data.byteLength, sha256: sha256(data), pool_id: pool.id })
    const id = begun.body.upload_id as string
    expect((await a.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, data.subarray(0, 30_000), octets)).body.offset).toBe(30_000)
    const temp = join(h.dir, 'artifacts', 'uploads', id)
    expect(existsSync(temp)).toBe(true)
    // The pool's quota is held by it: another 80 000 bytes do not fit.
    const other = { kind: 'model', name: 'other.bin', size_bytes: 80_000, sha256: sha256(new Uint8Array(80_000)), pool_id: pool.id }
    expect((await a.post('/api/v1/artifacts/uploads', other)).status).toBe(409)
    // Nobody else may: the pool's fellow (not its uploader) and a caller without a credential.
    expect((await fellow.delete(`/api/v1/artifacts/uploads/${id}`)).status).toBe(404)
    expect((await h.client().delete(`/api/v1/artifacts/uploads/${id}`)).status).toBe(401)
    expect(existsSync(temp)).toBe(true)
    const r = await a.delete(`/api/v1/artifacts/uploads/${id}`)
    expect(r.status).toBe(204)
    expect(existsSync(temp)).toBe(false)
    expect((await a.get(`/api/v1/artifacts/uploads/${id}`)).status).toBe(404)
    expect((await a.delete(`/api/v1/artifacts/uploads/${id}`)).status).toBe(404)
    expect((await a.post('/api/v1/artifacts/uploads', other)).status).toBe(201)
  })

  test('not while a request writes it (409); once that request has ended it can be', async () => {
    const data = new Uint8Array(1_000).fill(4)
    const id = (await a.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'slow.bin', size_bytes: 1_000, sha256: sha256(data), pool_id: pool.id })).body.upload_id as string
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const slow = {
      declaredBytes: null,
      copyable: false,
      toFile: () => Promise.reject(new Error('not copyable')),
      async *chunks() {
        yield data.subarray(0, 100)
        await gate
      },
    }
    const by = { kind: 'user', userId: alice.id, role: 'user', credentialId: '' } as never
    const writing = h.services.artifacts.write(by, id, 0, slow)
    const refused = await a.delete(`/api/v1/artifacts/uploads/${id}`)
    expect([refused.status, refused.body.code]).toEqual([409, 'conflict'])
    release()
    expect((await writing).done).toBe(false)
    expect((await a.delete(`/api/v1/artifacts/uploads/${id}`)).status).toBe(204)
  })
})
