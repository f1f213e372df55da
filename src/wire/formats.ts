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

export function registerFormats(): void {
  FormatRegistry.Set('uuid', (v) => UUID.test(v))
  FormatRegistry.Set('integer', (v) => DECIMAL_INTEGER.test(v))
  FormatRegistry.Set('numeric', (v) => DECIMAL.test(v))
}

registerFormats()
