// JSON Schema repairs for the OpenAPI 3.1 document. Elysia's TypeBox helpers emit shapes that
// are right for its validator but wrong in a 3.1 document: t.Integer / t.Numeric are
// anyOf [numeric string with default 0, integer] (tools then generate strings for integer fields,
// and a string with default 0 is not a valid schema), and t.Nullable adds `nullable: true`, an
// OpenAPI 3.0 keyword that 3.1 (plain JSON Schema 2020-12) does not have.

export type Schema = { [key: string]: unknown }

export const isObject = (v: unknown): v is Schema => v !== null && typeof v === 'object' && !Array.isArray(v)

const MAP_KEYS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'])
const LIST_KEYS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems'])
const ONE_KEYS = new Set(['items', 'additionalProperties', 'unevaluatedProperties', 'contains', 'not', 'if', 'then', 'else', 'propertyNames'])

/** The number half of Elysia's numeric twin (anyOf [string format integer|numeric, integer|number]), or null. */
function numericTwin(anyOf: unknown[]): Schema | null {
  if (anyOf.length !== 2) return null
  const str = anyOf.find((s) => isObject(s) && s.type === 'string' && (s.format === 'integer' || s.format === 'numeric'))
  const num = anyOf.find((s) => isObject(s) && (s.type === 'integer' || s.type === 'number'))
  return str !== undefined && num !== undefined ? (num as Schema) : null
}

const admitsNull = (s: Schema): boolean =>
  s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null')) || (Array.isArray(s.anyOf) && s.anyOf.some((x) => isObject(x) && admitsNull(x)))

/** Makes `s` admit null the 3.1 way: a type array, or an anyOf member {type: 'null'}. */
function withNull(s: Schema): Schema {
  if (admitsNull(s)) {
    // A type array with null but an enum or const without it still refuses null.
    if (Array.isArray(s.enum) && !s.enum.includes(null)) return { ...s, enum: [...s.enum, null] }
    if ('const' in s && s.const !== null) {
      const { const: c, ...rest } = s
      return { ...rest, enum: [c, null] }
    }
    return s
  }
  if (typeof s.type === 'string' && s.enum === undefined && !('const' in s) && s.anyOf === undefined) return { ...s, type: [s.type, 'null'] }
  const { description, ...rest } = s
  return { ...(description === undefined ? {} : { description }), anyOf: [rest, { type: 'null' }] }
}

/** A repaired deep copy of a JSON Schema (the input is not changed). */
export function tidySchema(input: unknown): unknown {
  if (Array.isArray(input)) return input.map(tidySchema)
  if (!isObject(input)) return input
  let s: Schema = {}
  for (const [k, v] of Object.entries(input)) {
    if (k === 'nullable') continue
    if (MAP_KEYS.has(k) && isObject(v)) s[k] = Object.fromEntries(Object.entries(v).map(([n, c]) => [n, tidySchema(c)]))
    else if (LIST_KEYS.has(k) && Array.isArray(v)) s[k] = v.map(tidySchema)
    else if (ONE_KEYS.has(k) && isObject(v)) s[k] = tidySchema(v)
    else s[k] = v
  }
  if (Array.isArray(s.anyOf)) {
    const twin = numericTwin(s.anyOf)
    if (twin !== null) {
      const { anyOf: _, ...outer } = s
      s = { ...twin, ...outer }
    } else {
      // anyOf [X, null] with a plain X reads better (and generates better) as X with type [t, 'null'].
      const nonNull = s.anyOf.filter((x) => !(isObject(x) && x.type === 'null'))
      const only = nonNull[0]
      if (nonNull.length === 1 && s.anyOf.length === 2 && isObject(only) && typeof only.type === 'string' && only.enum === undefined && !('const' in only) && only.anyOf === undefined) {
        const { anyOf: _, ...outer } = s
        s = { ...only, ...outer, type: [only.type, 'null'] }
      }
    }
  }
  return input.nullable === true ? withNull(s) : s
}
