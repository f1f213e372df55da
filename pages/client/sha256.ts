// sha256.js: SHA-256 (FIPS 180-4) fed slice by slice. WebCrypto's digest() hashes one whole buffer,
// so a model file of several GB would have to sit in memory at once; the upload form reads the file
// in slices instead and feeds them here. Installed as window.svcSha256 by its asset, so like every
// page script this function must not reference anything outside its own body.
import type { Sha256 } from './types'

export function sha256Client(): () => Sha256 {
  const K = new Int32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ])

  return function create(): Sha256 {
    const H = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19])
    const W = new Int32Array(64)
    const pending = new Uint8Array(64)
    let pendingLen = 0
    let length = 0
    let done = false

    function blocks(d: Uint8Array, from: number, to: number): void {
      let h0 = H[0]!, h1 = H[1]!, h2 = H[2]!, h3 = H[3]!, h4 = H[4]!, h5 = H[5]!, h6 = H[6]!, h7 = H[7]!
      for (let o = from; o < to; o += 64) {
        let a = h0, b = h1, c = h2, dd = h3, e = h4, f = h5, g = h6, h = h7
        // The message schedule computed as the rounds go (one pass over W: about twice as fast).
        for (let t = 0; t < 64; t++) {
          let w: number
          if (t < 16) {
            const p = o + t * 4
            w = (d[p]! << 24) | (d[p + 1]! << 16) | (d[p + 2]! << 8) | d[p + 3]!
          } else {
            const x = W[t - 15]!
            const y = W[t - 2]!
            const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)
            const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)
            w = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0
          }
          W[t] = w
          const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
          const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t]! + w) | 0
          const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
          const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0
          h = g
          g = f
          f = e
          e = (dd + t1) | 0
          dd = c
          c = b
          b = a
          a = (t1 + t2) | 0
        }
        h0 = (h0 + a) | 0
        h1 = (h1 + b) | 0
        h2 = (h2 + c) | 0
        h3 = (h3 + dd) | 0
        h4 = (h4 + e) | 0
        h5 = (h5 + f) | 0
        h6 = (h6 + g) | 0
        h7 = (h7 + h) | 0
      }
      H[0] = h0
      H[1] = h1
      H[2] = h2
      H[3] = h3
      H[4] = h4
      H[5] = h5
      H[6] = h6
      H[7] = h7
    }

    function feed(data: Uint8Array): void {
      let i = 0
      if (pendingLen > 0) {
        i = Math.min(64 - pendingLen, data.length)
        pending.set(data.subarray(0, i), pendingLen)
        pendingLen += i
        if (pendingLen < 64) return
        blocks(pending, 0, 64)
        pendingLen = 0
      }
      const whole = i + Math.floor((data.length - i) / 64) * 64
      blocks(data, i, whole)
      pending.set(data.subarray(whole), 0)
      pendingLen = data.length - whole
    }

    return {
      update(data: Uint8Array) {
        if (done) throw new Error('sha256: update after hex()')
        length += data.length
        feed(data)
      },
      hex() {
        if (!done) {
          done = true
          // 0x80, zeros to 56 mod 64, then the length in bits as a 64-bit big-endian number.
          const tail = new Uint8Array((pendingLen < 56 ? 64 : 128) - pendingLen)
          tail[0] = 0x80
          const bits = new DataView(tail.buffer, tail.length - 8)
          bits.setUint32(0, Math.floor(length / 0x20000000))
          bits.setUint32(4, (length * 8) >>> 0)
          feed(tail)
        }
        return Array.from(H, (x) => (x >>> 0).toString(16).padStart(8, '0')).join('')
      },
    }
  }
}
