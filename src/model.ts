// Schemas the wire shapes of several features share. Below every feature: it imports none of them.
// The definitions live in src/wire/schema.ts, which the agent shares without loading elysia.
export { Label, NO_CONTROL_PATTERN, Timestamp, UnionEnum } from './wire/schema'

import { t } from 'elysia'
import { Type, type IntegerOptions, type TSchema } from '@sinclair/typebox'

/** Paged lists (admin users, the audit log): the most a page may hold, and what it holds unasked. */
export const MAX_PAGE_SIZE = 200
export const DEFAULT_PAGE_SIZE = 50
/**
 * An integer the leader sends (response schemas). Elysia's t.Integer takes a numeric string too,
 * which queries need (and JSON bodies keep accepting); it pays for that with a compiled checker per
 * use at start and a transform every response is walked through. A response never holds a string:
 * TypeBox's own integer, which the OpenAPI document shows the same way.
 */
export const Int = (options?: IntegerOptions) => Type.Integer(options)

/** Query parameters (Elysia's t.Integer: parsed from the query string's text). */
export const Page = t.Integer({ minimum: 1, maximum: 1_000_000_000 })
export const PageSize = t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE })

/**
 * A list paged by number or by cursor (CONTRACT's paginated shape, with the keyset cursor of
 * src/db/keyset.ts): the audit log and the jobs.
 */
export const CursorList = <T extends TSchema>(item: T) =>
  t.Object({
    items: t.Array(item),
    /** Matching items, counted up to a cap (total_exact false past it). */
    total: Int(),
    total_exact: t.Boolean(),
    /** The page asked for; null when the list was read from a cursor. */
    page: t.Nullable(Int()),
    page_size: Int(),
    /** Pass as `cursor` for the items after this page; null on the last page. */
    next_cursor: t.Nullable(t.String()),
  })
