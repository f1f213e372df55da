// Concurrent write load against a running leader, remembering exactly which writes it acknowledged
// (a 2xx fully received) and which were in flight with an unknown outcome. Writes: pool creation,
// edits and force-deletes (admin API token), join-session mints, fellow registrations with join
// tokens, heartbeats, and invites (each enqueues a mail in the same transaction).
import { call, GPU } from './e2e'

export interface PoolTrack {
  /** The description the leader last acknowledged. */
  description: string
  /** A PATCH sent but not answered: the stored description may be this one instead. */
  pending: string | null
  busy: boolean
  /** A force-delete was sent (answered or not). */
  deleting: boolean
  deleted: boolean
  joinToken: string | null
}

export interface FellowTrack {
  poolId: string
  token: string
}

/** A leader that answered, but not with the expected 2xx: a finding, unlike a refused connection. */
class Unexpected extends Error {}
const unexpected = (what: string, res: { status: number; body: unknown }) => new Unexpected(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`)

export class WriteLoad {
  pools = new Map<string, PoolTrack>()
  fellows = new Map<string, FellowTrack>()
  joinSessions = new Map<string, string>() // id -> pool id
  invites = new Map<string, { poolId: string; email: string }>()
  counts = { acked: 0, failed: 0, inFlightAtStop: 0 }
  /** Answers that were neither the expected 2xx nor a dropped connection. */
  unexpected: string[] = []
  /** Creations with when they were sent and acknowledged (performance.now()), for backup windows. */
  created: { kind: 'pool' | 'fellow' | 'join_session' | 'invite'; id: string; sentAt: number; ackedAt: number }[] = []
  private seq = 0
  private running = false
  private workers: Promise<void>[] = []
  private inFlight = 0

  constructor(
    public base: string,
    private adminToken: string,
    private rand: () => number,
    /** Also force-delete pools now and then (multi-row: members, join sessions, node bindings). */
    private deletes = true,
  ) {}

  start(concurrency = 6): void {
    this.running = true
    for (let i = 0; i < concurrency; i++) this.workers.push(this.worker())
  }

  /** Stops issuing; resolves once every worker has seen its last answer or error. */
  async stop(): Promise<void> {
    this.running = false
    this.counts.inFlightAtStop += this.inFlight
    await Promise.all(this.workers)
    this.workers = []
  }

  setBase(base: string): void {
    this.base = base
  }

  livePools(): [string, PoolTrack][] {
    return [...this.pools].filter(([, p]) => !p.deleting && !p.deleted)
  }

  private pick<T>(xs: T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[Math.floor(this.rand() * xs.length)]
  }

  private async worker(): Promise<void> {
    while (this.running) {
      this.inFlight++
      try {
        await this.step()
      } catch (e) {
        if (e instanceof Unexpected) this.unexpected.push(e.message)
        // Otherwise the connection was refused or reset: the leader was killed mid-request. Outcome unknown.
        else this.counts.failed++
      } finally {
        this.inFlight--
      }
    }
  }

  private admin(method: string, path: string, body?: unknown) {
    return call(this.base, method, path, { bearer: this.adminToken, body })
  }

  private async step(): Promise<void> {
    const r = this.rand()
    const live = this.livePools()
    if (live.length < 3 || r < 0.15) return this.createPool()
    if (r < 0.35) return this.editPool()
    if (r < 0.45) return this.mintJoin()
    if (r < 0.65) return this.register()
    if (r < 0.85) return this.heartbeat()
    if (r < 0.95 || !this.deletes) return this.invite()
    return this.deletePool()
  }

  private async createPool(): Promise<void> {
    const n = ++this.seq
    const sentAt = performance.now()
    const res = await this.admin('POST', '/api/v1/pools', { name: `load pool ${n}`, description: 'v0', visibility: 'private' })
    if (res.status !== 201) throw unexpected('create pool', res)
    this.pools.set(res.body.id, { description: 'v0', pending: null, busy: false, deleting: false, deleted: false, joinToken: null })
    this.created.push({ kind: 'pool', id: res.body.id, sentAt, ackedAt: performance.now() })
    this.counts.acked++
  }

  private async editPool(): Promise<void> {
    const entry = this.pick(this.livePools().filter(([, p]) => !p.busy))
    if (!entry) return
    const [id, p] = entry
    const next = `v${++this.seq}`
    // One write per pool at a time: then "acknowledged or the one in flight" is all a pool may hold.
    p.busy = true
    p.pending = next
    const res = await this.admin('PATCH', `/api/v1/pools/${id}`, { description: next })
    if (res.status !== 200) throw unexpected('edit pool', res)
    p.description = next
    p.pending = null
    p.busy = false
    this.counts.acked++
  }

  private async mintJoin(): Promise<void> {
    const entry = this.pick(this.livePools().filter(([, p]) => !p.busy))
    if (!entry) return
    const [id, p] = entry
    p.busy = true
    const sentAt = performance.now()
    const res = await this.admin('POST', '/api/v1/bootstrap/join-sessions', { pool_id: id })
    // The day's 200 join commands a person may make, used up: refused, nothing written. The pools'
    // join tokens so far go on being used.
    if (res.status === 429 && res.body?.code === 'rate_limited') {
      p.busy = false
      return
    }
    if (res.status !== 201) throw unexpected('mint join session', res)
    this.joinSessions.set(res.body.id, id)
    this.created.push({ kind: 'join_session', id: res.body.id, sentAt, ackedAt: performance.now() })
    p.joinToken = res.body.join_token
    p.busy = false
    this.counts.acked++
  }

  private async register(): Promise<void> {
    const entry = this.pick(this.livePools().filter(([, p]) => p.joinToken !== null && !p.busy))
    if (!entry) return this.mintJoin()
    const [id, p] = entry
    p.busy = true
    const sentAt = performance.now()
    const res = await call(this.base, 'POST', '/api/v1/workers/register', { bearer: p.joinToken!, body: { hostname: `gpu-${++this.seq}`, gpus: [GPU] } })
    if (res.status !== 201) throw unexpected('register', res)
    this.fellows.set(res.body.fellow_id, { poolId: id, token: res.body.node_token })
    this.created.push({ kind: 'fellow', id: res.body.fellow_id, sentAt, ackedAt: performance.now() })
    p.busy = false
    this.counts.acked++
  }

  private async heartbeat(): Promise<void> {
    const f = this.pick([...this.fellows.values()].filter((x) => !this.pools.get(x.poolId)?.deleting))
    if (!f) return this.register()
    const res = await call(this.base, 'POST', '/api/v1/workers/heartbeat', {
      bearer: f.token,
      body: { status: 'running', step: ++this.seq, loss: this.rand(), hardware: { gpus: [{ ...GPU, memory_free_mb: Math.floor(this.rand() * 80000) }] } },
    })
    if (res.status !== 200) throw unexpected('heartbeat', res)
    this.counts.acked++
  }

  private async invite(): Promise<void> {
    const entry = this.pick(this.livePools().filter(([, p]) => !p.busy))
    if (!entry) return
    const [id, p] = entry
    p.busy = true
    const email = `invitee-${++this.seq}@example.com`
    const sentAt = performance.now()
    const res = await this.admin('POST', `/api/v1/pools/${id}/invites`, { email })
    if (res.status !== 201) throw unexpected('invite', res)
    this.invites.set(res.body.id, { poolId: id, email })
    this.created.push({ kind: 'invite', id: res.body.id, sentAt, ackedAt: performance.now() })
    p.busy = false
    this.counts.acked++
  }

  private async deletePool(): Promise<void> {
    const entry = this.pick(this.livePools().filter(([, p]) => !p.busy))
    if (!entry) return
    const [id, p] = entry
    p.busy = true
    p.deleting = true
    const res = await this.admin('DELETE', `/api/v1/pools/${id}?force=true`)
    if (res.status >= 300) throw unexpected('delete pool', res)
    p.deleted = true
    this.counts.acked++
  }
}
