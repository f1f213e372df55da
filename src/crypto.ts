// Tokens, digests and constant-time comparison. Every secret the leader hands out is 32 random
// bytes; only its SHA-256 digest is ever stored, so a copy of the state file grants nothing.
// Bun's own primitives (Web Crypto's generator, CryptoHasher, crypto.timingSafeEqual) where they
// do the job: node:crypto brings Node's streams with it, about 8 ms of every start, and is loaded
// only where nothing else will do (nodeCrypto below).

export const TOKEN_PREFIX = { apiToken: 'svc_pat_', nodeToken: 'svc_node_', joinToken: 'svc_join_' } as const

/** `n` bytes from the system's secure generator. */
export function randomBytes(n: number): Buffer {
  return crypto.getRandomValues(Buffer.alloc(n))
}

/** node:crypto, loaded the first time something needs it (scrypt, AES-GCM): see the top of this file. */
export function nodeCrypto(): typeof import('node:crypto') {
  return require('node:crypto') as typeof import('node:crypto')
}

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
    crypto.timingSafeEqual(ab, ab) // same work either way
    return false
  }
  return crypto.timingSafeEqual(ab, bb)
}

export function hmac(key: Buffer, value: string): string {
  return new Bun.CryptoHasher('sha256', key).update(value).digest('base64url')
}

export function newId(): string {
  return Bun.randomUUIDv7()
}
