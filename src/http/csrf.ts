// Double-submit CSRF: a signed token in a script-readable cookie, echoed in a header on every
// state-changing request made with a session cookie (the check itself runs in policy.ts).
import { hmac, randomBytes, safeEqual } from '../crypto'

export const CSRF_COOKIE = 'svc_csrf'
export const CSRF_HEADER = 'x-csrf-token'

// The signature covers the session the token was minted for (its cookie value; none before
// login): a token planted by a sibling host or over plain HTTP, or taken from another session,
// does not pass with this one. Signed with the deployment key, so nobody else can mint one.
const signed = (key: Buffer, nonce: string, session: string | null) => hmac(key, `csrf\n${nonce}\n${session ?? ''}`)

/** A CSRF token for the session with this cookie value (null: a visitor not logged in). */
export function mintCsrfToken(key: Buffer, session: string | null): string {
  const nonce = randomBytes(18).toString('base64url')
  return `${nonce}.${signed(key, nonce, session)}`
}

/** The cookie is a token minted for this session, and the header repeats it. */
export function csrfValid(key: Buffer, cookie: unknown, header: string | null, session: string | null): boolean {
  // Any type may arrive (see presentedCredential, policy.ts): only a string can be a CSRF token.
  if (typeof cookie !== 'string' || header === null || cookie.length > 200) return false
  const dot = cookie.indexOf('.')
  if (dot <= 0) return false
  if (!safeEqual(signed(key, cookie.slice(0, dot), session), cookie.slice(dot + 1))) return false
  return safeEqual(cookie, header)
}
