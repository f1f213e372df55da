// Generated bad input against every JSON route of the app (walked from app.routes, so routes added
// later are covered without touching this file). Valid requests are generated from each route's
// TypeBox schemas, then mutated: wrong types, huge strings, deep nesting, NUL bytes, lone
// surrogates, invalid UTF-8, unknown fields (__proto__ too), extreme numbers, malformed cookies,
// Authorization and CSRF headers, garbage Content-Type, query strings and path ids.
//
// Every answer must be < 500; every 4xx a problem+json (OpenAI's error shape on the OpenAI routes);
// and a refused request must leave the state file exactly as it was (audit trail, failed-login
// counters and last-used stamps aside). A second phase sends only requests that must be refused.
//
// Reproduce a run with SVC_FUZZ_SEED=<seed printed on failure>; SVC_FUZZ_CASES raises the count;
// SVC_FUZZ_PROFILE=1 prints each batch's time and every case slower than 100 ms.
import { afterAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { scryptSync, randomBytes, randomUUID } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { makeLoggedHarness } from '../helpers/logged'
import { buildChain, type Chain } from '../helpers/world'
import { seedUser } from '../helpers/harness'
import { arbitraryOf, objectPaths, pathsOf, setAt, getAt, wrongTypeFor, type JsonSchema } from '../helpers/schema-arb'
import { digestOf, stateDump, diffDumps, totalChanges } from '../helpers/state'
import { createSession, resolveSession } from '../../src/accounts/sessions'
import { mintApiToken, resolveApiToken } from '../../src/accounts/api-tokens'
import { mintCsrfToken } from '../../src/http/csrf'
import { encodeFrames } from '../../src/wire/frames'
import { jobs, pools, roleLimits, users } from '../../src/db/schema'

const SEED = Number(process.env.SVC_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const MIXED_CASES = Number(process.env.SVC_FUZZ_CASES ?? 10_000)
const REFUSED_CASES = Math.ceil(MIXED_CASES / 4)
const BATCH = 16
/** Per-case cost above which a route gets one batch only (password hashing, say). */
const SLOW_MS = 50
const CASE_TIMEOUT_MS = 5000

const h = makeLoggedHarness({ SVC_AUTH_RATE_MAX: '3', SVC_INFER_DISPATCH_TIMEOUT_S: '1' }, { mailEnabled: true })
afterAll(() => h.close())
const { ctx } = h

// ---- the world the fuzzer plays in, healed between batches ------------------------------------

/** A cheap scrypt hash (N=16) in the stored format: verifying stays correct but costs microseconds. */
function cheapHash(password: string): string {
  const salt = randomBytes(16)
  return `scrypt$16$8$1$${salt.toString('base64url')}$${scryptSync(password, salt, 32, { N: 16, r: 8, p: 1 }).toString('base64url')}`
}
const CHEAP = cheapHash('correct-horse-battery')

interface Admin {
  id: string
  session: string
  token: string
}

const world = {
  admin: null as unknown as Admin,
  mine: null as unknown as Chain,
  other: null as unknown as Chain,
  victim: null as unknown as { id: string },
  /** Every id ever handed out, by kind: deleted and foreign ids are interesting path ids too. */
  seen: new Map<string, Set<string>>(),
}
const defaultLimits = ctx.db.select().from(roleLimits).all()

function remember(kind: string, ...ids: string[]) {
  const set = world.seen.get(kind) ?? new Set<string>()
  ids.forEach((i) => set.add(i))
  world.seen.set(kind, set)
}

async function newAdmin(): Promise<Admin> {
  const u = await seedUser(h, `fuzz-admin-${randomUUID()}@example.com`, { role: 'admin' })
  ctx.db.update(users).set({ passwordHash: CHEAP }).where(eq(users.id, u.id)).run()
  return { id: u.id, session: createSession(ctx, u.id, '127.0.0.1').token, token: mintApiToken(ctx, u.id, 'fuzz').token }
}

async function newChain(label: string): Promise<Chain> {
  // A refused PATCH of the plans must not stop the world from being rebuilt.
  for (const l of defaultLimits) ctx.db.update(roleLimits).set(l).where(eq(roleLimits.role, l.role)).run()
  const c = await buildChain(h, label)
  ctx.db.update(users).set({ passwordHash: CHEAP }).where(eq(users.id, c.user.id)).run()
  remember('pool', c.poolId)
  remember('job', c.jobId)
  remember('fellow', c.fellowId)
  remember('join', c.joinSessionId)
  remember('token', c.token.tokenId)
  remember('invite', c.inviteId)
  remember('user', c.user.id)
  remember('model', c.servable)
  remember('artifact', c.artifactId)
  return c
}

const activeUser = (id: string, role: 'user' | 'admin') => {
  const u = ctx.db.select().from(users).where(eq(users.id, id)).get()
  return u !== undefined && u.status === 'active' && u.role === role
}

/** Whether a chain still stands: its owner, pool, fellow token and job. */
function chainIntact(c: Chain): boolean {
  if (!activeUser(c.user.id, 'user')) return false
  const pool = ctx.db.select().from(pools).where(eq(pools.id, c.poolId)).get()
  if (!pool || pool.ownerUserId !== c.user.id) return false
  const node = h.services.fellows.resolveNodeToken(c.nodeToken)
  if (!node || node.poolId !== c.poolId) return false
  return ctx.db.select().from(jobs).where(eq(jobs.id, c.jobId)).get() !== undefined
}

async function heal(): Promise<void> {
  if (!world.admin || !activeUser(world.admin.id, 'admin')) world.admin = await newAdmin()
  if (!resolveSession(ctx, world.admin.session, true)) world.admin.session = createSession(ctx, world.admin.id, '127.0.0.1').token
  if (!resolveApiToken(ctx, world.admin.token)) world.admin.token = mintApiToken(ctx, world.admin.id, 'fuzz').token
  for (const which of ['mine', 'other'] as const) {
    const c = world[which]
    if (!c || !chainIntact(c)) {
      world[which] = await newChain(which)
      continue
    }
    // Logout and password changes end sessions; token revocation ends tokens: mint new ones.
    if (!resolveSession(ctx, c.session.cookies.get('svc_session')!, true)) c.session.cookies.set('svc_session', createSession(ctx, c.user.id, '127.0.0.1').token)
    if (!resolveApiToken(ctx, c.token.opts.bearer!)) c.token.opts.bearer = mintApiToken(ctx, c.user.id, 'fuzz').token
  }
  if (!world.victim || !ctx.db.select().from(users).where(eq(users.id, world.victim.id)).get()) {
    world.victim = await seedUser(h, `fuzz-victim-${randomUUID()}@example.com`)
    remember('user', world.victim.id)
  }
}

/** Path and field values worth sending for a parameter name: ids of this world, old and foreign ones. */
function candidatesFor(name: string, path: string): string[] {
  const pick = (kind: string, current: string[]) => [...new Set([...current, ...[...(world.seen.get(kind) ?? [])].slice(-3)])]
  const { mine, other } = world
  switch (name) {
    case 'id':
      if (path.includes('/api-tokens/')) return pick('token', [mine.token.tokenId, other.token.tokenId])
      if (path.includes('/join-sessions/')) return pick('join', [mine.joinSessionId])
      if (path.includes('/admin/users/')) return [world.victim.id]
      if (path.includes('/artifacts/')) return pick('artifact', [mine.artifactId, other.artifactId])
      return pick('pool', [mine.poolId, other.poolId])
    case 'pool_id':
      return pick('pool', [mine.poolId, other.poolId])
    case 'fellow_id':
      return pick('fellow', [mine.fellowId, other.fellowId])
    case 'job_id':
      return pick('job', [mine.jobId, other.jobId])
    case 'user_id':
      // Never the callers' own users: deleting them would only make the fuzzer blind.
      return [world.victim.id]
    case 'invite_id':
      return pick('invite', [mine.inviteId])
    case 'model':
      return pick('model', [mine.servable, other.servable])
    case 'channel':
      return ['activations', 'gradients']
    case 'role':
      return ['user', 'admin']
    default:
      return []
  }
}

// ---- the routes --------------------------------------------------------------------------------

interface Spec {
  method: string
  path: string
  cls: string
  body?: JsonSchema
  query?: JsonSchema
  params?: JsonSchema
  binary: boolean
  openai: boolean
}

type Hooks = { body?: JsonSchema; query?: JsonSchema; params?: JsonSchema; detail?: Record<string, unknown> }
const specs: Spec[] = h.app.routes
  .filter((r) => r.method !== 'WS' && r.path.startsWith('/api/'))
  .map((r) => {
    const hooks = (r.hooks ?? {}) as Hooks
    const paramNames = [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!)
    const params: JsonSchema = hooks.params ?? { type: 'object', properties: Object.fromEntries(paramNames.map((n) => [n, { type: 'string' }])) }
    return {
      method: r.method,
      path: r.path,
      cls: String(hooks.detail?.['x-policy'] ?? 'admin'),
      body: hooks.body,
      query: hooks.query,
      params: paramNames.length > 0 ? params : undefined,
      binary: hooks.detail?.['x-body'] === 'binary',
      openai: r.path === '/api/v1/models' || r.path.startsWith('/api/v1/models/') || r.path.startsWith('/api/v1/chat/') || r.path === '/api/v1/embeddings',
    }
  })
// Paths and methods no route declares: the not-found gate answers them.
for (const [method, path] of [
  ['GET', '/api/v1/no-such-route'],
  ['POST', '/api/v1/no-such-route'],
  ['PUT', '/api/v1/pools'],
  ['PATCH', '/api/v1/jobs'],
  ['OPTIONS', '/api/v1/auth/me'],
  ['DELETE', '/api/v1/auth/me'],
] as const) {
  specs.push({ method, path, cls: 'admin', binary: false, openai: false })
}

// ---- requests as data, then mutated ------------------------------------------------------------

const CALLERS = ['none', 'garbage', 'user_session', 'user_token', 'other_session', 'admin_session', 'admin_token', 'own_node', 'foreign_node', 'revoked_node'] as const
type FuzzCaller = (typeof CALLERS)[number]
const CREDENTIALED: FuzzCaller[] = ['user_session', 'user_token', 'other_session', 'admin_session', 'admin_token', 'own_node', 'foreign_node']

interface Draft {
  caller: FuzzCaller
  params: Record<string, string>
  query: [string, string][]
  rawQuery: string
  body: unknown
  rawBody?: string | Uint8Array
  /** Marker string in the JSON -> raw JSON text spliced in its place (tokens JSON.stringify cannot write). */
  raw: Map<string, string>
  contentType?: string | null
  headers: Record<string, string>
  dropCsrf: boolean
  labels: string[]
}

interface Mutation {
  label: string
  apply(d: Draft, spec: Spec): void
}

let marker = 0
const rawToken = (d: Draft, text: string) => {
  const m = `__fuzz_raw_${++marker}__`
  d.raw.set(m, text)
  return m
}
const pickPath = (value: unknown, i: number) => {
  const ps = pathsOf(value)
  return ps[i % ps.length]!
}

const BAD_VALUES: unknown[] = [null, true, false, 0, -1, 1.5, '', 'x', [], {}, [null], { a: {} }, '0', 'true', 'null']
const NASTY_STRINGS = ['a\u0000b', '\u0000', '\ud800', 'x\udfff\ud800y', '\u202eevil', '\ufeff', '💩'.repeat(50), '<script>alert(1)</script>', "'; DROP TABLE users; --", '%00', '../../etc/passwd', '\r\nX-Injected: 1', '${jndi:ldap://x}', '{{7*7}}']
const NUMBER_EDGES: unknown[] = [-1, -0, 0.5, 1e308, -1e308, 2 ** 53 + 1, 4294967296, -2147483649, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 5e-324]
const RAW_NUMBERS = ['1e400', '-1e400', '123456789012345678901234567890', '-0', '1E2', '0.0000000000000000001', '1.0', '-0.0']
const DEEP = [30, 65, 1000, 20_000]
const UNKNOWN_KEYS = ['__proto__', 'constructor', 'prototype', 'role', 'is_admin', 'owner_user_id', 'id', '', 'x'.repeat(300)]
const INVALID_UTF8 = [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]]
const RAW_BODIES = ['', ' ', 'null', '{', '{"a":', '{}x', '\ufeff{}', '/* c */{}', '{"a":NaN}', '[1,]', '{"a":1,"a":{}}', "{'a':1}", '\u0000', 'true', '"str"']
const CONTENT_TYPES: (string | null)[] = [null, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'application/vnd.api+json', 'application/octet-stream', '*/*', ';;;', 'application/json, text/html', 'application/json; boundary=--']
const QUERY_VALUES = ['abc', '-1', '1e400', '99999999999999999999', '', '1.5', 'true', 'null', '[]', '{}', '\u0000', 'x'.repeat(5000), '0x10', ' 1', '%']
const RAW_QUERIES = ['%ZZ', '%', '%C3%28', '&&&', '=', '==', 'a=%', '__proto__[x]=1', 'constructor[prototype][x]=1', '%00=%00', '+=+', 'a[]=1&a[]=2', 'pool_id=%E0%A4%A']
const PARAM_VALUES = ['', 'not-a-uuid', '%00', '%ZZ', '%C3%28', 'A'.repeat(3000), '..', '%2e%2e', '%2F', '00000000-0000-0000-0000-000000000000', '-1', '0', '%F0%9F%92%A9', 'null', '__proto__', 'constructor', '01A20184-99E9-7296-9FC7-75B6E5358E98', '01a20184-99e9-7296-9fc7-75b6e5358e98%20']
const AUTH_VALUES = ['Bearer', 'Bearer ', 'Basic Zm9vOmJhcg==', `Bearer ${'A'.repeat(600)}`, `Bearer svc_node_${'A'.repeat(43)}`, 'Bearer svc_pat_', 'Bearer svc_join_x', 'Token abc', 'Bearer x,Bearer y', 'Bearer \u00e4\u00f6', 'Bearer a b c', 'Bearer ====', 'Bearer svc_']
const COOKIE_VALUES = ['svc_session=%ZZ', `svc_session=${'x'.repeat(5000)}`, 'svc_session', '=;=;', ';', 'svc_session=a; svc_session=b', 'svc_csrf=%E0%A4%A; svc_session=%', 'svc_session="quoted"', 'svc_session=svc_pat_xxx', 'svc_session=svc_node_xxx', 'svc_lang=%FF', 'svc_session=\u00ff', 'svc_csrf=a.b; svc_session=c']
const CSRF_VALUES = ['x', 'a.b', '.'.repeat(300), mintCsrfToken(Buffer.from('not the deployment key, at least 32 chars'), null)]
const MISC_HEADERS: [string, string][] = [
  ['x-forwarded-for', 'garbage'],
  ['x-forwarded-for', '1.1.1.1, 2.2.2.2, ::1'],
  ['x-forwarded-for', 'x'.repeat(3000)],
  ['x-forwarded-for', ',,,,'],
  ['last-event-id', '-1'],
  ['last-event-id', '1e400'],
  ['last-event-id', '99999999999999999999'],
  ['upgrade', 'websocket'],
  ['accept-language', 'de;q=x, *;q=-1, ' + 'a'.repeat(500)],
  ['origin', 'null'],
  ['referer', 'http://[::1'],
  ['x-bootstrap-token', 'svc_join_garbage'],
  ['accept', 'text/event-stream'],
  ['content-encoding', 'gzip'],
  ['transfer-encoding', 'chunked'],
]

function mutationsFor(spec: Spec): fc.Arbitrary<Mutation>[] {
  const out: fc.Arbitrary<Mutation>[] = []
  const m = (label: string, apply: Mutation['apply']): Mutation => ({ label, apply })
  const hasBody = spec.method !== 'GET' && spec.method !== 'HEAD' && spec.method !== 'OPTIONS'
  if (hasBody) {
    out.push(
      fc.tuple(fc.nat(), fc.constantFrom(...BAD_VALUES)).map(([i, v]) => m('wrong-type', (d) => void (d.body = setAt(d.body, pickPath(d.body, i), v)))),
      fc.tuple(fc.nat(), fc.constantFrom(10_000, 200_000)).map(([i, n]) => m(`huge-string-${n}`, (d) => void (d.body = setAt(d.body, pickPath(d.body, i), 'x'.repeat(n))))),
      fc.tuple(fc.nat(), fc.constantFrom(...NASTY_STRINGS)).map(([i, s]) => m('nasty-string', (d) => void (d.body = setAt(d.body, pickPath(d.body, i), s)))),
      fc.tuple(fc.nat(), fc.constantFrom(...DEEP), fc.boolean()).map(([i, n, arr]) =>
        m(`deep-${n}`, (d) => {
          const text = arr ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n)
          d.body = setAt(d.body, pickPath(d.body, i), rawToken(d, text))
        }),
      ),
      fc.tuple(fc.nat(), fc.constantFrom(...UNKNOWN_KEYS), fc.constantFrom<unknown>(1, 'admin', { polluted: true }, null)).map(([i, k, v]) =>
        m(`unknown-field-${k.slice(0, 12)}`, (d) => {
          const ps = objectPaths(d.body)
          if (ps.length === 0) return
          const p = ps[i % ps.length]!
          // "__proto__" must become an own JSON key, which no object literal can carry: splice it in.
          const key = k === '__proto__' ? rawKey(d, '__proto__') : k
          d.body = setAt(d.body, p, { ...(getAt(d.body, p) as object), [key]: v })
        }),
      ),
      fc.nat().map((i) =>
        m('drop-field', (d) => {
          const ps = pathsOf(d.body).filter((p) => p.length > 0 && typeof p[p.length - 1] === 'string')
          if (ps.length === 0) return
          const p = ps[i % ps.length]!
          const parent = { ...(getAt(d.body, p.slice(0, -1)) as Record<string, unknown>) }
          delete parent[p[p.length - 1] as string]
          d.body = setAt(d.body, p.slice(0, -1), parent)
        }),
      ),
      fc.tuple(fc.nat(), fc.constantFrom(...NUMBER_EDGES)).map(([i, v]) => m('number-edge', (d) => void (d.body = setAt(d.body, pickPath(d.body, i), v)))),
      fc.tuple(fc.nat(), fc.constantFrom(...RAW_NUMBERS)).map(([i, t]) => m(`raw-number-${t}`, (d) => void (d.body = setAt(d.body, pickPath(d.body, i), rawToken(d, t))))),
      fc.constantFrom<unknown>([], 'str', 42, null, true, [{}], '').map((v) => m('whole-body', (d) => void (d.body = v))),
      fc.tuple(fc.constantFrom(...INVALID_UTF8), fc.boolean()).map(([bytes, inString]) =>
        m('invalid-utf8', (d) => {
          const pre = new TextEncoder().encode(inString ? '{"name":"' : '')
          const post = new TextEncoder().encode(inString ? '"}' : '')
          d.rawBody = new Uint8Array([...pre, ...bytes, ...post])
        }),
      ),
      fc.constantFrom(...RAW_BODIES).map((t) => m('raw-body', (d) => void (d.rawBody = t))),
      fc.nat().map((i) => m('truncated', (d) => void (d.rawBody = renderBody(d)?.slice(0, i % Math.max(1, (renderBody(d) ?? '').length)) ?? '{'))),
      fc.constant(m('too-large', (d) => void (d.rawBody = `{"name":"${'x'.repeat(1_100_000)}"}`))),
      fc.constantFrom(...CONTENT_TYPES).map((ct) => m(`content-type-${ct}`, (d) => void (d.contentType = ct))),
    )
  }
  out.push(
    fc.tuple(fc.nat(), fc.constantFrom(...QUERY_VALUES)).map(([i, v]) =>
      m('query-value', (d) => {
        const keys = Object.keys(spec.query?.properties ?? {})
        d.query.push([keys.length > 0 ? keys[i % keys.length]! : 'q', v])
      }),
    ),
    fc.constantFrom('__proto__', 'constructor', 'x', 'pool_id[]', 'a.b').map((k) => m('query-unknown', (d) => void d.query.push([k, '1']))),
    fc.constantFrom(...RAW_QUERIES).map((q) => m('query-raw', (d) => void (d.rawQuery = q))),
    fc.constantFrom(...AUTH_VALUES).map((a) => m('authorization', (d) => void (d.headers['authorization'] = a))),
    fc.constantFrom('lower-scheme', 'trailing', 'double-space').map((how) =>
      m(`authorization-${how}`, (d) => {
        const t = bearerOf(d.caller)
        if (t === null) return
        d.headers['authorization'] = how === 'lower-scheme' ? `bearer ${t}` : how === 'trailing' ? `Bearer ${t} junk` : `Bearer  ${t}`
      }),
    ),
    fc.constantFrom(...COOKIE_VALUES).map((c) => m('cookie', (d) => void (d.headers['cookie'] = c))),
    fc.constant(m('no-csrf', (d) => void (d.dropCsrf = true))),
    fc.constantFrom(...CSRF_VALUES).map((v) => m('csrf-garbage', (d) => void (d.headers['x-csrf-token'] = v))),
    fc.constantFrom(...MISC_HEADERS).map(([k, v]) =>
      m(`header-${k}`, (d) => {
        // Varying the client address on the auth routes would only buy more (slow) password hashes.
        if (k === 'x-forwarded-for' && spec.path.startsWith('/api/v1/auth/')) return
        d.headers[k] = v
        if (k === 'upgrade') d.headers['connection'] = 'Upgrade'
      }),
    ),
  )
  if (spec.params) {
    const names = Object.keys(spec.params.properties ?? {})
    out.push(fc.tuple(fc.nat(), fc.constantFrom(...PARAM_VALUES)).map(([i, v]) => m('path-param', (d) => void (d.params[names[i % names.length]!] = v))))
  }
  return out
}

function rawKey(d: Draft, key: string): string {
  const m = `__fuzz_key_${++marker}__`
  d.raw.set(`"${m}"`, JSON.stringify(key))
  return m
}

function renderBody(d: Draft): string | undefined {
  if (d.body === undefined) return undefined
  let text = JSON.stringify(d.body)
  if (text === undefined) return undefined
  for (const [mark, raw] of d.raw) text = mark.startsWith('"') ? text.replaceAll(mark, raw) : text.replaceAll(JSON.stringify(mark), raw)
  return text
}

function bearerOf(caller: FuzzCaller): string | null {
  const { mine, other, admin } = world
  switch (caller) {
    case 'user_token':
      return mine.token.opts.bearer!
    case 'admin_token':
      return admin.token
    case 'own_node':
      return mine.nodeToken
    case 'foreign_node':
      return other.nodeToken
    case 'revoked_node':
      return mine.revokedNodeToken
    case 'garbage':
      return 'svc_pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
    default:
      return null
  }
}

function sessionOf(caller: FuzzCaller): string | null {
  if (caller === 'user_session') return world.mine.session.cookies.get('svc_session')!
  if (caller === 'other_session') return world.other.session.cookies.get('svc_session')!
  if (caller === 'admin_session') return world.admin.session
  return null
}

/** A CSRF token for each session (it is minted for one). */
const csrfOf = (session: string) => mintCsrfToken(h.cfg.secretKey, session)

function validDraft(spec: Spec, callers: readonly FuzzCaller[]): fc.Arbitrary<Draft> {
  const candidates = (field: string) => candidatesFor(field, spec.path)
  const paramArb = spec.params ? (arbitraryOf(spec.params, { candidates }) as fc.Arbitrary<Record<string, string>>) : fc.constant({})
  const queryArb = spec.query ? (arbitraryOf(spec.query, { candidates }) as fc.Arbitrary<Record<string, unknown>>) : fc.constant({})
  let bodyArb: fc.Arbitrary<unknown> = fc.constant(undefined)
  if (spec.binary) {
    bodyArb = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc.tuple(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }), fc.uint8Array({ maxLength: 64 })).map(([meta, data]) => encodeFrames([{ meta, data }])),
    )
  } else if (spec.body) {
    bodyArb = arbitraryOf(spec.body, { candidates })
  }
  return fc.record({ caller: fc.constantFrom(...callers), params: paramArb, query: queryArb, body: bodyArb }).map(({ caller, params, query, body }) => {
    const q = Object.entries(query)
      // Long polls answer at once: a generated wait would only stall the run.
      .map(([k, v]): [string, string] => [k, k === 'wait_ms' ? '0' : String(v)])
    const d: Draft = { caller, params: {}, query: q, rawQuery: '', body: undefined, raw: new Map(), headers: {}, dropCsrf: false, labels: [] }
    for (const [k, v] of Object.entries(params)) d.params[k] = encodeURIComponent(String(v))
    if (body instanceof Uint8Array) d.rawBody = body
    else d.body = body
    return d
  })
}

function caseArb(spec: Spec): fc.Arbitrary<Draft> {
  const muts = mutationsFor(spec)
  return fc.tuple(validDraft(spec, CALLERS), fc.array(fc.oneof(...muts), { maxLength: 3 })).map(([d, ms]) => {
    for (const mu of ms) {
      mu.apply(d, spec)
      d.labels.push(mu.label)
    }
    return d
  })
}

// ---- sending and judging -----------------------------------------------------------------------

interface Outcome {
  status: number
  contentType: string
  text: string
}

function toRequest(spec: Spec, d: Draft, signal: AbortSignal): Request | null {
  const path = spec.path.replace(/:([A-Za-z_]+)/g, (_, n: string) => d.params[n] ?? randomUUID())
  const qs = [new URLSearchParams(d.query).toString(), d.rawQuery].filter((s) => s !== '').join('&')
  const headers: Record<string, string> = {}
  const bearer = bearerOf(d.caller)
  if (bearer !== null) headers['authorization'] = `Bearer ${bearer}`
  const session = sessionOf(d.caller)
  if (session !== null) {
    const csrf = csrfOf(session)
    headers['cookie'] = `svc_session=${session}; svc_csrf=${csrf}`
    if (!d.dropCsrf) headers['x-csrf-token'] = csrf
  }
  Object.assign(headers, d.headers)
  let body: string | Uint8Array | undefined = d.rawBody ?? renderBody(d)
  if (spec.method === 'GET' || spec.method === 'HEAD') body = undefined
  if (body !== undefined) {
    const ct = d.contentType === undefined ? (spec.binary ? 'application/octet-stream' : 'application/json') : d.contentType
    if (ct !== null) headers['content-type'] = ct
  }
  try {
    return new Request(`http://leader.test${path}${qs ? `?${qs}` : ''}`, { method: spec.method, headers, body: body as string | Uint8Array<ArrayBuffer> | undefined, signal })
  } catch {
    return null // a request no client could send (fetch refuses the header or URL): nothing to test
  }
}

async function send(spec: Spec, d: Draft): Promise<Outcome | 'hang' | null> {
  const ac = new AbortController()
  const req = toRequest(spec, d, ac.signal)
  if (req === null) return null
  let timer: Timer | undefined
  const hung = new Promise<'hang'>((r) => (timer = setTimeout(() => r('hang'), CASE_TIMEOUT_MS)))
  try {
    const res = await Promise.race([h.app.handle(req), hung])
    if (res === 'hang') return 'hang'
    const contentType = res.headers.get('content-type') ?? ''
    let text = ''
    // A stream (logs, metrics, chat) never ends by itself: its status and type are the answer.
    if (contentType.includes('text/event-stream')) await res.body?.cancel()
    else text = await Promise.race([res.text(), hung.then(() => '<body hung>')])
    return { status: res.status, contentType, text }
  } catch (e) {
    // app.handle itself rejected: an error escaped even the error handler (a server would drop the request).
    return { status: 0, contentType: '', text: String((e as Error)?.stack ?? e) }
  } finally {
    clearTimeout(timer)
    ac.abort()
  }
}

const failures = new Map<string, string>()
const stats = { cases: 0, skipped: 0, byStatus: new Map<number, number>(), slowRoutes: new Set<string>(), deliberate5xx: new Map<string, number>() }
let before = stateDump(ctx.sqlite)
let digest = digestOf(before)
let changes = totalChanges(ctx.sqlite)

function fail(spec: Spec, d: Draft, why: string, o?: Outcome): void {
  const key = `${spec.method} ${spec.path}: ${why.split(':')[0]} ${o?.status ?? ''}`
  if (failures.has(key) || failures.size > 40) return
  const errors = h.lines.filter((l) => l.includes('"level":"error"')).slice(-1)
  failures.set(
    key,
    `${spec.method} ${spec.path} caller=${d.caller} mutations=[${d.labels.join(', ')}] -> ${why}${o ? ` | ${o.status} ${o.contentType} ${o.text.slice(0, 300)}` : ''}${errors.length ? ` | log: ${errors[0]!.slice(0, 400)}` : ''}`,
  )
}

/**
 * The 5xx answers the contract names on purpose: no fellow can serve a model now (503), a fellow or
 * the mail server failed (502), a fellow did not answer in time (504). Never 500 internal_error.
 */
const DELIBERATE_5XX = new Set(['service_unavailable', 'fellow_failed', 'smtp_failed', 'dispatch_timeout', 'fellow_timeout'])
function deliberate5xx(o: Outcome): boolean {
  if (o.status === 500) return false
  try {
    const b = JSON.parse(o.text)
    const code = b?.code ?? b?.error?.code
    if (DELIBERATE_5XX.has(code)) {
      stats.deliberate5xx.set(`${o.status} ${code}`, (stats.deliberate5xx.get(`${o.status} ${code}`) ?? 0) + 1)
      return true
    }
  } catch {
    // not JSON: not deliberate
  }
  return false
}

function problemShapeError(spec: Spec, o: Outcome): string | null {
  if (spec.method === 'HEAD') return null
  let body: any
  try {
    body = JSON.parse(o.text)
  } catch {
    return 'error body is not JSON'
  }
  // The OpenAI routes answer OpenAI's shape; a request that never reaches them (a mangled path id, a
  // WebSocket upgrade) is answered by the not-found gate in problem+json like everywhere else.
  if (spec.openai && o.contentType.startsWith('application/json')) {
    const e = body?.error
    if (typeof e?.message !== 'string' || typeof e?.type !== 'string' || typeof e?.code !== 'string') return 'not an OpenAI error shape'
    return null
  }
  if (!o.contentType.startsWith('application/problem+json')) return `error with content-type ${o.contentType}`
  if (typeof body?.type !== 'string' || typeof body?.title !== 'string' || typeof body?.detail !== 'string') return 'problem without type/title/detail'
  if (body.status !== o.status) return `problem status ${body.status} differs from HTTP ${o.status}`
  if (typeof body.code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(body.code)) return 'problem without a snake_case code'
  return null
}

/** Runs one case; `mustRefuse` is the second phase, where anything but a 4xx is a finding. */
async function runCase(spec: Spec, d: Draft, mustRefuse: boolean): Promise<void> {
  const o = await send(spec, d)
  if (o === null) {
    stats.skipped++
    return
  }
  stats.cases++
  if (o === 'hang') return fail(spec, d, `no answer within ${CASE_TIMEOUT_MS} ms`)
  stats.byStatus.set(o.status, (stats.byStatus.get(o.status) ?? 0) + 1)
  if (o.status === 0) fail(spec, d, 'no answer: app.handle threw', o)
  else if (o.status >= 500 && !deliberate5xx(o)) fail(spec, d, 'server error', o)
  else if (o.status >= 400) {
    const shape = problemShapeError(spec, o)
    if (shape) fail(spec, d, `shape: ${shape}`, o)
  } else if (mustRefuse) fail(spec, d, 'accepted a request that must be refused', o)
  const now = totalChanges(ctx.sqlite)
  if (now === changes) return
  changes = now
  const dump = stateDump(ctx.sqlite)
  const next = digestOf(dump)
  if (o.status >= 400 && o.status < 500 && next !== digest) {
    fail(spec, d, `state changed by a refused request: ${diffDumps(before, dump).join(' | ').slice(0, 400)}`, o)
  }
  before = dump
  digest = next
}

async function rebaseline(): Promise<void> {
  await heal()
  changes = totalChanges(ctx.sqlite)
  before = stateDump(ctx.sqlite)
  digest = digestOf(before)
}

// ---- refusals by construction (phase two) ------------------------------------------------------

/** Mutations each of which alone makes the request invalid, whoever sends it. */
function refusalsFor(spec: Spec): Mutation[] {
  const out: Mutation[] = []
  const m = (label: string, apply: Mutation['apply']) => out.push({ label, apply })
  const body = spec.body
  if (body && !spec.binary) {
    if (body.additionalProperties === false) m('unknown-field', (d) => void (d.body = { ...(d.body as object), not_a_field: 1 }))
    for (const r of body.required ?? []) m(`drop-${r}`, (d) => void delete (d.body as Record<string, unknown>)[r])
    for (const [k, s] of Object.entries(body.properties ?? {})) {
      const bad = wrongTypeFor(s)
      if (bad !== undefined) m(`wrong-type-${k}`, (d) => void (d.body = { ...(d.body as object), [k]: bad }))
    }
    m('array-body', (d) => void (d.body = []))
    m('invalid-json', (d) => void (d.rawBody = '{"a":'))
    m('invalid-utf8', (d) => void (d.rawBody = new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])))
    m('text-plain', (d) => void (d.contentType = 'text/plain'))
  }
  if (spec.binary) m('json-on-binary', (d) => void ((d.rawBody = '{}'), (d.contentType = 'application/json')))
  if (spec.query?.additionalProperties === false) m('unknown-query', (d) => void d.query.push(['not_a_param', '1']))
  for (const [k, s] of Object.entries(spec.query?.properties ?? {})) {
    const types = JSON.stringify(s)
    if (types.includes('"integer"')) m(`query-${k}-not-integer`, (d) => void d.query.push([k, 'abc']))
  }
  for (const [k, s] of Object.entries(spec.params?.properties ?? {})) {
    if ((s as JsonSchema).format === 'uuid') m(`param-${k}-not-uuid`, (d) => void (d.params[k] = 'not-a-uuid'))
  }
  // Public routes treat a wrong credential as none at all (a stale token must not break them).
  if (spec.cls !== 'public' && spec.cls !== 'page') m('wrong-bearer', (d) => void (d.headers['authorization'] = 'Bearer svc_pat_wrongwrongwrongwrongwrongwrongwrongwrong'))
  if (spec.method !== 'GET') m('session-without-csrf', (d) => void ((d.caller = 'user_session'), (d.dropCsrf = true)))
  return out
}

// ---- the runs ----------------------------------------------------------------------------------

describe('generated bad input against every JSON route', () => {
  test(`${MIXED_CASES}+ mutated requests: no 5xx, every error a problem, refused requests change nothing`, async () => {
    const t0 = performance.now()
    await rebaseline()
    let round = 0
    while (stats.cases < MIXED_CASES) {
      for (let i = 0; i < specs.length && stats.cases < MIXED_CASES; i++) {
        const spec = specs[i]!
        const key = `${spec.method} ${spec.path}`
        if (round > 0 && stats.slowRoutes.has(key)) continue
        await rebaseline()
        const drafts = fc.sample(caseArb(spec), { numRuns: BATCH, seed: SEED + round * 7919 + i })
        const start = performance.now()
        for (const d of drafts) {
          const c0 = performance.now()
          await runCase(spec, d, false)
          if (process.env.SVC_FUZZ_PROFILE && performance.now() - c0 > 100) console.log('slow case', key, d.caller, d.labels.join(','), Math.round(performance.now() - c0))
        }
        if (process.env.SVC_FUZZ_PROFILE) console.log('batch', key, Math.round(performance.now() - start), 'ms')
        if ((performance.now() - start) / BATCH > SLOW_MS) stats.slowRoutes.add(key)
      }
      round++
    }
    const ms = Math.round(performance.now() - t0)
    console.log(
      `fuzz (mixed): ${stats.cases} cases over ${specs.length} routes in ${ms} ms, seed ${SEED}, statuses ${JSON.stringify(Object.fromEntries([...stats.byStatus].sort((a, b) => a[0] - b[0])))}, one batch only for ${[...stats.slowRoutes].join(', ') || 'none'}, deliberate 5xx ${JSON.stringify(Object.fromEntries(stats.deliberate5xx))}`,
    )
    expect([...failures.values()].map((f) => `${f} (seed ${SEED})`)).toEqual([])
    expect(stats.cases).toBeGreaterThanOrEqual(MIXED_CASES)
    // Not all refused at the door: many cases must reach body parsing and validation, and many succeed.
    const count = (pred: (s: number) => boolean) => [...stats.byStatus].filter(([s]) => pred(s)).reduce((n, [, c]) => n + c, 0)
    // One in twelve: since issue 26 some cases stop at new rate limits (token-less join, invites:
    // about 1.6 % are 429s), and seed 1686498488 reached 9.87 %, under the old one in ten.
    expect(count((s) => [400, 413, 415, 422].includes(s))).toBeGreaterThan(stats.cases / 12)
    expect(count((s) => s >= 200 && s < 300)).toBeGreaterThan(stats.cases / 10)
  }, 240_000)

  test('requests that must be refused by credentialed callers are, and leave the state file unchanged', async () => {
    const t0 = performance.now()
    const start = stats.cases
    failures.clear()
    let round = 0
    while (stats.cases - start < REFUSED_CASES) {
      for (let i = 0; i < specs.length; i++) {
        const spec = specs[i]!
        const refusals = refusalsFor(spec)
        if (refusals.length === 0) continue
        await rebaseline()
        const drafts = fc.sample(
          fc.tuple(validDraft(spec, CREDENTIALED), fc.constantFrom(...refusals)).map(([d, r]) => {
            r.apply(d, spec)
            d.labels.push(r.label)
            return d
          }),
          { numRuns: 8, seed: SEED + 104_729 + round * 7919 + i },
        )
        for (const d of drafts) await runCase(spec, d, true)
      }
      round++
    }
    console.log(`fuzz (must refuse): ${stats.cases - start} cases in ${Math.round(performance.now() - t0)} ms, seed ${SEED}`)
    expect([...failures.values()].map((f) => `${f} (seed ${SEED})`)).toEqual([])
  }, 240_000)

  test('every page route with hostile cookies, queries and path ids: never a 5xx', async () => {
    await heal()
    const pages = h.app.routes.filter((r) => r.method === 'GET' && !r.path.startsWith('/api/'))
    const cookie = fc.constantFrom(
      '',
      ...COOKIE_VALUES,
      'svc_lang={"a":1}',
      'svc_lang=[1]',
      'svc_lang=xx-YY',
      'svc_next={}',
      'svc_next=//evil.example/',
      'svc_csrf=[1,2]',
      'svc_csrf={}',
      `svc_session=${world.mine.session.cookies.get('svc_session')}; svc_csrf=[1]; svc_lang={}`,
      `svc_session=${world.admin.session}; svc_next=%ZZ`,
    )
    const query = fc.constantFrom('', ...RAW_QUERIES, 'next=//evil.example', 'next=%2F%2Fevil', 'next=javascript:alert(1)', 'token=%ZZ', `token=${'x'.repeat(5000)}`, 'v=1&v=2', 'lang=zz')
    const param = fc.oneof(fc.constantFrom(...PARAM_VALUES, world.mine.poolId, world.other.poolId, 'de', 'en', 'style.css'), fc.string({ maxLength: 20 }).map(encodeURIComponent))
    const header = fc.constantFrom<[string, string][]>([], [['accept-language', '*;q=x, de-DE-x-' + 'a'.repeat(300)]], [['referer', 'http://leader.test/%ZZ']], [['referer', 'javascript:alert(1)']], [['x-forwarded-for', 'garbage']])
    const bad: string[] = []
    let n = 0
    for (const r of pages) {
      const cases = fc.sample(fc.tuple(cookie, query, param, header), { numRuns: 12, seed: SEED + n })
      for (const [c, q, p, hs] of cases) {
        const path = r.path.replace(/:([A-Za-z_]+)/g, () => p)
        const headers: Record<string, string> = Object.fromEntries(hs)
        if (c) headers['cookie'] = c
        let req: Request
        try {
          req = new Request(`http://leader.test${path}${q ? `?${q}` : ''}`, { headers })
        } catch {
          continue
        }
        n++
        let status: number
        try {
          status = (await h.app.handle(req)).status
        } catch {
          status = 0
        }
        if (status === 0 || status >= 500) bad.push(`GET ${path.slice(0, 80)}?${q.slice(0, 40)} cookie=${c.slice(0, 60)} -> ${status}`)
      }
    }
    console.log(`fuzz (pages): ${n} requests over ${pages.length} page routes`)
    expect(bad.slice(0, 20)).toEqual([])
  }, 60_000)

  test('after the storm the leader still answers, and no prototype was polluted', async () => {
    await heal()
    expect((await h.client().get('/api/v1/health')).status).toBe(200)
    expect((await h.client({ bearer: world.admin.token }).get('/api/v1/auth/me')).status).toBe(200)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.keys(Object.prototype)).toEqual([])
  })
})

// Each bug the fuzzer found, pinned as a plain test so it cannot come back unnoticed.
describe('regressions found by the fuzzer', () => {
  const raw = (path: string, init: RequestInit = {}) => h.app.handle(new Request(`http://leader.test${path}`, init))

  test('a session cookie without a value, or with a JSON-looking one, is a wrong credential (401), not a 500', async () => {
    for (const cookie of ['svc_session', 'svc_session={}', 'svc_session=[1,2]', 'svc_session=123; svc_csrf={}']) {
      const r = await raw('/api/v1/auth/me', { headers: { cookie } })
      expect(`${cookie}: ${r.status}`).toBe(`${cookie}: 401`)
    }
  })

  test('an undecodable session cookie on an unknown path is answered (401), not dropped', async () => {
    const r = await raw('/api/v1/no-such-route', { headers: { cookie: 'svc_session=%ZZ' } })
    expect(r.status).toBe(401)
  })

  test('a body nested 10,000 levels deep is refused at once with 400', async () => {
    const t0 = performance.now()
    const r = await raw('/api/v1/auth/verify-email', { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"token":${'['.repeat(10_000)}${']'.repeat(10_000)}}` })
    expect(r.status).toBe(400)
    expect(((await r.json()) as { detail: string }).detail).toContain('nests deeper')
    expect(performance.now() - t0).toBeLessThan(1000)
  })

  test('a validation error does not mirror a huge refused value', async () => {
    const r = await raw('/api/v1/auth/verify-email', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: Array(100_000).fill(1) }) })
    expect(r.status).toBe(422)
    expect((await r.text()).length).toBeLessThan(2000)
  })

  test('a missing enum field is refused, not filled in with the first value; a list without a filter lists all', async () => {
    await heal()
    const node = h.client({ bearer: world.mine.nodeToken })
    expect((await node.post('/api/v1/workers/heartbeat', {})).status).toBe(422)
    expect((await node.post(`/api/v1/jobs/${world.mine.jobId}/status`, { step: 1 })).status).toBe(422)
    // Seed 763901751: an upload without `kind`, naming a job and stage, became a checkpoint (201).
    const upload = { name: 'x', size_bytes: 1, sha256: 'a'.repeat(64), job_id: world.mine.jobId, stage: 0 }
    expect((await node.post('/api/v1/artifacts/uploads', upload)).status).toBe(422)
    const chat = await h.client({ bearer: world.mine.token.opts.bearer }).post('/api/v1/chat/completions', { model: world.mine.servable, messages: [{ content: 'hi' }] })
    expect(chat.status).toBe(400) // OpenAI's status for a refused field on the chat routes
    const all = (await world.mine.token.get('/api/v1/jobs')).body.items.map((j: { id: string }) => j.id)
    expect(all).toContain(world.mine.jobId) // scheduled, not queued: an implied ?status=queued hid it
  })

  test('an admin submitting a job to an unknown pool gets 404, not a foreign-key 500', async () => {
    await heal()
    const r = await h.client({ bearer: world.admin.token }).post('/api/v1/jobs', { name: 'nowhere', pool_id: randomUUID() })
    expect(r.status).toBe(404)
  })
})
