// The artifact store on S3 when the bucket misbehaves: a real S3-compatible server (s3rver) behind
// a fault-injecting TCP proxy (one connection per request; a rule answers an error status, hangs,
// or cuts the answer short), and the leader on a real port, so what a client sees is what the
// wire carries (status, headers, a body that breaks off).
import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { createServer, connect, type Socket } from 'node:net'
import { makeHarness, seedUser, sessionClient } from '../helpers/harness'
import { listen } from '../helpers/listen'
import { startFakeS3 } from '../helpers/s3'
import { ArtifactService } from '../../src/artifacts/service'
import { S3BlobStore } from '../../src/artifacts/store'
import type { UserCaller } from '../../src/caller'

interface Rule {
  method?: string
  path?: string
  mode: 'status' | 'hang' | 'truncate'
  status?: number
  code?: string
  /** truncate: response bytes passed before the connection is reset. */
  after?: number
  /** Times the rule applies; unset: for good. */
  count?: number
}

/** A TCP proxy in front of the S3 server that applies the first matching rule to each request. */
function faultProxy(port: number, upstreamPort: number) {
  let rules: Rule[] = []
  const seen: string[] = []
  const open = new Set<Socket>()
  const pick = (method: string, path: string): Rule | null => {
    for (const r of rules) {
      if ((r.method && r.method !== method) || (r.path && !path.includes(r.path))) continue
      if (r.count !== undefined) {
        if (r.count <= 0) continue
        r.count--
      }
      return r
    }
    return null
  }
  const server = createServer((client) => {
    open.add(client)
    client.on('close', () => open.delete(client))
    client.on('error', () => {})
    let head = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf('\r\n\r\n')
      if (end < 0) return
      client.off('data', onData)
      client.pause()
      const lines = head.subarray(0, end).toString('latin1').split('\r\n')
      const [method, path] = lines[0]!.split(' ') as [string, string]
      const rule = pick(method, path)
      seen.push(`${method} ${path} ${rule?.mode ?? 'pass'}`)
      if (rule?.mode === 'hang') return void client.resume()
      if (rule?.mode === 'status') {
        const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${rule.code ?? 'InternalError'}</Code><Message>injected</Message><RequestId>x</RequestId></Error>`
        client.end(`HTTP/1.1 ${rule.status ?? 500} Injected\r\nContent-Type: application/xml\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
        return
      }
      // One request per connection: the proxy decides per request.
      const kept = lines.filter((l, i) => i === 0 || !/^connection:/i.test(l))
      kept.push('Connection: close')
      const up = connect(upstreamPort, '127.0.0.1')
      up.on('error', () => client.destroy())
      client.on('close', () => up.destroy())
      up.write(Buffer.concat([Buffer.from(kept.join('\r\n') + '\r\n\r\n', 'latin1'), head.subarray(end + 4)]))
      client.on('data', (c: Buffer) => up.write(c))
      client.resume()
      let passed = 0
      const limit = rule?.mode === 'truncate' ? (rule.after ?? 0) : Infinity
      up.on('data', (c: Buffer) => {
        if (passed + c.length < limit) {
          passed += c.length
          client.write(c)
          return
        }
        client.write(c.subarray(0, limit - passed), () => (client.resetAndDestroy(), up.destroy()))
      })
      up.on('end', () => client.end())
    }
    client.on('data', onData)
  })
  server.listen(port, '127.0.0.1')
  return {
    endpoint: `http://127.0.0.1:${port}`,
    set: (r: Rule[]) => void (rules = r),
    seen,
    stop: () => {
      for (const s of open) s.destroy()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}

const s3 = await startFakeS3('bucket')
const proxy = faultProxy(46811, Number(new URL(s3.endpoint).port))
const h = makeHarness({
  SVC_ARTIFACTS_URL: 's3://bucket/faults',
  SVC_ARTIFACTS_S3_ENDPOINT: proxy.endpoint,
  SVC_ARTIFACTS_S3_REGION: 'us-east-1',
  SVC_ARTIFACTS_S3_ACCESS_KEY_ID: s3.accessKeyId,
  SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
})
h.clock.set(Date.now())
const server = listen(h)
afterAll(async () => {
  await server.stop()
  h.close()
  await proxy.stop()
  await s3.stop()
})
beforeEach(() => proxy.set([]))

const sha256 = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')
const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff)
const octets = { 'content-type': 'application/octet-stream' }

const alice = await seedUser(h, 'alice@example.com')
const a = sessionClient(h, alice.id)
const pool = (await a.post('/api/v1/pools', { name: 'S3 pool' })).body
const token = (await a.post('/api/v1/api-tokens', { name: 'dl' })).body.token as string

async function stored(data: Uint8Array, name = 'weights.bin') {
  const begun = await a.post('/api/v1/artifacts/uploads', { kind: 'model', name, size_bytes: data.byteLength, sha256: sha256(data), pool_id: pool.id })
  const put = await a.call('PUT', `/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, data, octets)
  expect(put.status).toBe(201)
  return put.body.artifact as { id: string; sha256: string }
}
const download = (id: string, headers: Record<string, string> = {}) => fetch(`${server.url}/api/v1/artifacts/${id}/content`, { headers: { authorization: `Bearer ${token}`, ...headers } })

describe('downloads from a bucket that fails', () => {
  test('a bucket that refuses the object (503 SlowDown) is a 503 with Retry-After before any byte, not a 200 that breaks off', async () => {
    const art = await stored(bytes(50_000, 2))
    proxy.set([{ method: 'GET', path: '/faults/sha256/', mode: 'status', status: 503, code: 'SlowDown' }])
    const r = await download(art.id)
    expect(r.status).toBe(503)
    expect(r.headers.get('retry-after')).toBe('5')
    expect(((await r.json()) as { code: string }).code).toBe('service_unavailable')
    // Once the bucket answers again, the same request is served whole.
    proxy.set([])
    const ok = await download(art.id)
    expect(ok.status).toBe(200)
    expect(new Uint8Array(await ok.arrayBuffer())).toEqual(bytes(50_000, 2))
  })
})

describe('a bucket that stops answering', () => {
  // The same bucket through a store whose deadline is short (the leader's is 30 s a call).
  const settings = { bucket: 'bucket', prefix: 'faults', endpoint: proxy.endpoint, region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, sessionToken: null }
  const svc = new ArtifactService(h.ctx, new S3BlobStore(settings, { callMs: 300, writeMsPerMiB: 0 }))
  const me: UserCaller = { kind: 'user', userId: alice.id, role: 'user', via: 'session', credentialId: '', fromCookie: false }

  test('a download whose object never comes ends in 503 with Retry-After, not a request held for minutes', async () => {
    const art = await stored(bytes(20_000, 4), 'hung.bin')
    proxy.set([{ method: 'GET', path: '/faults/sha256/', mode: 'hang' }])
    const refused = await svc.open(me, art.id, null).catch((e) => e)
    expect([refused.code, refused.extra.retryAfterS]).toEqual(['service_unavailable', 5])
  })

  test('completing an upload against a bucket that takes the bytes and never answers is 503; the upload stays complete and the retry publishes it', async () => {
    const data = bytes(5_000, 5)
    const up = svc.beginUpload(me, { kind: 'model', name: 'stuck.bin', size_bytes: data.byteLength, sha256: sha256(data), pool_id: pool.id })
    const once = (b: Uint8Array) => ({
      declaredBytes: b.byteLength,
      copyable: false,
      toFile: () => Promise.reject(new Error('not copyable')),
      async *chunks() {
        if (b.byteLength > 0) yield b
      },
    })
    proxy.set([{ method: 'PUT', path: '/faults/sha256/', mode: 'hang' }])
    const refused = await svc.write(me, up.upload_id, 0, once(data)).catch((e) => e)
    expect([refused.code, refused.extra.retryAfterS]).toEqual(['service_unavailable', 5])
    proxy.set([])
    const done = await svc.write(me, up.upload_id, data.byteLength, once(new Uint8Array(0)))
    expect(done.done).toBe(true)
  })
})
