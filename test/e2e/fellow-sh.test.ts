// The join command's installer, fellow.sh, run with sh against a running dist/svc leader:
// it downloads the leader's own executable, verifies its checksum, installs it and starts the
// agent. Requires `bun run build` first.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Server, Subprocess } from 'bun'
import { runSvc, startLeader, type Leader } from '../helpers/leader'
import { until } from '../helpers/until'

let leader: Leader
let joinToken = ''
let poolId = ''
let script = ''
let auth: Record<string, string> = {}
const children: Subprocess[] = []
const servers: Server<undefined>[] = []

function canListen(port: number): boolean {
  try {
    Bun.listen({ hostname: '0.0.0.0', port, socket: { data() {} } }).stop(true)
    return true
  } catch {
    return false
  }
}

function freePort(): number {
  const l = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = l.port
  l.stop(true)
  return port
}

beforeAll(async () => {
  const port = freePort()
  leader = await startLeader({ SVC_PORT: String(port), SVC_BASE_URL: `http://127.0.0.1:${port}`, SVC_HEARTBEAT_INTERVAL_S: '1' })
  const reg = await fetch(`${leader.url}/api/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'owner@example.com', password: 'installer test password' }),
  })
  expect(reg.status).toBe(201)
  const cookie = reg.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  auth = { cookie, 'x-csrf-token': /svc_csrf=([^;]+)/.exec(cookie)![1]!, 'content-type': 'application/json' }
  const pool = await fetch(`${leader.url}/api/v1/admin/pools`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'install pool', visibility: 'private' }) })
  poolId = ((await pool.json()) as { id: string }).id
  const js = await fetch(`${leader.url}/api/v1/bootstrap/join-sessions`, { method: 'POST', headers: auth, body: JSON.stringify({ pool_id: poolId }) })
  joinToken = ((await js.json()) as { join_token: string }).join_token
  const res = await fetch(`${leader.url}/api/v1/bootstrap/fellow.sh`)
  expect(res.status).toBe(200)
  script = await res.text()
  expect(script.startsWith('#!/bin/sh')).toBe(true)
}, 30_000)

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL')
  for (const s of servers) s.stop(true)
  await Promise.all(children.map((c) => c.exited))
  leader?.proc.kill('SIGKILL')
})

/** `curl .../fellow.sh | sh -s -- ARGS`, with HOME in a temp dir; the script arrives on stdin. */
function runScript(args: string[], home: string, opts: { wait: false }): Subprocess<'pipe', 'pipe', 'pipe'>
function runScript(args: string[], home: string): Promise<{ code: number; stdout: string; stderr: string }>
function runScript(args: string[], home: string, opts: { wait?: boolean } = {}) {
  const proc = Bun.spawn(['sh', '-s', '--', ...args], {
    cwd: home,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  children.push(proc)
  proc.stdin.write(script)
  void proc.stdin.end()
  if (opts.wait === false) return proc
  return Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then(([code, stdout, stderr]) => ({ code, stdout, stderr }))
}

const sha256 = (path: string) => new Bun.CryptoHasher('sha256').update(readFileSync(path)).digest('hex')

describe('fellow.sh from the bootstrap route', () => {
  test('downloads the agent, verifies its checksum and installs a working svc', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-home-'))
    const dir = join(home, 'fellow')
    const r = await runScript(['--leader', leader.url, '--join-token', joinToken, '--dir', dir, '--no-start'], home)
    expect(r.stderr).toContain('installed')
    expect(r.code).toBe(0)
    const bin = join(dir, 'bin', 'svc')
    expect(statSync(bin).mode & 0o777).toBe(0o755)
    expect(existsSync(join(dir, 'bin', 'svc.part'))).toBe(false)
    const manifest = (await (await fetch(`${leader.url}/api/v1/bootstrap/manifest.json`)).json()) as { binary: { sha256: string } }
    expect(sha256(bin)).toBe(manifest.binary.sha256)
    expect(r.stderr).toContain(manifest.binary.sha256)
    const version = Bun.spawnSync([bin, '--version'])
    expect(version.exitCode).toBe(0)
    expect(version.stdout.toString()).toMatch(/^svc \d+\.\d+\.\d+(\+[0-9a-f]{4,40}(\.dirty)?)?\n$/)
  }, 30_000)

  test('a binary that does not match the manifest checksum fails loudly and installs nothing', async () => {
    // A leader look-alike: the real manifest, but a different binary behind it.
    const fake = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: async (req) => {
        const path = new URL(req.url).pathname
        if (path === '/api/v1/bootstrap/manifest.json') return fetch(`${leader.url}${path}`)
        if (path === '/api/v1/bootstrap/svc') return new Response('#!/bin/sh\necho tampered\n')
        return new Response('not found', { status: 404 })
      },
    })
    servers.push(fake)
    const home = mkdtempSync(join(tmpdir(), 'svc-home-'))
    const dir = join(home, 'fellow')
    const r = await runScript(['--leader', `http://127.0.0.1:${fake.port}`, '--join-token', joinToken, '--dir', dir, '--no-start'], home)
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain('checksum')
    expect(existsSync(join(dir, 'bin', 'svc'))).toBe(false)
    expect(existsSync(join(dir, 'bin', 'svc.part'))).toBe(false)
  }, 30_000)

  // The script starts the agent on the default p2p ports (5557/5558); a box already using them
  // cannot run this part.
  test.skipIf(!canListen(5557) || !canListen(5558))('without --no-start it starts the agent, which joins the pool; SIGTERM stops it cleanly', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-home-'))
    const dir = join(home, 'fellow')
    // An option fellow.sh does not know goes to the agent.
    const proc = runScript(['--leader', leader.url, '--join-token', joinToken, '--dir', dir, '--hostname', 'installed-box'], home, { wait: false })
    const outcome = await until(
      async () => {
        if (proc.exitCode !== null) return `exited with ${proc.exitCode}`
        const res = await fetch(`${leader.url}/api/v1/cluster/nodes?pool_id=${poolId}`, { headers: auth })
        const items = ((await res.json()) as { items: { state: string; connected: boolean; hostname: string }[] }).items
        return items.some((n) => n.state === 'online' && n.connected && n.hostname === 'installed-box') && 'online'
      },
      'the installed agent to come online',
      { timeoutMs: 20_000, everyMs: 100 },
    ).catch((e: Error) => e.message)
    if (outcome !== 'online') throw new Error(`the installed agent did not come online (${outcome}): ${await new Response(proc.stderr).text()}`)
    const state = join(dir, 'state', 'fellow.json')
    expect(statSync(state).mode & 0o777).toBe(0o600)
    expect(JSON.parse(readFileSync(state, 'utf8')).pool_id).toBe(poolId)
    // The token reached the agent through its environment: `ps` shows no token.
    expect(readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8')).not.toContain(joinToken)
    proc.kill('SIGTERM') // sh exec'd the agent: this is its pid
    expect(await proc.exited).toBe(0)
  }, 40_000)

  test('--service writes a systemd unit with the agent options and the token in a 0600 env file', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-home-'))
    const dir = join(home, 'fellow')
    const units = join(home, 'units')
    const etc = join(home, 'etc')
    mkdirSync(units)
    const proc = Bun.spawn(['sh', '-s', '--', '--leader', leader.url, '--join-token', joinToken, '--dir', dir, '--service', '--no-start', '--engine', 'tiny=http://127.0.0.1:9/v1', '--hostname', 'gpu "box" 50%'], {
      cwd: home,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, SVC_SYSTEMD_DIR: units, SVC_FELLOW_ETC: etc },
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    children.push(proc)
    proc.stdin.write(script)
    void proc.stdin.end()
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
    expect(stderr).toContain('svc-fellow.service')
    expect(code).toBe(0)
    const envFile = join(etc, 'svc-fellow', 'fellow.env')
    expect(statSync(envFile).mode & 0o777).toBe(0o600)
    expect(readFileSync(envFile, 'utf8')).toBe(`SVC_JOIN_TOKEN=${joinToken}\nSVC_LEADER_URL=${leader.url}\n`)
    const unit = readFileSync(join(units, 'svc-fellow.service'), 'utf8')
    expect(unit).toContain(`EnvironmentFile=${envFile}\n`)
    expect(unit).toContain(`ExecStart="${dir}/bin/svc" fellow --state-dir "${dir}/state" "--engine" "tiny=http://127.0.0.1:9/v1" "--hostname" "gpu \\"box\\" 50%%"\n`)
    expect(unit).not.toContain(joinToken)
    expect(unit).toContain('WantedBy=multi-user.target')
  }, 30_000)

  test('the join command, pasted as it is, installs with the token on no command line (ps showed it for the whole download): curl reads it from its stdin, the script it fetched carries it', async () => {
    const js = await fetch(`${leader.url}/api/v1/bootstrap/join-sessions`, { method: 'POST', headers: auth, body: JSON.stringify({ pool_id: poolId }) })
    const { command, join_token: token } = (await js.json()) as { command: string; join_token: string }
    expect(command).not.toContain('--join-token')
    const home = mkdtempSync(join(tmpdir(), 'svc-home-'))
    const [dir, units, etc, wrap] = ['fellow', 'units', 'etc', 'wrap'].map((d) => join(home, d)) as [string, string, string, string]
    mkdirSync(units)
    mkdirSync(wrap)
    // A curl that writes down its arguments (what ps would show), then is the real one.
    writeFileSync(join(wrap, 'curl'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${home}/curl-args'\nexec '${Bun.which('curl')}' "$@"\n`, { mode: 0o755 })
    const proc = Bun.spawn(['sh', '-c', `${command} --dir '${dir}' --service --no-start`], {
      cwd: home,
      // A token of an earlier join left in the shell: the pasted command's own wins.
      env: { PATH: `${wrap}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, SVC_SYSTEMD_DIR: units, SVC_FELLOW_ETC: etc, SVC_JOIN_TOKEN: 'svc_join_left_from_an_earlier_join' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    children.push(proc)
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
    expect([code, stderr]).toEqual([0, expect.stringContaining('svc-fellow.service')])
    const calls = readFileSync(join(home, 'curl-args'), 'utf8').trim().split('\n')
    expect(calls.map((c) => c.split(' ').at(-1))).toEqual([`${leader.url}/api/v1/bootstrap/fellow.sh`, `${leader.url}/api/v1/bootstrap/manifest.json`, `${leader.url}/api/v1/bootstrap/svc`])
    for (const c of calls) expect(c).not.toContain(token)
    // The token reached the installed agent's settings all the same.
    expect(readFileSync(join(etc, 'svc-fellow', 'fellow.env'), 'utf8')).toBe(`SVC_JOIN_TOKEN=${token}\nSVC_LEADER_URL=${leader.url}\n`)
  }, 30_000)

  test('fellow.sh carries only a valid join token it was fetched with', async () => {
    const carried = async (token: string | null) => {
      const text = await (await fetch(`${leader.url}/api/v1/bootstrap/fellow.sh`, { headers: token === null ? {} : { 'x-bootstrap-token': token } })).text()
      return text.split('\n').find((l) => l.startsWith("JOIN_TOKEN='")) ?? null
    }
    expect(await carried(joinToken)).toBe(`JOIN_TOKEN='${joinToken}'`)
    expect(await carried(null)).toBeNull()
    expect(await carried("svc_join_made'up")).toBeNull()
  }, 30_000)

  test('svc fellow refuses bad arguments with usage and exit code 2', async () => {
    const bogus = await runSvc(['fellow', '--bogus'])
    expect(bogus.code).toBe(2)
    expect(bogus.stderr).toContain('usage: svc')
    for (const [args, name] of [
      [['--leader', 'not a url'], '--leader'],
      [['--leader', 'http://127.0.0.1:1', '--p2p-port-base', '70000'], '--p2p-port-base'],
      [['--leader', 'http://127.0.0.1:1', '--join-token', 'svc_node_x'], '--join-token'],
      [[], '--leader'],
    ] as const) {
      const r = await runSvc(['fellow', ...args])
      expect(r.code).toBe(2)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr).toContain(name)
    }
  }, 20_000)
})
