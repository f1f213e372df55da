// The Host a request names: the defence against DNS rebinding. A page of another site whose name
// the attacker then points at 127.0.0.1 (or a LAN address) makes the visitor's browser talk to this
// leader as that site, same-origin: it could claim a fresh install's first (admin) account, mint
// tokenless fellows, and, the peer being loopback (a trusted proxy by default), write any
// X-Forwarded-For into the audit log past per-address limits. The browser sends that site's name
// as the Host, so a leader answers only to names it knows: its SVC_BASE_URL's, localhost, IP
// addresses (no DNS in between, so nothing to rebind) and those of SVC_ALLOWED_HOSTS.
import { AppError } from '../errors'
import type { Logger } from '../log'

export interface HostRules {
  baseUrl: string
  /** SVC_HOST: the name the leader listens on answers too (`svc health` asks by it). */
  host: string
  /** SVC_ALLOWED_HOSTS: exact names, `.example.org` for a domain and its subdomains, or `*`. */
  allowedHosts: readonly string[]
}

/** A name as a Host header carries it (RFC 3986 reg-name, as browsers send it), with its port. */
const NAME = /^([a-z0-9_-]+(?:\.[a-z0-9_-]+)*)\.?(?::(\d{1,5}))?$/
const BARE_NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/
const IPV6 = /^\[[0-9a-f:.]+(?:%25[0-9a-z._~-]+)?\](?::\d{1,5})?$/

/** The SVC_ALLOWED_HOSTS entry (lower case) refused, or null when it is a name, `.domain` or `*` (no port). */
export function badAllowedHost(entry: string): string | null {
  return entry === '*' || BARE_NAME.test(entry.startsWith('.') ? entry.slice(1) : entry) ? null : entry
}

/**
 * What a request's Host header may be; null when it passes. No header at all (HTTP/1.0, a health
 * checker) passes: a browser always sends one.
 */
export function hostCheck(rules: HostRules, log?: Logger): (host: string | null) => AppError | null {
  // Names as a Host header carries them once decided: lower case, no trailing dot.
  const bare = (name: string) => name.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '')
  const own = bare(new URL(rules.baseUrl).hostname)
  const any = rules.allowedHosts.includes('*')
  const names = new Set([...rules.allowedHosts.filter((h) => !h.startsWith('.')), bare(rules.host)])
  const domains = rules.allowedHosts.filter((h) => h.startsWith('.'))
  const decide = (raw: string): AppError | null => {
    const host = raw.toLowerCase()
    if (IPV6.test(host)) return null
    const m = NAME.exec(host)
    if (!m || (m[2] !== undefined && Number(m[2]) > 65_535)) return new AppError('bad_request', 'The Host header is not a host name.')
    const name = m[1]!
    if (any || IPV4.test(name) || name === 'localhost' || name.endsWith('.localhost') || name === own || names.has(name)) return null
    if (domains.some((d) => name.endsWith(d) || name === d.slice(1))) return null
    // Once per name (the answers are remembered): the refused client sees why, and so does the
    // operator of a proxy or a scraper that asks by a name of its own (a Compose service name).
    log?.warn('refused a request for a host name this leader does not answer to (SVC_ALLOWED_HOSTS)', { host: name.slice(0, 100) })
    return new AppError(
      'misdirected_request',
      `This leader does not answer to the name ${JSON.stringify(name.slice(0, 100))} (a defence against DNS rebinding): it answers to ${own}, localhost and IP addresses. Its operator can add the name to SVC_ALLOWED_HOSTS.`,
    )
  }
  // Few names reach a leader: remember each answer (bounded; cleared when full).
  const known = new Map<string, AppError | null>()
  return (host) => {
    if (host === null) return null
    let answer = known.get(host)
    if (answer === undefined) {
      answer = decide(host)
      if (known.size >= 1000) known.clear()
      known.set(host, answer)
    }
    return answer
  }
}

/**
 * The page a state change (or a WebSocket handshake) comes from, by its Origin header: refused
 * unless its host is one the Host check would answer to. A proxy that sets its own Host (nginx's
 * default `proxy_pass` sends `Host: 127.0.0.1:...`, an IP address, which passes) hides a rebound
 * name from the Host check; the browser still names the page's site in Origin. Only browsers send
 * Origin (the CLI and agents send none), and the leader answers no cross-origin requests (no CORS),
 * so a page of another site has nothing to send here. `null` (a sandboxed frame, a file) is refused.
 */
export function originCheck(rules: HostRules, log?: Logger): (origin: string | null) => AppError | null {
  const hostOf = hostCheck(rules)
  // Said once per origin (bounded): behind a proxy that sends its own Host, a public name missing
  // from SVC_BASE_URL and SVC_ALLOWED_HOSTS refuses the console's own logins, and says why here.
  const said = new Set<string>()
  return (origin) => {
    if (origin === null) return null
    let host: string | null = null
    try {
      const url = new URL(origin)
      if (url.protocol === 'http:' || url.protocol === 'https:') host = url.host
    } catch {
      // not a URL: refused below
    }
    if (host !== null && hostOf(host) === null) return null
    if (log && !said.has(origin)) {
      if (said.size >= 1000) said.clear()
      said.add(origin)
      log.warn('refused a change from a page of a site this leader does not answer to (its Origin); if it is this leader\'s own public name, set SVC_BASE_URL to it or add it to SVC_ALLOWED_HOSTS', { origin: origin.slice(0, 100) })
    }
    return new AppError('forbidden', `This request came from a page of another site (Origin ${JSON.stringify(origin.slice(0, 100))}); this leader takes changes only from its own pages (SVC_BASE_URL, SVC_ALLOWED_HOSTS).`)
  }
}

/**
 * The request's URL. Bun hands over the path alone when a request named no host (HTTP/1.0
 * without Host), which `new URL` refuses: that made every page of such a request a 500.
 */
export function requestUrl(request: Request): URL {
  try {
    return new URL(request.url)
  } catch {
    try {
      return new URL(request.url, 'http://no-host.invalid')
    } catch {
      return new URL('http://no-host.invalid/')
    }
  }
}
