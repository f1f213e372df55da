// `svc login`, `svc logout`, `svc whoami` and `svc tokens ...`: the CLI's own credential.
import os from 'node:os'
import { Type, type Static } from '@sinclair/typebox'
import * as A from '../../accounts/model'
import { leaderBase, loadClientEnv } from '../../config'
import { Client, checkInput, clientFor, resolveTarget } from '../client'
import { checkWritable, configPath, defaultLeaderName, readConfigFile, UNCHANGED, updateConfigFile, type CliConfigFile, type LeaderEntry } from '../config-file'
import { ago, modeOf, note, out, printDone, printJson, printList } from '../output'
import { promptHidden, readLine, readPassword } from '../prompt'
import type { Invocation, Values } from '../spec'
import { CliError, UsageError } from '../usage'
import { resolveToken } from './refs'

type Me = A.Me
type TokenRecord = A.ApiTokenRecord
type Minted = Static<typeof A.MintedToken>

/**
 * Mints an API token: minting needs a session, not a token (a leaked token cannot mint more), so
 * this logs in with the password, mints, and logs that session out again.
 */
async function mintWithPassword(url: string, email: string, password: string, name: string, expiresInDays?: number): Promise<Minted> {
  const anon = new Client({ url, token: null, source: url })
  const login = await anon.fetch('POST', '/api/v1/auth/login', { body: { email, password } })
  const pairs = login.headers.getSetCookie().map((c) => c.split(';')[0]!)
  const cookie = pairs.join('; ')
  const csrf = pairs.find((p) => p.startsWith('svc_csrf='))?.slice('svc_csrf='.length)
  if (!csrf) throw new CliError('the leader set no CSRF cookie at login; cannot mint a token with this session')
  const headers = { cookie, 'x-csrf-token': csrf }
  try {
    const body = { name, ...(expiresInDays === undefined ? {} : { expires_in_days: expiresInDays }) }
    checkInput(A.MintTokenBody, body, undefined, { name: 'NAME' })
    return await anon.call<Minted>('POST', '/api/v1/api-tokens', { body, headers })
  } finally {
    await anon.fetch('POST', '/api/v1/auth/logout', { headers }).catch(() => {})
  }
}

/**
 * Who the token acts as; an answer without an id and an email is no leader's (`{}` from another
 * server). Only those are checked: a newer leader may say a role or status this CLI does not know.
 */
const ME_AT_LEAST = Type.Object({ id: Type.String(), email: Type.String() })
const whoIs = (c: Client): Promise<Me> => c.call<Me>('GET', '/api/v1/auth/me', { shape: ME_AT_LEAST })

/**
 * Runs what follows the minting of a token that nobody holds yet (saving it, showing it once); when
 * that fails, the token is revoked with itself, so that no never-expiring token is left orphaned.
 */
async function orRevoke<T>(url: string, minted: Minted | null, then: () => T | Promise<T>): Promise<T> {
  try {
    return await then()
  } catch (e) {
    if (minted === null) throw e
    const revoked = await new Client({ url, token: minted.token, source: url }).call('DELETE', `/api/v1/api-tokens/${minted.id}`).then(
      () => `the new token (${minted.id}) was revoked`,
      () => `revoke the new token: svc tokens revoke ${minted.id}`,
    )
    throw new CliError(`${(e as Error).message || 'standard output was closed'}; ${revoked}`)
  }
}

async function askPassword(flags: Values): Promise<string> {
  return readPassword(flags['password-stdin'] === true, false)
}

export async function login({ args, flags, usage }: Invocation): Promise<number> {
  const env = loadClientEnv()
  const path = configPath(env.configFile)
  const file = readConfigFile(path)
  const given = args.URL ?? (flags.leader as string | undefined) ?? env.leader
  if (!given) throw new UsageError('missing URL (the leader\'s base URL, e.g. https://leader.example.org)', usage)
  const named = file.leaders[given]
  const url = leaderBase(named ? named.url : given)
  if (!/^https?:\/\/[^/\s]+/i.test(url)) throw new UsageError(`not a leader URL: ${JSON.stringify(given)} (want http://HOST:PORT or https://HOST)`, usage)
  const name = (flags.name as string | undefined) ?? (named ? given : defaultLeaderName(url))
  // Before a token is minted for it: a file that cannot be written would orphan the token.
  checkWritable(path)
  let token: string
  let minted: Minted | null = null
  if (flags.email !== undefined) {
    const password = await askPassword(flags)
    minted = await mintWithPassword(url, flags.email as string, password, `svc cli on ${os.hostname()}`.slice(0, 100))
    token = minted.token
  } else if (flags['token-stdin']) {
    token = (await readLine()).trim()
    if (token === '') throw new UsageError('no token on standard input', usage)
  } else if (flags.token !== undefined) {
    token = flags.token as string
  } else {
    if (!process.stdin.isTTY) throw new UsageError('no terminal to ask for the token on: pass --token-stdin and pipe it in (or --email to log in with a password)', usage)
    token = (await promptHidden(`API token for ${url} (your profile page makes one): `)).trim()
  }
  if (token === '' || /\s/.test(token)) throw new UsageError('that is not a token (empty or with white space)', usage)
  let replaced: LeaderEntry | null = null
  const me = await orRevoke(url, minted, async () => {
    const me = await whoIs(new Client({ url, token, source: url }))
    const before = updateConfigFile(path, (file): LeaderEntry | null => {
      const before = file.leaders[name]
      file.leaders[name] = { url, token, ...(minted === null ? {} : { tokenId: minted.id }) }
      file.default = name
      return before !== undefined && !holds(file, before.token) ? before : null
    })
    replaced = before === UNCHANGED ? null : before
    return me
  })
  // A token this command minted before for the same entry is no one's any more: it would stay
  // valid (never expiring) with nobody holding it.
  const revoked = replaced === null ? null : await revokeMinted(replaced)
  printDone(modeOf(flags), me, me.id, `logged in to ${url} as ${me.email} (${me.role}); saved as "${name}" in ${path}${revoked ? `; the token svc login minted before for "${name}" was revoked` : ''}`)
  return 0
}

/** Whether an entry of the file still holds `token` (the same token saved under two names). */
const holds = (file: CliConfigFile, token: string) => Object.values(file.leaders).some((e) => e.token === token)

/**
 * Revokes a token `svc login --email` minted, with itself, when its entry is replaced or logged
 * out; a token given to `svc login` stays (it may be in use elsewhere). Best effort: a failure is
 * said on stderr with the command that ends the token. True when it was revoked just now.
 */
async function revokeMinted(e: LeaderEntry): Promise<boolean> {
  if (e.tokenId === undefined) return false
  try {
    await new Client({ url: e.url, token: e.token, source: e.url }).call('DELETE', `/api/v1/api-tokens/${e.tokenId}`)
    return true
  } catch (err) {
    // Refused as unknown: revoked or expired already, which is what was wanted.
    if (err instanceof CliError && /refused the token|not found/i.test(err.message)) return false
    note(`svc: could not revoke the token svc login minted (${e.tokenId}) at ${e.url}: ${(err as Error).message}; it stays valid: svc tokens revoke ${e.tokenId}`)
    return false
  }
}

export async function logout({ flags }: Invocation): Promise<number> {
  const path = configPath(loadClientEnv().configFile)
  let wanted: string | null = null
  const gone = updateConfigFile(path, (file) => {
    wanted = (flags.leader as string | undefined) ?? file.default
    const names = flags.all ? Object.keys(file.leaders) : Object.keys(file.leaders).filter((n) => n === wanted || file.leaders[n]!.url === (wanted ? leaderBase(wanted) : undefined))
    if (names.length === 0) return UNCHANGED
    const entries = names.map((n) => file.leaders[n]!)
    for (const n of names) delete file.leaders[n]
    if (file.default !== null && !(file.default in file.leaders)) file.default = null
    // A token saved under another name too is still held there.
    return { names, entries: entries.filter((e, i) => !holds(file, e.token) && entries.findIndex((x) => x.token === e.token) === i) }
  })
  if (gone === UNCHANGED) {
    note(`svc: not logged in${wanted ? ` to ${wanted}` : ''} (nothing in ${path})`)
    return 1
  }
  const revoked: string[] = []
  for (const e of gone.entries) if (await revokeMinted(e)) revoked.push(e.tokenId!)
  const kept = gone.entries.some((e) => e.tokenId === undefined)
  const mode = modeOf(flags)
  if (mode === 'json') printJson({ removed: gone.names, revoked_token_ids: revoked, config_file: path })
  else if (mode === 'quiet') out(gone.names.join('\n'))
  else out(`removed ${gone.names.map((n) => `"${n}"`).join(', ')} from ${path}${revoked.length ? `; revoked the token${revoked.length > 1 ? 's' : ''} svc login minted` : ''}${kept ? '; the token stays valid until it expires or is revoked (svc tokens revoke)' : ''}`)
  return 0
}

export async function whoami({ flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const me = await whoIs(c)
  if (flags.json) printJson(me)
  else if (flags.quiet) out(me.id)
  else out(`${me.email} (${me.role}, ${me.status}) at ${c.url}, ${c.target.source}`)
  return 0
}

export async function tokensList({ flags }: Invocation): Promise<number> {
  const res = await clientFor(flags).get<{ items: TokenRecord[] }>('/api/v1/api-tokens')
  const rows = flags.all ? res.items : res.items.filter((t) => t.revoked_at === null && (t.expires_at === null || Date.parse(t.expires_at) > Date.now()))
  // An admin's list holds everyone's tokens: whose each is, when they are not all one person's.
  const several = new Set(res.items.map((t) => t.user_id)).size > 1
  printList(
    modeOf(flags),
    res,
    rows,
    [
      { head: 'ID', get: (t) => t.id },
      { head: 'NAME', get: (t) => t.name },
      ...(several ? [{ head: 'USER', get: (t: TokenRecord) => t.user_email }] : []),
      { head: 'PREFIX', get: (t) => `${t.prefix}…` },
      { head: 'CREATED', get: (t) => ago(t.created_at) },
      { head: 'LAST USED', get: (t) => ago(t.last_used_at) },
      { head: 'EXPIRES', get: (t) => (t.revoked_at ? 'revoked' : t.expires_at === null ? 'never' : ago(t.expires_at)) },
    ],
    (t) => t.id,
    'no API tokens',
  )
  return 0
}

export async function tokensCreate({ args, flags, usage }: Invocation): Promise<number> {
  const body = { name: args.NAME!, ...(flags['expires-in-days'] === undefined ? {} : { expires_in_days: flags['expires-in-days'] as number }) }
  checkInput(A.MintTokenBody, body, usage, { name: 'NAME' })
  const target = resolveTarget({ ...flags, token: flags.token })
  let email = flags.email as string | undefined
  if (email === undefined) {
    if (target.token === null) throw new UsageError('pass --email: minting a token needs your password, and there is no token to tell who you are', usage)
    email = (await whoIs(new Client(target))).email
  }
  const password = await askPassword(flags)
  const minted = await mintWithPassword(target.url, email, password, body.name, body.expires_in_days)
  // Shown once: a token that could not be written out (a full disk, a closed pipe) is no use to anyone.
  await orRevoke(target.url, minted, () => (flags.json ? printJson(minted) : out(minted.token)))
  if (!flags.json && !flags.quiet) note(`token "${minted.name}" (${minted.id}) for ${email}${minted.expires_at ? `, valid until ${minted.expires_at}` : ''}; it is shown only now`)
  return 0
}

export async function tokensRevoke({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const t = await resolveToken(c, args.TOKEN!)
  const r = await c.call<TokenRecord>('DELETE', `/api/v1/api-tokens/${t.id}`)
  printDone(modeOf(flags), r, r.id, `revoked token "${r.name}" (${r.id})`)
  return 0
}
