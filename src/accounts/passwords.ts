// scrypt with N=2^17, r=8, p=1 (about 128 MiB and a quarter second per hash). The parameters are
// stored beside each hash so they can be raised later without breaking old hashes. Hashing runs on
// libuv's thread pool, never on the event loop, and at most two at once so a burst of logins cannot
// exhaust memory; the rest wait in line.
import { scrypt, randomBytes, timingSafeEqual } from 'node:crypto'

export const SCRYPT = { N: 2 ** 17, r: 8, p: 1, keyLen: 32, saltLen: 16 } as const
const MAX_CONCURRENT = 2

let running = 0
const waiting: (() => void)[] = []

async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT) await new Promise<void>((r) => waiting.push(r))
  else running++
  try {
    return await fn()
  } finally {
    const next = waiting.shift()
    if (next) next()
    else running--
  }
}

function derive(password: string, salt: Buffer, N: number, r: number, p: number, keyLen: number): Promise<Buffer> {
  return withSlot(
    () =>
      new Promise((resolve, reject) => {
        // maxmem must exceed 128 * N * r bytes or node refuses the parameters.
        scrypt(password.normalize('NFC'), salt, keyLen, { N, r, p, maxmem: 256 * N * r }, (err, key) =>
          err ? reject(err) : resolve(key),
        )
      }),
  )
}

export async function hashPassword(password: string): Promise<string> {
  const { N, r, p, keyLen, saltLen } = SCRYPT
  const salt = randomBytes(saltLen)
  const key = await derive(password, salt, N, r, p, keyLen)
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0) || N > 2 ** 22) return false
  const salt = Buffer.from(parts[4]!, 'base64url')
  const expected = Buffer.from(parts[5]!, 'base64url')
  const key = await derive(password, salt, N, r, p, expected.length)
  return timingSafeEqual(key, expected)
}

let dummy: Promise<string> | null = null
/** A hash to verify against when the email is unknown, so both paths take the same time. */
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'))
  return dummy
}

export const PASSWORD_MIN = 10
export const PASSWORD_MAX = 512

/** The password policy; returns a sentence for the user, or null when the password is fine. */
export function passwordProblem(password: string, email: string): string | null {
  const length = [...password].length
  if (length < PASSWORD_MIN) return `The password must have at least ${PASSWORD_MIN} characters.`
  if (length > PASSWORD_MAX) return `The password must have at most ${PASSWORD_MAX} characters.`
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) return 'The password must not be the email address.'
  return null
}
