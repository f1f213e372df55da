// `svc fellow --once`, the connectivity check, end to end with the built dist/svc as leader and
// agents. Run on the state directory of an agent that is running, it must leave that agent alone:
// no new node token (a re-registration revokes the running agent's, which then falls back to a
// join token that may have expired: it exits), no identity written, no p2p ports taken. On a
// state directory without an identity it registers, as a first start would.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { killAll, nodes, poll, startCluster, startFellow, stopCluster, waitOnline, type Cluster, type Fellow } from '../helpers/cluster'
import { runSvc } from '../helpers/leader'
import { until } from '../helpers/until'

afterAll(killAll)

const msgs = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; hint?: string; with?: string; error?: string })

describe('svc fellow --once', () => {
  let c: Cluster
  let running: Fellow
  let port = 0
  let joinId = ''

  test('an agent joins with a join token that is then revoked (as one expires after 24 h)', async () => {
    c = await startCluster('tunnel')
    const js = await c.api<{ id: string; join_token: string }>('POST', '/api/v1/bootstrap/join-sessions', { pool_id: c.poolId })
    expect(js.status).toBe(201)
    joinId = js.body.id
    running = startFellow({ ...c, joinToken: js.body.join_token }, 'running')
    await waitOnline(c, 1)
    const starting = await until(() => running.logs.map((l) => JSON.parse(l) as { msg: string; p2p?: string }).find((l) => l.msg === 'agent starting') ?? null, 'the start line')
    port = Number(starting.p2p!.split(':').at(-1))
    expect((await c.api('DELETE', `/api/v1/bootstrap/join-sessions/${joinId}`)).status).toBe(204)
  }, 60_000)

  test('beside it, on its state directory and p2p ports: one heartbeat with the saved token; nothing rotated or written; the agent runs on', async () => {
    const state = join(running.dir, 'state')
    const before = readFileSync(join(state, 'fellow.json'), 'utf8')
    const r = await runSvc(['fellow', '--leader', c.leader.url, '--state-dir', state, '--once', '--p2p-port-base', String(port), '--advertise-host', '127.0.0.1'])
    const out = msgs(r.stdout)
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' })
    expect(out.find((l) => l.msg === '--once: the leader took a heartbeat')?.with).toBe('the saved node token')
    expect(out.some((l) => l.msg === 'registered' || l.msg === 'cannot listen for p2p frames')).toBe(false)
    expect(readFileSync(join(state, 'fellow.json'), 'utf8')).toBe(before)
    // Several heartbeat intervals (1 s here) later the running agent still uses its token.
    await Bun.sleep(3500)
    expect(running.proc.exitCode).toBeNull()
    expect(running.logs.filter((l) => /node token refused|registration refused/.test(l))).toEqual([])
    expect((await nodes(c)).find((n) => n.fellow_id === running.id())?.state).toBe('online')
  }, 30_000)

  test('a state directory without an identity registers and keeps it, as a first start does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-once-'))
    const r = await runSvc(['fellow', '--leader', c.leader.url, '--join-token', c.joinToken, '--state-dir', join(dir, 'state'), '--once', '--p2p-port-base', String(port), '--advertise-host', '127.0.0.1', '--hostname', 'checked'])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' })
    const out = msgs(r.stdout)
    expect(out.some((l) => l.msg === 'registered')).toBe(true)
    expect(out.find((l) => l.msg === '--once: the leader took a heartbeat')?.with).toBe('the new node token')
    const id = (JSON.parse(readFileSync(join(dir, 'state', 'fellow.json'), 'utf8')) as { fellow_id: string }).fellow_id
    expect((await nodes(c)).some((n) => n.fellow_id === id)).toBe(true)

    // Removed by its owner: the saved token no longer works, and the check says what to do.
    expect((await c.api('DELETE', `/api/v1/workers/${id}`)).status).toBe(204)
    const again = await runSvc(['fellow', '--leader', c.leader.url, '--state-dir', join(dir, 'state'), '--once', '--p2p-port-base', String(port), '--advertise-host', '127.0.0.1'])
    expect(again.code).toBe(1)
    const refused = msgs(again.stdout).find((l) => l.msg === '--once: heartbeat refused')
    expect(refused?.hint).toContain('start the agent without --once, with a join token')
    expect(existsSync(join(dir, 'state', 'fellow.json'))).toBe(true)
  }, 30_000)

  test('the cluster stops cleanly', async () => {
    await until(async () => ((await nodes(c)).find((n) => n.fellow_id === running.id())?.state === 'online' ? true : null), 'the agent online', poll(5000))
    c.fellows.splice(0, c.fellows.length, running)
    await stopCluster(c)
  }, 30_000)
})
