// Plain words for a refused value, where Elysia's own would confuse.
// Numbers: Elysia's t.Integer / t.Numeric (the query-string numbers) are anyOf [numeric string,
// number], so a refused `?page=` read "Property 'page' should be one of: 'integer', 'integer'";
// and their range is checked after the string is decoded, where the error no longer knows the
// field ("property /: Expected integer to be greater or equal to 1").
// Enums: a value UnionEnum refuses read "Expected kind 'UnionEnum'", the name of a type.
// Names: a blank one read "Expected string to match '^[ \u00a0...'", the rule as a regex.
import { ValueErrorType } from '@sinclair/typebox/errors'
import { FILE_NAME_PATTERN, LABEL_PATTERN, NO_CONTROL_PATTERN } from './schema'
import { UUID_ANY_CASE } from './formats'

type Loose = { [key: string]: unknown }
const isRecord = (v: unknown): v is Loose => v !== null && typeof v === 'object'

/** "must be an integer from 1 to 200" for a number schema (or Elysia's numeric twin), else null. */
export function numericIssueText(schema: unknown): string | null {
  if (!isRecord(schema)) return null
  let kind: unknown = schema.type
  if (Array.isArray(schema.anyOf)) {
    const members = schema.anyOf.filter(isRecord)
    const twin = members.some((s) => s.type === 'string' && (s.format === 'integer' || s.format === 'numeric'))
    kind = twin ? (members.find((s) => s.type === 'integer' || s.type === 'number')?.type ?? null) : null
  }
  if (kind !== 'integer' && kind !== 'number') return null
  const lo = typeof schema.minimum === 'number' ? schema.minimum : undefined
  const hi = typeof schema.maximum === 'number' ? schema.maximum : undefined
  const range = lo !== undefined && hi !== undefined ? ` from ${lo} to ${hi}` : lo !== undefined ? ` of at least ${lo}` : hi !== undefined ? ` of at most ${hi}` : ''
  return `must be ${kind === 'integer' ? 'an integer' : 'a number'}${range}`
}

/** "must be one of: \"checkpoint\", \"model\", \"file\"" for a value an enum refused, else null. */
export function enumIssueText(schema: unknown, type: unknown): string | null {
  if (!isRecord(schema) || !Array.isArray(schema.enum) || type !== ValueErrorType.Kind) return null
  return `must be one of: ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`
}

/** Plain words for a name its pattern refused (a Label, a file's name), else null. */
export function patternIssueText(schema: unknown, type: unknown): string | null {
  if (!isRecord(schema) || type !== ValueErrorType.StringPattern) return null
  if (schema.pattern === LABEL_PATTERN) return 'must not be blank or hold control characters'
  if (schema.pattern === FILE_NAME_PATTERN) return "must not hold '/' or control characters"
  if (schema.pattern === NO_CONTROL_PATTERN) return 'must not hold control characters'
  return null
}

/** "must be one of: \"asc\", \"desc\"" for a union of literals (Elysia said "should be one of: 'string', 'string'"). */
export function literalUnionIssueText(schema: unknown): string | null {
  if (!isRecord(schema) || !Array.isArray(schema.anyOf)) return null
  const members = schema.anyOf.filter(isRecord)
  if (members.length === 0 || members.length !== schema.anyOf.length || !members.every((m) => 'const' in m)) return null
  return `must be one of: ${members.map((m) => JSON.stringify(m.const)).join(', ')}`
}

/** "must be null or ..." for a nullable string or number (Elysia: "should be one of: 'string', 'null'"; TypeBox: "Expected union value"). */
export function nullableIssueText(schema: unknown): string | null {
  if (!isRecord(schema) || !Array.isArray(schema.anyOf) || schema.anyOf.length !== 2) return null
  const [inner, nul] = schema.anyOf as unknown[]
  if (!isRecord(inner) || !isRecord(nul) || nul.type !== 'null') return null
  const numeric = numericIssueText(inner)
  if (numeric) return `must be null or ${numeric.replace(/^must be /, '')}`
  if (inner.type !== 'string') return null
  const lo = typeof inner.minLength === 'number' ? inner.minLength : 0
  const hi = typeof inner.maxLength === 'number' ? inner.maxLength : null
  const size = hi !== null ? ` of ${lo} to ${hi} characters` : lo > 0 ? ` of at least ${lo} characters` : ''
  const rule = patternIssueText(inner, ValueErrorType.StringPattern)
  return `must be null or a string${size}${rule ? `; it ${rule}` : ''}`
}

/**
 * Shapes, lists, formats and the rule of a pattern (`x-rule` on the schema: "1 to 48 lower-case
 * letters ...") in words, where the validator says "Expected object", "Property 'zzz' should not be
 * provided", "Expected string to match '^[a-z0-9](?:...'" or "should be date-time".
 */
export function shapeIssueText(schema: unknown, type: unknown): string | null {
  if (!isRecord(schema)) return null
  const n = (v: unknown) => (typeof v === 'number' ? v : 0)
  switch (type) {
    case ValueErrorType.Object:
      return 'must be a JSON object ({...})'
    case ValueErrorType.ObjectAdditionalProperties:
      return 'is not a field this request takes'
    case ValueErrorType.ObjectMinProperties:
      return n(schema.minProperties) === 1 ? 'must name at least one field to change' : `must name at least ${n(schema.minProperties)} fields`
    case ValueErrorType.Array:
      return 'must be a list ([...])'
    case ValueErrorType.ArrayMinItems:
      return `must hold at least ${n(schema.minItems)} item${n(schema.minItems) === 1 ? '' : 's'}`
    case ValueErrorType.ArrayMaxItems:
      return `must hold at most ${n(schema.maxItems)} item${n(schema.maxItems) === 1 ? '' : 's'}`
    case ValueErrorType.ArrayUniqueItems:
      return 'must not name an item twice'
    case ValueErrorType.Boolean:
      return 'must be true or false'
    case ValueErrorType.String:
      return 'must be a string'
    case ValueErrorType.StringPattern:
    case ValueErrorType.StringMinLength:
    case ValueErrorType.StringMaxLength:
      return typeof schema['x-rule'] === 'string' ? `must be ${schema['x-rule']}` : null
    case ValueErrorType.StringFormat:
      return schema.format === 'date-time' ? 'must be a date and time such as 2026-11-27T09:30:00Z' : null
  }
  return null
}

/** Lengths and the email format in words (Elysia: "Expected string length greater or equal to 1", "Property 'email' should be email"). */
export function stringIssueText(schema: unknown, type: unknown, value?: unknown): string | null {
  if (!isRecord(schema) || schema.type !== 'string') return null
  if (type === ValueErrorType.StringMinLength && typeof schema.minLength === 'number') return schema.minLength === 1 ? 'must not be empty' : `must be at least ${schema.minLength} characters`
  if (type === ValueErrorType.StringMaxLength && typeof schema.maxLength === 'number') return `must be at most ${schema.maxLength} characters`
  if (type === ValueErrorType.StringFormat && schema.format === 'email') return 'must be an email address (name@example.org)'
  if (type === ValueErrorType.StringFormat && schema.format === 'uuid') {
    return typeof value === 'string' && UUID_ANY_CASE.test(value) ? 'must be an id in lower case, as the leader gives them (a UUID)' : 'must be an id (a UUID)'
  }
  return null
}

/**
 * The plain words for any refused value: the rules above, else the validator's own message with
 * its first letter lowered for the middle of a sentence (all of it lowered turned a pattern such as
 * ^[A-Za-z0-9] into ^[a-za-z0-9], which it is not).
 */
export function issueText(schema: unknown, type: unknown, fallback: string, value?: unknown): string {
  if (type === ValueErrorType.ObjectRequiredProperty) return 'is missing'
  return (
    numericIssueText(schema) ??
    enumIssueText(schema, type) ??
    literalUnionIssueText(schema) ??
    nullableIssueText(schema) ??
    patternIssueText(schema, type) ??
    shapeIssueText(schema, type) ??
    stringIssueText(schema, type, value) ??
    fallback.charAt(0).toLowerCase() + fallback.slice(1)
  )
}

/** The query parameter that carried `value`, when exactly one did (the field of a range error). */
export function queryParamHolding(url: string, value: unknown): string | null {
  if (typeof value !== 'number') return null
  let hits: string[]
  try {
    hits = [...new URL(url).searchParams].filter(([, v]) => v.trim() !== '' && Number(v) === value).map(([k]) => k)
  } catch {
    return null
  }
  return hits.length === 1 ? hits[0]! : null
}
