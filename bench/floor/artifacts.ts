// Artifact floor: a bare Bun.serve file store. PUT /blobs/<name> streams the body into a file under
// FLOOR_DIR a chunk at a time (Bun.file writer); GET /blobs/<name> answers `new Response(Bun.file())`.
// No credential, no hash, no fsync, no database row: the cost of moving the bytes through Bun's HTTP
// server to the disk and back, which the leader's artifact store cannot beat.
import { join } from 'node:path'

const DIR = process.env.FLOOR_DIR!
const pathOf = (name: string) => join(DIR, name.replace(/[^\w.-]/g, '_'))

Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.FLOOR_PORT),
  maxRequestBodySize: 2 * 1024 ** 3, // above the 256 MiB the scenario sends (Bun's default is 128 MiB)
  idleTimeout: 120,
  async fetch(req) {
    const url = new URL(req.url)
    if (url.pathname === '/ready') return new Response('ready')
    if (!url.pathname.startsWith('/blobs/')) return new Response(null, { status: 404 })
    const path = pathOf(url.pathname.slice('/blobs/'.length))
    if (req.method === 'PUT') {
      const sink = Bun.file(path).writer({ highWaterMark: 1024 * 1024 })
      let bytes = 0
      for await (const chunk of req.body!) {
        sink.write(chunk)
        bytes += chunk.byteLength
      }
      await sink.end()
      return Response.json({ bytes }, { status: 201 })
    }
    if (req.method === 'GET') return new Response(Bun.file(path), { headers: { 'content-type': 'application/octet-stream' } })
    return new Response(null, { status: 405 })
  },
})
