// What went wrong with the blob store, in words an operator (and a client's 503) can act on: a
// wrong key, a missing bucket and an endpoint that is down used to read alike, "did not answer".
// Built from the error's code alone, never its message or the request: an S3 error body may
// carry the string the request signed (the access key id with it), and no key reaches a body.
import { StoreTimeout } from './read-ahead'

const S3_CODES: Record<string, string> = {
  InvalidAccessKeyId: 'the bucket does not know the access key (InvalidAccessKeyId): check SVC_ARTIFACTS_S3_ACCESS_KEY_ID',
  SignatureDoesNotMatch: 'the bucket refused the secret key (SignatureDoesNotMatch): check SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY',
  AccessDenied: 'the bucket denied the request (AccessDenied): the key needs to put, get, delete and list objects under the prefix',
  ExpiredToken: 'the session token has expired (ExpiredToken)',
  InvalidToken: 'the session token is not valid (InvalidToken)',
  NoSuchBucket: 'the bucket does not exist (NoSuchBucket): check SVC_ARTIFACTS_URL',
  PermanentRedirect: 'the bucket is in another region (PermanentRedirect): check SVC_ARTIFACTS_S3_REGION',
  AuthorizationHeaderMalformed: 'the bucket refused the request (AuthorizationHeaderMalformed): check SVC_ARTIFACTS_S3_REGION',
  ConnectionRefused: 'the endpoint refused the connection (ConnectionRefused): is it running, and is SVC_ARTIFACTS_S3_ENDPOINT right?',
  ECONNREFUSED: 'the endpoint refused the connection (ECONNREFUSED): is it running, and is SVC_ARTIFACTS_S3_ENDPOINT right?',
  DNSResolveFailed: "the endpoint's host name does not resolve (DNSResolveFailed): check SVC_ARTIFACTS_S3_ENDPOINT",
  ENOTFOUND: "the endpoint's host name does not resolve (ENOTFOUND): check SVC_ARTIFACTS_S3_ENDPOINT",
  SlowDown: 'the bucket asks to slow down (SlowDown)',
  ServiceUnavailable: 'the bucket is unavailable for now (ServiceUnavailable)',
  InternalError: 'the bucket failed (InternalError)',
}

/** A short reason, safe for a log line and a client's problem detail. */
export function describeStoreFailure(e: unknown): string {
  if (e instanceof StoreTimeout) return e.message
  const code = (e as { code?: unknown } | null)?.code
  if (typeof code === 'string') {
    if (S3_CODES[code]) return S3_CODES[code]
    // A code is a word (S3's, or the system's errno): anything else is not repeated.
    if (/^[A-Za-z][A-Za-z0-9_.]{1,60}$/.test(code)) return `the store answered ${code}`
  }
  return 'the store failed'
}
