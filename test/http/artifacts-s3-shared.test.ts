// Two leaders on one bucket prefix (a staging leader, a restore drill on another host with
// production's environment) against a real S3-compatible server (s3rver): each collector deletes
// only the blobs its own leader let go of or left half-written, never another leader's.
import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { seedUser, sessionClient, type Harness } from '../helpers/harness'
import { makeLoggedHarness } from '../helpers/logged'
import { until } from '../helpers/until'
import { startFakeS3 } from '../helpers/s3'
import { BLOB_GRACE_MS } from '../../src/artifacts/collector'
import { ArtifactService } from '../../src/artifacts/service'
import { artifactBlobCandidates, artifactUploads } from '../../src/db/schema'
import type { BlobStore } from '../../src/artifacts/store'

const s3 = await startFakeS3('bucket')
const env = {
  SVC_ARTIFACTS_URL: 's3://bucket/shared',
  SVC_ARTIFACTS_S3_ENDPOINT: s3.endpoint,
  SVC_ARTIFACTS_S3_REGION: 'us-east-1',
  SVC_ARTIFACTS_S3_ACCESS_KEY_ID: s3.accessKeyId,
  SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
}
const bucket = new Bun.S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey })
const prod = makeLoggedHarness(env)
const staging = makeLoggedHarness(env)
// Both claimed the prefix as they started (whichever wrote last holds it): the claim is made
// staging's here, and production, finding it, deletes nothing there.
const settled = (h: { lines: string[] }) => h.lines.some((l) => l.includes('"artifact store answers"'))
await until(() => settled(prod) && settled(staging), 'both start checks')
await until(async () => (await bucket.exists('shared/leader.json')) || null, 'a claim')
await bucket.delete('shared/leader.json')
expect(await staging.services.artifacts.checkStore()).toBe(true)
// Object ages are the server's (real time): the fake clocks start there and move past the grace.
for (const h of [prod, staging]) h.clock.set(Date.now())
const pastGrace = () => {
  for (const h of [prod, staging]) h.clock.set(Date.now() + BLOB_GRACE_MS + 60_000)
}
afterAll(async () => {
  prod.close()
  staging.close()
  await s3.stop()
})

const keysInBucket = async () => ((await bucket.list({ prefix: 'shared/sha256/' })).contents ?? []).map((o) => o.key).sort()
const keyOf = (sha: string) => `shared/sha256/${sha.slice(0, 2)}/${sha}`
const sha256 = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')
const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff)
const octets = { 'content-type': 'application/octet-stream' }

async function owner(h: Harness) {
  const user = await seedUser(h, 'owner@example.com')
  const c = sessionClient(h, user.id)
  const pool = (await c.post('/api/v1/pools', { name: 'Pool' })).body
  const upload = async (data: Uint8Array, name: string) => {
    const begun = await c.post('/api/v1/artifacts/uploads', { kind: 'model', name, size_bytes: data.byteLength, sha256: sha256(data), pool_id: pool.id })
    const put = await c.call('PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, data, octets)
    expect(put.status).toBe(201)
    return put.body.artifact as { id: string; sha256: string }
  }
  return { c, user, pool, upload }
}
const p = await owner(prod)
const s = await owner(staging)

describe('two leaders on one bucket prefix', () => {
  test("a leader's collection deletes the blob it let go of, never the other leader's, which it has no row for; the other leader still serves it", async () => {
    const mine = await s.upload(bytes(2_000, 1), 'staging.bin')
    const theirs = await p.upload(bytes(3_000, 2), 'prod.bin')
    expect((await s.c.delete(`/api/v1/artifacts/${mine.id}`)).status).toBe(204)
    pastGrace()
    const report = await staging.services.artifacts.collect()
    expect([report.blobs, report.unclaimed]).toEqual([1, 1])
    expect(await keysInBucket()).toEqual([keyOf(theirs.sha256)])
    const served = await p.c.get(`/api/v1/artifacts/${theirs.id}/content`)
    expect([served.status, served.body]).toEqual([200, bytes(3_000, 2)])
    // And the other way round: production's collection leaves everything (it let go of nothing).
    expect((await prod.services.artifacts.collect()).blobs).toBe(0)
    expect(await keysInBucket()).toEqual([keyOf(theirs.sha256)])
  })

  test('the prefix is claimed by the leader that came first: the other says so at start and in each collection (naming the claimant) and deletes no blob there, not even its own', async () => {
    const before = prod.lines.length
    expect(await prod.services.artifacts.checkStore()).toBe(false)
    const mine = await p.upload(bytes(1_500, 6), 'prod-deleted.bin')
    expect((await p.c.delete(`/api/v1/artifacts/${mine.id}`)).status).toBe(204)
    pastGrace()
    expect((await prod.services.artifacts.collect()).blobs).toBe(0)
    expect(await keysInBucket()).toContain(keyOf(mine.sha256))
    const said = prod.lines.slice(before).map((l) => JSON.parse(l) as { level: string; msg: string; other_state_dir?: string })
    const errors = said.filter((l) => l.msg === 'another leader uses this artifact store prefix; this one deletes no blob there')
    expect(errors.map((l) => [l.level, l.other_state_dir])).toEqual([
      ['error', staging.dir],
      ['error', staging.dir],
    ])
    // Its candidate stays for the day the prefix is its own again.
    expect(prod.ctx.db.select().from(artifactBlobCandidates).where(eq(artifactBlobCandidates.sha256, mine.sha256)).all()).toHaveLength(1)
  })

  test('a blob a leader wrote but never named (its upload dropped while the store write ran) is its garbage, and collected', async () => {
    const real = staging.services.artifacts.store
    const node = { kind: 'user' as const, userId: s.user.id, role: 'user' as const, credentialId: '' }
    // The upload row goes while the bytes are on their way to the bucket (its pool deleted, say).
    const racing: BlobStore = {
      location: real.location,
      exclusive: real.exclusive,
      putFile: async (sha, path) => {
        await real.putFile(sha, path)
        staging.ctx.db.delete(artifactUploads).run()
      },
      stat: (sha) => real.stat(sha),
      read: (sha, range) => real.read(sha, range),
      open: (sha, size, range) => real.open(sha, size, range),
      delete: (sha) => real.delete(sha),
      list: () => real.list(),
      check: () => real.check(),
      claim: (mine) => real.claim(mine),
    }
    const svc = new ArtifactService(staging.ctx, racing)
    const data = bytes(700, 3)
    const up = svc.beginUpload(node as never, { kind: 'model', name: 'orphan', size_bytes: 700, sha256: sha256(data), pool_id: s.pool.id })
    const once = { declaredBytes: 700, copyable: false, toFile: () => Promise.reject(new Error('not copyable')), chunks: async function* () { yield data } }
    const refused = await svc.write(node as never, up.upload_id, 0, once).catch((e) => e)
    expect(refused.code).toBe('not_found')
    expect(await keysInBucket()).toContain(keyOf(sha256(data)))
    expect(staging.ctx.db.select().from(artifactBlobCandidates).where(eq(artifactBlobCandidates.sha256, sha256(data))).all()).toHaveLength(1)
    pastGrace()
    expect((await staging.services.artifacts.collect()).blobs).toBe(1)
    expect(await keysInBucket()).not.toContain(keyOf(sha256(data)))
    expect(staging.ctx.db.select().from(artifactBlobCandidates).all()).toEqual([])
  })

  test("a job purge or pool deletion (rows going by cascade) records the blobs let go of in the same transaction; a blob another artifact still names is not one", async () => {
    const shared = bytes(900, 4)
    const one = await s.upload(shared, 'a.bin')
    await s.upload(shared, 'b.bin')
    const other = await s.upload(bytes(800, 5), 'c.bin')
    expect((await s.c.delete(`/api/v1/artifacts/${one.id}`)).status).toBe(204)
    expect(staging.ctx.db.select().from(artifactBlobCandidates).all()).toEqual([])
    expect((await s.c.delete(`/api/v1/pools/${s.pool.id}`)).status).toBe(200)
    const candidates = staging.ctx.db.select({ sha256: artifactBlobCandidates.sha256 }).from(artifactBlobCandidates).all().map((r) => r.sha256).sort()
    expect(candidates).toEqual([sha256(shared), other.sha256].sort())
  })
})
