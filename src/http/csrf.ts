// Double-submit CSRF: a signed token in a script-readable cookie, echoed in a header on every
// state-changing request made with a session cookie (the check itself runs in policy.ts).
import { hmac, randomBytes, safeEqual } from '../crypto'

export const CSRF_COOKIE = 'svc_csrf'
export const CSRF_HEADER = 'x-csrf-token'

/** A CSRF token signed with the deployment key, so a cookie planted by a sibling host cannot pass. */
export function mintCsrfToken(key: Buffer): string {
  const nonce = randomBytes(18).toString('base64url')
  return `${nonce}.${hmac(key, nonce)}`
}

export function csrfValid(key: Buffer, cookie: unknown, header: string | null): boolean {
  // Any type may arrive (see presentedCredential, policy.ts): only a string can be a CSRF token.
  if (typeof cookie !== 'string' || header === null || cookie.length > 200) return false
  const dot = cookie.indexOf('.')
  if (dot <= 0) return false
  if (!safeEqual(hmac(key, cookie.slice(0, dot)), cookie.slice(dot + 1))) return false
  return safeEqual(cookie, header)
}
