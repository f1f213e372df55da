// The built dist/svc against its own OpenAPI document. Every operation the document lists is
// called with parameters and bodies generated from the document's schemas (fast-check, through
// test/helpers/schema-arb.ts), with the credential its `security` names, in a small world made
// through the API (users, a pool, a fellow, a job, an invite, a model) and healed between
// operations (test/helpers/fuzz-world.ts). One request in four carries a hostile value somewhere in
// its query or body. Every answer must be < 500, have a status the operation declares, a declared
// media type, and a body that matches the declared schema; the WebSocket operation must also
// answer a real handshake with 101.
//
// Long polls are asked to wait at most 100 ms and streams are closed after their headers, so the
// walk stays short. Reproduce with SVC_OPENAPI_FUZZ_SEED=<seed>; SVC_OPENAPI_FUZZ_RUNS sets the
// requests per operation (default 3); SVC_OPENAPI_FUZZ_VERBOSE=1 prints every answer;
// SVC_OPENAPI_FUZZ_LEADER_ENV (JSON) adds SVC_* settings to the leader's environment.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { startLeader, type Leader } from '../helpers/leader'
import { call } from '../helpers/e2e'
import { FuzzWorld } from '../helpers/fuzz-world'
import { arbitraryOf, pathsOf, setAt, type JsonPath, type JsonSchema } from '../helpers/schema-arb'
import { answerProblems, deref, isJsonMedia, operationsOf, schemaCompiler, type Answer, type Json, type OpenApiOperation } from '../helpers/openapi'

const SEED = Number(process.env.SVC_OPENAPI_FUZZ_SEED ?? 20261101)
const RUNS = Number(process.env.SVC_OPENAPI_FUZZ_RUNS ?? 3)
const LONG_POLL_MAX_MS = 100
const LEADER_ENV: Record<string, string> = JSON.parse(process.env.SVC_OPENAPI_FUZZ_LEADER_ENV ?? '{}')

let leader: Leader
let doc: Json
let world: FuzzWorld
beforeAll(async () => {
  // Logins heal the world after logout and password changes: the per-IP auth limit must not starve them.
  leader = await startLeader({ SVC_AUTH_RATE_MAX: '100000', SVC_INFER_DISPATCH_TIMEOUT_S: '1', ...LEADER_ENV })
  doc = (await call(leader.url, 'GET', '/api/v1/openapi.json')).body
  world = new FuzzWorld(leader.url)
})
afterAll(async () => {
  await world?.stop()
  await leader?.stop()
})

// ---- requests from the document ------------------------------------------------------------------

interface Credential {
  label: string
  headers: (method: string) => Record<string, string>
}

/** The credentials that satisfy one of the operation's security requirements. */
function credentialsFor(op: Json): Credential[] {
  const reqs: Json[] = op.security ?? doc.security ?? []
  if (reqs.length === 0) return [{ label: 'none', headers: () => ({}) }]
  const out: Credential[] = []
  for (const req of reqs) {
    const schemes = Object.keys(req).sort().join('+')
    if (schemes === '') out.push({ label: 'none', headers: () => ({}) })
    else if (schemes === 'apiToken') for (const who of ['admin', 'member'] as const) out.push({ label: `${who} token`, headers: () => ({ authorization: `Bearer ${world[who].token}` }) })
    else if (schemes === 'session' || schemes === 'csrf+session')
      for (const who of ['admin', 'member'] as const) {
        out.push({
          label: `${who} session`,
          headers: (method) => ({ cookie: world[who].session.cookie(), ...(method === 'get' ? {} : { 'x-csrf-token': world[who].session.jar.get('svc_csrf') ?? '' }) }),
        })
      }
    else if (schemes === 'nodeToken') out.push({ label: 'node token', headers: () => ({ authorization: `Bearer ${world.chain.nodeToken}` }) })
    else if (schemes === 'bootstrapToken') out.push({ label: 'bootstrap token', headers: () => ({ 'x-bootstrap-token': world.chain.joinToken }) })
    else if (schemes === 'metricsToken' && LEADER_ENV.SVC_METRICS_TOKEN) out.push({ label: 'metrics token', headers: () => ({ authorization: `Bearer ${LEADER_ENV.SVC_METRICS_TOKEN}` }) })
    else if (schemes === 'joinToken') out.push({ label: 'join token', headers: () => ({ authorization: `Bearer ${world.chain.joinToken}` }) })
  }
  if (out.length === 0) throw new Error(`no credential satisfies ${JSON.stringify(reqs)}`)
  return out
}

/** Credentials of the wrong kind or none at all: the refusal must be one the operation declares. */
const strangers: Credential[] = [
  { label: 'nobody', headers: () => ({}) },
  { label: 'stranger: node token', headers: () => ({ authorization: `Bearer ${world.chain.nodeToken}` }) },
  { label: 'stranger: member token', headers: () => ({ authorization: `Bearer ${world.member.token}` }) },
  { label: 'stranger: revoked-looking token', headers: () => ({ authorization: 'Bearer svc_pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }) },
  { label: 'stranger: session without CSRF', headers: () => ({ cookie: world.admin.session.cookie() }) },
]

/** Relay frames: u32 meta length, meta JSON, u64 data length, data (big-endian). */
function frames(metas: Json[], data: Uint8Array): Uint8Array {
  const parts = metas.flatMap((m) => {
    const meta = new TextEncoder().encode(JSON.stringify(m))
    const head = new DataView(new ArrayBuffer(4))
    head.setUint32(0, meta.length)
    const len = new DataView(new ArrayBuffer(8))
    len.setBigUint64(0, BigInt(data.length))
    return [new Uint8Array(head.buffer), meta, new Uint8Array(len.buffer), data]
  })
  return new Uint8Array(Buffer.concat(parts))
}

interface Planned {
  path: string
  query: Json
  headers: Json
  body?: unknown
  credential: Credential
  /** A value the schema refuses was put somewhere (the answer must still be a declared one). */
  mutated: boolean
}

const HOSTILE = [null, '', 'not-a-number', -1, 1e300, true, [[1]], { nested: [1] }, 'x'.repeat(5000)]

/** One in four requests gets a hostile value at a random place of its body or query. */
function mutate(valid: fc.Arbitrary<{ query: Json; body: unknown }>): fc.Arbitrary<{ query: Json; body: unknown; mutated: boolean }> {
  return fc.oneof(
    { weight: 3, arbitrary: valid.map((v) => ({ ...v, mutated: false })) },
    {
      weight: 1,
      arbitrary: valid.chain((v) => {
        const spots = [
          ...Object.keys(v.query).map((k) => ({ in: 'query', path: [k] as JsonPath })),
          ...(v.body === undefined || v.body instanceof Uint8Array ? [] : pathsOf(v.body).map((path) => ({ in: 'body', path }))),
        ]
        if (spots.length === 0) return fc.constant({ ...v, mutated: false })
        return fc.record({ spot: fc.constantFrom(...spots), value: fc.constantFrom(...HOSTILE) }).map(({ spot, value }) =>
          spot.in === 'query' ? { ...v, query: { ...v.query, [spot.path[0]!]: value }, mutated: true } : { ...v, body: setAt(v.body, spot.path, value), mutated: true },
        )
      }),
    },
  )
}

function requestArb({ method, path, op }: OpenApiOperation): fc.Arbitrary<Planned> {
  const params: Json[] = (op.parameters ?? []).map((p: Json) => deref(doc, p))
  const opts = { candidates: (field: string) => world.candidatesFor(field, path) }
  const pathArb = fc.record(Object.fromEntries(params.filter((p) => p.in === 'path').map((p) => [p.name, arbitraryOf(p.schema as JsonSchema, opts, p.name)])))
  const query = params.filter((p) => p.in === 'query')
  const querySchema: JsonSchema = {
    type: 'object',
    properties: Object.fromEntries(query.map((p) => [p.name, p.name === 'wait_ms' ? { ...p.schema, maximum: LONG_POLL_MAX_MS } : p.schema])),
    required: query.filter((p) => p.required).map((p) => p.name),
  }
  const content = deref(doc, op.requestBody ?? { content: {} }).content ?? {}
  const bodyArb: fc.Arbitrary<unknown> = content['application/json']
    ? arbitraryOf(content['application/json'].schema, opts)
    : content['application/octet-stream']
      ? fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ maxLength: 32 }).map((d) => frames([{ seq: 1 }], d)))
      : fc.constant(undefined)
  const headerParams = params.filter((p) => p.in === 'header')
  const headersArb = arbitraryOf({ type: 'object', properties: Object.fromEntries(headerParams.map((p) => [p.name, p.schema])), required: [] }, opts) as fc.Arbitrary<Json>
  const input = mutate(fc.record({ query: query.length > 0 ? (arbitraryOf(querySchema, opts) as fc.Arbitrary<Json>) : fc.constant({}), body: bodyArb }))
  return fc.record({ params: pathArb, input, headers: headerParams.length > 0 ? headersArb : fc.constant({}), credential: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...credentialsFor(op)) }, { weight: 1, arbitrary: fc.constantFrom(...strangers) }) }).map((r) => ({
    path: path.replace(/\{([^}]+)\}/g, (_, n: string) => encodeURIComponent(String((r.params as Json)[n]))),
    query: r.input.query,
    headers: r.headers,
    body: r.input.body,
    credential: r.credential,
    mutated: r.input.mutated,
  }))
}

async function send(method: string, p: Planned): Promise<Answer> {
  const qs = new URLSearchParams()
  for (const [k, v] of Object.entries(p.query)) if (v !== undefined) qs.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v))
  const headers: Record<string, string> = { ...Object.fromEntries(Object.entries(p.headers).map(([k, v]) => [k, String(v)])), ...p.credential.headers(method) }
  let body: string | Uint8Array | undefined
  if (p.body instanceof Uint8Array) {
    headers['content-type'] = 'application/octet-stream'
    body = p.body
  } else if (p.body !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(p.body)
  }
  const url = `${leader.url}${p.path}${qs.size > 0 ? `?${qs}` : ''}`
  const res = await fetch(url, { method: method.toUpperCase(), headers, body, redirect: 'manual', signal: AbortSignal.timeout(15_000) })
  const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  // Streams and downloads (the agent binary is 100+ MiB): the headers are the answer.
  if (mediaType === 'text/event-stream' || mediaType === 'application/octet-stream') {
    await res.body?.cancel()
    return { status: res.status, mediaType, length: null }
  }
  const bytes = new Uint8Array(await res.arrayBuffer())
  let json: unknown
  if (isJsonMedia(mediaType) && bytes.length > 0) json = JSON.parse(new TextDecoder().decode(bytes))
  return { status: res.status, mediaType, length: bytes.length, json }
}

/** The 101 a WebSocket operation declares, through a real handshake. */
async function upgrade(path: string, token: string): Promise<string[]> {
  const ws = new WebSocket(`${leader.url.replace(/^http/, 'ws')}${path}?token=${encodeURIComponent(token)}`)
  const opened = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000)
    ws.onopen = () => (clearTimeout(timer), resolve(true))
    ws.onerror = () => (clearTimeout(timer), resolve(false))
  })
  ws.close()
  return opened ? [] : ['the WebSocket handshake did not answer 101']
}

describe('the OpenAPI document against the built binary', () => {
  test(`every operation, ${RUNS} generated requests each (seed ${SEED}): no 5xx, no undeclared status, every body as declared`, async () => {
    await world.build()

    const compile = schemaCompiler(doc)
    const ops = operationsOf(doc)
    // State-ending operations last, so fewer of the others run against a world being rebuilt.
    const ending = (o: OpenApiOperation) => (o.method === 'delete' || o.path === '/api/v1/auth/logout' || o.path === '/api/v1/auth/password' ? 1 : 0)
    ops.sort((a, b) => ending(a) - ending(b))
    const failures: string[] = []
    const statuses = new Map<number, number>()
    const succeeded = new Set<string>()
    const refusedValid = new Map<string, number>()
    let sent = 0
    let mutated = 0
    for (const [i, o] of ops.entries()) {
      await world.heal()
      const name = `${o.method.toUpperCase()} ${o.path}`
      for (const planned of fc.sample(requestArb(o), { numRuns: RUNS, seed: SEED + i })) {
        sent++
        if (planned.mutated) mutated++
        let problems: string[]
        try {
          const answer = await send(o.method, planned)
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
          if (answer.status < 400) succeeded.add(name)
          // Valid per the document, refused by the service: a schema looser than the rules behind it.
          if (answer.status === 422 && !planned.mutated) refusedValid.set(name, (refusedValid.get(name) ?? 0) + 1)
          if (process.env.SVC_OPENAPI_FUZZ_VERBOSE) console.log(name, planned.credential.label, answer.status, JSON.stringify(answer.json)?.slice(0, 160) ?? '')
          problems = answerProblems(doc, o.op, answer, compile)
        } catch (e) {
          problems = [`no answer: ${String(e)}`]
        }
        for (const p of problems) failures.push(`${name} as ${planned.credential.label}: ${p}\n    ${planned.path} ${JSON.stringify(planned.query)} ${planned.body instanceof Uint8Array ? `${planned.body.length} bytes` : JSON.stringify(planned.body)?.slice(0, 300)}`)
      }
      if (o.op['x-websocket']) {
        sent++
        const problems = await upgrade(o.path.replace('{fellow_id}', world.chain.fellowId).replace('{job_id}', world.chain.jobId), world.chain.nodeToken)
        if (problems.length === 0) succeeded.add(name)
        failures.push(...problems.map((p) => `${name}: ${p}`))
      }
    }
    const figures = { operations: ops.length, requests: sent, mutated, operations_with_a_success: succeeded.size, failures: failures.length, statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)) }
    console.log(`openapi fuzz (seed ${SEED}): ${JSON.stringify(figures)}`)
    if (refusedValid.size > 0) console.log(`schema-valid requests refused with 422: ${JSON.stringify(Object.fromEntries(refusedValid))}`)
    if (failures.length > 0) console.log(failures.slice(0, 60).join('\n'))
    expect(failures).toEqual([])
    expect(ops.length).toBeGreaterThan(100)
  }, Math.max(120_000, RUNS * 5_000))
})
