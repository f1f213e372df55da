// Tokens, digests and constant-time comparison. Every secret the leader hands out is 32 random
// bytes; only its SHA-256 digest is ever stored, so a copy of the state file grants nothing.
import { randomBytes, timingSafeEqual, createHmac } from 'node:crypto'

export const TOKEN_PREFIX = { apiToken: 'svc_pat_', nodeToken: 'svc_node_', joinToken: 'svc_join_' } as const

export function randomToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url')
}

export function sha256(value: string): string {
  return new Bun.CryptoHasher('sha256').update(value).digest('hex')
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a)
  const bb = Buffer.from(b)
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab) // same work either way
    return false
  }
  return timingSafeEqual(ab, bb)
}

export function hmac(key: Buffer, value: string): string {
  return createHmac('sha256', key).update(value).digest('base64url')
}

export function newId(): string {
  return Bun.randomUUIDv7()
}
