// IP addresses and address blocks, for the trusted-proxy check (client-ip.ts). The same answers as
// node:net's isIP and BlockList (test/unit/ip.test.ts compares them on fixed and random inputs),
// without node:net: importing it brings Node's streams along, about 7 ms of every start.
//
// Every address is compared as 16 bytes: an IPv4 address as its IPv4-mapped IPv6 form
// (::ffff:a.b.c.d), an IPv4 block of prefix p as that form's block of prefix 96 + p, so (as with
// BlockList) an IPv4 peer is inside ::/0 and ::ffff:10.0.0.1 is inside 10.0.0.0/8. A zone
// (fe80::1%eth0) is accepted and not compared.

const V4_PART = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d)$/
const V6_GROUP = /^[0-9a-fA-F]{1,4}$/
const ZONE = /^[0-9a-zA-Z\-.:]+$/

function v4Bytes(s: string): number[] | null {
  const parts = s.split('.')
  if (parts.length !== 4) return null
  const out: number[] = []
  for (const p of parts) {
    if (!V4_PART.test(p)) return null
    out.push(Number(p))
  }
  return out
}

/** The 16-bit groups of one side of `::` (an IPv4 tail allowed only where `v4Tail`), or null. */
function groups(side: string, v4Tail: boolean): number[] | null {
  if (side === '') return []
  const parts = side.split(':')
  const out: number[] = []
  for (let i = 0; i < parts.length; i++) {
    const g = parts[i]!
    if (v4Tail && i === parts.length - 1 && g.includes('.')) {
      const v4 = v4Bytes(g)
      if (v4 === null) return null
      out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!)
    } else if (V6_GROUP.test(g)) out.push(parseInt(g, 16))
    else return null
  }
  return out
}

function v6Groups(s: string): number[] | null {
  const pct = s.indexOf('%')
  if (pct !== -1) {
    if (!ZONE.test(s.slice(pct + 1))) return null
    s = s.slice(0, pct)
  }
  const gap = s.indexOf('::')
  if (gap === -1) {
    const all = groups(s, true)
    return all !== null && all.length === 8 ? all : null
  }
  if (s.includes('::', gap + 1)) return null
  const head = groups(s.slice(0, gap), false)
  const tail = groups(s.slice(gap + 2), true)
  // `::` stands for at least one group of zeros.
  if (head === null || tail === null || head.length + tail.length > 7) return null
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
}

/** HOST:PORT as a URL writes it: an IPv6 address in brackets. */
export const hostPort = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`

/** 4 for an IPv4 address, 6 for an IPv6 one, 0 for anything else (node:net's isIP). */
export function ipVersion(s: string): 0 | 4 | 6 {
  if (v4Bytes(s) !== null) return 4
  return v6Groups(s) !== null ? 6 : 0
}

/** The address as 16 bytes (IPv4 mapped into IPv6), or null when it is not an address. */
function ipBytes(s: string): Uint8Array | null {
  const out = new Uint8Array(16)
  const v4 = v4Bytes(s)
  if (v4 !== null) {
    out[10] = 0xff
    out[11] = 0xff
    out.set(v4, 12)
    return out
  }
  const g = v6Groups(s)
  if (g === null) return null
  g.forEach((w, i) => ((out[2 * i] = w >> 8), (out[2 * i + 1] = w & 0xff)))
  return out
}

/**
 * Whom per-address limits count a client as: an IPv4 address (also written IPv4-mapped), or an
 * IPv6 address's /64. One machine usually holds a whole /64 (2^64 addresses of its own): counted
 * per address, each attempt could come from a new one, and the per-address login limit and the
 * lockout of an (account, address) pair held against nobody. Anything else is counted as written.
 */
export function limitKey(ip: string): string {
  const b = ipBytes(ip)
  if (b === null) return ip
  const v4 = `${b[12]}.${b[13]}.${b[14]}.${b[15]}`
  if (b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return v4
  // NAT64 (64:ff9b::/96, RFC 6052): every IPv4 client of an IPv6-only network in one /64, so each
  // is its IPv4 address. Link-local (fe80::/10) and Teredo (2001::/32) /64s are many machines'.
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b.subarray(4, 12).every((x) => x === 0)) return v4
  const groups = Array.from({ length: 8 }, (_, i) => ((b[2 * i]! << 8) | b[2 * i + 1]!).toString(16))
  if ((b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) || (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0)) return groups.join(':')
  return `${groups.slice(0, 4).join(':')}::/64`
}

function within(addr: Uint8Array, base: Uint8Array, prefix: number): boolean {
  const whole = prefix >> 3
  for (let i = 0; i < whole; i++) if (addr[i] !== base[i]) return false
  const rest = prefix & 7
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return (addr[whole]! & mask) === (base[whole]! & mask)
}

/** A set of address blocks (node:net's BlockList.addSubnet / check). */
export class AddressBlocks {
  private blocks: { base: Uint8Array; prefix: number }[] = []

  /** `prefix` counts bits of the address as written: up to 32 for IPv4, 128 for IPv6. */
  add(address: string, prefix: number): void {
    const base = ipBytes(address)
    const max = ipVersion(address) === 4 ? 32 : 128
    if (base === null || !Number.isInteger(prefix) || prefix < 0 || prefix > max) throw new Error(`not an address block: ${address}/${prefix}`)
    this.blocks.push({ base, prefix: max === 32 ? 96 + prefix : prefix })
  }

  has(address: string): boolean {
    const a = ipBytes(address)
    return a !== null && this.blocks.some((b) => within(a, b.base, b.prefix))
  }
}
