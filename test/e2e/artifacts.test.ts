// The artifact store through the built dist/svc over real sockets: an artifact far larger than any
// other body is streamed to disk in one PUT without the leader holding it in memory, and comes
// back whole and by range. Also the idle-body timeout of a stalled upload.
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { startLeader, type Leader } from '../helpers/leader'
import { call, registerUser } from '../helpers/e2e'
import { until } from '../helpers/until'

const SIZE = 384 * 1024 * 1024
const CHUNK = 1024 * 1024

/** The leader's resident memory (Linux), in bytes. */
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024

/** Deterministic bytes, CHUNK at a time: the test never holds the artifact either. */
function chunkAt(i: number): Uint8Array {
  const out = new Uint8Array(CHUNK)
  const view = new DataView(out.buffer)
  for (let o = 0; o < CHUNK; o += 4) view.setUint32(o, (i * 2654435761 + o * 40503) >>> 0)
  return out
}

let leader: Leader
afterAll(async () => {
  await leader?.stop()
  // The blob is hundreds of MiB: not left behind in the temp directory.
  if (leader) rmSync(leader.dir, { recursive: true, force: true })
})

describe('artifacts through the binary', () => {
  test(`a ${SIZE / 1024 / 1024} MiB upload streams to disk in one PUT with the leader's memory flat, and downloads back whole and by range`, async () => {
    leader = await startLeader({ SVC_BODY_TIMEOUT_S: '2' })
    const admin = await registerUser(leader.url, 'admin@example.com', 'a long enough password')
    const pool = (await admin.call('POST', '/api/v1/pools', { name: 'big' })).body
    const join = (await admin.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body
    const fellow = (await call(leader.url, 'POST', '/api/v1/workers/register', { bearer: join.join_token, body: { hostname: 'gpu' } })).body
    const node = fellow.node_token as string

    const hasher = new Bun.CryptoHasher('sha256')
    for (let i = 0; i < SIZE / CHUNK; i++) hasher.update(chunkAt(i))
    const sha256 = hasher.digest('hex')
    const begun = await call(leader.url, 'POST', '/api/v1/artifacts/uploads', { bearer: node, body: { kind: 'model', name: 'big.bin', size_bytes: SIZE, sha256 } })
    expect(begun.status).toBe(201)

    const before = rssOf(leader.proc.pid)
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(leader.proc.pid))), 20)
    let i = 0
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (i === SIZE / CHUNK) ctl.close()
        else ctl.enqueue(chunkAt(i++))
      },
    })
    // A copied upload may wait on the disk: it has SVC_UPLOAD_IDLE_TIMEOUT_S (60 s), not the body's 2 s.
    const put = await fetch(`${leader.url}/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${node}`, 'content-type': 'application/octet-stream', 'content-length': String(SIZE) },
      body,
      duplex: 'half',
    } as RequestInit).finally(() => clearInterval(sampler))
    expect(put.status).toBe(201)
    const { artifact } = (await put.json()) as { artifact: { id: string; sha256: string; size_bytes: number } }
    expect([artifact.sha256, artifact.size_bytes]).toEqual([sha256, SIZE])
    // A body held whole would add its 384 MiB; streamed, the leader grows by a few chunks' worth.
    expect(peak - before).toBeLessThan(96 * 1024 * 1024)

    const back = await fetch(`${leader.url}/api/v1/artifacts/${artifact.id}/content`, { headers: { authorization: `Bearer ${node}` } })
    expect(back.headers.get('content-length')).toBe(String(SIZE))
    const check = new Bun.CryptoHasher('sha256')
    for await (const c of back.body!) check.update(c)
    expect(check.digest('hex')).toBe(sha256)
    const part = await fetch(`${leader.url}/api/v1/artifacts/${artifact.id}/content`, { headers: { authorization: `Bearer ${node}`, range: `bytes=${5 * CHUNK}-${5 * CHUNK + 99}` } })
    expect(part.status).toBe(206)
    expect(new Uint8Array(await part.arrayBuffer()) as Uint8Array).toEqual(chunkAt(5).subarray(0, 100))
  }, 120_000)

  test('an upload whose body stalls longer than SVC_BODY_TIMEOUT_S is answered 408, and what arrived is kept for the resume', async () => {
    const admin = await registerUser(leader.url, 'second@example.com', 'a long enough password')
    const pool = (await admin.call('POST', '/api/v1/pools', { name: 'stall' })).body
    const join = (await admin.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body
    const node = (await call(leader.url, 'POST', '/api/v1/workers/register', { bearer: join.join_token, body: { hostname: 'gpu2' } })).body.node_token as string
    const data = new Uint8Array(1000).fill(7)
    const sha256 = new Bun.CryptoHasher('sha256').update(data).digest('hex')
    const id = (await call(leader.url, 'POST', '/api/v1/artifacts/uploads', { bearer: node, body: { kind: 'file', name: 'slow', size_bytes: 1000, sha256 } })).body.upload_id
    let sent = false
    const body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        if (!sent) {
          sent = true
          ctl.enqueue(data.subarray(0, 400))
          return
        }
        await Bun.sleep(10_000) // never more: the leader gives up first
      },
    })
    const r = await fetch(`${leader.url}/api/v1/artifacts/uploads/${id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${node}`, 'content-type': 'application/octet-stream' }, body, duplex: 'half' } as RequestInit)
    expect(r.status).toBe(408)
    expect(await r.json()).toMatchObject({ code: 'request_timeout', offset: 400 })
    expect((await call(leader.url, 'GET', `/api/v1/artifacts/uploads/${id}`, { bearer: node })).body.offset).toBe(400)
  }, 30_000)

  test('a body of declared length that stalls has its connection closed after SVC_UPLOAD_IDLE_TIMEOUT_S; what arrived is kept for the resume', async () => {
    const own = await startLeader({ SVC_UPLOAD_IDLE_TIMEOUT_S: '2' })
    try {
      await stalledCopy(own)
    } finally {
      await own.stop()
      rmSync(own.dir, { recursive: true, force: true })
    }
  }, 30_000)
})

async function stalledCopy(leader: Leader): Promise<void> {
  {
    const admin = await registerUser(leader.url, 'third@example.com', 'a long enough password')
    const pool = (await admin.call('POST', '/api/v1/pools', { name: 'stall-copy' })).body
    const join = (await admin.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body
    const node = (await call(leader.url, 'POST', '/api/v1/workers/register', { bearer: join.join_token, body: { hostname: 'gpu3' } })).body.node_token as string
    const data = new Uint8Array(1000).fill(9)
    const sha256 = new Bun.CryptoHasher('sha256').update(data).digest('hex')
    const id = (await call(leader.url, 'POST', '/api/v1/artifacts/uploads', { bearer: node, body: { kind: 'file', name: 'slow-copy', size_bytes: 1000, sha256 } })).body.upload_id
    const port = Number(new URL(leader.url).port)
    // Raw socket: 400 of 1000 declared bytes, then silence; the leader closes the connection.
    const closed = await new Promise<string>((resolve, reject) => {
      let answer = ''
      const sock = connect(port, '127.0.0.1', () => {
        sock.write(`PUT /api/v1/artifacts/uploads/${id}?offset=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${node}\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\n`)
        sock.write(data.subarray(0, 400))
      })
      sock.on('data', (d) => (answer += d.toString()))
      sock.on('close', () => resolve(answer))
      sock.on('error', reject)
      setTimeout(() => (sock.destroy(), reject(new Error('the leader kept the stalled connection open for 15 s'))), 15_000)
    })
    expect(closed).toBe('')
    const state = await until(async () => {
      const r = await call(leader.url, 'GET', `/api/v1/artifacts/uploads/${id}`, { bearer: node })
      return r.body.offset === 400 ? r.body : null
    }, 'the 400 bytes to be recorded')
    expect(state.offset).toBe(400)
    const rest = await fetch(`${leader.url}/api/v1/artifacts/uploads/${id}?offset=400`, { method: 'PUT', headers: { authorization: `Bearer ${node}`, 'content-type': 'application/octet-stream' }, body: data.subarray(400) })
    expect(rest.status).toBe(201)
  }
}
