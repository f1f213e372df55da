// A leader with an admin, a plain user, a private pool and `n` fellows registered into it (each
// with one GPU, heartbeating idle): what the job tests place jobs on.
import { makeLoggedHarness } from './logged'
import { seedUser, sessionClient, type Client, type Harness } from './harness'

export interface Fellow {
  fellow_id: string
  node_token: string
  c: Client
  hb(freeMb?: number): Promise<unknown>
}

/** `track`: where the caller keeps harnesses to close after its tests. */
export async function cluster(n: number, opts: { env?: Record<string, string>; freeMb?: number[]; track?: Harness[] } = {}) {
  const h = makeLoggedHarness(opts.env ?? {})
  opts.track?.push(h)
  const admin = await seedUser(h, 'admin@example.com', { role: 'admin' })
  const bob = await seedUser(h, 'bob@example.com')
  const A = sessionClient(h, admin.id)
  const b = sessionClient(h, bob.id)
  const pool = (await A.post('/api/v1/admin/pools', { name: 'Lab', visibility: 'private' })).body
  const join = (await A.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id })).body.join_token
  const fellows: Fellow[] = []
  for (let i = 0; i < n; i++) {
    const r = (await h.client({ bearer: join }).post('/api/v1/workers/register', { hostname: `gpu-${i}`, address: `127.0.0.1:${5557 + 10 * i}` })).body
    const c = h.client({ bearer: r.node_token })
    const free = opts.freeMb?.[i] ?? 40_960
    const f: Fellow = {
      ...r,
      c,
      hb: (freeMb = free) =>
        c.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [{ index: 0, name: 'A100', memory_total_mb: 81920, memory_free_mb: freeMb, utilization_pct: 0 }] } }),
    }
    await f.hb()
    h.clock.advance(1) // distinct registration order
    fellows.push(f)
  }
  const signalsOf = (f: Fellow) => h.services.fellows.signals.takePending(f.fellow_id)
  /** What the leader logged with this message, as objects. */
  const logged = (msg: string) => h.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.msg === msg)
  return { h, A, b, bob, pool, fellows, signalsOf, logged }
}

