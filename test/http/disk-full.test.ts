// A state file with no room left: no 500 and no "unhandled error", but 507 insufficient_storage
// with Retry-After, a log line that says what happened, nothing half saved, and the same request
// succeeding once there is room. SQLite at its page limit answers SQLITE_FULL ("database or disk
// is full"), as on a full disk. test/e2e/disk-full.test.ts fills a real disk under the binary.
import { afterAll, expect, test } from 'bun:test'
import { makeLoggedHarness } from '../helpers/logged'
import { seedUser, sessionClient } from '../helpers/harness'
import { isStorageFull } from '../../src/errors'

const h = makeLoggedHarness()
afterAll(() => h.close())

/**
 * Lets the state file grow no further than it is now and takes up what room it has left (in a
 * table of the test's own): SQLite answers the next write that needs a page SQLITE_FULL.
 */
function fillStateFile(): () => void {
  h.ctx.sqlite.exec('CREATE TABLE IF NOT EXISTS test_filler (x BLOB)')
  const { page_count } = h.ctx.sqlite.query('PRAGMA page_count').get() as { page_count: number }
  h.ctx.sqlite.exec(`PRAGMA max_page_count = ${page_count}`)
  try {
    for (;;) h.ctx.sqlite.query('INSERT INTO test_filler VALUES (zeroblob(512))').run()
  } catch (e) {
    expect(isStorageFull(e)).toBe(true)
  }
  return () => h.ctx.sqlite.exec('PRAGMA max_page_count = 1073741823')
}

const a = sessionClient(h, (await seedUser(h, 'alice@example.com', { role: 'admin' })).id)

test('a write the state file has no room for: 507 with Retry-After and a plain log line, nothing half saved; the same request works once there is room', async () => {
  const room = fillStateFile()
  const lines = h.lines.length
  const create = (i: number) => a.post('/api/v1/pools', { name: `pool ${i}`, description: 'd'.repeat(500) })
  const poolCount = () => (h.ctx.sqlite.query('SELECT count(*) AS n FROM pools').get() as { n: number }).n
  // The file's last pages still have room for a few rows.
  let res = await create(0)
  for (let i = 1; res.status === 201 && i < 200; i++) res = await create(i)
  expect(res.status).toBe(507)
  expect(res.headers.get('content-type')).toBe('application/problem+json')
  expect(res.headers.get('retry-after')).toBe('60')
  expect(res.body).toMatchObject({ status: 507, title: 'Insufficient Storage', code: 'insufficient_storage' })
  expect(res.body.detail).toContain('disk is full')
  const logged = h.lines.slice(lines).map((l) => JSON.parse(l) as { msg: string; level: string; error?: string })
  expect(logged.some((l) => l.level === 'error' && l.msg === 'disk full: a write failed' && l.error === 'database or disk is full')).toBe(true)
  expect(logged.some((l) => l.msg === 'unhandled error')).toBe(false)
  // The refused pool is not there in part (no pool without its owner's membership, say).
  const pools = poolCount()
  expect((h.ctx.sqlite.query('SELECT count(*) AS n FROM pools WHERE id NOT IN (SELECT pool_id FROM pool_members)').get() as { n: number }).n).toBe(0)
  room()
  expect((await create(999)).status).toBe(201)
  expect(poolCount()).toBe(pools + 1)
})

test('what counts as a full disk: SQLITE_FULL, ENOSPC, EDQUOT and EFBIG (a file-size limit), also as the cause of another error; nothing else', () => {
  for (const code of ['SQLITE_FULL', 'ENOSPC', 'EDQUOT', 'EFBIG']) {
    expect(isStorageFull(Object.assign(new Error('x'), { code }))).toBe(true)
    expect(isStorageFull(new Error('wrapped', { cause: Object.assign(new Error('x'), { code }) }))).toBe(true)
  }
  for (const e of [new Error('x'), Object.assign(new Error('x'), { code: 'SQLITE_BUSY' }), Object.assign(new Error('x'), { code: 'EACCES' }), null, 'ENOSPC', 42]) {
    expect(isStorageFull(e)).toBe(false)
  }
})

test('an upload whose offset the full state file cannot record: 507 with the recorded offset, and the bytes past it do not stay in the temp file holding the disk', async () => {
  const { existsSync, statSync } = await import('node:fs')
  const { join } = await import('node:path')
  const pool = (await a.post('/api/v1/pools', { name: 'uploads' })).body
  const data = Uint8Array.from({ length: 50_000 }, (_, i) => (i * 7) & 0xff)
  const sha256 = new Bun.CryptoHasher('sha256').update(data).digest('hex')
  const begun = await a.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'w.bin', size_bytes: data.byteLength, sha256, pool_id: pool.id })
  expect(begun.status).toBe(201)
  const id = begun.body.upload_id as string
  const temp = join(h.dir, 'artifacts', 'uploads', id)
  // Recording the offset rewrites a row in place, which a full file still has room for; on a full
  // disk it is the WAL that cannot grow. Here the update is made to need a new page.
  h.ctx.sqlite.exec('CREATE TABLE IF NOT EXISTS test_filler (x BLOB)')
  h.ctx.sqlite.exec('CREATE TRIGGER test_offset_needs_a_page BEFORE UPDATE ON artifact_uploads BEGIN INSERT INTO test_filler VALUES (zeroblob(65536)); END')
  const room = fillStateFile()
  const put = await a.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, data.subarray(0, 20_000), { 'content-type': 'application/octet-stream' })
  expect([put.status, put.body.code, put.body.offset, put.headers.get('retry-after')]).toEqual([507, 'insufficient_storage', 0, '60'])
  expect(existsSync(temp) ? statSync(temp).size : 0).toBe(0)
  room()
  h.ctx.sqlite.exec('DROP TRIGGER test_offset_needs_a_page')
  expect((await a.get(`/api/v1/artifacts/uploads/${id}`)).body.offset).toBe(0)
  const done = await a.call('PUT', `/api/v1/artifacts/uploads/${id}?offset=0`, data, { 'content-type': 'application/octet-stream' })
  expect(done.status).toBe(201)
})
