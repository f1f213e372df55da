// The client address used for rate limits and the audit log. Only the entries appended by our own
// proxies are trusted: with N hops the client is the Nth X-Forwarded-For entry from the right, so a
// client cannot choose its address by sending a forged header (entries to the left are its own).
// And the header counts only when the connection comes from one of those proxies
// (SVC_TRUSTED_PROXIES): with SVC_TRUSTED_PROXY_HOPS=1 and nothing in front, a client talking to
// the leader directly could otherwise rotate the header past per-address login limits and write
// any address it likes into the audit log.
import { AddressBlocks, ipVersion } from './ip'
import type { Logger } from '../log'

/**
 * Trusted proxy addresses when SVC_TRUSTED_PROXIES is unset: loopback only, a proxy on the same
 * host. Not the private ranges: on a self-hosted cluster people and fellows reach the leader from
 * them directly, and any of them could then rotate X-Forwarded-For past per-address limits. A proxy
 * in a container network is named in SVC_TRUSTED_PROXIES (the first direct request warns).
 */
export const DEFAULT_TRUSTED_PROXIES: readonly string[] = ['127.0.0.0/8', '::1/128']

/** An address or CIDR block in canonical `address/prefix` form, or null when it is neither. */
export function parseCidr(raw: string): string | null {
  const slash = raw.indexOf('/')
  const addr = normalizeIp(slash === -1 ? raw.trim() : raw.slice(0, slash).trim())
  if (addr === null) return null
  const max = ipVersion(addr) === 4 ? 32 : 128
  if (slash === -1) return `${addr}/${max}`
  const p = raw.slice(slash + 1).trim()
  if (!/^\d{1,3}$/.test(p) || Number(p) > max) return null
  return `${addr}/${Number(p)}`
}

/** A set of proxy address blocks (canonical CIDRs, as parseCidr makes them). */
export class TrustedProxies {
  private blocks = new AddressBlocks()

  constructor(readonly cidrs: readonly string[]) {
    for (const c of cidrs) {
      const [addr, prefix] = c.split('/') as [string, string]
      this.blocks.add(addr, Number(prefix))
    }
  }

  has(address: string): boolean {
    const a = normalizeIp(address)
    return a !== null && this.blocks.has(a)
  }
}

/**
 * The client of one request. The header is read only when the socket peer is a trusted proxy;
 * otherwise the peer itself is the client, whatever the header says.
 */
export function clientIp(xff: string | null, socketAddress: string, trustedHops: number, proxies: Pick<TrustedProxies, 'has'>): string {
  if (trustedHops === 0 || xff === null || !proxies.has(socketAddress)) return socketAddress
  const entries = xff.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (entries.length < trustedHops) return socketAddress
  const candidate = normalizeIp(entries[entries.length - trustedHops]!)
  return candidate ?? socketAddress
}

/**
 * clientIp bound to the configuration, warning once when a request arrives straight from an
 * address that is not a trusted proxy while X-Forwarded-For is trusted: either the leader is
 * reachable around its proxy, or SVC_TRUSTED_PROXIES does not name the proxy.
 */
export function clientIpResolver(cfg: { trustedProxyHops: number; trustedProxies: readonly string[] }, log: Logger): (xff: string | null, socketAddress: string) => string {
  const proxies = new TrustedProxies(cfg.trustedProxies)
  let warned = false
  // Peers are few (the proxy, a fellow's NAT address): remember the answer instead of asking the
  // blocks on every request (2 % of the leader's CPU per heartbeat). Bounded; cleared when full.
  const known = new Map<string, boolean>()
  const trusted = (peer: string) => {
    let t = known.get(peer)
    if (t === undefined) {
      if (known.size >= 4096) known.clear()
      known.set(peer, (t = proxies.has(peer)))
    }
    return t
  }
  return (xff, socketAddress) => {
    if (cfg.trustedProxyHops > 0 && !warned && !trusted(socketAddress)) {
      warned = true
      log.warn('SECURITY: a request came straight from an address that is not a trusted proxy; its X-Forwarded-For is ignored. Set SVC_TRUSTED_PROXIES to the proxy address, or SVC_TRUSTED_PROXY_HOPS=0 when no proxy is in front', {
        peer: socketAddress,
        trusted_proxies: cfg.trustedProxies.join(','),
      })
    }
    return clientIp(xff, socketAddress, cfg.trustedProxyHops, { has: trusted })
  }
}

function normalizeIp(raw: string): string | null {
  let v = raw
  if (v.startsWith('[')) v = v.slice(1, v.indexOf(']') === -1 ? undefined : v.indexOf(']'))
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(v)) v = v.slice(0, v.lastIndexOf(':'))
  if (v.toLowerCase().startsWith('::ffff:') && ipVersion(v.slice(7)) === 4) v = v.slice(7)
  return ipVersion(v) === 0 ? null : v.toLowerCase()
}
