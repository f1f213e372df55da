// `svc users ...` and `svc audit list` over the admin routes (admins only).
import type { Static } from '@sinclair/typebox'
import * as M from '../../admin/model'
import { checkInput, clientFor, LeaderUnreachable, type Client } from '../client'
import { ago, clean, modeOf, note, out, printDone, printList } from '../output'
import { promptHidden } from '../prompt'
import type { Invocation } from '../spec'
import { CliError, UsageError } from '../usage'
import { resolveUserId } from './refs'

export async function usersList({ flags, usage }: Invocation): Promise<number> {
  const query = {
    q: flags.search as string | undefined,
    status: flags.status as M.UserListQuery['status'],
    role: flags.role as M.UserListQuery['role'],
    sort: flags.sort as M.UserListQuery['sort'],
    order: flags.order as M.UserListQuery['order'],
    page: flags.page as number | undefined,
    page_size: flags['page-size'] as number | undefined,
  }
  checkInput(M.UserListQuery, JSON.parse(JSON.stringify(query)), usage, { q: '--search' })
  const res = await clientFor(flags).get<M.UserList>('/api/v1/admin/users', query)
  printList(
    modeOf(flags),
    res,
    res.items,
    [
      { head: 'ID', get: (u) => u.id },
      { head: 'EMAIL', get: (u) => u.email },
      { head: 'NAME', get: (u) => u.display_name },
      { head: 'ROLE', get: (u) => u.role },
      { head: 'STATUS', get: (u) => u.status },
      { head: 'POOLS', get: (u) => u.pool_count },
      { head: 'NODES', get: (u) => u.node_count },
      { head: 'LAST LOGIN', get: (u) => ago(u.last_login_at) },
    ],
    (u) => u.id,
    res.total > 0 && res.items.length === 0 ? `page ${res.page} is past the last one (${Math.ceil(res.total / res.page_size)}; ${res.total} users)` : 'no users match',
  )
  if (modeOf(flags) === 'table' && res.total > res.items.length && res.items.length > 0) process.stderr.write(`page ${res.page} of ${Math.ceil(res.total / res.page_size)} (${res.total} users); --page N for more\n`)
  return 0
}

function setStatus(status: 'disabled' | 'active') {
  return async ({ args, flags }: Invocation): Promise<number> => {
    const c = clientFor(flags)
    const id = await resolveUserId(c, args.USER!)
    const body = { status }
    checkInput(M.StatusBody, body)
    const u = await c.call<M.AdminUser>('POST', `/api/v1/admin/users/${id}/status`, { body })
    printDone(modeOf(flags), u, u.id, status === 'disabled' ? `disabled ${u.email}: sessions and API tokens revoked` : `enabled ${u.email}`)
    return 0
  }
}
export const usersDisable = setStatus('disabled')
export const usersEnable = setStatus('active')

export async function usersDelete({ args, flags, usage }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const id = await resolveUserId(c, args.USER!)
  if (flags.yes !== true) {
    if (!process.stdin.isTTY) throw new UsageError('deleting a user cannot be undone: pass --yes', usage)
    const answer = await promptHidden(`Delete ${args.USER} with their pools, memberships and tokens? Type yes: `, true)
    if (answer.trim() !== 'yes') throw new CliError('not deleted')
  }
  const r = await c.call<Static<typeof M.DeleteResult>>('DELETE', `/api/v1/admin/users/${id}`)
  printDone(modeOf(flags), r, id, `deleted ${args.USER}: ${r.pools_deleted} pool(s), ${r.memberships_removed} membership(s), ${r.api_tokens_revoked} API token(s), ${r.sessions_removed} session(s); ${r.nodes_detached} node(s) detached`)
  return 0
}

type Entry = M.AuditList['items'][number]

const auditLine = (e: Entry) => `${e.ts}  ${clean(e.kind).padEnd(24)} ${clean(e.actor_user_id ?? '-')}  ${clean(e.client_ip ?? '-')}  ${e.target_type ? `${clean(e.target_type)}:${clean(e.target_id)}` : '-'}${e.detail ? `  ${clean(JSON.stringify(e.detail))}` : ''}`

export async function auditList({ flags, usage }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const actor = flags.actor === undefined ? undefined : await resolveUserId(c, flags.actor as string)
  const query = {
    kind: flags.kind as string | undefined,
    actor,
    target: flags.target as string | undefined,
    since: flags.since as string | undefined,
    until: flags.until as string | undefined,
    page: flags.page as number | undefined,
    page_size: flags['page-size'] as number | undefined,
    cursor: flags.cursor as string | undefined,
  }
  if (query.page !== undefined && query.cursor !== undefined) throw new UsageError('--page and --cursor do not go together (a cursor already says where the page starts)', usage)
  checkInput(M.AuditQuery, JSON.parse(JSON.stringify(query)), usage)
  const mode = modeOf(flags)
  const res = await c.get<M.AuditList>('/api/v1/admin/audit', query)
  if (!flags.follow) {
    printList(
      mode,
      res,
      res.items,
      [
        { head: 'TIME', get: (e) => e.ts },
        { head: 'KIND', get: (e) => e.kind },
        { head: 'ACTOR', get: (e) => e.actor_user_id },
        { head: 'IP', get: (e) => e.client_ip },
        { head: 'TARGET', get: (e) => (e.target_type ? `${e.target_type}:${e.target_id}` : null) },
        { head: 'DETAIL', get: (e) => (e.detail ? JSON.stringify(e.detail) : null) },
      ],
      (e) => e.id,
      'no audit entries match',
    )
    // As `users list` says its pages: where the next one starts (on stderr: stdout stays the table).
    if (mode === 'table' && res.next_cursor) note(`more entries: --cursor ${res.next_cursor} for the next ${res.items.length}`)
    return 0
  }
  // --follow: oldest first, then every 2 s what is new (ids are time-ordered UUIDv7s).
  if (flags.until !== undefined) throw new UsageError('--follow and --until do not go together', usage)
  // The entries printed at the newest time seen: `since` takes that time again (>=), so these come back.
  let seen = new Set<string>()
  const print = (e: Entry) => {
    seen.add(e.id)
    if (mode === 'json') out(JSON.stringify(e))
    else if (mode === 'quiet') out(e.id)
    else out(auditLine(e))
  }
  let items = [...res.items].reverse()
  let last = query.since
  let away = false
  for (;;) {
    for (const e of items) if (!seen.has(e.id)) print(e)
    if (items.length > 0) {
      last = items.at(-1)!.ts
      seen = new Set(items.filter((e) => e.ts === last).map((e) => e.id))
    }
    await Bun.sleep(2000)
    try {
      items = await entriesSince(c, query, last)
      if (away) process.stderr.write('svc: the leader answers again; following\n')
      away = false
    } catch (e) {
      // A leader restarting does not answer for a while: keep following (until Ctrl-C, as the help
      // says), saying so once on stderr (the entries on stdout stay clean for a pipe).
      if (!(e instanceof LeaderUnreachable)) throw e
      if (!away) process.stderr.write(`svc: ${e.message}; still following, trying every 2 s\n`)
      away = true
      items = []
    }
  }
}

/**
 * Every entry from `since` on, oldest first: page after page (newest first, 200 a page) until the
 * last, so that a burst of more than a page between two polls is printed whole. A failure on any
 * page drops the round, which the next poll reads again from the same time.
 */
async function entriesSince(c: Client, query: Record<string, unknown>, since: string | undefined): Promise<Entry[]> {
  const all: Entry[] = []
  for (let cursor: string | undefined; ; ) {
    const page = await c.get<M.AuditList>('/api/v1/admin/audit', { ...(query as Record<string, string | undefined>), page: undefined, cursor, page_size: 200, ...(since ? { since } : {}) })
    all.push(...page.items)
    if (!page.next_cursor || page.items.length === 0) return all.reverse()
    cursor = page.next_cursor
  }
}
