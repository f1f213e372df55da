import { describe, expect, test } from 'bun:test'
import { clientIp, clientIpResolver, DEFAULT_TRUSTED_PROXIES, parseCidr, TrustedProxies } from '../../src/http/client-ip'
import { silentLogger, type Logger } from '../../src/log'

const DEFAULT = new TrustedProxies(DEFAULT_TRUSTED_PROXIES)
/** The proxy of the hop tests: a named address on the private network. */
const PROXY = new TrustedProxies(['10.0.0.1/32'])

describe('client IP from X-Forwarded-For', () => {
  test('0 hops ignores the header entirely', () => {
    expect(clientIp('1.2.3.4', '10.0.0.1', 0, PROXY)).toBe('10.0.0.1')
  })
  test('1 hop takes the rightmost entry (appended by our proxy), not a forged left one', () => {
    expect(clientIp('6.6.6.6, 1.2.3.4', '10.0.0.1', 1, PROXY)).toBe('1.2.3.4')
  })
  test('2 hops take the second entry from the right', () => {
    expect(clientIp('6.6.6.6, 1.2.3.4, 172.16.0.9', '10.0.0.1', 2, PROXY)).toBe('1.2.3.4')
  })
  test('fewer entries than hops, no header, or garbage fall back to the socket address', () => {
    expect(clientIp('1.2.3.4', '10.0.0.1', 2, PROXY)).toBe('10.0.0.1')
    expect(clientIp(null, '10.0.0.1', 1, PROXY)).toBe('10.0.0.1')
    expect(clientIp('not-an-ip', '10.0.0.1', 1, PROXY)).toBe('10.0.0.1')
  })
  test('IPv6, bracketed forms and IPv4 with a port are normalised', () => {
    expect(clientIp('[2001:db8::1]:443', '10.0.0.1', 1, PROXY)).toBe('2001:db8::1')
    expect(clientIp('1.2.3.4:5555', '10.0.0.1', 1, PROXY)).toBe('1.2.3.4')
    expect(clientIp('::ffff:1.2.3.4', '10.0.0.1', 1, PROXY)).toBe('1.2.3.4')
  })
})

describe('X-Forwarded-For only from a trusted proxy (issue 26)', () => {
  test('a client connecting straight from a public address cannot choose its address with the header', () => {
    for (const xff of ['1.2.3.4', '6.6.6.6, 1.2.3.4', '10.0.0.7']) expect(clientIp(xff, '203.0.113.5', 1, DEFAULT)).toBe('203.0.113.5')
    expect(clientIp('1.2.3.4', '2001:db8::9', 1, DEFAULT)).toBe('2001:db8::9')
  })
  test('by default only loopback is a trusted proxy (plain and IPv4-mapped); a LAN peer cannot choose its address either', () => {
    for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      expect([peer, clientIp('198.51.100.4', peer, 1, DEFAULT)]).toEqual([peer, '198.51.100.4'])
    }
    // People and fellows of a self-hosted cluster reach the leader from private addresses directly.
    for (const peer of ['10.1.2.3', '172.17.0.1', '192.168.1.10', 'fd00::5']) expect([peer, clientIp('198.51.100.4', peer, 1, DEFAULT)]).toEqual([peer, peer])
    for (const peer of ['172.32.0.1', '8.8.8.8', '2001:db8::1', '::ffff:8.8.8.8', 'garbage']) expect(DEFAULT.has(peer)).toBe(false)
  })
  test('an explicit list trusts exactly the addresses and blocks it names', () => {
    const only = new TrustedProxies(['192.0.2.10/32', '2001:db8:1::/48'])
    expect(clientIp('198.51.100.4', '192.0.2.10', 1, only)).toBe('198.51.100.4')
    expect(clientIp('198.51.100.4', '2001:db8:1::77', 1, only)).toBe('198.51.100.4')
    expect(clientIp('198.51.100.4', '192.0.2.11', 1, only)).toBe('192.0.2.11')
    expect(clientIp('198.51.100.4', '127.0.0.1', 1, only)).toBe('127.0.0.1')
  })
  test('parseCidr accepts addresses and blocks and refuses anything else', () => {
    expect(parseCidr('10.0.0.1')).toBe('10.0.0.1/32')
    expect(parseCidr(' 10.0.0.0/8 ')).toBe('10.0.0.0/8')
    expect(parseCidr('::1')).toBe('::1/128')
    expect(parseCidr('FD00::/8')).toBe('fd00::/8')
    for (const bad of ['', 'localhost', '10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/-1', '10.0.0.0/8/8', '300.1.1.1', '10.0.0.0/x']) expect([bad, parseCidr(bad)]).toEqual([bad, null])
  })
  test('the first request straight from a non-proxy address logs one SECURITY warning; later ones and proxied ones do not', () => {
    const warnings: string[] = []
    const log: Logger = { ...silentLogger, warn: (m) => warnings.push(m) }
    const pick = clientIpResolver({ trustedProxyHops: 1, trustedProxies: [...DEFAULT_TRUSTED_PROXIES] }, log)
    expect(pick('1.2.3.4', '127.0.0.1')).toBe('1.2.3.4')
    expect(warnings).toEqual([])
    expect(pick('1.2.3.4', '203.0.113.5')).toBe('203.0.113.5')
    expect(pick(null, '203.0.113.6')).toBe('203.0.113.6')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toStartWith('SECURITY:')
    const none: string[] = []
    const off = clientIpResolver({ trustedProxyHops: 0, trustedProxies: [...DEFAULT_TRUSTED_PROXIES] }, { ...silentLogger, warn: (m) => none.push(m) })
    expect(off('1.2.3.4', '203.0.113.5')).toBe('203.0.113.5')
    expect(none).toEqual([])
  })
})
