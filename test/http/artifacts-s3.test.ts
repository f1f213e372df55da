// The artifact store on S3 (SVC_ARTIFACTS_URL=s3://bucket/prefix) against a real S3-compatible
// server (s3rver on loopback): the same upload, download, delete and collection flow as on local
// files, and the blob store contract both implementations keep.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'
import { startFakeS3 } from '../helpers/s3'
import { BLOB_GRACE_MS } from '../../src/artifacts/collector'
import { LocalBlobStore, S3BlobStore, type BlobStore } from '../../src/artifacts/store'

const s3 = await startFakeS3('bucket')
const h = makeHarness({
  SVC_ARTIFACTS_URL: 's3://bucket/prefix/leader',
  SVC_ARTIFACTS_S3_ENDPOINT: s3.endpoint,
  SVC_ARTIFACTS_S3_REGION: 'us-east-1',
  SVC_ARTIFACTS_S3_ACCESS_KEY_ID: s3.accessKeyId,
  SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
})
// Object ages are the server's (real time): the fake clock starts there (see artifacts.test.ts).
h.clock.set(Date.now())
afterAll(async () => {
  h.close()
  await s3.stop()
})

const bucket = new Bun.S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey })
// Blobs, and nothing else but the leader's claim on the prefix (src/artifacts/claim.ts).
const keysInBucket = async () => ((await bucket.list({ prefix: '' })).contents ?? []).map((o) => o.key).filter((k) => k !== 'prefix/leader/leader.json').sort()
const sha256 = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')
const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff)
const keyOf = (sha: string) => `prefix/leader/sha256/${sha.slice(0, 2)}/${sha}`
const octets = { 'content-type': 'application/octet-stream' }

const alice = await seedUser(h, 'alice@example.com')
const a = sessionClient(h, alice.id)
const pool = (await a.post('/api/v1/pools', { name: 'S3 pool' })).body
const join1 = (await a.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
const reg = (await h.client({ bearer: join1 }).post('/api/v1/workers/register', { hostname: 'gpu' })).body
const f = h.client({ bearer: reg.node_token })
const job = (await a.post('/api/v1/jobs', { name: 'train', pool_id: pool.id })).body

describe('artifacts on S3', () => {
  const data = bytes(70_000, 5)
  let id = ''

  test('an upload in two parts lands in the bucket under prefix/sha256/<2 hex>/<hex>, nothing under the state dir but the temp file while it lasts', async () => {
    const begun = await f.post('/api/v1/artifacts/uploads', { kind: 'checkpoint', name: 'ck', size_bytes: data.byteLength, sha256: sha256(data), job_id: job.id, stage: 0, step: 3 })
    expect(begun.status).toBe(201)
    const up = begun.body.upload_id
    const first = await f.call('PUT', `/api/v1/artifacts/uploads/${up}?offset=0`, data.subarray(0, 30_000), octets)
    expect(first.body).toEqual({ upload_id: up, offset: 30_000 })
    expect(existsSync(join(h.dir, 'artifacts', 'uploads', up))).toBe(true)
    expect((await f.get(`/api/v1/artifacts/uploads/${up}`)).body.offset).toBe(30_000)
    const done = await f.call('PUT', `/api/v1/artifacts/uploads/${up}?offset=30000`, data.subarray(30_000), octets)
    expect(done.status).toBe(201)
    id = done.body.artifact.id
    expect(await keysInBucket()).toEqual([keyOf(sha256(data))])
    expect(existsSync(join(h.dir, 'artifacts', 'uploads', up))).toBe(false)
    expect(existsSync(join(h.dir, 'artifacts', 'blobs'))).toBe(false)
  })

  test('downloads stream from the bucket, whole or one range', async () => {
    const whole = await a.get(`/api/v1/artifacts/${id}/content`)
    expect([whole.status, whole.headers.get('content-length'), whole.headers.get('etag')]).toEqual([200, '70000', `"${sha256(data)}"`])
    expect(whole.body).toEqual(data)
    const part = await f.get(`/api/v1/artifacts/${id}/content`, { range: 'bytes=65000-69999' })
    expect([part.status, part.headers.get('content-range')]).toEqual([206, 'bytes 65000-69999/70000'])
    expect(part.body).toEqual(data.subarray(65_000))
    expect((await f.get(`/api/v1/jobs/${job.id}/checkpoints/latest?stage=0`)).body.id).toBe(id)
  })

  test('a checksum mismatch leaves nothing in the bucket', async () => {
    const other = bytes(500, 6)
    const begun = await f.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'bad', size_bytes: 500, sha256: sha256(bytes(500, 7)) })
    const r = await f.call('PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, other, octets)
    expect([r.status, r.body.code]).toEqual([422, 'checksum_mismatch'])
    expect(await keysInBucket()).toEqual([keyOf(sha256(data))])
  })

  test('a deleted artifact\'s object goes with the first collection after the grace hour', async () => {
    expect((await a.delete(`/api/v1/artifacts/${id}`)).status).toBe(204)
    await h.services.artifacts.collect()
    expect(await keysInBucket()).toEqual([keyOf(sha256(data))])
    h.clock.set(Date.now() + BLOB_GRACE_MS + 60_000)
    expect((await h.services.artifacts.collect()).blobs).toBe(1)
    expect(await keysInBucket()).toEqual([])
  })

  test('an artifact whose object is missing answers 410 for its content and is reported by the collector', async () => {
    const lost = bytes(100, 8)
    const begun = await f.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'lost', size_bytes: 100, sha256: sha256(lost) })
    const art = (await f.call('PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, lost, octets)).body.artifact
    await bucket.delete(keyOf(sha256(lost)))
    const r = await a.get(`/api/v1/artifacts/${art.id}/content`)
    expect([r.status, r.body.code]).toEqual([410, 'gone'])
    expect((await h.services.artifacts.collect()).missing).toBe(1)
  })
})

describe('the blob store contract, on local files and on S3', () => {
  const stores: [string, () => BlobStore][] = [
    ['local', () => new LocalBlobStore(mkdtempSync(join(tmpdir(), 'svc-blobs-')))],
    ['s3', () => new S3BlobStore({ bucket: s3.bucket, prefix: 'contract', endpoint: s3.endpoint, region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, sessionToken: null })],
  ]
  for (const [kind, make] of stores) {
    test(`${kind}: a file put under its hash is stat'ed, read whole and by range, listed, put again (kept once), deleted`, async () => {
      const store = make()
      const content = bytes(4096, 9)
      const sha = sha256(content)
      const file = (name: string) => {
        const p = join(mkdtempSync(join(tmpdir(), 'svc-put-')), name)
        writeFileSync(p, content)
        return p
      }
      expect(await store.stat(sha)).toBeNull()
      const p1 = file('a')
      await store.putFile(sha, p1)
      expect(existsSync(p1)).toBe(false)
      expect(await store.stat(sha)).toMatchObject({ sha256: sha, size: 4096 })
      expect(new Uint8Array(await new Response(store.read(sha)).arrayBuffer())).toEqual(content)
      expect(new Uint8Array(await new Response(store.read(sha, { start: 100, end: 200 })).arrayBuffer())).toEqual(content.subarray(100, 200))
      const p2 = file('b')
      await store.putFile(sha, p2)
      expect(existsSync(p2)).toBe(false)
      const listed: string[] = []
      for await (const b of store.list()) listed.push(b.sha256)
      expect(listed).toEqual([sha])
      await store.delete(sha)
      expect(await store.stat(sha)).toBeNull()
      expect(() => store.read('../../etc/passwd')).toThrow()
    })
  }
})
