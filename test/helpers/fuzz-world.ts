// A small world on a running leader, made and mended through its API only, for fuzzers that walk
// every operation: an admin and a member (each with a session and an API token), a victim user for
// the admin's row actions, a spare API token to revoke, and a chain of pool -> join session ->
// fellow -> job -> invite -> servable -> artifact (and an open upload). Operations may end any of it (logout, revocation, deletion,
// plan changes): heal() puts it back before the next one. The chain's fellow answers inference
// requests like the reference agent, so chat completions end in 200, not in a 504.
import { call, mintToken, registerUser, GPU, type Session } from './e2e'

export const WORLD_PASSWORD = 'fuzz password 0123'

export interface Person {
  email: string
  session: Session & { userId: string }
  token: string
}

export interface Chain {
  poolId: string
  joinSessionId: string
  joinToken: string
  fellowId: string
  nodeToken: string
  jobId: string
  inviteId: string
  model: string
  /** A checkpoint of the job its fellow uploaded, and an upload it opened and never sent. */
  artifactId: string
  uploadId: string
}

type Json = Record<string, any>

export class FuzzWorld {
  admin!: Person
  member!: Person
  victim = { id: '', email: '' }
  spareTokenId = ''
  chain!: Chain
  private roleLimits: Json[] = []
  /** Every id handed out, by parameter name: old and deleted ids are worth sending too. */
  private seen = new Map<string, Set<string>>()
  private chains = 0
  private serving: Promise<void> | null = null
  private stopped = false

  constructor(private readonly url: string) {}

  /** The first registered user becomes the admin. */
  async build(): Promise<void> {
    this.admin = await this.newPerson('admin@example.com')
    this.member = await this.newPerson('member@example.com')
    const victim = await this.newUser('victim@example.com')
    this.victim = { id: victim.userId, email: 'victim@example.com' }
    this.remember('user_id', victim.userId)
    this.roleLimits = (await this.must('GET', '/api/v1/admin/role-limits', { bearer: this.admin.token }, 200)).items
    this.spareTokenId = await this.spareToken()
    this.chain = await this.newChain()
    this.serving = this.serveInference()
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.serving
  }

  /** Puts back what the previous operation broke: sessions, tokens, plans, the victim, the chain. */
  async heal(): Promise<void> {
    for (const p of [this.admin, this.member]) {
      if ((await p.session.call('GET', '/api/v1/auth/me')).status !== 200) {
        const r = await p.session.call('POST', '/api/v1/auth/login', { email: p.email, password: WORLD_PASSWORD })
        if (r.status !== 200) throw new Error(`world: login ${p.email} answered ${r.status} ${JSON.stringify(r.body)}`)
      }
      if (!(await this.ok('/api/v1/auth/me', p.token))) p.token = await mintToken(p.session, 'fuzz')
    }
    const bearer = this.admin.token
    const limits = (await call(this.url, 'GET', '/api/v1/admin/role-limits', { bearer })).body.items as Json[]
    for (const l of this.roleLimits) {
      if (JSON.stringify(limits.find((x) => x.role === l.role)) === JSON.stringify(l)) continue
      const { role, ...patch } = l
      await this.must('PATCH', `/api/v1/admin/role-limits/${role}`, { bearer, body: patch }, 200)
    }
    const tokens = (await call(this.url, 'GET', '/api/v1/api-tokens', { bearer })).body.items as Json[]
    if (!tokens.some((t) => t.id === this.spareTokenId && t.revoked_at === null)) this.spareTokenId = await this.spareToken()
    const victims = (await call(this.url, 'GET', `/api/v1/admin/users?q=${encodeURIComponent(this.victim.email)}`, { bearer })).body.items as Json[]
    if (!victims.some((u) => u.id === this.victim.id)) {
      const email = `victim-${crypto.randomUUID()}@example.com`
      this.victim = { id: (await this.newUser(email)).userId, email }
      this.remember('user_id', this.victim.id)
    }
    const c = this.chain
    const intact =
      (await this.ok(`/api/v1/pools/${c.poolId}`, bearer)) &&
      (await this.ok(`/api/v1/jobs/${c.jobId}`, bearer)) &&
      (await call(this.url, 'POST', '/api/v1/workers/heartbeat', { bearer: c.nodeToken, body: { status: 'idle', servables: [c.model] } })).status === 200
    if (!intact) this.chain = await this.newChain()
  }

  /** Values worth sending for a parameter or field name: ids of this world, current ones first. */
  candidatesFor(name: string, path: string): string[] {
    const c = this.chain
    const old = (k: string) => [...(this.seen.get(k) ?? [])].slice(-3)
    switch (name) {
      case 'id':
        if (path.includes('/api-tokens/')) return [this.spareTokenId]
        if (path.includes('/join-sessions/')) return [c.joinSessionId]
        if (path.includes('/admin/users/')) return [this.victim.id]
        if (path.includes('/artifacts/')) return [c.artifactId, ...old('artifact')]
        return [c.poolId, ...old('id')]
      case 'upload_id':
        return [c.uploadId, ...old('upload_id')]
      case 'pool_id':
        // Chat routed to an old pool, whose fellow is gone, is a designed 503 ("no fellow serves it").
        return path.startsWith('/api/v1/chat/') ? [c.poolId] : [c.poolId, ...old('pool_id')]
      case 'fellow_id':
        return [c.fellowId, ...old('fellow_id')]
      case 'job_id':
        return [c.jobId, ...old('job_id')]
      case 'user_id':
        // Never the fuzzer's own people: removing them would only blind the rest of the walk.
        return [this.victim.id]
      case 'invite_id':
        return [c.inviteId]
      case 'model':
        return [c.model]
      case 'email':
        return [this.victim.email]
      case 'password':
        return [WORLD_PASSWORD]
      case 'role':
        return ['user', 'admin']
      case 'code':
        return ['en', 'de']
      case 'name':
        return path.startsWith('/assets/') ? ['app.css', 'app.js', 'icon.svg'] : []
      default:
        return []
    }
  }

  private remember(name: string, id: string): void {
    this.seen.set(name, (this.seen.get(name) ?? new Set()).add(id))
  }

  private async must(method: string, path: string, opts: { bearer?: string; body?: unknown }, want: number): Promise<any> {
    const r = await call(this.url, method, path, opts)
    if (r.status !== want) throw new Error(`world: ${method} ${path} answered ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }

  private async ok(path: string, bearer: string): Promise<boolean> {
    return (await call(this.url, 'GET', path, { bearer })).status === 200
  }

  private async newPerson(email: string): Promise<Person> {
    const session = await this.newUser(email)
    return { email, session, token: await mintToken(session, 'fuzz') }
  }

  /** Registers a user; when approval or verification holds the account, the admin approves it. */
  private async newUser(email: string): Promise<Session & { userId: string }> {
    const session = await registerUser(this.url, email, WORLD_PASSWORD)
    if ((await session.call('GET', '/api/v1/auth/me')).status !== 200) {
      await this.must('POST', `/api/v1/admin/users/${session.userId}/approve`, { bearer: this.admin.token }, 200)
      const r = await session.call('POST', '/api/v1/auth/login', { email, password: WORLD_PASSWORD })
      if (r.status !== 200) throw new Error(`world: login ${email} answered ${r.status} ${JSON.stringify(r.body)}`)
    }
    return session
  }

  private async spareToken(): Promise<string> {
    const r = await this.admin.session.call('POST', '/api/v1/api-tokens', { name: 'spare' })
    if (r.status !== 201) throw new Error(`world: spare token answered ${r.status}`)
    this.remember('id', r.body.id)
    return r.body.id
  }

  private async newChain(): Promise<Chain> {
    const bearer = this.admin.token
    const n = ++this.chains
    const pool = await this.must('POST', '/api/v1/pools', { bearer, body: { name: `fuzz pool ${n}`, visibility: 'public', open_join: true } }, 201)
    const join = await this.must('POST', '/api/v1/bootstrap/join-sessions', { bearer, body: { pool_id: pool.id } }, 201)
    const fellow = await this.must('POST', '/api/v1/workers/register', { bearer: join.join_token, body: { hostname: `fuzz-${n}`, gpus: [GPU] } }, 201)
    await this.must('POST', '/api/v1/workers/heartbeat', { bearer: fellow.node_token, body: { status: 'idle', servables: ['fuzz-model'] } }, 200)
    const job = await this.must('POST', '/api/v1/jobs', { bearer, body: { name: `fuzz job ${n}`, pool_id: pool.id } }, 201)
    // The member joins (so its calls see the pool: fewer "not found"); the victim holds an open invite.
    await call(this.url, 'POST', `/api/v1/pools/${pool.id}/join`, { bearer: this.member.token })
    const invite = await call(this.url, 'POST', `/api/v1/pools/${pool.id}/invites`, { bearer, body: { email: this.victim.email } })
    const servable = await call(this.url, 'POST', '/api/v1/servables', { bearer: fellow.node_token, body: { name: 'fuzz-model', version: '1', format: 'gguf', size_bytes: 1, job_id: job.id } })
    const ckpt = new TextEncoder().encode(`fuzz checkpoint ${n}`)
    const sha256 = new Bun.CryptoHasher('sha256').update(ckpt).digest('hex')
    const up = await this.must('POST', '/api/v1/artifacts/uploads', { bearer: fellow.node_token, body: { kind: 'checkpoint', name: `fuzz-${n}.ckpt`, size_bytes: ckpt.byteLength, sha256, job_id: job.id, stage: 0, step: 1 } }, 201)
    const put = await fetch(`${this.url}/api/v1/artifacts/uploads/${up.upload_id}?offset=0`, { method: 'PUT', headers: { authorization: `Bearer ${fellow.node_token}`, 'content-type': 'application/octet-stream' }, body: ckpt })
    if (put.status !== 201) throw new Error(`world: artifact upload answered ${put.status} ${await put.text()}`)
    const artifact = ((await put.json()) as Json).artifact
    const pending = await this.must('POST', '/api/v1/artifacts/uploads', { bearer: fellow.node_token, body: { kind: 'file', name: 'pending.bin', size_bytes: 1024, sha256 } }, 201)
    const chain: Chain = {
      poolId: pool.id,
      joinSessionId: join.id,
      joinToken: join.join_token,
      fellowId: fellow.fellow_id,
      nodeToken: fellow.node_token,
      jobId: job.id,
      inviteId: invite.body.id ?? '',
      model: servable.body.name ?? 'fuzz-model',
      artifactId: artifact.id,
      uploadId: pending.upload_id,
    }
    for (const [name, id] of [['id', chain.poolId], ['pool_id', chain.poolId], ['fellow_id', chain.fellowId], ['job_id', chain.jobId], ['artifact', chain.artifactId], ['upload_id', chain.uploadId]] as const) this.remember(name, id)
    return chain
  }

  /** The chain's fellow: long-polls for inference requests and answers each with one delta and done (embeddings: one result). */
  private async serveInference(): Promise<void> {
    while (!this.stopped) {
      const c = this.chain
      try {
        const r = await call(this.url, 'GET', `/api/v1/infer/requests/${c.fellowId}?wait_ms=500`, { bearer: c.nodeToken })
        if (r.status === 200) {
          // An embeddings request wants one whole result in OpenAI's shape (a token stream is a 502).
          const frames =
            r.body.kind === 'embeddings'
              ? [{ done: true, usage: { prompt_tokens: 1, completion_tokens: 0 }, result: { data: [{ index: 0, embedding: [0.5] }] } }]
              : [{ delta: 'fuzz' }, { done: true, usage: { prompt_tokens: 1, completion_tokens: 1 } }]
          await call(this.url, 'POST', `/api/v1/infer/responses/${encodeURIComponent(r.body.request_id)}`, { bearer: c.nodeToken, body: { frames } })
        } else if (r.status !== 204) await Bun.sleep(50) // the chain is being rebuilt
      } catch {
        await Bun.sleep(50)
      }
    }
  }
}
