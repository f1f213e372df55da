// Schemas the wire shapes of several features share. Below every feature: it imports none of them.
// The definitions live in src/wire/schema.ts, which the agent shares without loading elysia.
export { Timestamp } from './wire/schema'

import { t } from 'elysia'

/** Paged lists (admin users, the audit log): the most a page may hold, and what it holds unasked. */
export const MAX_PAGE_SIZE = 200
export const DEFAULT_PAGE_SIZE = 50
/** Query parameters (Elysia's t.Integer: parsed from the query string's text). */
export const Page = t.Integer({ minimum: 1, maximum: 1_000_000_000 })
export const PageSize = t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE })
