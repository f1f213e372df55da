// What the account tests share: harnesses closed when the file's tests are done, a fresh client
// address per call (limits and lockouts count by address), and the audit entries of one kind.
import { afterAll } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditLog } from '../../src/db/schema'
import { makeHarness, type Harness } from './harness'

/** A harness maker for one test file; every harness it made is closed after the file's tests. */
export function harnessesOfFile(): (env?: Record<string, string>, opts?: { mailEnabled?: boolean }) => Harness {
  const made: Harness[] = []
  afterAll(() => made.forEach((h) => h.close()))
  return (env = {}, opts = {}) => {
    const h = makeHarness(env, opts)
    made.push(h)
    return h
  }
}

/** Addresses from TEST-NET-2, a new one each call. */
export function freshAddresses(): () => string {
  let n = 1
  return () => `198.51.100.${n++}`
}

export const auditsOf = (h: Harness, kind: string) => h.ctx.db.select().from(auditLog).where(eq(auditLog.kind, kind)).all()
