// Email addresses: which ones the leader accepts and the one form it stores and compares.
//
// Accepted: a dot-atom local part (RFC 5321), whose characters RFC 6531 (SMTPUTF8) widens to
// UTF-8, so `Jörg.User@example.org` is an address; and a DNS domain, given in ASCII, as an IDN
// (`bücher.example`) or as its A-label (`xn--bcher-kva.example`). Quoted local parts, IP
// literals, spaces, controls and invisible format characters stay refused.
//
// Stored: the local part NFC-normalised and lower-cased (the leader has always compared emails
// case-insensitively), the domain as its lower-case A-label (IDNA/UTS 46 via node:url). One form
// per mailbox, so `user@BÜCHER.example`, `user@bücher.example` and `user@xn--bcher-kva.example`
// are one account for register, login, lockout and invites alike; and an ASCII address keeps the
// form it always had, so rows stored before IDN support still match without a migration.
//
// Delivery: nodemailer sends an ASCII local part with the A-label domain, which every SMTP server
// takes; a non-ASCII local part needs a relay that announces SMTPUTF8 (nodemailer then says
// SMTPUTF8 on MAIL FROM). A relay without it refuses the mail, and the outbox records its reply.
import { FormatRegistry } from '@sinclair/typebox'

/** RFC 5321 atext, plus any visible non-ASCII character (letters, marks, digits, punctuation, symbols): RFC 6531's UTF8-non-ascii minus what only hides or confuses. */
const ATOM = /^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\x00-\x7f\p{C}\p{Z}])+$/u
/** An LDH label of a DNS name (RFC 1123): letters, digits, inner hyphens, 63 octets at most. */
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
const ASCII = /^[\x00-\x7f]*$/
const encoder = new TextEncoder()
const octets = (s: string) => encoder.encode(s).length

function canonicalLocal(local: string): string | null {
  const l = local.normalize('NFC').toLowerCase().normalize('NFC')
  if (l === '' || octets(l) > 64) return null
  return l.split('.').every((atom) => ATOM.test(atom)) ? l : null
}

/** A domain's IDNA A-label form ('' when it is not one); node:url is loaded at the first call, not at every start. */
export function idnaASCII(domain: string): string {
  return (require('node:url') as typeof import('node:url')).domainToASCII(domain)
}

function canonicalDomain(domain: string): string | null {
  // Plain ASCII names keep the rules they always had (an all-digit last label included); only an
  // IDN or an A-label goes through IDNA, which also refuses broken punycode such as `xn--zz`.
  const idn = !ASCII.test(domain) || /(^|\.)xn--/i.test(domain)
  const ascii = idn ? idnaASCII(domain) : domain.toLowerCase()
  if (ascii === '' || ascii.length > 253) return null
  const labels = ascii.split('.')
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) ? ascii : null
}

/** The stored form of an address, or null when it is not one this leader accepts. */
export function canonicalEmail(address: string): string | null {
  const at = address.lastIndexOf('@')
  if (at <= 0) return null
  const local = canonicalLocal(address.slice(0, at))
  const domain = local === null ? null : canonicalDomain(address.slice(at + 1))
  if (local === null || domain === null) return null
  const out = `${local}@${domain}`
  // RFC 5321's path limit (256 octets with the angle brackets); SMTPUTF8 counts UTF-8 octets.
  return octets(out) <= 254 ? out : null
}

export const isEmailAddress = (value: string): boolean => canonicalEmail(value) !== null

/**
 * The form to store or look up. Anything that is not an accepted address (a login typo, say)
 * still gets a stable form, trimmed and lower-cased, so a lookup simply finds nothing.
 */
export function normalizeEmail(email: string): string {
  const trimmed = email.trim()
  return canonicalEmail(trimmed) ?? trimmed.normalize('NFC').toLowerCase()
}

// The `email` format of every schema (register, admin, invites). TypeBox keeps one registry for
// the process; Elysia only registers its ASCII-only pattern when none is set, and a later Set wins.
FormatRegistry.Set('email', isEmailAddress)
