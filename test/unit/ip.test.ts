// src/http/ip.ts answers as node:net's isIP and BlockList do (it replaces them on the leader's
// start path): fixed cases, then random strings and random blocks compared with node:net itself.
import { describe, expect, test } from 'bun:test'
import { BlockList, isIP } from 'node:net'
import { AddressBlocks, ipVersion, limitKey } from '../../src/http/ip'

const CASES = [
  '0.0.0.0', '1.2.3.4', '255.255.255.255', '256.1.1.1', '01.2.3.4', '1.2.3.04', '1.2.3', '1.2.3.4.5', ' 1.2.3.4', '1.2.3.4 ', '1.2.3.4/8',
  '1.2.3.4%x', '', '.', '::', '::1', '1::', '::1::', ':1::', '1:', ':', ':::', 'FE80::A', 'fe80::1%eth0', 'fe80::1%eth0.1:x', '::%', '::%a',
  '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7::', '::1:2:3:4:5:6:7', '1::2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7',
  '::ffff:1.2.3.4', '::ffff:01.2.3.4', '::1.2.3.4', '1::1.2.3.4', '1.2.3.4::', '1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4',
  '1:2:3:4:5::1.2.3.4', '0001:2::', '00001::', 'g::1', '::ffff:1.2.3.4%z', '[::1]', '1.2.3.4:80', '١.٢.٣.٤',
]

/** A random string over the characters addresses are made of, mostly address-shaped. */
function randomish(): string {
  const alphabet = '0123456789abcdefABCDEF:.%'
  if (Math.random() < 0.5) {
    // Mutate a real address.
    const v6 = Math.random() < 0.6
    let s = v6 ? Array.from({ length: 8 }, () => Math.floor(Math.random() * 65536).toString(16)).join(':') : Array.from({ length: 4 }, () => Math.floor(Math.random() * 300)).join('.')
    if (v6 && Math.random() < 0.5) s = s.replace(/(^|:)0?[0-9a-f]{0,3}(:[0-9a-f]{1,4}){0,3}:/, '::')
    if (v6 && Math.random() < 0.3) s = s.split(':').slice(0, 6).join(':') + ':' + Array.from({ length: 4 }, () => Math.floor(Math.random() * 260)).join('.')
    for (let n = Math.floor(Math.random() * 3); n > 0; n--) {
      const i = Math.floor(Math.random() * (s.length + 1))
      s = Math.random() < 0.5 ? s.slice(0, i) + alphabet[Math.floor(Math.random() * alphabet.length)] + s.slice(i) : s.slice(0, i) + s.slice(i + 1)
    }
    return s
  }
  return Array.from({ length: 1 + Math.floor(Math.random() * 20) }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('')
}

function randomAddress(): string {
  const r = Math.random()
  const v4 = () => Array.from({ length: 4 }, () => Math.floor(Math.random() * 256)).join('.')
  if (r < 0.4) return v4()
  if (r < 0.55) return `::ffff:${v4()}`
  if (r < 0.7) return `fe80::${Math.floor(Math.random() * 65536).toString(16)}`
  return Array.from({ length: 8 }, () => (Math.random() < 0.3 ? '0' : Math.floor(Math.random() * 65536).toString(16))).join(':')
}

describe('ipVersion is node:net isIP', () => {
  test('fixed cases', () => {
    for (const s of CASES) expect([s, ipVersion(s) as number]).toEqual([s, isIP(s)])
  })

  test('20,000 random strings', () => {
    let valid = 0
    for (let i = 0; i < 20_000; i++) {
      const s = randomish()
      const want = isIP(s)
      if (ipVersion(s) !== want) expect([s, ipVersion(s) as number]).toEqual([s, want])
      if (want !== 0) valid++
    }
    // The generator must reach both answers, or the comparison proves little.
    expect(valid).toBeGreaterThan(2_000)
    expect(valid).toBeLessThan(18_000)
  })
})

describe('AddressBlocks is node:net BlockList', () => {
  test('an IPv4 peer and its IPv4-mapped form fall in the same blocks, of either family', () => {
    // [block address, prefix, address checked, inside?]
    const cases: [string, number, string, boolean][] = [
      ['10.0.0.0', 8, '10.9.8.7', true],
      ['10.0.0.0', 8, '::ffff:10.9.8.7', true],
      ['10.0.0.0', 8, '11.0.0.1', false],
      ['10.0.0.0', 8, '::1', false],
      ['::', 0, '1.2.3.4', true],
      ['::1', 128, '::1', true],
      ['::1', 128, '0:0:0:0:0:0:0:1', true],
      ['::1', 128, '::2', false],
      ['::1', 128, 'not an address', false],
    ]
    for (const [base, prefix, address, inside] of cases) {
      const b = new AddressBlocks()
      b.add(base, prefix)
      expect([base, prefix, address, b.has(address)]).toEqual([base, prefix, address, inside])
    }
  })

  test('a block that is not one is refused', () => {
    const b = new AddressBlocks()
    expect(() => b.add('1.2.3.4', 33)).toThrow()
    expect(() => b.add('::1', 129)).toThrow()
    expect(() => b.add('::1', -1)).toThrow()
    expect(() => b.add('1.2.3', 8)).toThrow()
  })

  test('5,000 random blocks, each checked against 20 addresses near it and far from it', () => {
    let inside = 0
    for (let i = 0; i < 5_000; i++) {
      const base = randomAddress()
      const v4 = isIP(base) === 4
      const prefix = Math.floor(Math.random() * ((v4 ? 32 : 128) + 1))
      const ours = new AddressBlocks()
      ours.add(base, prefix)
      const theirs = new BlockList()
      theirs.addSubnet(base, prefix, v4 ? 'ipv4' : 'ipv6')
      for (let k = 0; k < 20; k++) {
        // Near: the base with its last part changed; far: anything.
        const a = k % 2 === 0 ? base.replace(/[0-9a-f]+$/, Math.floor(Math.random() * (v4 ? 256 : 65536)).toString(v4 ? 10 : 16)) : randomAddress()
        const want = theirs.check(a, isIP(a) === 4 ? 'ipv4' : 'ipv6')
        if (ours.has(a) !== want) expect([base, prefix, a, ours.has(a)]).toEqual([base, prefix, a, want])
        if (want) inside++
      }
    }
    expect(inside).toBeGreaterThan(10_000)
  })
})

describe('limitKey: whom per-address limits count', () => {
  test('an IPv4 address as itself, also written IPv4-mapped; an IPv6 address as its /64; anything else as written', () => {
    expect(limitKey('203.0.113.7')).toBe('203.0.113.7')
    expect(limitKey('::ffff:203.0.113.7')).toBe('203.0.113.7')
    expect(limitKey('::ffff:cb00:7107')).toBe('203.0.113.7')
    const block = ['2001:db8:1:2::1', '2001:DB8:1:2:ffff:ffff:ffff:fffe', '2001:0db8:0001:0002:0:0:0:9', '2001:db8:1:2::1%eth0'].map(limitKey)
    expect(new Set(block)).toEqual(new Set(['2001:db8:1:2::/64']))
    expect(limitKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64')
    expect(limitKey('::1')).toBe('0:0:0:0::/64')
    // NAT64: each IPv4 client as itself; link-local and Teredo addresses each their own
    expect([limitKey('64:ff9b::102:304'), limitKey('64:ff9b::506:708')]).toEqual(['1.2.3.4', '5.6.7.8'])
    expect(new Set(['fe80::1%eth0', 'fe80::2'].map(limitKey)).size).toBe(2)
    expect(new Set(['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:0:4136:e378:8000:63bf:3fff:fdd3'].map(limitKey)).size).toBe(2)
    expect(limitKey('unknown')).toBe('unknown')
  })
})
