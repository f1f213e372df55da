// Request bodies: JSON only on state-changing routes (415 otherwise), at most SVC_MAX_BODY_BYTES;
// binary (application/octet-stream) only on routes that declare `detail.body = 'binary'`.
import { Elysia } from 'elysia'
import { AppError } from '../errors'
import type { PolicyIndex } from './policy'

export async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) {
    throw new AppError('payload_too_large', `The body is larger than ${limit} bytes.`)
  }
  if (request.body === null) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel()
      throw new AppError('payload_too_large', `The body is larger than ${limit} bytes.`)
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

const decoder = new TextDecoder('utf-8', { fatal: true })

export async function readJson(request: Request, limit: number): Promise<unknown> {
  const bytes = await readLimited(request, limit)
  if (bytes.byteLength === 0) return undefined
  let text: string
  try {
    text = decoder.decode(bytes)
  } catch {
    throw new AppError('bad_request', 'The body is not valid UTF-8.')
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new AppError('bad_request', 'The body is not valid JSON.')
  }
}

export function bodyPlugin(maxJsonBytes: number, maxBinaryBytes: number, index: PolicyIndex) {
  return new Elysia({ name: 'body' }).onParse({ as: 'global' }, async ({ request, contentType, route }) => {
    const ct = (contentType ?? '').trim().toLowerCase()
    const binary = index.lookup(request.method, route).binary
    if (binary) {
      // Refused by the handler, after the credential check, so an anonymous caller still sees 401.
      if (ct !== 'application/octet-stream') return { unsupportedMediaType: ct }
      return readLimited(request, maxBinaryBytes)
    }
    if (ct === 'application/json' || (ct.startsWith('application/') && ct.endsWith('+json'))) {
      return readJson(request, maxJsonBytes)
    }
    // No content type: fine when there is no body at all (a bodiless POST or DELETE).
    if (ct === '' && (await readLimited(request, maxJsonBytes)).byteLength === 0) return undefined
    throw new AppError('unsupported_media_type', 'Send a JSON body with Content-Type: application/json.')
  })
}
