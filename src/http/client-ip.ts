// The client address used for rate limits and the audit log. Only the entries appended by our own
// proxies are trusted: with N hops the client is the Nth X-Forwarded-For entry from the right, so a
// client cannot choose its address by sending a forged header (entries to the left are its own).
import { isIP } from 'node:net'

export function clientIp(xff: string | null, socketAddress: string, trustedHops: number): string {
  if (trustedHops === 0 || xff === null) return socketAddress
  const entries = xff.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (entries.length < trustedHops) return socketAddress
  const candidate = normalizeIp(entries[entries.length - trustedHops]!)
  return candidate ?? socketAddress
}

function normalizeIp(raw: string): string | null {
  let v = raw
  if (v.startsWith('[')) v = v.slice(1, v.indexOf(']') === -1 ? undefined : v.indexOf(']'))
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(v)) v = v.slice(0, v.lastIndexOf(':'))
  if (v.startsWith('::ffff:') && isIP(v.slice(7)) === 4) v = v.slice(7)
  return isIP(v) === 0 ? null : v.toLowerCase()
}
