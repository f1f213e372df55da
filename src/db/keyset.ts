// Keyset paging: a page ends at its last row's (time, id), and the next starts after it, so rows
// written meanwhile neither shift a page nor repeat one. The cursor is opaque to clients.
import { invalid } from '../errors'

export interface Key {
  ts: number
  id: string
}

/** The cursor of a page's last row: where the next page starts. */
export function cursorOf(k: Key): string {
  return Buffer.from(`${k.ts}.${k.id}`).toString('base64url')
}

/** A cursor this leader handed out, or 422 naming the `cursor` parameter. */
export function parseCursor(c: string): Key {
  const m = /^(\d{1,16})\.([0-9a-f-]{36})$/.exec(Buffer.from(c, 'base64url').toString())
  if (!m) throw invalid('cursor is not one this list handed out', { errors: [{ path: '/cursor', message: 'use next_cursor of the previous page as it is' }] })
  return { ts: Number(m[1]), id: m[2]! }
}
