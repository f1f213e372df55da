// The OpenAPI 3.1 document of the composed app. @elysiajs/openapi walks the routes and turns their
// TypeBox schemas into paths; this file repairs what it gets wrong for this app and adds what it
// cannot know: request bodies (our own body parser hides their media type from it), security from
// each route's policy class, the WebSocket upgrade as a GET answering 101, and the error answers
// (problem+json) each operation can give, derived from its class, method, parameters and body,
// plus the per-route facts of openapi-facts.ts; and the names generated clients take: operation
// ids and summaries (openapi-names.ts), the answers' named schemas (openapi-components.ts). Checked by test/http/openapi.test.ts (a validator
// and strict JSON Schema compilation) and test/e2e/openapi-fuzz.test.ts (the binary against it).
import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia } from 'elysia'
import type { Config } from '../config'
import type { PolicyClass } from '../http/policy'
import { VERSION } from '../version'
import { isObject, tidySchema } from './openapi-schema'
import { ERROR_TEXT, OPENAI_ERROR, PROBLEM, factsOf, isOpenAiPath, type ResponseFact } from './openapi-facts'
import { namedComponents, type Components } from './openapi-components'
import { namingOf } from './openapi-names'

interface MediaType {
  schema?: unknown
}
interface ResponseObject {
  description: string
  headers?: Record<string, unknown>
  content?: Record<string, MediaType>
}
type Ref = { $ref: string }
type Requirement = Record<string, string[]>
interface Parameter {
  name: string
  in: string
  required?: boolean
  schema?: unknown
}
interface Operation {
  operationId?: string
  summary?: string
  tags?: string[]
  'x-policy'?: PolicyClass
  parameters?: Parameter[]
  requestBody?: { description?: string; required?: boolean; content: Record<string, MediaType> }
  responses?: Record<string, ResponseObject | Ref>
  security?: Requirement[]
  [extension: string]: unknown
}

/** What the document needs to know of a route beyond what the generator read. */
interface RouteFacts {
  policy: PolicyClass
  binary: boolean
  metricsToken: boolean
  body: unknown
  query: boolean
  params: boolean
  /** An operationId the route declares itself (detail.operationId), which wins over ours. */
  operationId?: string
}

const UNSAFE = new Set(['post', 'put', 'patch', 'delete'])
const SUCCESS_TEXT: Record<string, string> = { 200: 'OK.', 201: 'Created.', 202: 'Accepted.', 204: 'Done; no body.' }
const NO_BODY_STATUSES = new Set(['101', '204', '304'])

export const SECURITY_SCHEMES = {
  apiToken: { type: 'http', scheme: 'bearer', bearerFormat: 'svc_pat_…', description: 'A personal API token (POST /api/v1/api-tokens).' },
  nodeToken: { type: 'http', scheme: 'bearer', bearerFormat: 'svc_node_…', description: "A fellow's node token (RegisterResponse.node_token)." },
  joinToken: { type: 'http', scheme: 'bearer', bearerFormat: 'svc_join_…', description: 'A join token (POST /api/v1/bootstrap/join-sessions), to register a fellow into its pool.' },
  session: { type: 'apiKey', in: 'cookie', name: 'svc_session', description: 'The browser session cookie set by register and login.' },
  csrf: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token', description: 'The svc_csrf cookie value; required beside the session cookie on POST, PUT, PATCH and DELETE.' },
  bootstrapToken: { type: 'apiKey', in: 'header', name: 'X-Bootstrap-Token', description: 'A join token, when SVC_BOOTSTRAP_REQUIRE_TOKEN is on.' },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'SVC_METRICS_TOKEN, for scrapers of /metrics.' },
} as const

function routeFactsByKey(app: AnyElysia): Map<string, RouteFacts> {
  const out = new Map<string, RouteFacts>()
  for (const r of app.routes) {
    const hooks = (r.hooks ?? {}) as { body?: unknown; query?: unknown; params?: unknown; detail?: Record<string, unknown> }
    const policy = (hooks.detail?.['x-policy'] as PolicyClass | undefined) ?? 'admin'
    out.set(`${r.method.toLowerCase()} ${r.path.replace(/:([^/]+)/g, '{$1}')}`, {
      policy,
      binary: hooks.detail?.['x-body'] === 'binary',
      metricsToken: hooks.detail?.['x-metrics-token'] === true,
      body: hooks.body === undefined ? undefined : JSON.parse(JSON.stringify(hooks.body)),
      query: hooks.query !== undefined,
      params: hooks.params !== undefined,
      ...(typeof hooks.detail?.operationId === 'string' ? { operationId: hooks.detail.operationId } : {}),
    })
  }
  return out
}

function securityOf(route: RouteFacts, method: string, cfg: Config): Requirement[] {
  const cookie: Requirement = cfg.requireCsrf && UNSAFE.has(method) ? { session: [], csrf: [] } : { session: [] }
  switch (route.policy) {
    case 'public':
    case 'page':
      return []
    case 'node':
      return cfg.requireNodeAuth ? [{ nodeToken: [] }] : [{ nodeToken: [] }, {}]
    case 'chat':
      return [{ apiToken: [] }]
    case 'session':
      return [cookie]
    // SVC_REQUIRE_OPERATOR_AUTH=0 lets these pass without a credential (src/http/policy.ts); a
    // handler that acts for a person still answers 401 then.
    case 'operator':
      return [{ apiToken: [] }, cookie, ...(cfg.requireOperatorAuth ? [] : [{}])]
    case 'member':
      return [{ apiToken: [] }, cookie, { nodeToken: [] }, ...(cfg.requireOperatorAuth ? [] : [{}])]
    case 'admin':
      return [{ apiToken: [] }, cookie, ...(route.metricsToken && cfg.metricsToken !== null ? [{ metricsToken: [] }] : [])]
  }
}

/** Whether a body or query schema names another resource by id (a 404 when it does not exist). */
const namesAnId = (schema: unknown): boolean => isObject(schema) && isObject(schema.properties) && Object.keys(schema.properties).some((k) => k === 'id' || k.endsWith('_id'))

/** The error statuses every route of this shape can answer; openapi-facts.ts adds route-specific ones. */
function errorStatuses(route: RouteFacts, method: string, path: string, querySchema: unknown, websocket: boolean): number[] {
  const out = new Set<number>([421])
  // A refused WebSocket handshake answers 403, whatever was wrong with the credential or the id;
  // a plain GET (no upgrade) is no route: 404 for an admin, 403 for anyone else.
  // Any request may name a host the leader does not answer to (421, src/http/host.ts).
  if (websocket) return route.params ? [403, 404, 421, 422] : [403, 404, 421]
  if (route.policy !== 'public' && route.policy !== 'page') [401, 403].forEach((s) => out.add(s))
  if (UNSAFE.has(method)) {
    // The body reader (src/http/body.ts) and the CSRF check run on every state change, and any
    // write may find the disk full (507, src/errors.ts).
    ;[400, 403, 408, 413, 415, 503, 507].forEach((s) => out.add(s))
  }
  // The OpenAI-compatible routes answer a refused field with 400, as OpenAI does (src/inference/openai.ts).
  if (route.body !== undefined || route.query || route.params) out.add(isOpenAiPath(path) ? 400 : 422)
  // A route under /api/ that takes no query refuses a parameter sent to it (src/http/policy.ts).
  else if (path.startsWith('/api/') && !isOpenAiPath(path)) out.add(422)
  if (path.includes('{') || namesAnId(route.body) || namesAnId(querySchema)) out.add(404)
  return [...out]
}

const problemRef = (status: number, openAi: boolean): Ref => ({ $ref: `#/components/responses/${openAi ? 'OpenAiError' : 'Problem'}${status}` })

function errorResponses(): Record<string, ResponseObject> {
  const out: Record<string, ResponseObject> = {}
  for (const [code, text] of Object.entries(ERROR_TEXT)) {
    const status = Number(code)
    const headers = status === 429 || status === 503 || status === 507 ? { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } } } : undefined
    out[`Problem${status}`] = { description: text, ...(headers ? { headers } : {}), content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } }
    out[`OpenAiError${status}`] = { description: text, ...(headers ? { headers } : {}), content: { 'application/json': { schema: { $ref: '#/components/schemas/OpenAiError' } } } }
  }
  return out
}

const nonEmpty = (s: unknown) => (isObject(s) && s.type === 'string' && s.minLength === undefined && s.enum === undefined && s.format === undefined ? { ...s, minLength: 1 } : s)

/** A response whose content the generator wrote as {type: 'undefined'} (t.Undefined()) has none. */
function tidyResponse(status: string, r: ResponseObject): ResponseObject {
  const content = r.content
  // The generator's placeholder ("Response for status 200") says nothing.
  const description = /^Response for status \d+$/.test(r.description) ? (SUCCESS_TEXT[status] ?? r.description) : r.description
  if (content === undefined || NO_BODY_STATUSES.has(status) || typeof (content as { type?: unknown }).type === 'string') return { description }
  return { ...r, description, content: Object.fromEntries(Object.entries(content).map(([mt, m]) => [mt, m.schema === undefined ? m : { ...m, schema: tidySchema(m.schema) }])) }
}

function factResponse(f: ResponseFact): ResponseObject {
  if (f.content === undefined) return { description: f.description }
  return { description: f.description, content: Object.fromEntries(Object.entries(f.content).map(([mt, schema]) => [mt, { schema: tidySchema(schema) }])) }
}

/** Whether a JSON answer is a list ({items: [...]}, or OpenAI's {data: [...]}): its GET lists. */
function answersList(responses: Record<string, ResponseObject | Ref>): boolean {
  const schema = (responses['200'] as ResponseObject | undefined)?.content?.['application/json']?.schema
  const props = isObject(schema) && isObject(schema.properties) ? schema.properties : {}
  return [props.items, props.data].some((p) => isObject(p) && p.type === 'array')
}

/** The answers' schemas with the named shapes in them as $refs (components.schemas). */
function referNamed(responses: Record<string, ResponseObject | Ref>, components: Components): Record<string, ResponseObject | Ref> {
  const out: Record<string, ResponseObject | Ref> = {}
  for (const [status, r] of Object.entries(responses)) {
    const content = '$ref' in r ? undefined : r.content
    out[status] = content === undefined ? r : { ...r, content: Object.fromEntries(Object.entries(content).map(([mt, m]) => [mt, { ...m, schema: components.refer(m.schema) }])) }
  }
  return out
}

function operationOf(op: Operation, route: RouteFacts, method: string, path: string, cfg: Config, components: Components): Operation {
  const facts = factsOf(method, path, route.policy)
  const out: Operation = { ...op }
  // A path segment is never empty: the router matches no route for /assets/ (the not-found gate answers).
  if (out.parameters) out.parameters = out.parameters.map((p) => ({ ...p, schema: p.in === 'path' ? nonEmpty(tidySchema(p.schema)) : tidySchema(p.schema) }))
  if (facts.parameters) out.parameters = [...(out.parameters ?? []), ...facts.parameters.map((p) => ({ ...p, required: false }))]
  const querySchema = { properties: Object.fromEntries((out.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p.schema])) }
  if (route.binary) {
    out.requestBody = { description: facts.bodyDescription, required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }
  } else if (route.body !== undefined && method !== 'get') {
    out.requestBody = { required: true, content: { 'application/json': { schema: tidySchema(route.body) } } }
  } else delete out.requestBody
  const responses: Record<string, ResponseObject | Ref> = {}
  for (const [status, r] of Object.entries(op.responses ?? {})) responses[status] = tidyResponse(status, r as ResponseObject)
  // Facts describe what the route's schemas do not (media types, 204s, redirects); a declared
  // schema wins for its media type.
  for (const [status, f] of Object.entries(facts.responses)) {
    const have = responses[status] as ResponseObject | undefined
    const add = factResponse(f)
    responses[status] = have === undefined ? add : { ...have, content: { ...add.content, ...have.content } }
  }
  const openAi = isOpenAiPath(path)
  for (const status of [...errorStatuses(route, method, path, querySchema, op['x-websocket'] === true), ...facts.errors]) responses[String(status)] ??= problemRef(status, openAi)
  // Generators name the function after the operationId and write the summary as its doc comment.
  const naming = namingOf(method, path, answersList(responses))
  out.operationId = route.operationId ?? naming.operationId
  out.summary = op.summary ?? naming.summary
  out.responses = referNamed(Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))), components)
  out.security = facts.security?.(cfg) ?? securityOf(route, method, cfg)
  out.tags = [path.startsWith('/api/v1/') ? path.split('/')[3]! : path.startsWith('/ws/') ? path.split('/')[2]! : path === '/metrics' ? 'metrics' : 'pages']
  return out
}

/** The whole document, built once per process from the composed app. */
export function openApiDocument(app: AnyElysia, cfg: Config) {
  // A JSON copy: the generator hands back objects shared with the routes' live schemas.
  const generated = JSON.parse(JSON.stringify(toOpenAPISchema(app, { staticFile: false }))) as { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, unknown> } }
  const routes = routeFactsByKey(app)
  const components = namedComponents()
  const paths: Record<string, Record<string, Operation>> = {}
  for (const [path, item] of Object.entries(generated.paths)) {
    const out: Record<string, Operation> = {}
    for (const [method, op] of Object.entries(item)) {
      const route = routes.get(`${method} ${path}`)
      if (route === undefined) throw new Error(`OpenAPI: no route behind ${method.toUpperCase()} ${path}`)
      // A WebSocket route is a GET that answers 101 (OpenAPI has no `ws` method).
      const m = method === 'ws' ? 'get' : method
      if (out[m] !== undefined) throw new Error(`OpenAPI: two operations for ${m.toUpperCase()} ${path}`)
      out[m] = operationOf(method === 'ws' ? { ...op, 'x-websocket': true } : op, route, m, path, cfg, components)
    }
    paths[path] = out
  }
  const schemas = Object.fromEntries(Object.entries(generated.components?.schemas ?? {}).map(([k, v]) => [k, tidySchema(v)]))
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc leader API',
      version: VERSION,
      description:
        'See docs/api.md. Each operation carries its policy class in x-policy and the credentials it takes in security. ' +
        'Errors are RFC 9457 problem+json (OpenAI\'s error shape on /api/v1/models, /api/v1/chat/* and /api/v1/embeddings).',
    },
    servers: [{ url: cfg.baseUrl }],
    paths,
    components: {
      schemas: { ...schemas, ...components.schemas, Problem: PROBLEM, OpenAiError: OPENAI_ERROR },
      responses: errorResponses(),
      securitySchemes: SECURITY_SCHEMES,
    },
  }
}
