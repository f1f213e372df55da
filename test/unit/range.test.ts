// One Range header for resumable downloads (src/http/range.ts), RFC 9110 14.2.
import { expect, test } from 'bun:test'
import { parseRange } from '../../src/http/range'

const refused = (header: string, size: number) => {
  try {
    parseRange(header, size)
  } catch (e) {
    return (e as { code?: string }).code ?? null
  }
  return null
}

test('first-last, open-ended and suffix ranges, clipped to the body', () => {
  expect(parseRange('bytes=0-4', 10)).toEqual({ start: 0, end: 5 })
  expect(parseRange('bytes=5-', 10)).toEqual({ start: 5, end: 10 })
  expect(parseRange('bytes=8-100', 10)).toEqual({ start: 8, end: 10 })
  expect(parseRange('bytes=-3', 10)).toEqual({ start: 7, end: 10 })
  expect(parseRange('bytes=-30', 10)).toEqual({ start: 0, end: 10 })
})

test('malformed, reversed, other units and lists: the whole body', () => {
  for (const h of ['bytes=5-2', 'items=0-1', 'bytes=0-1,3-4', 'bytes=-', 'bytes=x-1', '']) expect([h, parseRange(h, 10)]).toEqual([h, null])
  expect(parseRange(null, 10)).toBeNull()
})

test('past the end, an empty suffix, and any suffix of an empty body: 416 (an empty body answered 206 with "bytes 0--1/0")', () => {
  expect(refused('bytes=10-', 10)).toBe('range_not_satisfiable')
  expect(refused('bytes=-0', 10)).toBe('range_not_satisfiable')
  expect(refused('bytes=-5', 0)).toBe('range_not_satisfiable')
  expect(refused('bytes=0-', 0)).toBe('range_not_satisfiable')
})
