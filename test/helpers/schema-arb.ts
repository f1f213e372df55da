// fast-check arbitraries from the JSON Schema that Elysia keeps on each route (TypeBox emits plain
// JSON Schema), and the mutations that turn a valid value into a hostile one. Only the keywords the
// leader's models use are understood; anything else degrades to "any JSON value", which is still
// a valid input for the fuzzer (the point is to send it, not to predict the answer).
import fc from 'fast-check'

export interface JsonSchema {
  /** A list (OpenAPI 3.1 / JSON Schema 2020-12: ['string', 'null']) admits any of its types. */
  type?: string | string[]
  const?: unknown
  enum?: unknown[]
  anyOf?: JsonSchema[]
  properties?: Record<string, JsonSchema>
  patternProperties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  minimum?: number
  maximum?: number
  maxProperties?: number
  minProperties?: number
}

export interface ArbOptions {
  /** Candidate values for a string field, by field name (real ids of the fuzz world); merged with generated ones. */
  candidates?: (field: string) => string[]
}

const BOUND_KEYS = ['minimum', 'maximum'] as const

/** A valid value for the schema (as far as the keywords above decide). */
export function arbitraryOf(schema: JsonSchema | undefined, opts: ArbOptions = {}, field = ''): fc.Arbitrary<unknown> {
  if (schema === undefined || schema === null || typeof schema !== 'object') return fc.jsonValue({ maxDepth: 2 })
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...schema.enum)
  if (Array.isArray(schema.anyOf) && schema.anyOf.length > 0) {
    // Elysia wraps integers as anyOf [numeric string, integer] with the bounds on the outside.
    const outer: JsonSchema = {}
    for (const k of BOUND_KEYS) if (schema[k] !== undefined) outer[k] = schema[k]
    return fc.oneof(...schema.anyOf.map((s) => arbitraryOf({ ...outer, ...s }, opts, field)))
  }
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type) => arbitraryOf({ ...schema, type }, opts, field)))
  switch (schema.type) {
    case 'string':
      return stringArb(schema, opts, field)
    case 'integer': {
      const min = Math.max(schema.minimum ?? -1e9, Number.MIN_SAFE_INTEGER)
      const max = Math.min(schema.maximum ?? 1e9, Number.MAX_SAFE_INTEGER)
      return fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max))
    }
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const item = arbitraryOf(schema.items, opts, field)
      const minLength = schema.minItems ?? 0
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 4, 4))
      return schema.uniqueItems ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) }) : fc.array(item, { minLength, maxLength })
    }
    case 'object': {
      const props = schema.properties ?? {}
      const names = Object.keys(props)
      if (names.length > 0) {
        const shape: Record<string, fc.Arbitrary<unknown>> = {}
        for (const n of names) shape[n] = arbitraryOf(props[n], opts, n)
        const required = (schema.required ?? []).filter((r) => names.includes(r))
        let rec = fc.record(shape, { requiredKeys: required }) as fc.Arbitrary<Record<string, unknown>>
        // minProperties (PATCH bodies): make sure at least one optional key is present.
        if ((schema.minProperties ?? 0) > 0) rec = rec.filter((o) => Object.keys(o).length >= schema.minProperties!)
        return rec
      }
      if (schema.patternProperties || schema.additionalProperties === true || schema.additionalProperties === undefined) {
        return fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: Math.min(schema.maxProperties ?? 4, 4) })
      }
      return fc.constant({})
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

function stringArb(schema: JsonSchema, opts: ArbOptions, field: string): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0
  const max = schema.maxLength ?? 64
  const fits = (s: string) => s.length >= min && s.length <= max
  const candidates = (opts.candidates?.(field) ?? []).filter(fits)
  let gen: fc.Arbitrary<string>
  switch (schema.format) {
    case 'uuid':
      gen = fc.uuid()
      break
    case 'email':
      gen = fc.oneof(fc.constantFrom('a@example.com', 'x.y+z@example.org', 'UPPER@Example.COM'), fc.emailAddress().filter(fits))
      break
    case 'date-time':
      gen = fc.date({ min: new Date(0), max: new Date(Date.UTC(2100, 0)), noInvalidDate: true }).map((d) => d.toISOString())
      break
    case 'integer':
      gen = fc.integer({ min: Math.max(schema.minimum ?? -1e6, -1e9), max: Math.min(schema.maximum ?? 1e6, 1e9) }).map(String)
      break
    default:
      if (schema.pattern !== undefined) {
        gen = fc.stringMatching(new RegExp(schema.pattern)).filter(fits)
      } else {
        const units = fc.oneof(
          fc.string({ minLength: min, maxLength: Math.min(max, 24), unit: 'grapheme-ascii' }),
          fc.string({ minLength: min, maxLength: Math.min(max, 12), unit: 'grapheme' }),
        )
        gen = units.filter(fits)
      }
  }
  return candidates.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...candidates), weight: 2 }, { arbitrary: gen, weight: 1 }) : gen
}

/** The JSON types a schema admits ('any' when it admits everything). */
export function admittedTypes(schema: JsonSchema | undefined): Set<string> {
  const out = new Set<string>()
  const walk = (s: JsonSchema | undefined) => {
    if (s === undefined || s === null || typeof s !== 'object') return void out.add('any')
    if (s.const !== undefined) return void out.add(s.const === null ? 'null' : typeof s.const)
    if (Array.isArray(s.enum)) return s.enum.forEach((v) => out.add(v === null ? 'null' : typeof v))
    if (Array.isArray(s.anyOf)) return s.anyOf.forEach(walk)
    if (s.type === undefined) return void out.add('any')
    for (const type of Array.isArray(s.type) ? s.type : [s.type]) out.add(type === 'integer' ? 'number' : type)
  }
  walk(schema)
  return out
}

/** A value the schema certainly refuses by type, or undefined when it admits any type. */
export function wrongTypeFor(schema: JsonSchema | undefined): unknown {
  const ok = admittedTypes(schema)
  if (ok.has('any')) return undefined
  if (!ok.has('object')) return { nested: [1, 2] }
  if (!ok.has('array')) return [[1]]
  if (!ok.has('boolean')) return true
  if (!ok.has('number')) return 12345
  return undefined
}

// ---- paths inside a JSON value ------------------------------------------------------------------

export type JsonPath = (string | number)[]

/** Every path in the value (root first), up to a bound so a big value stays cheap. */
export function pathsOf(value: unknown, limit = 200): JsonPath[] {
  const out: JsonPath[] = [[]]
  const walk = (v: unknown, at: JsonPath) => {
    if (out.length >= limit) return
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        out.push([...at, i])
        walk(x, [...at, i])
      })
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        out.push([...at, k])
        walk(x, [...at, k])
      }
    }
  }
  walk(value, [])
  return out
}

/** A copy of `root` with the value at `path` replaced (the root itself for an empty path). */
export function setAt(root: unknown, path: JsonPath, value: unknown): unknown {
  if (path.length === 0) return value
  const copy = structuredClone(root) as Record<string | number, unknown>
  let cur = copy
  for (const key of path.slice(0, -1)) cur = cur[key] as Record<string | number, unknown>
  cur[path[path.length - 1]!] = value
  return copy
}

export function objectPaths(value: unknown): JsonPath[] {
  return pathsOf(value).filter((p) => {
    let v: unknown = value
    for (const k of p) v = (v as Record<string | number, unknown>)[k]
    return v !== null && typeof v === 'object' && !Array.isArray(v)
  })
}

export function getAt(root: unknown, path: JsonPath): unknown {
  let v: unknown = root
  for (const k of path) v = (v as Record<string | number, unknown>)?.[k]
  return v
}

/**
 * One small valid value for the schema, deterministic: required fields only (plus one optional
 * field when minProperties asks for it), the first enum member, the lowest number in range.
 * Strings get `fill` where no format or pattern says otherwise.
 */
export function exampleOf(schema: JsonSchema | undefined, fill = 'example-value'): unknown {
  if (schema === undefined || schema === null || typeof schema !== 'object') return 'example'
  if (schema.const !== undefined) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  if (Array.isArray(schema.anyOf) && schema.anyOf.length > 0) {
    const outer: JsonSchema = {}
    for (const k of BOUND_KEYS) if (schema[k] !== undefined) outer[k] = schema[k]
    // Prefer a real value over null, and a number over its numeric-string twin.
    const pick = schema.anyOf.find((s) => s.type !== 'null' && s.type !== 'string') ?? schema.anyOf.find((s) => s.type !== 'null') ?? schema.anyOf[0]!
    return exampleOf({ ...outer, ...pick }, fill)
  }
  if (Array.isArray(schema.type)) return exampleOf({ ...schema, type: schema.type.find((t) => t !== 'null') ?? 'null' }, fill)
  switch (schema.type) {
    case 'string': {
      if (schema.format === 'uuid') return '01a20184-99e9-7296-9fc7-75b6e5358e98'
      if (schema.format === 'email') return 'someone@example.com'
      if (schema.format === 'date-time') return '2026-11-01T12:00:00.000Z'
      if (schema.pattern !== undefined) return fc.sample(fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= (schema.minLength ?? 1) && s.length <= (schema.maxLength ?? 64)), { numRuns: 1, seed: 1 })[0]
      const max = schema.maxLength ?? 64
      return fill.slice(0, max).padEnd(Math.min(max, schema.minLength ?? 0), 'x')
    }
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 0, Math.min(schema.maximum ?? 1, 1))
    case 'boolean':
      return false
    case 'null':
      return null
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => exampleOf(schema.items, fill))
    case 'object': {
      const out: Record<string, unknown> = {}
      const props = schema.properties ?? {}
      for (const r of schema.required ?? []) if (props[r]) out[r] = exampleOf(props[r], fill)
      if (Object.keys(out).length < (schema.minProperties ?? 0)) {
        const extra = Object.keys(props).find((k) => !(k in out))
        if (extra) out[extra] = exampleOf(props[extra], fill)
      }
      return out
    }
    default:
      return 'example'
  }
}
