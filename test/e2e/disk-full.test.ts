// The built leader on a disk that fills up: its state directory is a 4 MiB tmpfs of its own (a
// private mount namespace, gone with the process). Writes the disk has no room for answer 507
// insufficient_storage with Retry-After, never a 500; an artifact upload says where it stands and
// resumes from there; once space is freed the same requests succeed.
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, openSync, closeSync, writeSync, rmSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SVC_BIN, startLeader, type Leader } from '../helpers/leader'
import { call, registerUser } from '../helpers/e2e'

/** Runs the command that follows on a tmpfs (4 MiB unless told) mounted at `dir`, seen by that process alone. */
const onPrivateTmpfs = (dir: string, size = '4m') => ['unshare', '--mount', '--map-root-user', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o size=${size},mode=0700 tmpfs "$0" && exec "$@"`, dir]
/** Whether this machine lets a process mount a tmpfs of its own (root, or user namespaces). */
const canMount = Bun.which('unshare') !== null && Bun.spawnSync([...onPrivateTmpfs(tmpdir()), 'true']).exitCode === 0
if (!canMount) console.warn('disk-full.test.ts: this machine does not let a process mount a tmpfs of its own; the test is skipped')

let leader: Leader | null = null
afterAll(async () => void (await leader?.stop()))

/** Fills the leader's disk (seen through /proc/PID/root, the process's own view) but for `leave` bytes. */
function fill(path: string, leave: number): () => void {
  const fd = openSync(path, 'w')
  const chunk = new Uint8Array(16 * 1024)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (e) {
    expect((e as { code?: string }).code).toBe('ENOSPC')
  } finally {
    closeSync(fd)
  }
  if (leave > 0) {
    truncateSync(path, Math.max(0, statSync(path).size - leave))
  }
  return () => rmSync(path)
}

test.skipIf(!canMount)('a full disk: 507 with Retry-After for a write and for an upload, which then resumes where it stood', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-e2e-full-'))
  mkdirSync(join(dir, 'state'))
  leader = await startLeader({}, dir, onPrivateTmpfs(join(dir, 'state')))
  const disk = `/proc/${leader.proc.pid}/root${dir}/state`
  const admin = await registerUser(leader.url, 'admin@example.com', 'a long password')

  // A pool the state file has no room for.
  let free = fill(`${disk}/filler`, 0)
  const refused = await admin.call('POST', '/api/v1/pools', { name: 'Lab', description: 'd'.repeat(500) })
  expect(refused).toMatchObject({ status: 507, body: { code: 'insufficient_storage', title: 'Insufficient Storage' } })
  expect(leader.logs.some((l) => l.includes('"disk full: a write failed"'))).toBe(true)
  expect(leader.logs.some((l) => l.includes('unhandled error'))).toBe(false)
  free()
  const lab = await admin.call('POST', '/api/v1/pools', { name: 'Lab', description: 'd'.repeat(500) })
  expect(lab.status).toBe(201)
  // A fellow of the pool (one that joined without a token stores only its job stages' files).
  const joinToken = (await admin.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: lab.body.id })).body.join_token as string
  const reg = await call(leader.url, 'POST', '/api/v1/workers/register', { bearer: joinToken, body: { hostname: 'gpu' } })
  expect(reg.status).toBe(201)
  const node = reg.body.node_token as string

  // An upload of 2 MiB onto a disk with room for about half of it.
  const data = Uint8Array.from({ length: 2 * 1024 * 1024 }, (_, i) => (i * 131) & 0xff)
  const sha256 = new Bun.CryptoHasher('sha256').update(data).digest('hex')
  const begun = await call(leader.url, 'POST', '/api/v1/artifacts/uploads', { bearer: node, body: { kind: 'file', name: 'weights.bin', size_bytes: data.byteLength, sha256 } })
  expect(begun.status).toBe(201)
  const id = begun.body.upload_id as string
  free = fill(`${disk}/filler`, 1024 * 1024)
  const put = (offset: number) =>
    fetch(`${leader!.url}/api/v1/artifacts/uploads/${id}?offset=${offset}`, { method: 'PUT', headers: { authorization: `Bearer ${node}`, 'content-type': 'application/octet-stream' }, body: data.slice(offset) })
  const full = await put(0)
  expect(full.status).toBe(507)
  expect(full.headers.get('retry-after')).toBe('60')
  const problem = (await full.json()) as { code: string; offset?: number }
  expect(problem.code).toBe('insufficient_storage')
  free()
  const state = await call(leader.url, 'GET', `/api/v1/artifacts/uploads/${id}`, { bearer: node })
  expect(state.status).toBe(200)
  // Where it stands: what landed before the disk filled (and was recorded), never more.
  expect(state.body.offset).toBeLessThan(data.byteLength)
  if (problem.offset !== undefined) expect(state.body.offset).toBe(problem.offset)
  const done = await put(state.body.offset)
  expect(done.status).toBe(201)
  expect(((await done.json()) as { artifact: { sha256: string } }).artifact.sha256).toBe(sha256)
  expect(leader.logs.some((l) => l.includes('unhandled error'))).toBe(false)
})

test.skipIf(!canMount)('a leader starting on a disk too small for its state file says which file and why, exit 1', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-e2e-full-'))
  mkdirSync(join(dir, 'state'))
  const proc = Bun.spawn([...onPrivateTmpfs(join(dir, 'state'), '100k'), SVC_BIN, 'serve'], { cwd: dir, env: { PATH: process.env.PATH ?? '', SVC_PORT: '0' }, stdout: 'pipe', stderr: 'pipe' })
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
  expect([code, stderr]).toEqual([1, `svc: cannot migrate state database ${join(dir, 'state', 'join_state.sqlite3')}: database or disk is full\n`])
})

test('a file-size limit (EFBIG, ulimit -f): an upload past it answers 507 with Retry-After, sent with a Content-Length (copied) or chunked, never 400 "cut off" or 500', async () => {
  // 4 MiB per file: room for the state file, not for the 6 MiB upload.
  const limited = await startLeader({}, undefined, ['bash', '-c', 'ulimit -f 4096 && exec "$@"', 'bash'])
  try {
    const admin = await registerUser(limited.url, 'admin@example.com', 'a long password')
    const lab = await admin.call('POST', '/api/v1/pools', { name: 'Lab' })
    const joinToken = (await admin.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: lab.body.id })).body.join_token as string
    const node = (await call(limited.url, 'POST', '/api/v1/workers/register', { bearer: joinToken, body: { hostname: 'gpu' } })).body.node_token as string
    const data = Uint8Array.from({ length: 6 * 1024 * 1024 }, (_, i) => (i * 131) & 0xff)
    const sha256 = new Bun.CryptoHasher('sha256').update(data).digest('hex')
    for (const [name, body] of [
      ['copied', data],
      ['chunked', new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(data.subarray(0, 3 << 20)), c.enqueue(data.subarray(3 << 20)), c.close()) })],
    ] as const) {
      const begun = await call(limited.url, 'POST', '/api/v1/artifacts/uploads', { bearer: node, body: { kind: 'file', name, size_bytes: data.byteLength, sha256 } })
      const put = await fetch(`${limited.url}/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${node}`, 'content-type': 'application/octet-stream' }, body })
      const problem = (await put.json()) as { code: string }
      expect([name, put.status, problem.code, put.headers.get('retry-after')]).toEqual([name, 507, 'insufficient_storage', '60'])
    }
    expect(limited.logs.some((l) => l.includes('unhandled error'))).toBe(false)
  } finally {
    await limited.stop()
  }
})
