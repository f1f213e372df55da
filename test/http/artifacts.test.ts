// The artifact store through the API: resumable uploads checked against their SHA-256, the size
// and pool limits, pool scoping for people and fellows, ranged downloads, deletion, the collector
// (idle uploads, unnamed blobs) and a job purge taking its artifacts along.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { eq, inArray } from 'drizzle-orm'
import { makeHarness, seedUser, sessionClient, type Client, type Harness } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { until } from '../helpers/until'
import { artifacts, artifactUploads, auditLog, jobs, poolMembers, pools } from '../../src/db/schema'
import { BLOB_GRACE_MS, UPLOAD_IDLE_MS } from '../../src/artifacts/collector'
import { ArtifactService, MAX_OPEN_UPLOADS } from '../../src/artifacts/service'
import type { BlobStore } from '../../src/artifacts/store'

const MAX = 256 * 1024
const QUOTA = 1024 * 1024
const h = makeHarness({ SVC_ARTIFACT_MAX_BYTES: String(MAX), SVC_ARTIFACT_POOL_QUOTA_BYTES: String(QUOTA) })
// Blob ages are file times (real time), which the collector compares with the leader's clock: the
// fake clock starts at the real time here, and the tests move it past the ages they mean.
h.clock.set(Date.now())
const server = listen(h)
afterAll(async () => {
  await server.stop()
  h.close()
})

export const sha256 = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')
const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff)
const blobPath = (hh: Harness, sha: string) => join(hh.dir, 'artifacts', 'blobs', 'sha256', sha.slice(0, 2), sha)
const tempPath = (hh: Harness, id: string) => join(hh.dir, 'artifacts', 'uploads', id)
const octets = { 'content-type': 'application/octet-stream' }

const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
const alice = await seedUser(h, 'alice@example.com')
const bob = await seedUser(h, 'bob@example.com')
const carol = await seedUser(h, 'carol@example.com')
const a = sessionClient(h, alice.id)
const b = sessionClient(h, bob.id)
const poolA = (await a.post('/api/v1/pools', { name: 'Alice GPUs' })).body
const poolB = (await b.post('/api/v1/pools', { name: 'Bob GPUs' })).body
// Carol is a plain member of Alice's pool: she may read its artifacts, not delete them.
h.ctx.db.insert(poolMembers).values({ poolId: poolA.id, userId: carol.id, role: 'member', createdAt: h.clock.now() }).run()
const c = sessionClient(h, carol.id)

async function fellow(owner: Client, poolId: string) {
  const join = (await owner.post('/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token
  const reg = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: 'gpu' })).body
  return { id: reg.fellow_id as string, token: reg.node_token as string, c: h.client({ bearer: reg.node_token }) }
}
const fa = await fellow(a, poolA.id)
const fb = await fellow(b, poolB.id)
const fa2 = await fellow(a, poolA.id)
const jobA = (await a.post('/api/v1/jobs', { name: 'train', pool_id: poolA.id, stages: 2 })).body
// jobA runs on Alice's two fellows (placed by hand: they send no heartbeats here): fa holds stage
// 0, fa2 stage 1. Only they store its checkpoints, each for its own stage.
h.ctx.db.update(jobs).set({ status: 'running', assignments: [{ stage: 0, fellow_id: fa.id }, { stage: 1, fellow_id: fa2.id }] }).where(eq(jobs.id, jobA.id)).run()
const jobB = (await b.post('/api/v1/jobs', { name: 'train', pool_id: poolB.id })).body

/** Declares and sends an artifact in one PUT; answers the PUT. */
async function upload(f: { c: Client }, data: Uint8Array, over: Record<string, unknown> = {}) {
  const begun = await f.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'weights.bin', size_bytes: data.byteLength, sha256: sha256(data), ...over })
  expect(begun.status).toBe(201)
  const put = await f.c.call('PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, data, octets)
  return { uploadId: begun.body.upload_id as string, ...put }
}

/** A PUT over a real socket that stops after `send` of `declared` bytes and hangs up. */
function cutOffPut(path: string, token: string, declared: number, send: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = connect(server.port, '127.0.0.1', () => {
      sock.write(`PUT ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${declared}\r\n\r\n`)
      sock.write(send, () => setTimeout(() => (sock.destroy(), resolve()), 50))
    })
    sock.on('error', reject)
  })
}

describe('uploads', () => {
  test('a fellow uploads in two parts, is cut off, asks where it stands and resumes; the artifact is kept once, by its hash', async () => {
    const data = bytes(200_000)
    const begun = await fetch(`${server.url}/api/v1/artifacts/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fa.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'checkpoint', name: 'stage0.ckpt', size_bytes: data.byteLength, sha256: sha256(data), job_id: jobA.id, stage: 0, step: 100 }),
    })
    expect(begun.status).toBe(201)
    const { upload_id: id, offset, size_bytes } = (await begun.json()) as { upload_id: string; offset: number; size_bytes: number }
    expect([offset, size_bytes]).toEqual([0, 200_000])
    const put = (at: number, body: Uint8Array) =>
      fetch(`${server.url}/api/v1/artifacts/uploads/${id}?offset=${at}`, { method: 'PUT', headers: { authorization: `Bearer ${fa.token}`, ...octets }, body })

    const first = await put(0, data.subarray(0, 50_000))
    expect(first.status).toBe(200)
    expect(await first.json()).toEqual({ upload_id: id, offset: 50_000 })

    // The second part breaks off after 30 000 of its 150 000 bytes: those are kept.
    await cutOffPut(`/api/v1/artifacts/uploads/${id}?offset=50000`, fa.token, 150_000, data.subarray(50_000, 80_000))
    const state = await until(async () => {
      const r = await fa.c.get(`/api/v1/artifacts/uploads/${id}`)
      return r.body.offset === 80_000 ? r.body : null
    }, 'the cut-off bytes to be recorded')
    expect(state).toEqual({ upload_id: id, offset: 80_000, size_bytes: 200_000 })

    // Resuming from the wrong place is refused with the right one.
    const wrong = await put(50_000, data.subarray(50_000))
    expect(wrong.status).toBe(409)
    expect(wrong.headers.get('content-type')).toStartWith('application/problem+json')
    expect(await wrong.json()).toMatchObject({ code: 'conflict', offset: 80_000 })

    const done = await put(80_000, data.subarray(80_000))
    expect(done.status).toBe(201)
    const { artifact } = (await done.json()) as { artifact: Record<string, unknown> }
    expect(artifact).toMatchObject({ pool_id: poolA.id, job_id: jobA.id, stage: 0, step: 100, kind: 'checkpoint', name: 'stage0.ckpt', size_bytes: 200_000, sha256: sha256(data), fellow_id: fa.id })
    expect(existsSync(blobPath(h, sha256(data)))).toBe(true)
    expect(existsSync(tempPath(h, id))).toBe(false)
    expect((await fa.c.get(`/api/v1/artifacts/uploads/${id}`)).status).toBe(404)
    const back = await fa.c.get(`/api/v1/artifacts/${artifact.id}/content`)
    expect(back.status).toBe(200)
    expect(sha256(back.body)).toBe(sha256(data))
  })

  test('a first PUT cut off while Bun copies it to disk keeps what arrived, hashed; the resume completes with the right SHA-256', async () => {
    // A declared length from the start of the file takes the copy path (BodyStream.toFile), not chunks.
    const data = bytes(200_000, 21)
    const id = (await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'copied', size_bytes: data.byteLength, sha256: sha256(data) })).body.upload_id as string
    await cutOffPut(`/api/v1/artifacts/uploads/${id}?offset=0`, fa.token, data.byteLength, data.subarray(0, 120_000))
    const at = await until(async () => {
      const r = await fa.c.get(`/api/v1/artifacts/uploads/${id}`)
      return r.body.offset > 0 ? (r.body.offset as number) : null
    }, 'the cut-off bytes to be recorded')
    // What the socket delivered before it closed, never more than was sent.
    expect(at).toBeLessThanOrEqual(120_000)
    const done = await fetch(`${server.url}/api/v1/artifacts/uploads/${id}?offset=${at}`, { method: 'PUT', headers: { authorization: `Bearer ${fa.token}`, ...octets }, body: data.subarray(at) })
    expect(done.status).toBe(201)
    expect(((await done.json()) as { artifact: { sha256: string } }).artifact.sha256).toBe(sha256(data))
  })

  test('a copied PUT that carries more than the upload expects writes nothing past its size', async () => {
    const data = bytes(1000, 22)
    const id = (await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'exact', size_bytes: 1000, sha256: sha256(data) })).body.upload_id as string
    const r = await fetch(`${server.url}/api/v1/artifacts/uploads/${id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${fa.token}`, ...octets }, body: bytes(1500, 22) })
    expect(r.status).toBe(413)
    expect((await fa.c.get(`/api/v1/artifacts/uploads/${id}`)).body.offset).toBe(0)
    const done = await fetch(`${server.url}/api/v1/artifacts/uploads/${id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${fa.token}`, ...octets }, body: data })
    expect(done.status).toBe(201)
  })

  test('a store that fails at completion answers 503 and keeps the upload complete; an empty PUT at its end publishes it', async () => {
    const real = h.services.artifacts.store
    let fail = true
    const flaky: BlobStore = {
      location: real.location,
      exclusive: real.exclusive,
      putFile: (sha, path) => (fail ? Promise.reject(new Error('bucket unreachable')) : real.putFile(sha, path)),
      stat: (sha) => real.stat(sha),
      read: (sha, range) => real.read(sha, range),
      open: (sha, size, range) => real.open(sha, size, range),
      delete: (sha) => real.delete(sha),
      list: () => real.list(),
      check: () => real.check(),
      claim: (mine) => real.claim(mine),
    }
    const svc = new ArtifactService(h.ctx, flaky)
    const node = { kind: 'node' as const, fellowId: fa.id, poolId: poolA.id, credentialId: '' }
    const data = bytes(300, 13)
    const up = svc.beginUpload(node, { kind: 'file', name: 'flaky', size_bytes: 300, sha256: sha256(data) })
    // A body the way the service reads one, in one chunk (not copyable: no connection behind it).
    const once = (b: Uint8Array) => ({
      declaredBytes: b.byteLength,
      copyable: false,
      toFile: () => Promise.reject(new Error('not copyable')),
      async *chunks() {
        if (b.byteLength > 0) yield b
      },
    })
    const refused = await svc.write(node, up.upload_id, 0, once(data)).catch((e) => e)
    expect([refused.code, refused.extra.retryAfterS]).toEqual(['service_unavailable', 5])
    expect(await svc.uploadState(node, up.upload_id)).toEqual({ upload_id: up.upload_id, offset: 300, size_bytes: 300 })
    fail = false
    const done = await svc.write(node, up.upload_id, 300, once(new Uint8Array(0)))
    expect(done.done && done.artifact.sha256).toBe(sha256(data))
    expect(existsSync(blobPath(h, sha256(data)))).toBe(true)
  })

  test('an empty file is uploaded with an empty PUT (Content-Length: 0), over a real connection; a JSON one is still 415', async () => {
    const empty = new Uint8Array(0)
    const begun = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'empty.txt', size_bytes: 0, sha256: sha256(empty) })
    const put = (type: string) =>
      fetch(`${server.url}/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${fa.token}`, 'content-type': type, 'content-length': '0' } })
    const json = await put('application/json')
    expect(json.status).toBe(415)
    const done = await put('application/octet-stream')
    expect(done.status).toBe(201)
    const { artifact } = (await done.json()) as { artifact: { id: string; size_bytes: number; sha256: string } }
    expect([artifact.size_bytes, artifact.sha256]).toEqual([0, sha256(empty)])
    const content = await fa.c.get(`/api/v1/artifacts/${artifact.id}/content`)
    expect(content.status).toBe(200)
  })

  test('the same file opened again by the same uploader resumes the upload under way (a CLI killed and run again started over, and the first held quota for a day)', async () => {
    const data = bytes(5000, 21)
    const open = (c: Client, over: Record<string, unknown> = {}) => c.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'again.bin', size_bytes: data.byteLength, sha256: sha256(data), pool_id: poolA.id, ...over })
    const first = await open(a)
    expect(first.status).toBe(201)
    expect((await a.call('PUT', `/api/v1/artifacts/uploads/${first.body.upload_id}?offset=0`, data.subarray(0, 2000), octets)).body.offset).toBe(2000)
    const again = await open(a)
    expect([again.status, again.body]).toEqual([200, { upload_id: first.body.upload_id, offset: 2000, size_bytes: 5000 }])
    const pending = () => h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.name, 'again.bin')).all().length
    expect(pending()).toBe(1)
    // Another file, another name or another person: an upload of its own.
    expect((await open(a, { name: 'other.bin' })).status).toBe(201)
    expect((await open(c)).status).toBe(201)
    expect(pending()).toBe(2)
    const done = await a.call('PUT', `/api/v1/artifacts/uploads/${first.body.upload_id}?offset=2000`, data.subarray(2000), octets)
    expect(done.status).toBe(201)
    // Once it is an artifact, opening the file again is a new upload.
    expect((await open(a)).status).toBe(201)
    h.ctx.db.delete(artifactUploads).where(inArray(artifactUploads.name, ['again.bin', 'other.bin'])).run()
  })

  test('one request writes an upload at a time: a second one meanwhile is 409 with the offset', async () => {
    const data = bytes(1000, 12)
    const id = (await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'busy', size_bytes: 1000, sha256: sha256(data) })).body.upload_id
    // A body that sends 100 bytes and then waits: its request holds the upload.
    let release = () => {}
    const held = new Promise<void>((r) => (release = r))
    const slow = new ReadableStream<Uint8Array>({
      async start(ctl) {
        ctl.enqueue(data.subarray(0, 100))
        await held
        ctl.close()
      },
    })
    const first = fetch(`${server.url}/api/v1/artifacts/uploads/${id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${fa.token}`, ...octets }, body: slow, duplex: 'half' } as RequestInit)
    await until(() => Bun.file(tempPath(h, id)).size === 100, 'the first writer to have written')
    const second = await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, data, octets)
    expect(second.status).toBe(409)
    expect(second.body).toMatchObject({ code: 'conflict', offset: 0 })
    release()
    expect(await (await first).json()).toEqual({ upload_id: id, offset: 100 })
    expect((await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=100`, data.subarray(100), octets)).status).toBe(201)
  })

  test('bytes that do not hash to the declared SHA-256 are refused with 422 checksum_mismatch, and nothing of them is kept', async () => {
    const data = bytes(5000, 2)
    const begun = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'x', size_bytes: 5000, sha256: sha256(bytes(5000, 3)) })
    const id = begun.body.upload_id
    const r = await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, data, octets)
    expect(r.status).toBe(422)
    expect(r.body).toMatchObject({ code: 'checksum_mismatch', sha256: sha256(data) })
    expect(h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.id, id)).all()).toEqual([])
    expect(h.ctx.db.select().from(artifacts).where(eq(artifacts.sha256, sha256(data))).all()).toEqual([])
    expect(existsSync(tempPath(h, id))).toBe(false)
    expect(existsSync(blobPath(h, sha256(data)))).toBe(false)
    expect((await fa.c.get(`/api/v1/artifacts/uploads/${id}`)).status).toBe(404)
  })

  test('an artifact over SVC_ARTIFACT_MAX_BYTES is refused with 413, and so is a body longer than the upload expects, writing nothing past its size', async () => {
    const big = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'big', size_bytes: MAX + 1, sha256: 'a'.repeat(64) })
    expect(big.status).toBe(413)
    expect(big.body).toMatchObject({ code: 'payload_too_large', max_bytes: MAX })
    const begun = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'small', size_bytes: 100, sha256: sha256(bytes(100)) })
    const id = begun.body.upload_id
    const over = await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, bytes(101), octets)
    expect(over.status).toBe(413)
    expect(over.body).toMatchObject({ code: 'payload_too_large', offset: 0 })
    expect((await fa.c.get(`/api/v1/artifacts/uploads/${id}`)).body.offset).toBe(0)
    // A body without a length (chunked) is cut at the chunk that crosses the size.
    const chunked = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(bytes(60))
        ctl.enqueue(bytes(60))
        ctl.close()
      },
    })
    const res = await h.app.handle(new Request(`http://leader.test/api/v1/artifacts/uploads/${id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${fa.token}`, ...octets }, body: chunked }))
    expect(res.status).toBe(413)
    expect(await res.json()).toMatchObject({ offset: 60 })
    expect(Bun.file(tempPath(h, id)).size).toBe(60)
    const rest = await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=60`, bytes(100).subarray(60), octets)
    expect(rest.status).toBe(201)
  })

  test('one person has at most 100 uploads open in a pool (empty ones passed the byte quota without end); others still may', async () => {
    const declare = (cl: Client, i: number) => cl.post('/api/v1/artifacts/uploads', { kind: 'file', name: `empty-${i}.bin`, size_bytes: 0, sha256: 'c'.repeat(64), pool_id: poolA.id })
    for (let i = 0; i < MAX_OPEN_UPLOADS; i++) expect((await declare(c, i)).status).toBe(201)
    const refused = await declare(c, MAX_OPEN_UPLOADS)
    expect(refused.status).toBe(409)
    expect(refused.body).toMatchObject({ code: 'conflict', limit: MAX_OPEN_UPLOADS })
    expect(refused.body.detail).toContain('uploads of yours are under way')
    expect((await declare(a, 0)).status).toBe(201)
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.poolId, poolA.id)).run()
    expect((await declare(c, MAX_OPEN_UPLOADS)).status).toBe(201)
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.poolId, poolA.id)).run()
  })

  test("past the pool's quota (stored plus uploads under way) a new upload is refused with 409 artifact_quota_exceeded naming use and quota", async () => {
    const used = () => {
      const stored = h.ctx.db.select().from(artifacts).where(eq(artifacts.poolId, poolB.id)).all().reduce((n, r) => n + r.sizeBytes, 0)
      return stored + h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.poolId, poolB.id)).all().reduce((n, r) => n + r.sizeBytes, 0)
    }
    let n = 0
    const declare = (size: number) => fb.c.post('/api/v1/artifacts/uploads', { kind: 'model', name: `m${n++}`, size_bytes: size, sha256: 'b'.repeat(64) })
    while (used() + MAX <= QUOTA) expect((await declare(MAX)).status).toBe(201)
    const before = used()
    const refused = await declare(QUOTA - before + 1)
    expect(refused.status).toBe(409)
    expect(refused.body).toMatchObject({ code: 'artifact_quota_exceeded', used_bytes: before, quota_bytes: QUOTA })
    expect(refused.body.detail).toContain(`${before} of its ${QUOTA}`)
    expect((await declare(QUOTA - before)).status).toBe(201)
    // Pool A's quota is its own.
    const inA = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'm', size_bytes: MAX, sha256: 'b'.repeat(64) })
    expect(inA.status).toBe(201)
    // Dropping the pending ones frees the room again.
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.poolId, poolB.id)).run()
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.id, inA.body.upload_id)).run()
    expect((await declare(MAX)).status).toBe(201)
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.poolId, poolB.id)).run()
  })

  test('uploads take a credential; a person names the pool, a fellow does not; a checkpoint names its job and stage; the job must be of the own pool', async () => {
    const body = { kind: 'file', name: 'x', size_bytes: 1, sha256: sha256(bytes(1)) }
    const unnamed = await a.post('/api/v1/artifacts/uploads', body)
    expect([unnamed.status, unnamed.body.detail]).toEqual([422, 'body /pool_id: name the pool the artifact is for.'])
    const named = await fa.c.post('/api/v1/artifacts/uploads', { ...body, pool_id: poolA.id })
    expect([named.status, named.body.detail]).toEqual([422, "body /pool_id: a fellow's artifacts go to its own pool; send no pool_id."])
    expect((await h.client().post('/api/v1/artifacts/uploads', { ...body, pool_id: poolA.id })).status).toBe(401)
    expect((await fa.c.post('/api/v1/artifacts/uploads', { ...body, kind: 'checkpoint' })).status).toBe(422)
    expect((await fa.c.post('/api/v1/artifacts/uploads', { ...body, stage: 0 })).status).toBe(422)
    for (const name of ['../x', 'a/b', 'tab\there', 'nul\u0000', '', 'x'.repeat(201)]) expect((await fa.c.post('/api/v1/artifacts/uploads', { ...body, name })).status).toBe(422)
    expect((await fa.c.post('/api/v1/artifacts/uploads', { ...body, sha256: 'A'.repeat(64) })).status).toBe(422)
    // A missing kind is refused, not taken as the first kind (a checkpoint: found by the fuzzer).
    const { kind: _kind, ...kindless } = body
    const noKind = await fa.c.post('/api/v1/artifacts/uploads', { ...kindless, job_id: jobA.id, stage: 0 })
    expect([noKind.status, noKind.body.code, noKind.body.detail]).toEqual([422, 'validation_failed', 'body /kind: is missing'])
    const badKind = await fa.c.post('/api/v1/artifacts/uploads', { ...body, kind: 'weights' })
    expect([badKind.status, badKind.body.detail]).toEqual([422, 'body /kind: must be one of: "checkpoint", "model", "file"'])
    expect(h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.jobId, jobA.id)).all()).toEqual([])
    const foreign = await fb.c.post('/api/v1/artifacts/uploads', { ...body, kind: 'checkpoint', job_id: jobA.id, stage: 0 })
    expect(foreign.status).toBe(404)
    expect((await fa.c.post('/api/v1/artifacts/uploads', { ...body, job_id: '01a20184-99e9-7296-9fc7-75b6e5358e98' })).status).toBe(404)
  })

  test('a fellow that registered without a join token stores only the files of a job stage it runs (anyone could register one and store anything)', async () => {
    const reg = (await h.client().post('/api/v1/workers/register', { hostname: 'anon' })).body
    const anon = h.client({ bearer: reg.node_token })
    const data = bytes(8, 9)
    const body = { kind: 'model', name: 'free-storage.bin', size_bytes: data.byteLength, sha256: sha256(data) }
    const refused = await anon.post('/api/v1/artifacts/uploads', body)
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden'])
    expect(refused.body.detail).toContain('without a join token')
    expect(h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.fellowId, reg.fellow_id)).all()).toEqual([])
    // A job of the default pool that it runs: its checkpoints are its own to store.
    const job = (await sessionClient(h, admin.id).post('/api/v1/jobs', { name: 'open', stages: 1 })).body
    expect(job.pool_id).toBe(reg.pool_id)
    h.ctx.db.update(jobs).set({ status: 'running', assignments: [{ stage: 0, fellow_id: reg.fellow_id }] }).where(eq(jobs.id, job.id)).run()
    const own = await anon.post('/api/v1/artifacts/uploads', { ...body, kind: 'checkpoint', name: 'ckpt.tar', job_id: job.id, stage: 0 })
    expect(own.status).toBe(201)
    expect((await anon.call('PUT', `/api/v1/artifacts/uploads/${own.body.upload_id}?offset=0`, data, octets)).status).toBe(201)
    // Only checkpoints, and only while the job is under way (its stages stay assigned after it).
    expect((await anon.post('/api/v1/artifacts/uploads', { ...body, job_id: job.id, stage: 0 })).status).toBe(403)
    h.ctx.db.update(jobs).set({ status: 'completed' }).where(eq(jobs.id, job.id)).run()
    const late = await anon.post('/api/v1/artifacts/uploads', { ...body, kind: 'checkpoint', name: 'later.tar', job_id: job.id, stage: 0 })
    expect([late.status, late.body.detail]).toEqual([403, 'The job is completed: a fellow that joined without a join token stores files only for a job under way.'])
  })

  test("a job's checkpoints come only from the fellow holding the stage, its creator, the pool owner or an admin (any member could plant the checkpoint a stage resumes from)", async () => {
    const data = bytes(16, 9)
    const body = { kind: 'checkpoint', name: 'stage-0-step-999999.tar', size_bytes: data.byteLength, sha256: sha256(data), job_id: jobA.id, stage: 0, step: 999_999 }
    const refused = [
      [c, "Only the job's creator, the pool owner or an admin can store files for a job."],
      [fa2.c, 'This fellow does not hold stage 0 of that job; only the fellow running a stage stores its checkpoints.'],
    ] as const
    for (const [who, detail] of refused) {
      const r = await who.post('/api/v1/artifacts/uploads', who === c ? { ...body, pool_id: poolA.id } : body)
      expect([r.status, r.body.detail]).toEqual([403, detail])
    }
    // Not by naming no stage either: a fellow without a stage of the job stores nothing for it.
    h.ctx.db.update(pools).set({ nodeLimit: null }).where(eq(pools.id, poolA.id)).run() // past Alice's plan's 2
    const spare = await fellow(a, poolA.id)
    const noStage = await spare.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'x', size_bytes: 1, sha256: sha256(bytes(1)), job_id: jobA.id })
    expect([noStage.status, noStage.body.detail]).toEqual([403, 'This fellow has no stage of that job.'])
    expect(h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.jobId, jobA.id)).all()).toEqual([])
    // The job's creator (and an admin) may seed a stage's resume point.
    for (const who of [a, sessionClient(h, admin.id)]) {
      const begun = await who.post('/api/v1/artifacts/uploads', { ...body, pool_id: poolA.id })
      expect(begun.status).toBe(201)
      h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.id, begun.body.upload_id)).run()
    }
  })

  test("a pool's people upload a model file for its engines (any member; admins to any pool); outsiders and fellows of other pools learn nothing; the upload is audited", async () => {
    const data = bytes(70_000, 5)
    // Carol, a plain member: two parts, resumed after asking where the upload stands.
    const begun = await c.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'tiny.gguf', size_bytes: data.byteLength, sha256: sha256(data), pool_id: poolA.id })
    expect([begun.status, begun.body.offset]).toEqual([201, 0])
    const id = begun.body.upload_id as string
    expect((await c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, data.subarray(0, 30_000), octets)).body).toEqual({ upload_id: id, offset: 30_000 })
    // Only she may read or continue it: not the pool's owner, not an admin, not its fellow.
    for (const other of [a, sessionClient(h, admin.id), fa.c]) {
      expect((await other.get(`/api/v1/artifacts/uploads/${id}`)).status).toBe(404)
      expect((await other.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=30000`, data.subarray(30_000), octets)).status).toBe(404)
    }
    expect((await c.get(`/api/v1/artifacts/uploads/${id}`)).body).toEqual({ upload_id: id, offset: 30_000, size_bytes: data.byteLength })
    const done = await c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=30000`, data.subarray(30_000), octets)
    expect(done.status).toBe(201)
    const artifact = done.body.artifact
    expect(artifact).toMatchObject({ pool_id: poolA.id, kind: 'model', name: 'tiny.gguf', size_bytes: data.byteLength, sha256: sha256(data), fellow_id: null, user_id: carol.id, job_id: null })
    // The pool's fellow downloads it (what an engine's model_artifact does); the other pool's cannot.
    const got = await fa.c.get(`/api/v1/artifacts/${artifact.id}/content`)
    expect([got.status, sha256(got.body)]).toEqual([200, sha256(data)])
    expect((await fb.c.get(`/api/v1/artifacts/${artifact.id}`)).status).toBe(404)
    const audited = h.ctx.db.select().from(auditLog).where(eq(auditLog.targetId, artifact.id)).all()
    expect(audited.map((x) => [x.kind, x.actorUserId])).toEqual([['artifact.upload', carol.id]])
    // Bob is no member of Alice's pool: 404, as if it did not exist; an admin may add to any pool.
    const outsider = await b.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'x', size_bytes: 1, sha256: sha256(bytes(1)), pool_id: poolA.id })
    expect([outsider.status, outsider.body.detail]).toEqual([404, 'Pool not found'])
    expect((await b.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'x', size_bytes: 1, sha256: sha256(bytes(1)), pool_id: '01a20184-99e9-7296-9fc7-75b6e5358e98' })).status).toBe(404)
    const byAdmin = await sessionClient(h, admin.id).post('/api/v1/artifacts/uploads', { kind: 'file', name: 'x', size_bytes: 1, sha256: sha256(bytes(1)), pool_id: poolB.id })
    expect(byAdmin.status).toBe(201)
    // A person's upload counts against the pool's quota like a fellow's.
    // Someone who leaves the pool cannot finish an upload to it.
    const dave = await seedUser(h, 'dave.leaves@example.com')
    h.ctx.db.insert(poolMembers).values({ poolId: poolA.id, userId: dave.id, role: 'member', createdAt: h.clock.now() }).run()
    const d = sessionClient(h, dave.id)
    const left = await d.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'x', size_bytes: 1, sha256: sha256(bytes(1)), pool_id: poolA.id })
    expect(left.status).toBe(201)
    h.ctx.db.delete(poolMembers).where(eq(poolMembers.userId, dave.id)).run()
    expect((await d.get(`/api/v1/artifacts/uploads/${left.body.upload_id}`)).status).toBe(404)
    expect((await d.call('PUT', `/api/v1/artifacts/uploads/${left.body.upload_id}?offset=0`, bytes(1), octets)).status).toBe(404)
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.userId, dave.id)).run()

    const answers: [number, string | undefined][] = []
    for (let i = 0; i < QUOTA / MAX + 1; i++) {
      const big = await c.post('/api/v1/artifacts/uploads', { kind: 'model', name: `big-${i}`, size_bytes: MAX, sha256: sha256(bytes(1)), pool_id: poolA.id })
      answers.push([big.status, big.body.code])
    }
    expect(answers.at(-1)).toEqual([409, 'artifact_quota_exceeded'])
    h.ctx.db.delete(artifacts).where(eq(artifacts.id, artifact.id)).run()
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.userId, carol.id)).run()
    h.ctx.db.delete(artifactUploads).where(eq(artifactUploads.id, byAdmin.body.upload_id)).run()
  })

  test("another fellow can neither see, continue nor complete a fellow's upload; a JSON body is 415 for the owner only", async () => {
    const begun = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'x', size_bytes: 10, sha256: sha256(bytes(10)) })
    const id = begun.body.upload_id
    expect((await fb.c.get(`/api/v1/artifacts/uploads/${id}`)).status).toBe(404)
    expect((await fb.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, bytes(10), octets)).status).toBe(404)
    expect((await fb.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, { a: 1 })).status).toBe(404)
    expect((await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, { a: 1 })).status).toBe(415)
    expect((await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}`, bytes(10), octets)).status).toBe(422)
    expect((await fa.c.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, bytes(10), octets)).status).toBe(201)
  })
})

describe('reading artifacts', () => {
  const data = bytes(1000, 9)
  let art: Record<string, any>
  let other: Record<string, any>
  beforeAll(async () => {
    art = (await upload(fa, data, { name: 'model.safetensors', kind: 'model', job_id: jobA.id })).body.artifact
    other = (await upload(fb, bytes(64, 4), { name: 'b-only' })).body.artifact
  })

  test('operators list the artifacts of their pools, newest first, filtered by pool, job and kind; admins see all; fellows are refused', async () => {
    const ids = async (cl: Client, q = '') => ((await cl.get(`/api/v1/artifacts${q}`)).body.items as { id: string }[]).map((x) => x.id)
    const mine = await ids(a)
    expect(mine[0]).toBe(art.id)
    expect(mine).not.toContain(other.id)
    expect(await ids(c)).toEqual(mine)
    expect(await ids(b)).toEqual([other.id])
    expect(await ids(a, `?pool_id=${poolB.id}`)).toEqual([])
    expect(await ids(a, `?job_id=${jobA.id}&kind=model`)).toEqual([art.id])
    const all = await ids(sessionClient(h, admin.id))
    expect(all).toContain(other.id)
    expect(all).toContain(art.id)
    expect((await fa.c.get('/api/v1/artifacts')).status).toBe(403)
    expect((await a.get('/api/v1/artifacts?kind=weights')).status).toBe(422)
  })

  test('an artifact is read by the operators and fellows of its pool; for another pool it does not exist', async () => {
    expect((await a.get(`/api/v1/artifacts/${art.id}`)).body).toEqual(art)
    expect((await fa.c.get(`/api/v1/artifacts/${art.id}`)).body).toEqual(art)
    expect((await b.get(`/api/v1/artifacts/${art.id}`)).status).toBe(404)
    expect((await fb.c.get(`/api/v1/artifacts/${art.id}`)).status).toBe(404)
    expect((await fb.c.get(`/api/v1/artifacts/${art.id}/content`)).status).toBe(404)
    expect((await b.get(`/api/v1/artifacts/${art.id}/content`)).status).toBe(404)
    expect((await h.client().get(`/api/v1/artifacts/${art.id}`)).status).toBe(401)
  })

  test('the content streams with its length, hash as ETag and a download disposition; a single byte range answers 206', async () => {
    const full = await fa.c.get(`/api/v1/artifacts/${art.id}/content`)
    expect(full.status).toBe(200)
    expect(full.body).toEqual(data)
    expect(full.headers.get('content-length')).toBe('1000')
    expect(full.headers.get('etag')).toBe(`"${sha256(data)}"`)
    expect(full.headers.get('accept-ranges')).toBe('bytes')
    expect(full.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''model.safetensors")
    expect(full.headers.get('x-content-type-options')).toBe('nosniff')

    const part = await a.get(`/api/v1/artifacts/${art.id}/content`, { range: 'bytes=10-19' })
    expect(part.status).toBe(206)
    expect(part.body).toEqual(data.subarray(10, 20))
    expect(part.headers.get('content-range')).toBe('bytes 10-19/1000')
    expect(part.headers.get('content-length')).toBe('10')
    const from = await fa.c.get(`/api/v1/artifacts/${art.id}/content`, { range: 'bytes=990-' })
    expect([from.status, from.body]).toEqual([206, data.subarray(990)])
    const tail = await fa.c.get(`/api/v1/artifacts/${art.id}/content`, { range: 'bytes=-5' })
    expect([tail.status, tail.body, tail.headers.get('content-range')]).toEqual([206, data.subarray(995), 'bytes 995-999/1000'])
    const past = await fa.c.get(`/api/v1/artifacts/${art.id}/content`, { range: 'bytes=1000-' })
    expect(past.status).toBe(416)
    expect(past.headers.get('content-range')).toBe('bytes */1000')
    expect(past.body.code).toBe('range_not_satisfiable')
    // Several ranges, or another unit: the whole body.
    expect((await fa.c.get(`/api/v1/artifacts/${art.id}/content`, { range: 'bytes=0-1,5-6' })).status).toBe(200)
    expect((await fa.c.get(`/api/v1/artifacts/${art.id}/content`, { range: 'items=0-1' })).status).toBe(200)
  })

  test('over a real connection the length goes on the wire too (a file\'s own stream; a wrapped one goes chunked)', async () => {
    const wire = (headers: Record<string, string> = {}) => fetch(`${server.url}/api/v1/artifacts/${art.id}/content`, { headers: { authorization: `Bearer ${fa.token}`, ...headers } })
    const full = await wire()
    expect([full.status, full.headers.get('content-length'), full.headers.get('transfer-encoding')]).toEqual([200, '1000', null])
    expect(new Uint8Array(await full.arrayBuffer())).toEqual(data)
    const part = await wire({ range: 'bytes=10-19' })
    expect([part.status, part.headers.get('content-length')]).toEqual([206, '10'])
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(data.subarray(10, 20))
  })

  test('If-Range and If-None-Match: a range of the same bytes is served, of other bytes the whole body; a client holding them gets 304 (both were ignored)', async () => {
    const etag = `"${sha256(data)}"`
    const url = `/api/v1/artifacts/${art.id}/content`
    const same = await fa.c.get(url, { range: 'bytes=0-4', 'if-range': etag })
    expect([same.status, same.body]).toEqual([206, data.subarray(0, 5)])
    for (const other of ['"nope"', `W/${etag}`, 'Wed, 21 Oct 2015 07:28:00 GMT']) {
      const whole = await fa.c.get(url, { range: 'bytes=0-4', 'if-range': other })
      expect([other, whole.status, (whole.body as Uint8Array).byteLength]).toEqual([other, 200, 1000])
    }
    for (const held of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const cached = await fa.c.get(url, { 'if-none-match': held })
      expect([held, cached.status, cached.headers.get('etag')]).toEqual([held, 304, etag])
    }
    expect((await fa.c.get(url, { 'if-none-match': '"other"' })).status).toBe(200)
  })

  test("the latest checkpoint of a job's stage is its highest step, then the newest; for the job's pool only", async () => {
    const ck = (step: number, stage: number, seed: number) => upload(stage === 0 ? fa : fa2, bytes(32, seed), { kind: 'checkpoint', name: `s${stage}-${step}`, job_id: jobA.id, stage, step })
    await ck(500, 0, 20)
    const best = (await ck(900, 0, 21)).body.artifact
    await ck(700, 0, 22)
    const s1 = (await ck(50, 1, 23)).body.artifact
    const latest = await fa.c.get(`/api/v1/jobs/${jobA.id}/checkpoints/latest?stage=0`)
    expect(latest.body).toEqual(best)
    expect((await fa.c.get(`/api/v1/jobs/${jobA.id}/checkpoints/latest`)).body).toEqual(best)
    expect((await a.get(`/api/v1/jobs/${jobA.id}/checkpoints/latest?stage=1`)).body).toEqual(s1)
    expect((await a.get(`/api/v1/jobs/${jobA.id}/checkpoints/latest?stage=5`)).status).toBe(404)
    expect((await fb.c.get(`/api/v1/jobs/${jobA.id}/checkpoints/latest?stage=0`)).status).toBe(404)
    expect((await b.get(`/api/v1/jobs/${jobA.id}/checkpoints/latest?stage=0`)).status).toBe(404)
    expect((await fb.c.get(`/api/v1/jobs/${jobB.id}/checkpoints/latest?stage=0`)).status).toBe(404)
  })

  test('the pool owner or an admin deletes an artifact (audited); a plain member is refused, an outsider finds nothing', async () => {
    const victim = (await upload(fa, bytes(48, 30), { name: 'to-delete' })).body.artifact
    expect((await c.delete(`/api/v1/artifacts/${victim.id}`)).status).toBe(403)
    expect((await b.delete(`/api/v1/artifacts/${victim.id}`)).status).toBe(404)
    expect((await fa.c.delete(`/api/v1/artifacts/${victim.id}`)).status).toBe(403)
    expect((await a.delete(`/api/v1/artifacts/${victim.id}`)).status).toBe(204)
    expect((await a.get(`/api/v1/artifacts/${victim.id}`)).status).toBe(404)
    const audit = h.ctx.db.select().from(auditLog).where(eq(auditLog.targetId, victim.id)).all()
    expect(audit.map((x) => [x.kind, x.actorUserId])).toEqual([['artifact.delete', alice.id]])
    const again = (await upload(fa, bytes(48, 31), { name: 'admin-deletes' })).body.artifact
    expect((await sessionClient(h, admin.id).delete(`/api/v1/artifacts/${again.id}`)).status).toBe(204)
  })
})

describe('the collector', () => {
  test('a blob no artifact names goes once it is an hour old; a blob another artifact still names stays', async () => {
    const shared = bytes(80, 40)
    const one = (await upload(fa, shared, { name: 'one' })).body.artifact
    const two = (await upload(fa, shared, { name: 'two' })).body.artifact
    expect(one.sha256).toBe(two.sha256)
    const lonely = (await upload(fa, bytes(80, 41), { name: 'lonely' })).body.artifact
    await a.delete(`/api/v1/artifacts/${one.id}`)
    await a.delete(`/api/v1/artifacts/${lonely.id}`)
    h.clock.set(Date.now())
    await h.services.artifacts.collect()
    expect(existsSync(blobPath(h, lonely.sha256))).toBe(true) // young: an upload may be completing
    h.clock.set(Date.now() + BLOB_GRACE_MS + 60_000)
    const r = await h.services.artifacts.collect()
    expect(r.blobs).toBeGreaterThanOrEqual(1)
    expect(existsSync(blobPath(h, lonely.sha256))).toBe(false)
    expect(existsSync(blobPath(h, two.sha256))).toBe(true)
    expect((await a.get(`/api/v1/artifacts/${two.id}/content`)).body).toEqual(shared)
  })

  test('an upload idle for a day is dropped, row and temp file; one that moved recently stays', async () => {
    const idle = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'idle', size_bytes: 100, sha256: sha256(bytes(100, 50)) })
    await fa.c.call('PUT', `/api/v1/artifacts/uploads/${idle.body.upload_id}?offset=0`, bytes(100, 50).subarray(0, 40), octets)
    expect(existsSync(tempPath(h, idle.body.upload_id))).toBe(true)
    h.clock.advance(UPLOAD_IDLE_MS - 60_000)
    const fresh = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'fresh', size_bytes: 100, sha256: sha256(bytes(100, 51)) })
    h.clock.advance(120_000)
    const r = await h.services.artifacts.collect()
    expect(r.uploads).toBe(1)
    expect(existsSync(tempPath(h, idle.body.upload_id))).toBe(false)
    expect((await fa.c.get(`/api/v1/artifacts/uploads/${idle.body.upload_id}`)).status).toBe(404)
    expect((await fa.c.get(`/api/v1/artifacts/uploads/${fresh.body.upload_id}`)).body.offset).toBe(0)
  })

  test('the collector runs as a loop of the service', () => {
    expect(h.services.loops.map((l) => l.name)).toContain('artifacts-collect')
  })
})

describe('a job purge', () => {
  test("takes the jobs' artifacts and uploads along; the collector then removes their blobs and temp files", async () => {
    const data = bytes(90, 60)
    const ck = (await upload(fa, data, { kind: 'checkpoint', name: 'gone', job_id: jobA.id, stage: 0, step: 1 })).body.artifact
    const kept = (await upload(fa, bytes(90, 61), { name: 'no-job' })).body.artifact
    const pending = await fa.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'p', size_bytes: 10, sha256: sha256(bytes(10)), job_id: jobA.id })
    await fa.c.call('PUT', `/api/v1/artifacts/uploads/${pending.body.upload_id}?offset=0`, bytes(5), octets)
    expect((await sessionClient(h, admin.id).delete('/api/v1/jobs')).status).toBe(200)
    expect((await a.get(`/api/v1/artifacts/${ck.id}`)).status).toBe(404)
    expect(h.ctx.db.select().from(artifacts).where(eq(artifacts.jobId, jobA.id)).all()).toEqual([])
    expect(h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.id, pending.body.upload_id)).all()).toEqual([])
    expect((await a.get(`/api/v1/artifacts/${kept.id}`)).status).toBe(200)
    h.clock.set(Date.now() + BLOB_GRACE_MS + 60_000)
    await h.services.artifacts.collect()
    expect(existsSync(blobPath(h, ck.sha256))).toBe(false)
    expect(existsSync(tempPath(h, pending.body.upload_id))).toBe(false)
    expect(existsSync(blobPath(h, kept.sha256))).toBe(true)
  })

  test("deleting a pool deletes its artifacts and uploads with it (foreign keys), and the collector their bytes", async () => {
    const art = (await upload(fb, bytes(70, 70), { name: 'in-b' })).body.artifact
    const open = await fb.c.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'open', size_bytes: 10, sha256: sha256(bytes(10)) })
    expect((await b.delete(`/api/v1/pools/${poolB.id}?force=true`)).status).toBe(200)
    expect(h.ctx.db.select().from(artifacts).where(eq(artifacts.poolId, poolB.id)).all()).toEqual([])
    expect(h.ctx.db.select().from(artifactUploads).where(eq(artifactUploads.id, open.body.upload_id)).all()).toEqual([])
    h.clock.set(Date.now() + BLOB_GRACE_MS + 60_000)
    await h.services.artifacts.collect()
    expect(existsSync(blobPath(h, art.sha256))).toBe(false)
  })
})

describe('model files in the catalog', () => {
  test('a servable names a model file of its own pool; another pool\'s artifact is not found', async () => {
    // Pools of their own: an earlier test deletes the shared ones.
    const dave = sessionClient(h, (await seedUser(h, 'dave@example.com')).id)
    const erin = sessionClient(h, (await seedUser(h, 'erin@example.com')).id)
    const pa = (await dave.post('/api/v1/pools', { name: 'Dave models' })).body
    const pb = (await erin.post('/api/v1/pools', { name: 'Erin models' })).body
    const fa = await fellow(dave, pa.id)
    const fb = await fellow(erin, pb.id)
    const mine = await upload(fa, bytes(1000, 9), { kind: 'model', name: 'model.gguf' })
    const theirs = await upload(fb, bytes(1000, 10), { kind: 'model', name: 'model.gguf' })
    const ok = await fa.c.post('/api/v1/servables', { name: 'filed-model', version: '1', format: 'gguf', size_bytes: 1000, artifact_id: mine.body.artifact.id })
    expect(ok.status).toBe(201)
    expect(ok.body).toMatchObject({ name: 'filed-model', artifact_id: mine.body.artifact.id, pool_id: pa.id })
    const foreign = await fa.c.post('/api/v1/servables', { name: 'filed-model', version: '2', format: 'gguf', size_bytes: 1000, artifact_id: theirs.body.artifact.id })
    expect([foreign.status, foreign.body.code]).toEqual([404, 'not_found'])
    expect((await dave.get(`/api/v1/servables?pool_id=${pa.id}`)).body.items.map((x: { version: string }) => x.version)).toEqual(['1'])
  })
})
