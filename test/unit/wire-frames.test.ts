import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { AppError } from '../../src/errors'
import { decodeFrames, encodeFrames, frameWireBytes, FrameReader, wireParts, type Frame } from '../../src/wire/frames'

const MiB = 1024 * 1024
const limits = { maxFrameBytes: 64 * MiB }

// Builds raw bodies by hand so malformed input does not depend on the encoder under test.
function raw(parts: Array<{ u32?: number; u64?: bigint; bytes?: ArrayLike<number> | string }>): Uint8Array {
  const chunks = parts.map((p) => {
    if (p.u32 !== undefined) {
      const b = new Uint8Array(4)
      new DataView(b.buffer).setUint32(0, p.u32)
      return b
    }
    if (p.u64 !== undefined) {
      const b = new Uint8Array(8)
      new DataView(b.buffer).setBigUint64(0, p.u64)
      return b
    }
    return typeof p.bytes === 'string' ? new TextEncoder().encode(p.bytes) : Uint8Array.from(p.bytes ?? [])
  })
  return new Uint8Array(Buffer.concat(chunks))
}

function appErrorOf(fn: () => unknown): AppError {
  try {
    fn()
  } catch (e) {
    if (e instanceof AppError) return e
    throw e
  }
  throw new Error('expected an AppError')
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b)

function readAll(chunks: Uint8Array[]): Frame[] {
  const reader = new FrameReader(limits)
  const out: Frame[] = []
  for (const c of chunks) {
    reader.push(c)
    for (let f = reader.next(); f; f = reader.next()) out.push(f)
  }
  reader.end()
  return out
}

describe('relay frames', () => {
  test('the wire format is u32 meta_len, meta JSON, u64 data_len, data, all big-endian', () => {
    const body = encodeFrames([{ meta: { a: 1 }, data: Uint8Array.of(9, 8) }])
    expect([...body]).toEqual([...raw([{ u32: 7 }, { bytes: '{"a":1}' }, { u64: 2n }, { bytes: [9, 8] }])])
    expect(body.byteLength).toBe(frameWireBytes({ meta: { a: 1 }, data: Uint8Array.of(9, 8) }))
  })

  test('frames from 0 bytes to 64 MiB round trip byte for byte, as views into the body', () => {
    const big = new Uint8Array(64 * MiB)
    const words = new Uint32Array(big.buffer)
    for (let i = 0; i < words.length; i++) words[i] = Math.imul(i, 2654435761)
    const sizes = [0, 1, 255, 65_536, MiB + 3]
    const frames: Frame[] = sizes.map((n, i) => ({ meta: { i, name: `t${i}`, ü: 'ß' }, data: big.subarray(0, n) }))
    frames.push({ meta: { i: 'big' }, data: big })
    const body = encodeFrames(frames)
    const back = decodeFrames(body, limits)
    expect(back.length).toBe(frames.length)
    back.forEach((f, i) => {
      expect(f.meta).toEqual(frames[i]!.meta)
      expect(f.data.byteLength).toBe(frames[i]!.data.byteLength)
      expect(sameBytes(f.data, frames[i]!.data)).toBe(true)
      expect(f.data.buffer).toBe(body.buffer)
    })
  })

  test('many small frames round trip in order', () => {
    const frames = Array.from({ length: 5000 }, (_, i) => ({ meta: { i }, data: Uint8Array.of(i & 255, i >> 8) }))
    const back = decodeFrames(encodeFrames(frames), limits)
    expect(back.map((f) => f.meta.i)).toEqual(frames.map((f) => f.meta.i))
    expect(back.every((f, i) => sameBytes(f.data, frames[i]!.data))).toBe(true)
  })

  test('an empty body is zero frames, and zero-length data is a frame', () => {
    expect(decodeFrames(new Uint8Array(0), limits)).toEqual([])
    const back = decodeFrames(raw([{ u32: 2 }, { bytes: '{}' }, { u64: 0n }]), limits)
    expect(back.length).toBe(1)
    expect(back[0]!.data.byteLength).toBe(0)
  })

  test('truncated header, meta and data are refused as bad requests', () => {
    const whole = encodeFrames([{ meta: { k: 'v' }, data: Uint8Array.of(1, 2, 3) }])
    // 0..3 cut the meta_len, 4..12 the meta, 13..20 the data_len, 21..23 the data.
    for (let cut = 1; cut < whole.byteLength; cut++) {
      const err = appErrorOf(() => decodeFrames(whole.subarray(0, cut), limits))
      expect(err.code).toBe('bad_request')
      expect(err.message).toMatch(/truncated (header|meta|data)/)
    }
  })

  test('a lying meta_len is refused, whether beyond the body or beyond the meta limit', () => {
    expect(appErrorOf(() => decodeFrames(raw([{ u32: 100 }, { bytes: '{}' }]), limits)).code).toBe('bad_request')
    const huge = appErrorOf(() => decodeFrames(raw([{ u32: 0xffff_ffff }, { bytes: '{}' }]), limits))
    expect(huge.code).toBe('bad_request')
    expect(huge.message).toContain('limit')
  })

  test('a lying data_len is a bad request below the frame limit and too large above it', () => {
    const head = [{ u32: 2 }, { bytes: '{}' }]
    expect(appErrorOf(() => decodeFrames(raw([...head, { u64: 10n }, { bytes: [1] }]), limits)).code).toBe('bad_request')
    const over = appErrorOf(() => decodeFrames(raw([...head, { u64: BigInt(64 * MiB + 1) }]), limits))
    expect(over.code).toBe('payload_too_large')
    const maxSafe = appErrorOf(() => decodeFrames(raw([...head, { u64: 2n ** 53n - 1n }]), limits))
    expect(maxSafe.code).toBe('payload_too_large')
    for (const v of [2n ** 53n, 2n ** 64n - 1n]) {
      const unsafe = appErrorOf(() => decodeFrames(raw([...head, { u64: v }]), limits))
      expect(unsafe.code).toBe('bad_request')
      expect(unsafe.message).toContain('safe integer')
    }
  })

  test('meta must be valid UTF-8 holding a JSON object', () => {
    const cases: Array<[ArrayLike<number> | string, RegExp]> = [
      [[0x7b, 0xff, 0x7d], /UTF-8/],
      [[0x7b, 0x22, 0xc3, 0x22, 0x7d], /UTF-8/],
      ['[1,2]', /object/],
      ['42', /object/],
      ['null', /object/],
      ['"s"', /object/],
      ['{"a":', /JSON/],
      ['', /JSON/],
    ]
    for (const [meta, why] of cases) {
      const bytes = typeof meta === 'string' ? new TextEncoder().encode(meta) : Uint8Array.from(meta)
      const err = appErrorOf(() => decodeFrames(raw([{ u32: bytes.byteLength }, { bytes }, { u64: 0n }]), limits))
      expect(err.code).toBe('bad_request')
      expect(err.message).toMatch(why)
    }
  })

  test('a body with more frames than allowed is refused whole', () => {
    const body = encodeFrames(Array.from({ length: 4 }, () => ({ meta: {}, data: new Uint8Array(0) })))
    expect(decodeFrames(body, { ...limits, maxFrames: 4 }).length).toBe(4)
    expect(appErrorOf(() => decodeFrames(body, { ...limits, maxFrames: 3 })).code).toBe('bad_request')
  })

  test('decoding is all or nothing: good frames before a bad one are not returned', () => {
    const good = encodeFrames([{ meta: { ok: true }, data: Uint8Array.of(1) }])
    const body = new Uint8Array(Buffer.concat([good, raw([{ u32: 2 }, { bytes: '[]' }, { u64: 0n }])]))
    expect(() => decodeFrames(body, limits)).toThrow(AppError)
  })

  test('decodeFrames never throws anything but AppError on arbitrary bytes', () => {
    const valid = encodeFrames([{ meta: { a: 1 }, data: Uint8Array.of(1, 2, 3) }, { meta: {}, data: new Uint8Array(0) }])
    const mutated = fc
      .tuple(fc.nat({ max: valid.byteLength - 1 }), fc.integer({ min: 0, max: 255 }), fc.nat({ max: valid.byteLength }))
      .map(([i, b, cut]) => {
        const copy = valid.slice(0, Math.max(cut, i + 1))
        copy[i] = b
        return copy
      })
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 300 }), mutated), (bytes) => {
        try {
          decodeFrames(bytes, { maxFrameBytes: 1024 })
        } catch (e) {
          if (!(e instanceof AppError)) throw e
          expect(['bad_request', 'payload_too_large']).toContain(e.code)
        }
      }),
      { numRuns: 2000 },
    )
  })

  test('property: encode then decode gives back every meta and every byte', () => {
    const frame = fc.record({
      meta: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }),
      data: fc.uint8Array({ maxLength: 512 }),
    })
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 20 }), (frames) => {
        const back = decodeFrames(encodeFrames(frames), limits)
        expect(back.length).toBe(frames.length)
        back.forEach((f, i) => {
          expect(JSON.stringify(f.meta)).toBe(JSON.stringify(frames[i]!.meta))
          expect(sameBytes(f.data, frames[i]!.data)).toBe(true)
        })
      }),
      { numRuns: 300 },
    )
  })

  test('decoded frames are relayed as the bytes that arrived, without re-encoding', () => {
    // Whitespace in the meta: a re-encoder would change it; the relay forwards it as sent.
    const meta = '{ "step": 1 }'
    const body = raw([{ u32: meta.length }, { bytes: meta }, { u64: 3n }, { bytes: [1, 2, 3] }])
    const frames = decodeFrames(body, limits)
    expect(frames[0]!.wire!.buffer).toBe(body.buffer)
    expect(frameWireBytes(frames[0]!)).toBe(body.byteLength)
    const parts = wireParts(frames)
    expect(parts.length).toBe(1)
    expect(sameBytes(parts[0]!, body)).toBe(true)
    expect(sameBytes(encodeFrames(frames), body)).toBe(false)
  })

  test('property: the wire parts of decoded frames, from several bodies and mixed with new frames, concatenate to their encoding', () => {
    const frame = fc.record({ meta: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }), data: fc.uint8Array({ maxLength: 64 }) })
    fc.assert(
      fc.property(fc.array(fc.array(frame, { maxLength: 4 }), { maxLength: 4 }), fc.array(frame, { maxLength: 2 }), (bodies, fresh) => {
        const decoded = bodies.map((b) => decodeFrames(encodeFrames(b), limits))
        const mixed: Frame[] = [...decoded.flat(), ...fresh]
        const parts = wireParts(mixed)
        expect(sameBytes(new Uint8Array(Buffer.concat(parts)), encodeFrames(mixed))).toBe(true)
        // Adjacent frames of one body are one view: at most one part per body plus one per new frame.
        expect(parts.length).toBeLessThanOrEqual(decoded.filter((d) => d.length > 0).length + fresh.length)
      }),
      { numRuns: 200 },
    )
  })
})

describe('FrameReader', () => {
  const frames: Frame[] = [
    { meta: { n: 0 }, data: new Uint8Array(0) },
    { meta: { n: 1, s: 'ü' }, data: Uint8Array.from({ length: 300 }, (_, i) => i & 255) },
    { meta: { n: 2 }, data: Uint8Array.of(7) },
    { meta: { n: 3 }, data: new Uint8Array(0) },
  ]
  const body = encodeFrames(frames)
  const expectSame = (got: Frame[]) => {
    expect(got.map((f) => f.meta)).toEqual(frames.map((f) => f.meta))
    got.forEach((f, i) => expect(sameBytes(f.data, frames[i]!.data)).toBe(true))
  }

  test('fed byte by byte, it yields the same frames as decodeFrames', () => {
    expectSame(readAll(Array.from(body, (b) => Uint8Array.of(b))))
  })

  test('fed in one chunk, it yields every frame', () => {
    expectSame(readAll([body]))
  })

  test('property: any chunk split yields the same frames', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: body.byteLength - 1 }), { maxLength: 40 }), (cuts) => {
        const at = [0, ...cuts.sort((a, b) => a - b), body.byteLength]
        expectSame(readAll(at.slice(1).map((end, i) => body.subarray(at[i]!, end))))
      }),
      { numRuns: 500 },
    )
  })

  test('frames do not alias the pushed chunk, so a socket may reuse its buffer', () => {
    const chunk = encodeFrames([{ meta: {}, data: Uint8Array.of(1, 2, 3) }])
    const reader = new FrameReader(limits)
    reader.push(chunk)
    chunk.fill(0)
    expect([...reader.next()!.data]).toEqual([1, 2, 3])
    expect(reader.next()).toBeNull()
  })

  test('a stream that ends inside a frame is an error on end()', () => {
    const reader = new FrameReader(limits)
    reader.push(body.subarray(0, body.byteLength - 1))
    expect(() => reader.end()).toThrow(AppError)
  })

  test('a bad frame fails the reader for good, with the same limits as decodeFrames', () => {
    const reader = new FrameReader({ maxFrameBytes: 16 })
    const err = appErrorOf(() => reader.push(raw([{ u32: 2 }, { bytes: '{}' }, { u64: 17n }])))
    expect(err.code).toBe('payload_too_large')
    expect(appErrorOf(() => reader.push(encodeFrames([{ meta: {}, data: new Uint8Array(0) }])))).toBe(err)
    const utf8 = new FrameReader(limits)
    expect(appErrorOf(() => utf8.push(raw([{ u32: 1 }, { bytes: [0xff] }]))).message).toContain('UTF-8')
  })

  test('frames decoded but not taken are bounded by maxFrames', () => {
    const reader = new FrameReader({ ...limits, maxFrames: 2 })
    const three = encodeFrames([frames[0]!, frames[2]!, frames[3]!])
    expect(appErrorOf(() => reader.push(three)).code).toBe('bad_request')
    const ok = new FrameReader({ ...limits, maxFrames: 2 })
    ok.push(encodeFrames([frames[0]!, frames[2]!]))
    expect(ok.pending).toBe(2)
    ok.next()
    ok.push(encodeFrames([frames[3]!]))
    expect(ok.pending).toBe(2)
  })

  test('property: a reader never throws anything but AppError on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 }), (chunks) => {
        const reader = new FrameReader({ maxFrameBytes: 1024 })
        try {
          for (const c of chunks) reader.push(c)
          reader.end()
        } catch (e) {
          if (!(e instanceof AppError)) throw e
        }
      }),
      { numRuns: 1000 },
    )
  })
})
