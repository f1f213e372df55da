// The string formats the schemas name, one rule each wherever they are checked: the leader, the
// CLI (before a request leaves) and the agent. Registered when this module loads, whatever loaded
// first: Elysia's own rules (registered only where none is yet) took upper-case ids and a
// `urn:uuid:` prefix, which passed and then found nothing, and read "0x10" or "1e2" as numbers.
import { FormatRegistry } from '@sinclair/typebox'

/** An id as the leader writes them: a UUID in lower case. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** A UUID in either case: what a person may type for an id (the CLI lower-cases it). */
export const UUID_ANY_CASE = new RegExp(UUID.source, 'i')
/** A whole number in a query string as people write one: decimal digits. */
export const DECIMAL_INTEGER = /^-?\d{1,16}$/
/** A number in a query string: decimal digits with an optional fraction. */
export const DECIMAL = /^-?(?:\d{1,16}(?:\.\d{1,16})?|\.\d{1,16})$/

/**
 * A date and time as docs/api.md says times are written: RFC 3339 (ISO 8601), with its offset.
 * Elysia's rule took anything `Date` reads ("2026-11-28 7:00 AM" in the leader's time zone,
 * "01/12/2026" month first) and rolled impossible dates over (February 30th became March 2nd).
 */
const DATE_TIME = /^(\d{4})-(\d\d)-(\d\d)[Tt]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,9})?)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/

export function isDateTime(v: string): boolean {
  const m = DATE_TIME.exec(v)
  if (m === null) return false
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  // The last day of that month (day 0 of the next one), leap years included.
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate()
}

export function registerFormats(): void {
  FormatRegistry.Set('uuid', (v) => UUID.test(v))
  FormatRegistry.Set('date-time', isDateTime)
  FormatRegistry.Set('integer', (v) => DECIMAL_INTEGER.test(v))
  FormatRegistry.Set('numeric', (v) => DECIMAL.test(v))
}

registerFormats()
