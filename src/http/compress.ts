// Response compression: HTML, JSON, scripts and styles go out gzip- or brotli-encoded when the
// client asks for it (the OpenAPI document is 69 KB, a pool page 20 KB). Fellow traffic is left
// alone: node-class answers are small, and relay and inference bodies are binary or streamed.
import { Elysia } from 'elysia'
import type { PolicyIndex } from './policy'

/** Below this, the encoding costs more than it saves. */
export const MIN_COMPRESS_BYTES = 1024

// Not application/problem+json: errors are short, and a route may still rewrite one after this
// hook (the OpenAI-compatible routes turn problems into OpenAI's error shape; compressed first,
// the rewrite read an empty message and kept the gzip header over plain bytes).
const COMPRESSIBLE = /^(text\/(html|css|plain|javascript|csv|xml)|application\/(json|javascript|xml|manifest\+json)|image\/svg\+xml)\b/

export type Encoding = 'br' | 'gzip'

/** The encoding to use for an Accept-Encoding header: brotli first, then gzip; q=0 refuses. */
export function pickEncoding(accept: string | null): Encoding | null {
  if (accept === null) return null
  let br = false
  let gzip = false
  for (const part of accept.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p))
    if (refused) continue
    if (name === 'br') br = true
    else if (name === 'gzip' || name === 'x-gzip' || name === '*') gzip = true
  }
  return br ? 'br' : gzip ? 'gzip' : null
}

export function encode(body: Uint8Array, encoding: Encoding): Uint8Array {
  // Brotli quality 5 is about gzip's speed at a better ratio; 11 takes tens of ms on a page.
  if (encoding === 'br') {
    // node:zlib (gzip is Bun's own) loads with the first brotli answer: importing it brings Node's
    // streams along, about 10 ms of every start.
    const zlib = require('node:zlib') as typeof import('node:zlib')
    return zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength } })
  }
  return Bun.gzipSync(body as Uint8Array<ArrayBuffer>, { level: 6 })
}

const encoder = new TextEncoder()

export function compressionPlugin(index: PolicyIndex) {
  // Not async: a hook that returns nothing returns it at once (an async hook made every request
  // await it, fellow traffic included). Only re-encoding a Response body waits.
  return new Elysia({ name: 'compression' }).mapResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
    if (request.method === 'HEAD' || (route && index.lookup(request.method, route).policy === 'node')) return
    const status = typeof set.status === 'number' ? set.status : 200
    if (status === 204 || status === 304 || (status >= 300 && status < 400)) return
    const encoding = pickEncoding(request.headers.get('accept-encoding'))
    if (responseValue instanceof Response) {
      const type = responseValue.headers.get('content-type') ?? ''
      // Only bodies the allow-list names, which this app builds from strings; streams (SSE) and
      // binaries never reach the read below.
      if (!COMPRESSIBLE.test(type) || responseValue.headers.has('content-encoding') || responseValue.body === null) return
      addVary(responseValue.headers)
      if (encoding === null) return
      return reencoded(responseValue, encoding)
    }
    let bytes: Uint8Array
    let type: string
    if (typeof responseValue === 'string') {
      type = String(set.headers['content-type'] ?? 'text/plain; charset=utf-8')
      if (!COMPRESSIBLE.test(type)) return
      bytes = encoder.encode(responseValue)
    } else if (isPlainJson(responseValue)) {
      type = String(set.headers['content-type'] ?? 'application/json')
      if (!COMPRESSIBLE.test(type)) return
      bytes = encoder.encode(JSON.stringify(responseValue))
    } else return
    set.headers['vary'] = varyWith(set.headers['vary'] as string | undefined)
    if (encoding === null || bytes.byteLength < MIN_COMPRESS_BYTES) return
    // set.headers (cookies, security headers, cache-control) are merged into this Response by Elysia.
    return encoded(bytes, encoding, status, new Headers({ 'content-type': type }))
  })
}

async function reencoded(res: Response, encoding: Encoding): Promise<Response> {
  const bytes = new Uint8Array(await res.arrayBuffer())
  const headers = new Headers(res.headers)
  if (bytes.byteLength < MIN_COMPRESS_BYTES) return new Response(bytes, { status: res.status, headers })
  return encoded(bytes, encoding, res.status, headers)
}

function isPlainJson(v: unknown): v is object {
  if (v === null || typeof v !== 'object') return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null || Array.isArray(v)
}

function encoded(bytes: Uint8Array, encoding: Encoding, status: number, headers: Headers): Response {
  headers.set('content-encoding', encoding)
  headers.delete('content-length')
  addVary(headers)
  return new Response(encode(bytes, encoding), { status, headers })
}

function varyWith(v: string | undefined): string {
  if (v === undefined || v === '') return 'Accept-Encoding'
  return /accept-encoding/i.test(v) ? v : `${v}, Accept-Encoding`
}

function addVary(headers: Headers): void {
  headers.set('vary', varyWith(headers.get('vary') ?? undefined))
}
