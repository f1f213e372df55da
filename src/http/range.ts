// One `Range: bytes=...` request header (RFC 9110, 14.2), for resumable downloads. Only a single
// range is served: a list of ranges, another unit or a malformed header is ignored (the whole body
// is sent, as the RFC allows); a well-formed range past the end is 416.
import { AppError } from '../errors'

/** Bytes [start, end) of a body of `size` bytes, or null for the whole body. */
export function parseRange(header: string | null, size: number): { start: number; end: number } | null {
  if (header === null) return null
  const m = /^\s*bytes\s*=\s*(\d{0,16})\s*-\s*(\d{0,16})\s*$/i.exec(header)
  if (m === null || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    // bytes=-N: the last N bytes.
    const n = Number(m[2])
    // Nothing to take the last bytes of: an empty body satisfies no suffix (it was 206 "0--1/0").
    if (n === 0 || size === 0) throw unsatisfiable(size)
    return { start: Math.max(0, size - n), end: size }
  }
  const start = Number(m[1])
  if (m[2] !== '' && Number(m[2]) < start) return null // invalid: ignored
  if (start >= size) throw unsatisfiable(size)
  const last = m[2] === '' ? size - 1 : Number(m[2])
  return { start, end: Math.min(last, size - 1) + 1 }
}

function unsatisfiable(size: number): AppError {
  return new AppError('range_not_satisfiable', `The range lies outside the ${size} byte(s) there are.`, { size_bytes: size })
}

/**
 * If-None-Match against an entity tag (weak comparison, RFC 9110 13.1.2): `*`, or the tag in its
 * list, with or without W/. A client holding the same bytes is answered 304.
 */
export function noneMatchHits(header: string | null, etag: string): boolean {
  if (header === null) return false
  if (header.trim() === '*') return true
  const opaque = etag.replace(/^W\//, '')
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === opaque)
}

/**
 * Whether a Range is to be served (If-Range, RFC 9110 13.1.5): without If-Range, yes; with it, only
 * when it is this entity tag exactly (strong comparison). A date, or another tag, means the copy the
 * client holds a part of may have changed: the whole body is sent.
 */
export function rangeStillApplies(ifRange: string | null, etag: string): boolean {
  if (ifRange === null) return true
  const tag = ifRange.trim()
  return !tag.startsWith('W/') && tag === etag
}
