// The few schema builders the wire models need, in plain TypeBox: the agent loads these models
// and must not load Elysia (the whole leader would come with it). Each builds exactly the schema
// Elysia's `t` builds, so a route that validates a wire model behaves as it did with `t`:
// the same checks, the same 422 details, the same OpenAPI document.
import { Kind, Type, TypeRegistry, type IntegerOptions, type SchemaOptions, type StringOptions, type TNull, type TSchema, type TUnion, type TUnsafe } from '@sinclair/typebox'

/** TypeBox's own integer (never Elysia's t.Integer, a transform that also takes "5"). */
export const Int = (options?: IntegerOptions) => Type.Integer(options)

/** t.Nullable: the value or null, marked nullable for the OpenAPI document. */
export const Nullable = <T extends TSchema>(schema: T, options?: SchemaOptions): TUnion<[T, TNull]> => Type.Union([schema, Type.Null()], { ...options, nullable: true })

export const Timestamp = Type.String({ format: 'date-time' })

/**
 * A name given to something (a pool, a job, an API token, a fellow's host): not only spaces, and no
 * control characters, which would break lines in logs, mails and terminals. Spaces (JavaScript's
 * \s less the control characters), one visible character, then anything but a control character:
 * the three parts cannot overlap, so one pass decides (TypeBox checks every rule of a refused
 * value, however long), and the fuzzers' generators, which know no lookahead, can build it.
 */
// Control characters, and the bidirectional embeddings, overrides and isolates (U+202A-U+202E,
// U+2066-U+2069), which make text display in another order than it is ("report\u202Efdp.exe"
// shows as "reportexe.pdf"): a name holding one can pass for another.
const CONTROL = '\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069'
// Spaces, and what shows as nothing (zero-width space and joiners, direction marks, word joiner,
// soft hyphen): a name of these alone is blank.
const SPACE = ' \\u00a0\\u00ad\\u1680\\u180e\\u2000-\\u200f\\u2028\\u2029\\u202f\\u205f-\\u2064\\u3000\\ufeff'
export const LABEL_PATTERN = `^[${SPACE}]*[^\\s${SPACE}${CONTROL}][^${CONTROL}]*$`
export const Label = (maxLength: number, options: StringOptions = {}) => Type.String({ ...options, minLength: 1, maxLength, pattern: LABEL_PATTERN })
/** Free text that is never blank-checked but must print safely: no control characters (a display name, a search). */
export const NO_CONTROL_PATTERN = `^[^${CONTROL}]*$`
/** A file's name that is never a path: no '/' and no control characters (an artifact's name). */
export const FILE_NAME_PATTERN = `^[^/${CONTROL}]+$`

// The check Elysia registers for its UnionEnum kind, registered here too when the wire models
// load first; Elysia keeps a kind that is already registered, so there is one either way.
if (!TypeRegistry.Has('UnionEnum')) {
  TypeRegistry.Set('UnionEnum', (schema: { enum: unknown[] }, value) => (typeof value === 'number' || typeof value === 'string' || value === null) && schema.enum.includes(value))
}

/**
 * One of `values`, as a JSON-schema enum: Elysia's t.UnionEnum (the same kind and check) without
 * its default. t.UnionEnum defaults to its first value, and Elysia fills a schema's default into a
 * missing field before validating: a required enum could never be missing (an upload without
 * `kind` became a checkpoint), an optional one never absent (a job list without ?status showed
 * only queued jobs). Every enum of the leader and the agent is this one; test/http/openapi.test.ts
 * refuses a required field with a default.
 */
export function UnionEnum<const T extends readonly (string | number | null)[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> {
  const type = values.every((v) => typeof v === 'string') ? { type: 'string' } : values.every((v) => typeof v === 'number') ? { type: 'number' } : values.every((v) => v === null) ? { type: 'null' } : {}
  return { ...options, [Kind]: 'UnionEnum', ...type, enum: values } as unknown as TUnsafe<T[number]>
}
