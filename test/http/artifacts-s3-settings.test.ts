// Wrong S3 settings (a key the bucket does not know, a bucket that does not exist, an endpoint
// that is down) against a real S3-compatible server (s3rver): the leader checks the store once as
// it starts and logs an error line naming the reason, and a request the store fails answers 503
// saying why, never with a key in it.
import { afterAll, describe, expect, test } from 'bun:test'
import { makeLoggedHarness } from '../helpers/logged'
import { seedUser, sessionClient } from '../helpers/harness'
import { until } from '../helpers/until'
import { startFakeS3 } from '../helpers/s3'

const s3 = await startFakeS3('bucket')
afterAll(async () => await s3.stop())

const SECRET = 'S3RVER'
const settings = (over: Record<string, string>) => ({
  SVC_ARTIFACTS_URL: 's3://bucket/settings',
  SVC_ARTIFACTS_S3_ENDPOINT: s3.endpoint,
  SVC_ARTIFACTS_S3_REGION: 'us-east-1',
  SVC_ARTIFACTS_S3_ACCESS_KEY_ID: s3.accessKeyId,
  SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY: SECRET,
  ...over,
})
type Line = { level: string; msg: string; reason?: string; store?: string }
const parsed = (lines: string[]) => lines.map((l) => JSON.parse(l) as Line)

const cases: [string, Record<string, string>, string][] = [
  ['a key the bucket does not know', { SVC_ARTIFACTS_S3_ACCESS_KEY_ID: 'AKIAWRONGKEY' }, 'InvalidAccessKeyId'],
  ['a bucket that does not exist', { SVC_ARTIFACTS_URL: 's3://no-such-bucket/settings' }, 'NoSuchBucket'],
  ['an endpoint that is down', { SVC_ARTIFACTS_S3_ENDPOINT: 'http://127.0.0.1:46898' }, 'ConnectionRefused'],
]

describe('wrong S3 settings', () => {
  for (const [what, over, code] of cases) {
    test(`${what}: an error line at start naming ${code}, and a 503 whose detail says it (the leader still starts)`, async () => {
      const h = makeLoggedHarness(settings(over))
      try {
        const failed = await until(() => parsed(h.lines).find((l) => l.msg.startsWith('artifact store check failed')), 'the start check')
        expect(failed.level).toBe('error')
        expect(failed.reason).toContain(code)
        // The leader serves everything else.
        expect((await h.client().get('/api/v1/health')).status).toBe(200)
        const alice = sessionClient(h, (await seedUser(h, 'alice@example.com')).id)
        const pool = (await alice.post('/api/v1/pools', { name: 'Pool' })).body
        const data = new Uint8Array(100).fill(1)
        const begun = await alice.post('/api/v1/artifacts/uploads', { kind: 'model', name: 'm.bin', size_bytes: 100, sha256: new Bun.CryptoHasher('sha256').update(data).digest('hex'), pool_id: pool.id })
        const put = await alice.call('PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, data, { 'content-type': 'application/octet-stream' })
        expect([put.status, put.headers.get('retry-after')]).toEqual([503, '5'])
        expect(put.body.detail).toContain(code)
        expect(put.body.detail).not.toContain(SECRET)
        expect(h.lines.join('\n')).not.toContain(SECRET)
      } finally {
        h.close()
      }
    })
  }

  test('right settings: a line saying the store answers, no error', async () => {
    const h = makeLoggedHarness(settings({}))
    try {
      await until(() => parsed(h.lines).find((l) => l.msg === 'artifact store answers'), 'the start check')
      expect(parsed(h.lines).filter((l) => l.level === 'error')).toEqual([])
    } finally {
      h.close()
    }
  })
})
