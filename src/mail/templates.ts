// The mail templates: one plain-text and one HTML part per message, English, built from the
// outbox variables. Every variable is escaped in the HTML part (a display name or pool name is
// user input) and a missing one throws, so no mail ever says "Hello undefined".
import type { MailTemplate, MailVars } from './outbox'

export interface RenderedMail {
  subject: string
  text: string
  html: string
}

/** A paragraph is plain text; a link is rendered as a button in HTML and a bare URL in text. */
type Block = { p: string } | { link: string; label: string }

interface Draft {
  subject: string
  greeting: string
  blocks: Block[]
}

const TOKEN_LIFETIME = 'The link works once and expires in 24 hours.'

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function need(vars: MailVars, template: MailTemplate, key: string, allowEmpty = false): string {
  const v = vars[key]
  if (typeof v !== 'string' || (!allowEmpty && v.trim() === '')) {
    throw new Error(`mail template ${template}: variable ${JSON.stringify(key)} is missing`)
  }
  return v
}

// Control characters in a subject could break the header or fake extra lines in a client.
function oneLine(s: string, max = 120): string {
  const flat = s.replace(/[\x00-\x1f\x7f]+/g, ' ').replace(/\s+/g, ' ').trim()
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat
}

/**
 * Links must point at this leader: a path is resolved against baseUrl, an absolute URL must
 * already start with it. Anything else (another host, javascript:) is a caller bug that would
 * put a one-time token, or a phishing target, into a mail.
 */
export function absoluteLink(link: string, baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, '')
  if (link.startsWith('/') && !link.startsWith('//')) return base + link
  if (link === base || link.startsWith(base + '/') || link.startsWith(base + '?')) return link
  throw new Error(`mail link must be a path or a URL under ${base}`)
}

function siteName(baseUrl: string): string {
  try {
    return new URL(baseUrl).host
  } catch {
    return baseUrl
  }
}

function greet(name: string): string {
  const n = oneLine(name, 200)
  return n === '' ? 'Hello,' : `Hello ${n},`
}

function draft(template: MailTemplate, vars: MailVars, baseUrl: string): Draft {
  const site = siteName(baseUrl)
  const name = () => greet(need(vars, template, 'name', true))
  const link = () => absoluteLink(need(vars, template, 'link'), baseUrl)
  switch (template) {
    case 'verify-email':
      return {
        subject: `Confirm your email address for ${site}`,
        greeting: name(),
        blocks: [
          { p: `Thanks for signing up at ${site}. Please confirm your email address by opening this link:` },
          { link: link(), label: 'Confirm email address' },
          { p: TOKEN_LIFETIME },
          { p: 'If you did not create an account, you can ignore this email.' },
        ],
      }
    case 'pending-approval':
      return {
        subject: `Your account at ${site} is waiting for approval`,
        greeting: name(),
        blocks: [
          { p: `Thanks for signing up at ${site}. An administrator needs to approve your account before you can log in.` },
          { p: 'We will send you another email as soon as that has happened.' },
        ],
      }
    case 'account-approved':
      return {
        subject: `Your account at ${site} has been approved`,
        greeting: name(),
        blocks: [
          { p: 'Good news: an administrator has approved your account. You can log in now:' },
          { link: absoluteLink('/login', baseUrl), label: 'Log in' },
        ],
      }
    case 'account-deactivated':
      return {
        subject: `Your account at ${site} has been deactivated`,
        greeting: name(),
        blocks: [
          { p: `An administrator has deactivated your account at ${site}. You can no longer log in.` },
          { p: 'If you think this is a mistake, please contact the administrator.' },
        ],
      }
    case 'password-reset':
      return {
        subject: `Reset your password for ${site}`,
        greeting: name(),
        blocks: [
          { p: 'A password reset was issued for your account. Choose a new password by opening this link:' },
          { link: link(), label: 'Choose a new password' },
          { p: TOKEN_LIFETIME },
          { p: 'If you did not expect this email, you can ignore it; your password stays the same.' },
        ],
      }
    case 'password-changed':
      return {
        subject: `Your password for ${site} was changed`,
        greeting: name(),
        blocks: [
          { p: `The password of your account at ${site} was just changed.` },
          { p: 'If that was you, there is nothing else to do. If it was not, please contact the administrator right away.' },
        ],
      }
    case 'pool-invite': {
      // Pool and inviter names are chosen by whoever invites: they stay out of the subject (the
      // line a phishing mail is judged by) and appear in the body only, quoted and escaped.
      const pool = oneLine(need(vars, template, 'pool_name'))
      const inviter = oneLine(need(vars, template, 'inviter'))
      return {
        subject: `You have been invited to a pool on ${site}`,
        greeting: 'Hello,',
        blocks: [
          { p: `"${inviter}" has invited you to join the pool "${pool}" on ${site}.` },
          { link: link(), label: 'Accept the invitation' },
          { p: `The invitation is valid for 7 days and only for an account with this email address. If you have no account at ${site} yet, sign up with this address first, then open the link again.` },
          { p: 'If you do not want to join, or do not know the sender, you can ignore this email.' },
        ],
      }
    }
    case 'test':
      return {
        subject: `Test email from ${site}`,
        greeting: 'Hello,',
        blocks: [{ p: `This is a test email from ${site}. If you can read it, mail delivery works.` }],
      }
    default: {
      const never: never = template
      throw new Error(`unknown mail template ${JSON.stringify(never)}`)
    }
  }
}

function toText(d: Draft, site: string): string {
  const parts = [d.greeting, ...d.blocks.map((b) => ('p' in b ? b.p : b.link)), `-- \n${site}`]
  return parts.join('\n\n') + '\n'
}

function toHtml(d: Draft, site: string): string {
  const body = d.blocks
    .map((b) => {
      if ('p' in b) return `<p>${escapeHtml(b.p)}</p>`
      const href = escapeHtml(b.link)
      return (
        `<p><a href="${href}" style="display:inline-block;padding:10px 18px;background:#1f5fbf;color:#ffffff;` +
        `text-decoration:none;border-radius:4px">${escapeHtml(b.label)}</a></p>\n` +
        `<p style="font-size:13px;color:#555555">Or copy this address into your browser:<br>` +
        `<a href="${href}" style="color:#1f5fbf;word-break:break-all">${href}</a></p>`
      )
    })
    .join('\n')
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(d.subject)}</title></head>`,
    '<body style="font-family:Arial,Helvetica,sans-serif;font-size:15px;line-height:1.5;color:#222222">',
    `<p>${escapeHtml(d.greeting)}</p>`,
    body,
    `<p style="font-size:12px;color:#777777">${escapeHtml(site)}</p>`,
    '</body></html>',
    '',
  ].join('\n')
}

export function renderMail(template: MailTemplate, vars: MailVars, baseUrl: string): RenderedMail {
  const d = draft(template, vars, baseUrl)
  const site = siteName(baseUrl)
  return { subject: oneLine(d.subject, 200), text: toText(d, site), html: toHtml(d, site) }
}
