// A newer agent on an older leader. The leader's bodies are closed (additionalProperties: false),
// so a leader from before a field refuses every body carrying it (422 "Property 'engines' should
// not be provided"): every heartbeat failed for good, the machine showed stale and its jobs stayed
// queued. What the agent added since the first release is optional, so what such a leader names as
// unknown is left out for it, and the agent says which features that turns off.
import { LeaderError } from './client'

/** Fields the agent may leave out for an older leader (paths with `*` for list items), and what is off then. */
const OPTIONAL: Record<string, string> = {
  '/servables': 'inference on this fellow is not offered',
  '/capacity': "each model here gets one request at a time, whatever its engine's max_concurrent",
  '/engines': "the machine page does not list this fellow's engines and their health",
  '/runners': 'the runners declared here (--runner, [runners]) are not offered: only the built-in mlp',
  '/job_id': 'the leader does not see which job runs here',
  '/check': 'the check is taken as a plain heartbeat',
  '/hardware/mem_total_mb': "the machine's total memory is not shown",
  '/hardware/gpus/*/temperature_c': 'GPU temperatures are not shown',
  '/gpus/*/temperature_c': 'GPU temperatures are not shown',
  '/agent_version': "this agent's version is not shown",
}

// How leaders have said "no such field": TypeBox's words, this leader's, and its body parser's.
const UNKNOWN_FIELD = /should not be provided|not a field this request takes|unknown field/i

/** A path with list indexes as `*`, as OPTIONAL names them. */
const pattern = (path: string) => path.replace(/\/\d+(?=\/|$)/g, '/*')

/**
 * The optional fields a 422 says the leader does not take (as OPTIONAL's paths), from its problem's
 * `errors`, or its `detail` ("body /engines: ...") when it lists none. Empty for anything else: a
 * value the leader refuses is this agent's mistake, not the leader's age.
 */
export function unknownFields(e: unknown): string[] {
  if (!(e instanceof LeaderError) || e.status !== 422) return []
  const named = e.issues.length > 0 ? e.issues : [/^body (\/\S+): (.*)$/.exec(e.detail)].flatMap((m) => (m ? [{ path: m[1]!, message: m[2]! }] : []))
  const found = named.filter((i) => UNKNOWN_FIELD.test(i.message)).map((i) => pattern(i.path))
  return [...new Set(found.filter((p) => p in OPTIONAL))]
}

/** A 422 that names some field as unknown, optional or not: the leader is likely older than this agent. */
export const namesUnknownField = (e: unknown): boolean =>
  e instanceof LeaderError && e.status === 422 && (UNKNOWN_FIELD.test(e.detail) || e.issues.some((i) => UNKNOWN_FIELD.test(i.message)))

/** A field's path as people read it: `hardware.gpus.temperature_c`. */
export const fieldName = (path: string): string => path.slice(1).replaceAll('/*', '').replaceAll('/', '.')

/** What is off with these fields left out, in words. */
export const featuresOff = (fields: Iterable<string>): string[] => [...fields].map((f) => `${fieldName(f)}: ${OPTIONAL[f] ?? 'not reported'}`)

/** A copy of `body` without the fields at these paths. */
export function leaveOut<T>(body: T, fields: Iterable<string>): T {
  let out = body as unknown
  for (const f of fields) out = without(out, f.split('/').slice(1))
  return out as T
}

function without(value: unknown, at: string[]): unknown {
  const [head, ...rest] = at
  if (head === undefined) return value
  if (head === '*') return Array.isArray(value) ? value.map((v) => without(v, rest)) : value
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !(head in value)) return value
  const { [head]: inner, ...others } = value as Record<string, unknown>
  return rest.length === 0 ? others : { ...others, [head]: without(inner, rest) }
}
