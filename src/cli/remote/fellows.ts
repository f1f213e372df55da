// `svc fellows ...` over /api/v1/cluster/nodes and /api/v1/workers.
import type { Static } from '@sinclair/typebox'
import * as F from '../../fellows/model'
import { checkInput, clientFor } from '../client'
import { ago, mib, modeOf, printDone, printList, printRecord } from '../output'
import type { Invocation } from '../spec'
import { poolLabel, resolveFellow, resolvePool } from './refs'

type Node = Static<typeof F.NodeView>

const freeVram = (n: Node) => (n.gpus.length === 0 ? null : Math.max(...n.gpus.map((g) => g.memory_free_mb)))
const gpus = (n: Node) => (n.gpus.length === 0 ? '-' : `${n.gpus.length}x ${n.gpus[0]!.name}`)
/** `online` alone says the heartbeats come; without the signal socket it cannot be told to start. */
const liveness = (n: Node) => (n.state === 'online' && !n.connected ? 'online (no socket)' : n.state)

export async function list({ flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const poolId = flags.pool === undefined ? undefined : (await resolvePool(c, flags.pool as string)).id
  const res = await c.get<{ items: Node[] }>('/api/v1/cluster/nodes', { pool_id: poolId })
  const rows = flags.all ? res.items : res.items.filter((n) => n.state !== 'released')
  printList(
    modeOf(flags),
    res,
    rows,
    [
      { head: 'ID', get: (n) => n.fellow_id },
      { head: 'HOSTNAME', get: (n) => n.hostname },
      { head: 'STATE', get: liveness },
      { head: 'STATUS', get: (n) => n.status },
      { head: 'GPUS', get: gpus },
      { head: 'FREE VRAM', get: (n) => mib(freeVram(n)) },
      { head: 'JOB', get: (n) => n.job_id },
      { head: 'LAST SEEN', get: (n) => ago(n.last_seen_at) },
      { head: 'AGENT', get: (n) => n.agent_version },
    ],
    (n) => n.fellow_id,
    'no fellows (svc pools join-command POOL prints the line that adds one)',
  )
  return 0
}

export async function show({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const n = await resolveFellow(c, args.FELLOW!)
  printRecord(modeOf(flags), n, n.fellow_id, [
    ['id', n.fellow_id],
    ['hostname', n.hostname],
    ['pool', modeOf(flags) === 'table' ? await poolLabel(c, n.pool_id) : n.pool_id],
    ['state', liveness(n)],
    ['status', n.status],
    ['job', n.job_id],
    ['step', n.step],
    ['loss', n.loss],
    ['cpu', n.cpu_pct === null ? null : `${n.cpu_pct.toFixed(0)} %`],
    ['free memory', mib(n.mem_free_mb)],
    ...n.gpus.map((g): [string, unknown] => [`gpu ${g.index}`, `${g.name}, ${mib(g.memory_free_mb)} free of ${mib(g.memory_total_mb)}, ${g.utilization_pct ?? '-'} % busy`]),
    ['bytes sent', n.bytes_sent],
    ['bytes received', n.bytes_received],
    ['registered', n.registered_at],
    ['last seen', n.last_seen_at === null ? null : `${n.last_seen_at} (${ago(n.last_seen_at)})`],
  ])
  return 0
}

export async function release({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const n = await resolveFellow(c, args.FELLOW!)
  const body = { fellow_id: n.fellow_id }
  checkInput(F.FellowRef, body)
  const r = await c.call<unknown>('POST', '/api/v1/workers/release', { body })
  printDone(modeOf(flags), r, n.fellow_id, `released ${n.hostname} (${n.fellow_id}): told to stop, its node token revoked`)
  return 0
}

export async function remove({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const n = await resolveFellow(c, args.FELLOW!)
  await c.call<null>('DELETE', `/api/v1/workers/${n.fellow_id}`)
  printDone(modeOf(flags), { removed: true, fellow_id: n.fellow_id }, n.fellow_id, `removed ${n.hostname} (${n.fellow_id})`)
  return 0
}
