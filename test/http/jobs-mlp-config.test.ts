// Submitting a job of the built-in runner whose config could never run: 422 at submit, not a job
// that sits at step 0 for good once placed.
import { afterAll, describe, expect, test } from 'bun:test'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'

const h = makeHarness()
afterAll(() => h.close())

describe('submitting an mlp job', () => {
  test('whose activation frame (batch × hidden float32) is larger than a frame may be is 422 naming config.batch', async () => {
    const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
    const A = sessionClient(h, admin.id)
    const pool = (await A.post('/api/v1/admin/pools', { name: 'Lab', visibility: 'private' })).body
    const r = await A.post('/api/v1/jobs', { name: 'bigframe', pool_id: pool.id, stages: 2, config: { hidden: 2048, batch: 8200, steps: 5 } })
    expect([r.status, r.body.code, r.body.errors?.[0]?.path]).toEqual([422, 'validation_failed', '/config/batch'])
    expect(r.body.detail).toBe('body /config/batch: must be at most 8192 with config.hidden 2048 (its activation frames, batch × hidden float32, must fit in 64 MiB) (a setting of the built-in runner mlp).')
    expect((await A.post('/api/v1/jobs', { name: 'fits', pool_id: pool.id, stages: 2, config: { hidden: 2048, batch: 8192, steps: 5 } })).status).toBe(201)
  })
})
