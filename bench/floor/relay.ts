// Relay floor: a bare Bun.serve byte queue. POST /push reads the body and queues it; GET /pop
// answers the oldest body (or waits for one). No frame parsing, no policy, no job lookup: the
// cost of moving the bytes through Bun's HTTP server and back out, which the relay cannot beat.
const MAX_QUEUE_BYTES = 256 * 1024 * 1024 // the leader's default SVC_RELAY_MAX_QUEUE_BYTES
const queue: Uint8Array<ArrayBuffer>[] = []
let queued = 0
const waiters: ((b: Uint8Array<ArrayBuffer> | null) => void)[] = []

Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.FLOOR_PORT),
  maxRequestBodySize: 65 * 1024 * 1024,
  idleTimeout: 120,
  async fetch(req) {
    const url = new URL(req.url)
    if (url.pathname === '/ready') return new Response('ready')
    if (req.method === 'POST' && url.pathname === '/push') {
      const body = (await req.bytes()) as Uint8Array<ArrayBuffer>
      const w = waiters.shift()
      if (w) w(body)
      else {
        if (queued + body.byteLength > MAX_QUEUE_BYTES) return new Response(null, { status: 429 })
        queue.push(body)
        queued += body.byteLength
      }
      return Response.json({ queued: 1 }, { status: 202 })
    }
    if (req.method === 'GET' && url.pathname === '/pop') {
      let body = queue.shift() ?? null
      if (body) queued -= body.byteLength
      else {
        const wait = Number(url.searchParams.get('wait_ms') ?? 0)
        body = await new Promise<Uint8Array<ArrayBuffer> | null>((resolve) => {
          const timer = setTimeout(() => {
            const i = waiters.indexOf(w)
            if (i >= 0) waiters.splice(i, 1)
            resolve(null)
          }, wait)
          const w = (b: Uint8Array<ArrayBuffer> | null) => (clearTimeout(timer), resolve(b))
          waiters.push(w)
        })
      }
      if (!body) return new Response(null, { status: 204 })
      return new Response(body, { headers: { 'content-type': 'application/octet-stream' } })
    }
    return new Response(null, { status: 404 })
  },
})
