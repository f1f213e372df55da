// Reading a cookie from the raw Cookie header, for the places that run before (or without)
// Elysia's cookie jar: the policy derive and the not-found gate.

/**
 * One cookie's value from a Cookie header, or undefined. The policy derive reads cookies this way,
 * not through Elysia's `cookie`: naming `cookie` in a global derive made Elysia build a cookie jar
 * (an async parse) for every request, heartbeats included, a few percent of the leader's CPU per
 * heartbeat (docs/benchmarks.md). Values are strings or undefined, never parsed JSON.
 */
export function cookieFrom(header: string | null, name: string): string | undefined {
  if (header === null) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue
    const raw = part.slice(eq + 1).trim()
    try {
      return decodeURIComponent(raw)
    } catch {
      // A malformed %-escape (svc_session=%ZZ) once threw URIError out of the not-found handler, so
      // the request got no answer at all. The raw value is still a presented credential: it fails
      // as a wrong one.
      return raw
    }
  }
  return undefined
}
