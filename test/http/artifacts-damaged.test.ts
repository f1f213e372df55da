// A blob cut short in the store (an interrupted copy or restore of the blobs directory or the
// bucket) is never served as if it were whole, and the same file uploaded again repairs it; on
// local files and on a real S3-compatible server (s3rver).
import { afterAll, describe, expect, test } from 'bun:test'
import { truncateSync } from 'node:fs'
import { join } from 'node:path'
import { makeHarness, seedUser, sessionClient, type Harness } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { startFakeS3 } from '../helpers/s3'

const s3 = await startFakeS3('bucket')
const bucket = new Bun.S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey })
const local = makeHarness()
const onS3 = makeHarness({
  SVC_ARTIFACTS_URL: 's3://bucket/damaged',
  SVC_ARTIFACTS_S3_ENDPOINT: s3.endpoint,
  SVC_ARTIFACTS_S3_REGION: 'us-east-1',
  SVC_ARTIFACTS_S3_ACCESS_KEY_ID: s3.accessKeyId,
  SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
})
const servers = [listen(local), listen(onS3)]
afterAll(async () => {
  for (const s of servers) await s.stop()
  local.close()
  onS3.close()
  await s3.stop()
})

const sha256 = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')
const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff)
const octets = { 'content-type': 'application/octet-stream' }

const cases: [string, Harness, string, (sha: string, keep: Uint8Array) => Promise<void>][] = [
  ['local files', local, servers[0]!.url, async (sha, keep) => truncateSync(join(local.dir, 'artifacts', 'blobs', 'sha256', sha.slice(0, 2), sha), keep.byteLength)],
  ['S3', onS3, servers[1]!.url, async (sha, keep) => void (await bucket.write(`damaged/sha256/${sha.slice(0, 2)}/${sha}`, keep))],
]

for (const [kind, h, url, cutShort] of cases) {
  describe(`a blob cut short, on ${kind}`, async () => {
    const user = await seedUser(h, 'owner@example.com')
    const c = sessionClient(h, user.id)
    const pool = (await c.post('/api/v1/pools', { name: 'Pool' })).body
    const token = (await c.post('/api/v1/api-tokens', { name: 'dl' })).body.token as string
    const data = bytes(40_000, 3)
    const upload = async () => {
      const begun = await c.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'w.bin', size_bytes: data.byteLength, sha256: sha256(data), pool_id: pool.id })
      const put = await c.call('PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, data, octets)
      expect(put.status).toBe(201)
      return put.body.artifact as { id: string }
    }

    test('is answered 410 (never a 200 with fewer bytes than its length), and uploading the same file again repairs it', async () => {
      const art = await upload()
      await cutShort(sha256(data), data.subarray(0, 10_000))
      const r = await fetch(`${url}/api/v1/artifacts/${art.id}/content`, { headers: { authorization: `Bearer ${token}` } })
      expect(r.status).toBe(410)
      expect(((await r.json()) as { detail: string }).detail).toContain('10000 of 40000 bytes')
      await upload()
      const again = await fetch(`${url}/api/v1/artifacts/${art.id}/content`, { headers: { authorization: `Bearer ${token}` } })
      expect(again.status).toBe(200)
      expect(new Uint8Array(await again.arrayBuffer())).toEqual(data)
    })
  })
}
