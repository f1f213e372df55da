// `svc pools ...` over /api/v1/pools and /api/v1/bootstrap/join-sessions.
import type { Static } from '@sinclair/typebox'
import * as P from '../../pools/model'
import * as F from '../../fellows/model'
import { LeaderRefused, checkInput, clientFor } from '../client'
import { CliError, UsageError } from '../usage'
import { modeOf, note, out, printDone, printJson, printList, printRecord } from '../output'
import type { Invocation } from '../spec'
import { resolvePool } from './refs'

type Pool = P.Pool

export async function list({ flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const res = await c.get<{ items: Pool[] }>('/api/v1/pools', flags.mine ? { mine: 'true' } : undefined)
  printList(
    modeOf(flags),
    res,
    res.items,
    [
      { head: 'ID', get: (p) => p.id },
      { head: 'SLUG', get: (p) => p.slug },
      { head: 'NAME', get: (p) => p.name },
      { head: 'VISIBILITY', get: (p) => p.visibility },
      { head: 'NODES', get: (p) => (p.node_limit === null ? p.node_count : `${p.node_count}/${p.node_limit}`) },
      { head: 'MEMBERS', get: (p) => p.member_count },
      { head: 'ROLE', get: (p) => p.my_role },
    ],
    (p) => p.id,
    'no pools (svc pools create NAME makes one)',
  )
  return 0
}

export async function show({ args, flags }: Invocation): Promise<number> {
  const p = await resolvePool(clientFor(flags), args.POOL!)
  printRecord(modeOf(flags), p, p.id, [
    ['id', p.id],
    ['name', p.name],
    ['slug', p.slug],
    ['description', p.description || '-'],
    ['visibility', p.visibility],
    ['open join', p.open_join],
    ['nodes', p.node_limit === null ? `${p.node_count} (no limit)` : `${p.node_count} of ${p.node_limit}`],
    ['members', p.member_count],
    ['your role', p.my_role],
    ['default', p.is_default],
    ['created', p.created_at],
  ])
  return 0
}

export async function create({ args, flags, usage }: Invocation): Promise<number> {
  const body: P.CreatePoolInput = { name: args.NAME! }
  if (flags.slug !== undefined) body.slug = flags.slug as string
  if (flags.description !== undefined) body.description = flags.description as string
  if (flags.visibility !== undefined) body.visibility = flags.visibility as P.CreatePoolInput['visibility']
  if (flags['node-limit'] !== undefined) body.node_limit = flags['node-limit'] as number
  if (flags['open-join'] !== undefined) body.open_join = true
  // Open join is how people join a public pool; on a private one (the default) it did nothing.
  if (body.open_join && body.visibility !== 'public') throw new UsageError('--open-join lets anyone join a public pool: add --visibility public (a private pool is joined by invitation)', usage)
  checkInput(P.CreatePoolBody, body, usage, { name: 'NAME' })
  const c = clientFor(flags)
  const p = await c.call<Pool>('POST', '/api/v1/pools', { body })
  printDone(modeOf(flags), p, p.id, `created pool ${p.slug} (${p.id}); svc pools join-command ${p.slug} prints the line that adds a machine`)
  return 0
}

export async function remove({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const p = await resolvePool(c, args.POOL!)
  let r: Static<typeof P.DeleteResult>
  try {
    r = await c.call<Static<typeof P.DeleteResult>>('DELETE', `/api/v1/pools/${p.id}`, { query: flags.force ? { force: 'true' } : undefined })
  } catch (e) {
    // The API's words name its query parameter (force=true); say it as this command takes it.
    if (e instanceof LeaderRefused && e.code === 'pool_has_nodes') {
      const n = typeof e.members.node_count === 'number' ? e.members.node_count : null
      throw new CliError(`pool ${p.slug} has ${n === null ? 'fellows' : n === 1 ? '1 fellow' : `${n} fellows`} attached: svc fellows remove them first, or svc pools delete ${p.slug} --force detaches them (they get STOP)`)
    }
    throw e
  }
  printDone(modeOf(flags), r, p.id, `deleted pool ${p.slug}${r.detached_nodes ? `; ${r.detached_nodes} fellow(s) detached and told to stop` : ''}`)
  return 0
}

export async function joinCommand({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const p = await resolvePool(c, args.POOL!)
  const body = { pool_id: p.id }
  checkInput(F.JoinSessionBody, body)
  const js = await c.call<Static<typeof F.JoinSession>>('POST', '/api/v1/bootstrap/join-sessions', { body })
  if (flags.json) return printJson(js), 0
  out(js.command)
  if (!flags.quiet) note(`paste it on the machine to add to pool ${p.slug}; it works until ${js.expires_at}`)
  return 0
}

export async function invite({ args, flags, usage }: Invocation): Promise<number> {
  const body = { email: args.EMAIL! }
  checkInput(P.InviteBody, body, usage, { email: 'EMAIL' })
  const c = clientFor(flags)
  const p = await resolvePool(c, args.POOL!)
  const inv = await c.call<Static<typeof P.InviteCreated>>('POST', `/api/v1/pools/${p.id}/invites`, { body })
  printDone(modeOf(flags), inv, inv.id, `invited ${inv.email} to ${p.slug} until ${inv.expires_at}\ninvite link (mailed when SMTP is set up; else pass it on): ${inv.invite_link}`)
  return 0
}
