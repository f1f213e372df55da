// Reading the leader's OpenAPI document the way a client generator does: its operations, $refs
// resolved, every JSON Schema in it, and a check of one HTTP answer against what the operation
// declares (status, media type, body schema). JSON Schema validation is Ajv (2020-12 dialect,
// which OpenAPI 3.1 uses), the engine @seriousme/openapi-schema-validator runs on.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020'

export type Json = Record<string, any>

export interface OpenApiOperation {
  method: string
  path: string
  op: Json
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

export function operationsOf(doc: Json): OpenApiOperation[] {
  const out: OpenApiOperation[] = []
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) if ((HTTP_METHODS as readonly string[]).includes(method)) out.push({ method, path, op })
  }
  return out.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))
}

/** The object a local $ref ("#/components/...") points at, or the value itself. */
export function deref<T = Json>(doc: Json, value: T | { $ref: string }): T {
  let v: unknown = value
  for (let hops = 0; v !== null && typeof v === 'object' && typeof (v as { $ref?: unknown }).$ref === 'string'; hops++) {
    if (hops > 20) throw new Error('$ref loop')
    const ref = (v as { $ref: string }).$ref
    if (!ref.startsWith('#/')) throw new Error(`external $ref ${ref}`)
    v = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((o, k) => (o as Json | undefined)?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc)
    if (v === undefined) throw new Error(`dangling $ref ${ref}`)
  }
  return v as T
}

/** Every JSON Schema the operations use (parameters, bodies, responses), with where it sits. */
export function schemasOf(doc: Json): { where: string; schema: unknown }[] {
  const out: { where: string; schema: unknown }[] = []
  for (const { method, path, op } of operationsOf(doc)) {
    const at = `${method.toUpperCase()} ${path}`
    for (const p of op.parameters ?? []) out.push({ where: `${at} parameter ${deref(doc, p).name}`, schema: deref(doc, p).schema })
    for (const [mt, m] of Object.entries<Json>(deref(doc, op.requestBody ?? { content: {} }).content ?? {})) out.push({ where: `${at} body ${mt}`, schema: m.schema })
    for (const [status, r] of Object.entries<Json>(op.responses ?? {})) {
      for (const [mt, m] of Object.entries<Json>(deref(doc, r).content ?? {})) out.push({ where: `${at} ${status} ${mt}`, schema: m.schema })
    }
  }
  for (const [name, s] of Object.entries(doc.components?.schemas ?? {})) out.push({ where: `components.schemas.${name}`, schema: s })
  return out
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/**
 * A JSON Schema compiler for the document's schemas; "#/components/..." refs resolve against it.
 * strict: unknown keywords, ambiguous types and the like are errors (what OpenAPI tooling trips on).
 */
export function schemaCompiler(doc: Json, opts: { strict?: boolean } = {}) {
  const ajv = new Ajv2020({ strict: opts.strict ?? false, allErrors: true })
  ajv.addFormat('uuid', UUID)
  ajv.addFormat('date-time', { validate: (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)) })
  ajv.addFormat('email', /^[^\s@]+@[^\s@]+$/)
  ajv.addFormat('binary', true)
  // The document's one schema extension (OpenAPI 3.1 allows x- keywords in schemas): a pattern's
  // rule in words, which the leader's 422 quotes.
  ajv.addKeyword({ keyword: 'x-rule', schemaType: 'string' })
  // The document's named schemas as $defs of one schema (strict mode knows no `components` keyword).
  const local = (s: unknown) => JSON.parse(JSON.stringify(s ?? {}).replaceAll('"#/components/schemas/', '"openapi.json#/$defs/'))
  ajv.addSchema({ $id: 'openapi.json', $defs: local(doc.components?.schemas) })
  const cache = new Map<string, ValidateFunction>()
  return (schema: unknown): ValidateFunction => {
    const text = JSON.stringify(local(schema))
    let v = cache.get(text)
    if (v === undefined) cache.set(text, (v = ajv.compile(JSON.parse(text))))
    return v
  }
}

export interface Answer {
  status: number
  /** Media type without parameters, lower-case; '' when absent. */
  mediaType: string
  /** The parsed JSON body, or undefined when the body was not read or not JSON. */
  json?: unknown
  /** Bytes of body read (0 for an empty body); null when the body was not read (streams). */
  length: number | null
}

export const isJsonMedia = (mt: string) => mt === 'application/json' || (mt.startsWith('application/') && mt.endsWith('+json'))

/** What is wrong with an answer, measured against the operation's declared responses. */
export function answerProblems(doc: Json, op: Json, answer: Answer, compile: ReturnType<typeof schemaCompiler>): string[] {
  if (answer.status >= 500) return [`server error ${answer.status}`]
  const declared = op.responses?.[String(answer.status)]
  if (declared === undefined) return [`undeclared status ${answer.status}`]
  const r = deref(doc, declared)
  const content: Json | undefined = r.content
  if (content === undefined || Object.keys(content).length === 0) {
    return answer.length !== null && answer.length > 0 ? [`status ${answer.status} declares no body but got ${answer.length} bytes of ${answer.mediaType || 'untyped'}`] : []
  }
  if (answer.length === 0 && answer.mediaType === '') return [`status ${answer.status} declares ${Object.keys(content).join(', ')} but the body is empty`]
  const media = content[answer.mediaType]
  if (media === undefined) return [`status ${answer.status} answered ${answer.mediaType || 'no content type'}, declared ${Object.keys(content).join(', ')}`]
  if (!isJsonMedia(answer.mediaType) || media.schema === undefined) return []
  const validate = compile(media.schema)
  if (validate(answer.json)) return []
  return [`status ${answer.status} body does not match its schema: ${(validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')}`]
}
