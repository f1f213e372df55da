// Script payloads in every user-controlled field, set through the API the way a person would, for
// the XSS checks on the server-rendered HTML (test/http/xss.test.ts) and in Chromium
// (test/browser/xss.test.ts).
import { expect } from 'bun:test'
import { seedUser, sessionClient, type Client, type Harness } from './harness'
import { GPU } from './world'

export const PAYLOADS = [
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  "'><svg onload=alert(1)>",
  '</title><script>alert(1)</script><!--',
]

export interface XssOwner {
  payload: string
  userId: string
  session: Client
  poolId: string
  jobId: string
}

export interface XssWorld {
  adminId: string
  admin: Client
  owners: XssOwner[]
  /** Fields the API refuses outright for these payloads (so nothing to render): what and status. */
  refused: string[]
}

/** One owner per payload: display name, pool name and description, job name and fellow hostname all set to it. */
export async function buildXssWorld(h: Harness): Promise<XssWorld> {
  const admin = await seedUser(h, 'xss-admin@example.com', { role: 'admin' })
  const A = sessionClient(h, admin.id)
  const owners: XssOwner[] = []
  const refused: string[] = []
  for (const [i, payload] of PAYLOADS.entries()) {
    const u = await seedUser(h, `xss-owner-${i}@example.com`)
    // Display names are set by the person at registration or by an admin; the admin route is
    // the one that needs no password hash here.
    const named = await A.patch(`/api/v1/admin/users/${u.id}`, { display_name: payload })
    expect(named.status).toBe(200)
    const s = sessionClient(h, u.id)
    const pool = await s.post('/api/v1/pools', { name: payload, description: `about ${payload}` })
    expect(pool.status).toBe(201)
    expect(pool.body.name).toBe(payload) // stored as given: escaping is the renderer's job
    const job = await s.post('/api/v1/jobs', { name: payload, pool_id: pool.body.id })
    expect(job.status).toBe(201)
    // Invite emails and servable names are constrained by format and pattern: payloads are refused.
    const invite = await s.post(`/api/v1/pools/${pool.body.id}/invites`, { email: `${payload}@example.com` })
    if (invite.status === 422) refused.push(`invite email ${JSON.stringify(payload)}: 422`)
    else expect(invite.status).toBeLessThan(300)
    const js = (await s.post('/api/v1/bootstrap/join-sessions', { pool_id: pool.body.id })).body
    const reg = (await h.client({ bearer: js.join_token }).post('/api/v1/workers/register', { hostname: payload, gpus: [GPU] })).body
    const servable = await h.client({ bearer: reg.node_token }).post('/api/v1/servables', { name: payload, version: '1', format: 'gguf', size_bytes: 1, job_id: job.body.id })
    if (servable.status === 422) refused.push(`servable name ${JSON.stringify(payload)}: 422`)
    else expect(servable.status).toBeLessThan(300)
    owners.push({ payload, userId: u.id, session: s, poolId: pool.body.id, jobId: job.body.id })
  }
  return { adminId: admin.id, admin: A, owners, refused }
}
