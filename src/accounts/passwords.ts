// scrypt with N=2^17, r=8, p=1 (about 128 MiB and a quarter second per hash). The parameters are
// stored beside each hash so they can be raised later without breaking old hashes. Hashing runs on
// libuv's thread pool, never on the event loop, and at most two at once so a burst of logins cannot
// exhaust memory. Only a few more may wait for a slot: an unbounded line let 40 anonymous logins
// push a real one from 0.45 s to 7.9 s (issue 26); past the line the caller gets a fast 429.
import { AppError } from '../errors'
import { nodeCrypto, randomBytes } from '../crypto'

export const SCRYPT = { N: 2 ** 17, r: 8, p: 1, keyLen: 32, saltLen: 16 } as const
export const HASH_CONCURRENCY = 2
/** Waiting hashes allowed when SVC_PASSWORD_HASH_QUEUE is not given: twice the concurrency. */
export const HASH_QUEUE_DEFAULT = 2 * HASH_CONCURRENCY

/** Bounded concurrency with a bounded waiting line; a call past both is refused at once. */
export class HashPool {
  private running = 0
  private waiting: (() => void)[] = []

  constructor(
    readonly maxConcurrent: number,
    readonly maxWaiting: number,
  ) {}

  /** Hashes running or waiting now. */
  get load(): number {
    return this.running + this.waiting.length
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.maxConcurrent) {
      if (this.waiting.length >= this.maxWaiting) {
        throw new AppError('rate_limited', 'The server is busy checking passwords; try again in a moment.', { retryAfterS: 1 })
      }
      await new Promise<void>((r) => this.waiting.push(r))
    } else this.running++
    try {
      return await fn()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }
}

/** The pool of callers that bring none (the CLI, tests); the leader's accounts service has its own. */
export const defaultHashPool = new HashPool(HASH_CONCURRENCY, HASH_QUEUE_DEFAULT)

function derive(pool: HashPool, password: string, salt: Buffer, N: number, r: number, p: number, keyLen: number): Promise<Buffer> {
  return pool.run(
    () =>
      new Promise((resolve, reject) => {
        // maxmem must exceed 128 * N * r bytes or node refuses the parameters.
        nodeCrypto().scrypt(password.normalize('NFC'), salt, keyLen, { N, r, p, maxmem: 256 * N * r }, (err, key) =>
          err ? reject(err) : resolve(key),
        )
      }),
  )
}

export async function hashPassword(password: string, pool: HashPool = defaultHashPool): Promise<string> {
  const { N, r, p, keyLen, saltLen } = SCRYPT
  const salt = randomBytes(saltLen)
  const key = await derive(pool, password, salt, N, r, p, keyLen)
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

export async function verifyPassword(password: string, stored: string, pool: HashPool = defaultHashPool): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0) || N > 2 ** 22) return false
  const salt = Buffer.from(parts[4]!, 'base64url')
  const expected = Buffer.from(parts[5]!, 'base64url')
  const key = await derive(pool, password, salt, N, r, p, expected.length)
  return crypto.timingSafeEqual(key, expected)
}

let dummy: Promise<string> | null = null
/** A hash to verify against when the email is unknown, so both paths take the same time. */
export function dummyHash(pool: HashPool = defaultHashPool): Promise<string> {
  if (dummy === null) {
    const made = hashPassword(randomBytes(16).toString('hex'), pool)
    dummy = made
    // A refusal (the pool was full) must not be remembered: the next unknown email tries again.
    made.catch(() => {
      if (dummy === made) dummy = null
    })
  }
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
