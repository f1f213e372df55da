// A small populated leader for the suites that walk every route (authorization matrix, fuzzing):
// an owner with a private pool, a join session, a fellow (with a revoked first node token), a job
// scheduled on it, a servable manifest, a checkpoint artifact and an open upload, a pending invite
// and a plain member. Built through the API
// (no SQL beyond seeding users with the shared password hash): the same paths people use.
import { seedUser, sessionClient, tokenClient, type Client, type Harness, type SeededUser } from './harness'

export const GPU = { index: 0, name: 'NVIDIA A100-SXM4-80GB', memory_total_mb: 81920, memory_free_mb: 80000, utilization_pct: 3 }

export interface Chain {
  user: SeededUser
  session: Client
  token: Client & { tokenId: string }
  poolId: string
  joinSessionId: string
  joinToken: string
  fellowId: string
  /** The fellow's current node token. */
  nodeToken: string
  /** The fellow's first node token, revoked by re-registering. */
  revokedNodeToken: string
  jobId: string
  servable: string
  /** A checkpoint of the job (stage 0) its fellow uploaded. */
  artifactId: string
  /** An upload of the fellow's, opened and not yet sent. */
  uploadId: string
  /** A pending invite of the pool, for an address nobody has. */
  inviteId: string
  /** A plain member of the pool (joined through an invite), never a caller: a target for member routes. */
  member: SeededUser
}

let seq = 0

async function ok<T = any>(p: Promise<{ status: number; body: T }>, what: string): Promise<T> {
  const r = await p
  if (r.status >= 300) throw new Error(`world: ${what} answered ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

/** A user with a private pool and everything that hangs off it. */
export async function buildChain(h: Harness, label: string, over: { role?: 'user' | 'admin' } = {}): Promise<Chain> {
  const n = ++seq
  const user = await seedUser(h, `${label}-${n}@example.com`, { role: over.role ?? 'user' })
  const session = sessionClient(h, user.id)
  const token = tokenClient(h, user.id)
  const pool = await ok(session.post('/api/v1/pools', { name: `${label} pool ${n}`, visibility: 'private' }), 'create pool')
  const js = await ok(session.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.id }), 'mint join session')
  const first = await ok(h.client({ bearer: js.join_token }).post('/api/v1/workers/register', { hostname: `${label}-gpu-${n}`, gpus: [GPU] }), 'register fellow')
  const again = await ok(h.client({ bearer: first.node_token }).post('/api/v1/workers/register', { fellow_id: first.fellow_id, hostname: `${label}-gpu-${n}`, gpus: [GPU] }), 're-register fellow')
  const node = h.client({ bearer: again.node_token })
  await ok(node.post('/api/v1/workers/heartbeat', { status: 'idle', hardware: { gpus: [GPU] } }), 'heartbeat')
  const job = await ok(session.post('/api/v1/jobs', { name: `${label} job ${n}`, pool_id: pool.id, stages: 1 }), 'submit job')
  const servable = `${label}-model-${n}`
  await ok(node.post('/api/v1/servables', { name: servable, version: '1', format: 'gguf', size_bytes: 1024, job_id: job.id }), 'record servable')
  const ckpt = new TextEncoder().encode(`${label} checkpoint ${n}`)
  const sha256 = new Bun.CryptoHasher('sha256').update(ckpt).digest('hex')
  const up = await ok(node.post('/api/v1/artifacts/uploads', { kind: 'checkpoint', name: `${label}-${n}.ckpt`, size_bytes: ckpt.byteLength, sha256, job_id: job.id, stage: 0, step: 1 }), 'open upload')
  const artifact = await ok(node.call('PUT', `/api/v1/artifacts/uploads/${up.upload_id}?offset=0`, ckpt, { 'content-type': 'application/octet-stream' }), 'upload checkpoint')
  const pending = await ok(node.post('/api/v1/artifacts/uploads', { kind: 'file', name: 'pending.bin', size_bytes: 1024, sha256 }), 'open an upload')
  const invite = await ok(session.post(`/api/v1/pools/${pool.id}/invites`, { email: `invitee-${label}-${n}@example.com` }), 'invite')
  // Membership through the invite flow, as a person would join: through the invite's link (the
  // member's address is not verified, so the id alone is refused).
  const member = await seedUser(h, `${label}-member-${n}@example.com`)
  const inv = await ok(session.post(`/api/v1/pools/${pool.id}/invites`, { email: member.email }), 'invite member')
  const linkToken = new URL(inv.invite_link).searchParams.get('token')
  await ok(sessionClient(h, member.id).post(`/api/v1/pools/invites/${inv.id}/accept`, { token: linkToken }), 'accept invite')
  return {
    user,
    session,
    token,
    poolId: pool.id,
    joinSessionId: js.id,
    joinToken: js.join_token,
    fellowId: again.fellow_id,
    nodeToken: again.node_token,
    revokedNodeToken: first.node_token,
    jobId: job.id,
    servable,
    artifactId: artifact.artifact.id,
    uploadId: pending.upload_id,
    inviteId: invite.id,
    member,
  }
}

/** The ids matrix.ts binds path parameters to. */
export function refsOf(c: Chain) {
  return {
    userId: c.user.id,
    memberId: c.member.id,
    poolId: c.poolId,
    jobId: c.jobId,
    fellowId: c.fellowId,
    joinSessionId: c.joinSessionId,
    apiTokenId: c.token.tokenId,
    inviteId: c.inviteId,
    servable: c.servable,
    artifactId: c.artifactId,
    uploadId: c.uploadId,
  }
}

export interface World {
  admin: SeededUser
  adminSession: Client
  adminToken: Client & { tokenId: string }
  /** The caller's own chain (user_session, user_token, own_node, revoked_node). */
  mine: Chain
  /** Another person's chain (other_pool_member, foreign_node). */
  other: Chain
}

export async function buildWorld(h: Harness): Promise<World> {
  const admin = await seedUser(h, `admin-${++seq}@example.com`, { role: 'admin' })
  const mine = await buildChain(h, 'mine')
  const other = await buildChain(h, 'other')
  return { admin, adminSession: sessionClient(h, admin.id), adminToken: tokenClient(h, admin.id), mine, other }
}
