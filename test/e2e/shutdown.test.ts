// SIGTERM to a leader in use (`systemctl restart`, `docker stop`): fellows connected and long-
// polling, someone following a machine's log. The stop must not wait on what lasts as long as its
// client stays: it ends those, exits 0 with nothing cut, and the fellows come back to the next
// leader on the same state. A request under way gets SVC_SHUTDOWN_GRACE_S to finish, and is cut
// after it. (Until this test, a leader with one fellow connected never stopped on SIGTERM.)
import { afterAll, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { killAll, poll, startCluster, startFellow, stopCluster, waitOnline } from '../helpers/cluster'
import { SVC_BIN, startLeader } from '../helpers/leader'
import { call, registerUser } from '../helpers/e2e'
import { until } from '../helpers/until'
import { track } from '../helpers/children'

afterAll(killAll)

test('a leader with a fellow connected and a log follower stops at once on SIGTERM; the fellow comes back to the next leader', async () => {
  const c = await startCluster('tunnel')
  const f = startFellow(c, 'gpu-a')
  const [node] = await waitOnline(c, 1)
  const follower = await fetch(`${c.leader.url}/api/v1/workers/${node!.fellow_id}/logs/stream`, { headers: { cookie: c.cookie } })
  expect(follower.status).toBe(200)
  const followed = follower.text().then(
    () => 'ended',
    (e: Error) => `broken: ${e.message}`,
  )
  expect(await c.leader.stop()).toBe(0)
  expect(await followed).toBe('ended')
  expect(c.leader.logs.some((l) => l.includes('"leader stopped"'))).toBe(true)
  expect(c.leader.logs.filter((l) => l.includes('requests cut at shutdown'))).toEqual([])
  // The fellow stays, and is back online with the leader that starts on the same state and port.
  expect(f.proc.exitCode).toBeNull()
  const port = new URL(c.leader.url).port
  c.leader = await startLeader({ SVC_PORT: port, SVC_BASE_URL: c.leader.url, SVC_HEARTBEAT_INTERVAL_S: '1', SVC_PIPELINE_TRANSPORT: 'tunnel' }, c.leader.dir)
  expect((await waitOnline(c, 1))[0]!.fellow_id).toBe(node!.fellow_id)
  await stopCluster(c)
})

/** A PUT of `total` bytes over a raw socket: the headers and `first` bytes now, the rest when told. */
function slowPut(url: string, path: string, token: string, total: number, first: number): { socket: Socket; rest(): void; answer: Promise<string> } {
  const u = new URL(url)
  const socket = connect(Number(u.port), u.hostname)
  let answer = ''
  socket.on('data', (d) => (answer += d.toString()))
  socket.on('error', () => {})
  socket.write(`PUT ${path} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${total}\r\n\r\n`)
  socket.write(new Uint8Array(first))
  return { socket, rest: () => socket.write(new Uint8Array(total - first)), answer: new Promise((resolve) => socket.on('close', () => resolve(answer))) }
}

test('a request under way finishes within SVC_SHUTDOWN_GRACE_S; one still running after it is cut with a warning', async () => {
  for (const finishes of [true, false]) {
    const leader = await startLeader({ SVC_SHUTDOWN_GRACE_S: '2' })
    // A fellow of a pool (one that joined without a token stores only its job stages' files).
    const admin = await registerUser(leader.url, 'admin@example.com', 'a long password')
    const pool = (await admin.call('POST', '/api/v1/pools', { name: 'Lab' })).body.id as string
    const join = (await admin.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: pool })).body.join_token as string
    const reg = await call(leader.url, 'POST', '/api/v1/workers/register', { bearer: join, body: { hostname: 'gpu' } })
    const token = reg.body.node_token as string
    const size = 64 * 1024
    const sha256 = new Bun.CryptoHasher('sha256').update(new Uint8Array(size)).digest('hex')
    const up = await call(leader.url, 'POST', '/api/v1/artifacts/uploads', { bearer: token, body: { kind: 'file', name: 'zeros.bin', size_bytes: size, sha256 } })
    expect(up.status).toBe(201)
    const put = slowPut(leader.url, `/api/v1/artifacts/uploads/${up.body.upload_id}?offset=0`, token, size, 1024)
    await Bun.sleep(200) // the first bytes are in
    const exited = leader.stop()
    await Bun.sleep(200) // the stop has begun: no new connections
    expect(await fetch(`${leader.url}/api/v1/health`).then((r) => r.status, () => 'refused')).toBe('refused')
    if (finishes) put.rest()
    expect(await exited).toBe(0)
    const answer = await put.answer
    if (finishes) {
      expect(answer).toStartWith('HTTP/1.1 201')
      expect(leader.logs.filter((l) => l.includes('requests cut at shutdown'))).toEqual([])
    } else {
      expect(answer).not.toContain('HTTP/1.1 201')
      expect(leader.logs.some((l) => l.includes('"requests cut at shutdown"') && l.includes('"grace_s":2'))).toBe(true)
    }
    expect(leader.logs.some((l) => l.includes('"leader stopped"'))).toBe(true)
  }
})

test('svc jobs watch, jobs logs --follow and audit list --follow ride out a leader restart; the jobs ones then end with the job', async () => {
  const c = await startCluster('tunnel')
  startFellow(c, 'gpu-b')
  await waitOnline(c, 1)
  const token = (await c.api<{ token: string }>('POST', '/api/v1/api-tokens', { name: 'cli' })).body.token
  const job = await c.api<{ id: string }>('POST', '/api/v1/jobs', { name: 'long', pool_id: c.poolId, stages: 1, config: { steps: 100_000_000, report_every: 100 } })
  expect(job.status).toBe(201)
  const jobId = job.body.id
  await until(async () => (await c.api<{ status: string; step: number }>('GET', `/api/v1/jobs/${jobId}`)).body.step > 0 || null, 'the job running', poll(20_000))
  const cli = (args: string[]) => {
    // Tracked: a follower waits for an away leader for good, and outlived a test that failed.
    const proc = track(Bun.spawn([SVC_BIN, ...args], { env: { PATH: process.env.PATH ?? '', SVC_LEADER_URL: c.leader.url, SVC_TOKEN: token, SVC_CLI_CONFIG: join(c.leader.dir, 'cli.toml') }, stdout: 'pipe', stderr: 'pipe' }))
    const lines: string[] = []
    let err = ''
    const read = (async () => {
      for await (const chunk of proc.stdout) lines.push(...new TextDecoder().decode(chunk).split('\n').filter((l) => l !== ''))
    })()
    const readErr = (async () => {
      for await (const chunk of proc.stderr) err += new TextDecoder().decode(chunk)
      return err
    })()
    return { proc, lines, err: () => err, done: Promise.all([proc.exited, read, readErr]) }
  }
  const watch = cli(['jobs', 'watch', jobId])
  const follow = cli(['jobs', 'logs', jobId, '--follow'])
  // It exited 1 at the first poll the restarting leader did not answer (its help says: until Ctrl-C).
  const audit = cli(['audit', 'list', '--follow', '--json'])
  // The agent ships its log every 2 s.
  await until(() => follow.lines.length > 0 || null, 'log lines before the restart', poll(20_000))
  await until(() => audit.lines.some((l) => JSON.parse(l).kind === 'job.submit') || null, 'the audit entries before the restart', poll(20_000))
  expect(await c.leader.stop()).toBe(0)
  const before = follow.lines.length
  await until(() => audit.err().includes('still following') || null, 'the audit follower noticing the leader is away', poll(10_000))
  c.leader = await startLeader({ SVC_PORT: new URL(c.leader.url).port, SVC_BASE_URL: c.leader.url, SVC_HEARTBEAT_INTERVAL_S: '1', SVC_PIPELINE_TRANSPORT: 'tunnel' }, c.leader.dir)
  await waitOnline(c, 1)
  // Lines the fellow ships to the new leader reach the follower, which reconnected on its own.
  await until(() => follow.lines.length > before || null, 'log lines after the restart', poll(20_000))
  expect((await c.api('DELETE', `/api/v1/jobs/${jobId}`)).status).toBe(200)
  const [watchCode, , watchErr] = await watch.done
  // Each may say it waited for the leader (when it found it away; not when it reconnected after
  // the restart), and that it was back; then the watch says how the job ended.
  const waited = ['svc: cannot reach the leader', 'svc: the leader answers again; following']
  const lines = (err: string) => err.trim().split('\n').filter((l) => l !== '').map((l) => (l.startsWith(waited[0]!) ? waited[0] : l))
  expect([watchCode, lines(watchErr)]).toEqual([1, [...(lines(watchErr).length > 1 ? waited : []), 'svc: job long cancelled: cancelled by a user']])
  const [followCode, , followErr] = await follow.done
  expect([followCode, lines(followErr)]).toEqual([0, lines(followErr).length > 0 ? waited : []])
  await until(() => audit.lines.some((l) => JSON.parse(l).kind === 'job.cancel') || null, 'the cancel in the audit follower after the restart', poll(20_000))
  expect(audit.err()).toContain('the leader answers again; following')
  audit.proc.kill('SIGINT')
  await audit.done
  await stopCluster(c)
})

test('a purge while jobs watch and jobs logs --follow run ends both (they waited for an end that never came)', async () => {
  const c = await startCluster('tunnel')
  startFellow(c, 'gpu-p')
  await waitOnline(c, 1)
  const token = (await c.api<{ token: string }>('POST', '/api/v1/api-tokens', { name: 'cli' })).body.token
  const job = await c.api<{ id: string }>('POST', '/api/v1/jobs', { name: 'doomed', pool_id: c.poolId, stages: 1, config: { steps: 100_000_000, report_every: 100 } })
  expect(job.status).toBe(201)
  await until(async () => (await c.api<{ step: number }>('GET', `/api/v1/jobs/${job.body.id}`)).body.step > 0 || null, 'the job running', poll(20_000))
  const cli = (args: string[]) => {
    // Tracked: a follower waits for an away leader for good, and outlived a test that failed.
    const proc = track(Bun.spawn([SVC_BIN, ...args], { env: { PATH: process.env.PATH ?? '', SVC_LEADER_URL: c.leader.url, SVC_TOKEN: token, SVC_CLI_CONFIG: join(c.leader.dir, 'cli.toml') }, stdout: 'pipe', stderr: 'pipe' }))
    let printed = 0
    const read = (async () => {
      for await (const chunk of proc.stdout) printed += chunk.byteLength
    })()
    return { proc, printed: () => printed, done: Promise.all([proc.exited, read, new Response(proc.stderr).text()]) }
  }
  const watch = cli(['jobs', 'watch', job.body.id])
  const follow = cli(['jobs', 'logs', job.body.id, '--follow'])
  // Both have found the job and print: the progress line, the stage's log.
  await until(() => (watch.printed() > 0 && follow.printed() > 0) || null, 'both following', poll(20_000))
  expect((await c.api<{ purged: number }>('DELETE', '/api/v1/jobs')).body.purged).toBe(1)
  const [watchCode, , watchErr] = await watch.done
  // 3: it could not follow the job to its end (1 says the job failed or was cancelled).
  expect([watchCode, watchErr.trim()]).toEqual([3, 'svc: job doomed no longer exists: it was deleted while it was watched (with its pool, or by an admin\'s purge)'])
  const [followCode, , followErr] = await follow.done
  expect([followCode, followErr.trim()]).toEqual([0, `job ${job.body.id} no longer exists (deleted); stopped following`])
  await stopCluster(c)
}, 60_000)
