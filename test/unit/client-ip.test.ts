import { describe, expect, test } from 'bun:test'
import { clientIp } from '../../src/http/client-ip'

describe('client IP from X-Forwarded-For', () => {
  test('0 hops ignores the header entirely', () => {
    expect(clientIp('1.2.3.4', '10.0.0.1', 0)).toBe('10.0.0.1')
  })
  test('1 hop takes the rightmost entry (appended by our proxy), not a forged left one', () => {
    expect(clientIp('6.6.6.6, 1.2.3.4', '10.0.0.1', 1)).toBe('1.2.3.4')
  })
  test('2 hops take the second entry from the right', () => {
    expect(clientIp('6.6.6.6, 1.2.3.4, 172.16.0.9', '10.0.0.1', 2)).toBe('1.2.3.4')
  })
  test('fewer entries than hops, no header, or garbage fall back to the socket address', () => {
    expect(clientIp('1.2.3.4', '10.0.0.1', 2)).toBe('10.0.0.1')
    expect(clientIp(null, '10.0.0.1', 1)).toBe('10.0.0.1')
    expect(clientIp('not-an-ip', '10.0.0.1', 1)).toBe('10.0.0.1')
  })
  test('IPv6, bracketed forms and IPv4 with a port are normalised', () => {
    expect(clientIp('[2001:db8::1]:443', '10.0.0.1', 1)).toBe('2001:db8::1')
    expect(clientIp('1.2.3.4:5555', '10.0.0.1', 1)).toBe('1.2.3.4')
    expect(clientIp('::ffff:1.2.3.4', '10.0.0.1', 1)).toBe('1.2.3.4')
  })
})
