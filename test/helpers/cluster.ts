// A cluster on loopback for the e2e suites: the built dist/svc as leader (admin session, a
// private pool, a join token) and as fellows. Every child process is registered and killed by
// killAll() in the suite's afterAll, whatever happened.
import { expect } from 'bun:test'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { track } from './children'
import { SVC_BIN, requireBinary, startLeader, type Leader } from './leader'
import { freeBase } from './listen'
import { until } from './until'

const children: Subprocess[] = []
const leaders: Leader[] = []

/** For afterAll: every fellow and leader this module started, SIGKILLed and reaped. */
export async function killAll(): Promise<void> {
  for (const c of children) c.kill('SIGKILL')
  for (const l of leaders) l.proc.kill('SIGKILL')
  await Promise.all([...children.map((c) => c.exited), ...leaders.map((l) => l.proc.exited)])
}

/** The leader's API is polled every 100 ms. */
export const poll = (timeoutMs: number) => ({ timeoutMs, everyMs: 100 })

/** A port nothing listens on now (0: any free one), or null when it is taken. */
export function listenable(port: number): number | null {
  try {
    const l = Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } })
    l.stop(true)
    return l.port
  } catch {
    return null
  }
}

export interface Fellow {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  dir: string
  logs: string[]
  id(): string
}

export type Cluster = Awaited<ReturnType<typeof startCluster>>
export type Node = { fellow_id: string; state: string; connected: boolean; cpu_pct: number | null; mem_free_mb: number | null; status: string | null }

export async function startCluster(transport: 'tunnel' | 'p2p', env: Record<string, string> = {}) {
  requireBinary()
  const port = listenable(0)!
  const leader = await startLeader({
    SVC_PORT: String(port),
    SVC_BASE_URL: `http://127.0.0.1:${port}`,
    SVC_HEARTBEAT_INTERVAL_S: '1',
    SVC_PIPELINE_TRANSPORT: transport,
    SVC_COOKIE_SECURE: '0',
    ...env,
  })
  leaders.push(leader)
  // The first registered user becomes the admin, logged in at once.
  const reg = await fetch(`${leader.url}/api/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@example.com', password: 'cluster admin password' }),
  })
  expect(reg.status).toBe(201)
  const cookie = reg.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  const csrf = /svc_csrf=([^;]+)/.exec(cookie)![1]!
  const api = async <T,>(method: string, path: string, body?: unknown) => {
    const res = await fetch(`${leader.url}${path}`, {
      method,
      headers: { cookie, 'x-csrf-token': csrf, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T }
  }
  const pool = await api<{ id: string }>('POST', '/api/v1/admin/pools', { name: `${transport} pool`, description: 'e2e', visibility: 'private' })
  expect(pool.status).toBe(201)
  const join = await api<{ join_token: string; command: string }>('POST', '/api/v1/bootstrap/join-sessions', { pool_id: pool.body.id })
  expect(join.status).toBe(201)
  expect(join.body.command).toContain(join.body.join_token)
  return { leader, poolId: pool.body.id, joinToken: join.body.join_token, api, cookie, fellows: [] as Fellow[] }
}

/** `svc fellow` joining the cluster's pool; `extra` adds agent options (engines, say). */
/** An agent of the cluster; `env` is added to its environment (the operator's own settings). */
export function startFellow(c: Cluster, name: string, extra: string[] = [], env: Record<string, string> = {}): Fellow {
  const dir = mkdtempSync(join(tmpdir(), `svc-fellow-${name}-`))
  const args = ['fellow', '--leader', c.leader.url, '--join-token', c.joinToken, '--state-dir', join(dir, 'state')]
  args.push('--p2p-port-base', String(freeBase()), '--advertise-host', '127.0.0.1', '--hostname', name, ...extra)
  const proc = track(Bun.spawn([SVC_BIN, ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }))
  children.push(proc)
  const logs: string[] = []
  void (async () => {
    let buf = ''
    for await (const chunk of proc.stdout) {
      const lines = (buf += new TextDecoder().decode(chunk)).split('\n')
      buf = lines.pop()!
      logs.push(...lines)
    }
  })()
  const id = () => (JSON.parse(readFileSync(join(dir, 'state', 'fellow.json'), 'utf8')) as { fellow_id: string }).fellow_id
  const f = { proc, dir, logs, id }
  c.fellows.push(f)
  return f
}

/** SIGTERM stops every agent cleanly (exit 0, offline at once); then the leader, whose long polls they held, stops too. */
export async function stopCluster(c: Cluster): Promise<void> {
  const alive = c.fellows.filter((f) => f.proc.exitCode === null && f.proc.signalCode === null)
  for (const f of alive) f.proc.kill('SIGTERM')
  expect(await Promise.all(alive.map((f) => f.proc.exited))).toEqual(alive.map(() => 0))
  // Each said goodbye on its way out: offline at once, not after 6 missed heartbeats.
  const ids = new Set(alive.map((f) => f.id()))
  expect((await nodes(c)).filter((n) => ids.has(n.fellow_id)).map((n) => n.state)).toEqual(alive.map(() => 'offline'))
  expect(await c.leader.stop()).toBe(0)
}

export const nodes = async (c: Cluster) => (await c.api<{ items: Node[] }>('GET', `/api/v1/cluster/nodes?pool_id=${c.poolId}`)).body.items

export async function waitOnline(c: Cluster, n: number): Promise<Node[]> {
  return until(async () => {
    const items = (await nodes(c)).filter((x) => x.state === 'online' && x.connected && x.cpu_pct !== null && x.mem_free_mb !== null)
    return items.length >= n ? items : null
  }, `${n} fellows online with telemetry and a signal socket`, poll(20_000))
}

/** The process runs (a zombie nobody has reaped yet counts as gone). */
export function processAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}
