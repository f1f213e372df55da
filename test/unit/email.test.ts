// The email format and the stored form of an address: SMTPUTF8 local parts and IDN domains are
// accepted, every spelling of one mailbox has one stored form, and ASCII addresses are unchanged.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { Value } from '@sinclair/typebox/value'
import { canonicalEmail, normalizeEmail } from '../../src/accounts/email'
import { Email } from '../../src/accounts/model'

// The pattern the `email` format had before: ASCII dot-atom @ LDH labels.
const OLD_EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i

describe('the email format', () => {
  test('accepts SMTPUTF8 local parts and IDN domains, through the schema the routes use', () => {
    for (const a of ['Jörg.User@example.org', 'user@bücher.example', 'user@xn--bcher-kva.example', 'δοκιμή@παράδειγμα.δοκιμή', '用户@例子.广告', 'a+tag@example.com']) {
      expect([a, Value.Check(Email, a)]).toEqual([a, true])
    }
  })

  test('refuses garbage, ASCII or not', () => {
    const garbage = [
      'plainaddress',
      '@example.org',
      'jörg@',
      'a@b',
      'a@b@example.org',
      'a b@example.org',
      '.a@example.org',
      'a.@example.org',
      'a..b@example.org',
      '"quoted"@example.org',
      'user@[127.0.0.1]',
      'user@exa mple.org',
      'user@-bad.example',
      'user@bücher..example',
      'user@example.org.',
      'user@xn--zz.example', // broken punycode
      'zero\u200bwidth@example.org', // an invisible character
      'bell\u0007@example.org',
      'nb\u00a0sp@example.org',
      'x'.repeat(65) + '@example.org',
      'ö'.repeat(33) + '@example.org', // 66 octets: the 64 of RFC 5321 count UTF-8 bytes
      ' padded@example.org',
    ]
    for (const g of garbage) expect([g, Value.Check(Email, g)]).toEqual([g, false])
  })

  test('every address the ASCII-only format took is still taken, and stored as it always was (lower case)', () => {
    fc.assert(
      fc.property(fc.emailAddress(), (a) => {
        if (!OLD_EMAIL.test(a) || a.length > 254) return
        expect(canonicalEmail(a)).toBe(a.toLowerCase())
        expect(normalizeEmail(a.toUpperCase())).toBe(a.toLowerCase())
      }),
      { numRuns: 500 },
    )
  })
})

describe('the stored form', () => {
  test('one mailbox, one form: case, Unicode normalisation, A-label and full-width spellings agree', () => {
    expect(normalizeEmail(' Jörg.User@Example.ORG ')).toBe('jörg.user@example.org')
    expect(normalizeEmail('Jo\u0308rg.User@example.org')).toBe('jörg.user@example.org') // NFD ö
    for (const a of ['user@bücher.example', 'USER@BÜCHER.EXAMPLE', 'user@xn--bcher-kva.example', 'user@XN--BCHER-KVA.example', 'user@bu\u0308cher.example']) {
      expect([a, normalizeEmail(a)]).toEqual([a, 'user@xn--bcher-kva.example'])
    }
    expect(normalizeEmail('user@ｅｘａｍｐｌｅ.com')).toBe('user@example.com')
  })

  test('what is not an address still gets a stable lookup form instead of an exception', () => {
    expect(normalizeEmail(' Not An Address ')).toBe('not an address')
    expect(normalizeEmail('USER@xn--zz.example')).toBe('user@xn--zz.example')
  })
})
