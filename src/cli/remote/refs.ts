// Commands take what a person remembers (a pool's slug, a fellow's host name, a job's name, a
// user's email) as well as ids; these turn either into the one id, or say plainly why not.
import type { Static } from '@sinclair/typebox'
import type { Pool } from '../../pools/model'
import type { NodeView } from '../../fellows/model'
import type { Job, JobList } from '../../jobs/model'
import type { UserList, AdminUser } from '../../admin/model'
import type { ApiTokenRecord } from '../../accounts/model'
import { isUuid, type Client } from '../client'
import { CliError, UsageError } from '../usage'

function pick<T>(what: string, ref: string, matches: T[], id: (t: T) => string): T {
  if (matches.length === 1) return matches[0]!
  if (matches.length === 0) throw new CliError(`no ${what} "${ref}" that you can see`)
  throw new CliError(`"${ref}" names ${matches.length} ${what}s (${matches.slice(0, 5).map(id).join(', ')}): give the id`)
}

export async function resolvePool(c: Client, ref: string): Promise<Pool> {
  if (isUuid(ref)) return c.get<Pool>(`/api/v1/pools/${ref.toLowerCase()}`)
  const { items } = await c.get<{ items: Pool[] }>('/api/v1/pools')
  const bySlug = items.filter((p) => p.slug === ref)
  return pick('pool', ref, bySlug.length ? bySlug : items.filter((p) => p.name.toLowerCase() === ref.toLowerCase()), (p) => p.id)
}

export async function resolveFellow(c: Client, ref: string): Promise<Static<typeof NodeView>> {
  const { items } = await c.get<{ items: Static<typeof NodeView>[] }>('/api/v1/cluster/nodes')
  return pick('fellow', ref, items.filter((n) => (isUuid(ref) ? n.fellow_id === ref.toLowerCase() : n.hostname === ref)), (n) => n.fellow_id)
}

export async function resolveJob(c: Client, ref: string): Promise<Job> {
  if (isUuid(ref)) return c.get<Job>(`/api/v1/jobs/${ref.toLowerCase()}`)
  // Page after page (newest first) until a job of that name turns up; then the whole list's
  // matches of the pages read so far decide. The list's items are summaries (no config): the job
  // itself comes by its id.
  const matches: JobList['items'] = []
  for (let cursor: string | undefined; ; ) {
    const page: JobList = await c.get<JobList>('/api/v1/jobs', cursor === undefined ? {} : { cursor })
    matches.push(...page.items.filter((j) => j.name === ref))
    if (matches.length > 0 || page.next_cursor === null) break
    cursor = page.next_cursor
  }
  const found = pick('job', ref, matches, (j) => j.id)
  return c.get<Job>(`/api/v1/jobs/${found.id}`)
}

/** A user's id: given, or found by exact email (admins only: the admin list). */
export async function resolveUserId(c: Client, ref: string): Promise<string> {
  if (isUuid(ref)) return ref.toLowerCase()
  const list = await c.get<UserList>('/api/v1/admin/users', { q: ref, page_size: 200 })
  return pick('user', ref, list.items.filter((u: AdminUser) => u.email.toLowerCase() === ref.toLowerCase()), (u) => u.email).id
}

export async function resolveToken(c: Client, ref: string): Promise<ApiTokenRecord> {
  const { items } = await c.get<{ items: ApiTokenRecord[] }>('/api/v1/api-tokens')
  if (isUuid(ref)) return pick('API token', ref, items.filter((t) => t.id === ref.toLowerCase()), (t) => t.id)
  const named = items.filter((t) => t.name === ref && t.revoked_at === null)
  // An admin sees everyone's tokens: a name means one of their own; someone else's goes by its id.
  const me = named.length > 0 ? (await c.get<{ id: string }>('/api/v1/auth/me')).id : null
  const own = named.filter((t) => t.user_id === me)
  if (own.length === 0 && named.length > 0) {
    const t = named[0]!
    throw new CliError(`the API token "${ref}" is ${named.length === 1 ? `${t.user_email}'s` : `held by ${named.length} other users`}, not yours: give its id to revoke it (${named.slice(0, 5).map((x) => x.id).join(', ')})`)
  }
  return pick('API token', ref, own, (t) => t.id)
}

/** "gpu-lab (id)" for a record's pool, where people read tables; the id alone if the pool is not to be had. */
export async function poolLabel(c: Client, id: string | null): Promise<string | null> {
  if (id === null) return null
  try {
    return `${(await c.get<Pool>(`/api/v1/pools/${id}`)).slug} (${id})`
  } catch {
    return id
  }
}

/** The caller's one pool, when --pool is left out; a usage error when there are none or several. */
export async function onlyPool(c: Client, usage: string): Promise<Pool> {
  const { items } = await c.get<{ items: Pool[] }>('/api/v1/pools', { mine: 'true' })
  if (items.length === 1) return items[0]!
  throw new UsageError(items.length === 0 ? 'you are in no pool: --pool POOL names one (svc pools list)' : `you are in ${items.length} pools (${items.slice(0, 5).map((p) => p.slug).join(', ')}${items.length > 5 ? ', ...' : ''}): --pool POOL names one`, usage)
}
