// The browser's SHA-256 (pages/client/sha256.ts), which the pool page's upload form hashes a file
// with before the leader checks the bytes against it: the same digest as Bun's for every length
// around the block and padding boundaries and for any way of slicing the input, and served as an
// asset that runs on its own (page scripts are serialised with toString()).
import { describe, expect, test } from 'bun:test'
import { ASSETS } from '../../pages/assets'
import { sha256Client } from '../../pages/client'

const reference = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n)
  let x = seed
  for (let i = 0; i < n; i++) b[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24
  return b
}

describe('the browser SHA-256', () => {
  const create = sha256Client()

  test('known answers', () => {
    const of = (s: string) => {
      const h = create()
      h.update(new TextEncoder().encode(s))
      return h.hex()
    }
    expect(of('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
    expect(of('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(of('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1')
  })

  test('every length around the block (64) and padding (56) boundaries, in one piece', () => {
    for (let n = 0; n <= 200; n++) {
      const b = bytes(n, n + 1)
      const h = create()
      h.update(b)
      expect(h.hex()).toBe(reference(b))
    }
  })

  test('the same digest however the input is sliced', () => {
    const b = bytes(3 * 1024 * 1024 + 13, 7)
    const want = reference(b)
    let seed = 99
    for (let round = 0; round < 12; round++) {
      const h = create()
      for (let at = 0; at < b.length; ) {
        seed = (seed * 1103515245 + 12345) >>> 0
        // Pieces from 1 byte to about 1 MiB, most of them not a multiple of 64.
        const len = round % 3 === 0 ? 1 + (seed % 97) : 1 + (seed % (1 << 20))
        h.update(b.subarray(at, at + len))
        at += len
      }
      expect(h.hex()).toBe(want)
    }
  })

  test('hex() is final: asking twice gives the same digest, and feeding more is refused', () => {
    const h = create()
    h.update(bytes(100, 3))
    const once = h.hex()
    expect(h.hex()).toBe(once)
    expect(() => h.update(new Uint8Array(1))).toThrow('update after hex()')
  })

  test('the served sha256.js runs on its own and installs window.svcSha256', () => {
    const asset = ASSETS['sha256.js']!
    expect(asset.type).toStartWith('text/javascript')
    const window: { svcSha256?: () => { update(b: Uint8Array): void; hex(): string } } = {}
    new Function('window', asset.body)(window)
    const b = bytes(1000, 5)
    const h = window.svcSha256!()
    h.update(b.subarray(0, 333))
    h.update(b.subarray(333))
    expect(h.hex()).toBe(reference(b))
  })
})
