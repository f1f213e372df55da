// The operator CLI as an operator uses it: the built dist/svc against a running leader (and a
// fellow it adds with the join command it printed). Then every command's --help, and every
// command fed bad input. Requires `bun run build` first.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { SVC_BIN, runSvc, startLeader, type Leader } from '../helpers/leader'
import { call, closedPort, mintToken, registerUser, type Session } from '../helpers/e2e'
import { freeBase } from '../helpers/listen'
import { until } from '../helpers/until'
import { COMMANDS } from '../../src/cli/commands'
import { allFlags, type Command } from '../../src/cli/spec'

let leader: Leader
let admin: Session & { userId: string }
let home: string
const children: Subprocess[] = []

beforeAll(async () => {
  leader = await startLeader({ SVC_HEARTBEAT_INTERVAL_S: '1' })
  admin = await registerUser(leader.url, 'admin@example.com', 'cli admin password') // the first user: an admin
  home = mkdtempSync(join(tmpdir(), 'svc-cli-home-'))
})

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL')
  await Promise.all(children.map((c) => c.exited))
  await leader?.stop()
})

/** dist/svc with this test's own config file (no token in the environment unless given). */
const svc = (args: string[], opts: { stdin?: string; env?: Record<string, string> } = {}) =>
  runSvc(args, { stdin: opts.stdin, env: { HOME: home, SVC_CLI_CONFIG: join(home, 'config.toml'), ...opts.env } })

/**
 * A TCP proxy to the leader that cuts the first connection whose request starts with `request`
 * once it has passed `after` bytes of it on (a network failure in the middle of an upload).
 */
function cuttingProxy(port: string, request: string, after: number) {
  let cuts = 0
  type Side = { peer: import('bun').Socket<Side> | null; sent: number; cut: boolean; queue: Uint8Array[] }
  const server = Bun.listen<Side>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        client.data = { peer: null, sent: 0, cut: false, queue: [] }
        void Bun.connect<Side>({
          hostname: '127.0.0.1',
          port: Number(port),
          socket: {
            open(upstream) {
              upstream.data = { peer: client, sent: 0, cut: false, queue: [] }
              client.data.peer = upstream
              for (const q of client.data.queue.splice(0)) upstream.write(q)
            },
            data: (upstream, chunk) => void upstream.data.peer?.write(chunk),
            close: (upstream) => void upstream.data.peer?.end(),
          },
        })
      },
      data(client, chunk) {
        const d = client.data
        // Requests may follow one another on a kept-alive connection: count from this one's start.
        if (cuts === 0 && !d.cut && new TextDecoder().decode(chunk.subarray(0, request.length)) === request) (d.cut = true), (d.sent = 0)
        d.sent += chunk.byteLength
        if (d.cut && d.sent > after) {
          cuts++
          d.cut = false
          client.terminate()
          d.peer?.terminate()
          return
        }
        if (d.peer) d.peer.write(chunk)
        else d.queue.push(new Uint8Array(chunk))
      },
      close: (client) => void client.data.peer?.end(),
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, cuts: () => cuts, stop: () => server.stop(true) }
}

/** One line on stderr, and nothing that looks like a stack trace. */
function oneClearLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n')
  expect([stderr, lines.length]).toEqual([stderr, 1])
  expect(stderr).not.toMatch(/^\s+at |Error:|\.ts:\d+/m)
  return lines[0]!
}

describe('svc against a running leader', () => {
  test('login, a pool, its join command starts a fellow, a job watched to the end, chat, and a revoked token', async () => {
    const token = await mintToken(admin, 'cli e2e')
    const login = await svc(['login', leader.url, '--name', 'lab', '--token-stdin'], { stdin: `${token}\n` })
    expect([login.code, login.stderr]).toEqual([0, ''])
    expect(login.stdout).toContain('as admin@example.com (admin)')
    expect(statSync(join(home, 'config.toml')).mode & 0o777).toBe(0o600)

    const pool = await svc(['pools', 'create', 'CLI lab', '--description', 'e2e', '--quiet'])
    expect(pool.code).toBe(0)
    const poolId = pool.stdout.trim()
    expect((await svc(['pools', 'list'])).stdout).toMatch(new RegExp(`${poolId}\\s+cli-lab\\s+CLI lab\\s+private`))

    // The printed join command, run the way its flags say (the installer part is test/e2e/fellow-sh.test.ts).
    const jc = await svc(['pools', 'join-command', 'cli-lab'])
    expect(jc.code).toBe(0)
    const line = jc.stdout.trim()
    expect(line.split('\n')).toHaveLength(1)
    const leaderUrl = /--leader '([^']+)'/.exec(line)![1]!
    const joinToken = /'X-Bootstrap-Token: (svc_join_[^']+)'/.exec(line)![1]!
    const dir = mkdtempSync(join(tmpdir(), 'svc-cli-fellow-'))
    const fellow = Bun.spawn([SVC_BIN, 'fellow', '--leader', leaderUrl, '--join-token', joinToken, '--state-dir', join(dir, 'state'), '--hostname', 'cli-box', '--advertise-host', '127.0.0.1', '--p2p-port-base', String(freeBase())], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '' },
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: 'ignore',
    })
    children.push(fellow)
    type Node = { fellow_id: string; hostname: string; state: string; connected: boolean; pool_id: string }
    const node = await until(
      async () => {
        const r = await svc(['fellows', 'list', '--json'])
        return (JSON.parse(r.stdout) as { items: Node[] }).items.find((n) => n.hostname === 'cli-box' && n.state === 'online' && n.connected)
      },
      'the fellow online in svc fellows list --json',
      { timeoutMs: 20_000, everyMs: 300 },
    )
    expect(node.pool_id).toBe(poolId)
    expect((await svc(['fellows', 'list'])).stdout).toMatch(/cli-box\s+online\s+idle/)

    const submit = await svc(['jobs', 'submit', 'cli-job', '--pool', 'cli-lab', '--set', 'steps=3000', '--set', 'report_every=100', '--quiet'])
    expect([submit.code, submit.stderr]).toEqual([0, ''])
    const jobId = submit.stdout.trim()
    const watch = await svc(['jobs', 'watch', jobId])
    expect([watch.code, watch.stderr]).toEqual([0, ''])
    const lines = watch.stdout.trim().split('\n')
    expect(lines.at(-1)).toMatch(/^job cli-job completed at step 3000, loss \d/)
    expect(lines.some((l) => l.includes('3000/3000 100 %'))).toBe(true)
    const shown = JSON.parse((await svc(['jobs', 'show', 'cli-job', '--json'])).stdout) as { status: string; assignments: { fellow_id: string }[]; config: Record<string, unknown> }
    expect(shown.status).toBe('completed')
    // Found by name in the list (summaries), shown whole: with its config.
    expect(shown.config).toMatchObject({ steps: 3000, report_every: 100 })
    expect(shown.assignments.map((a) => a.fellow_id)).toEqual([node.fellow_id])
    // The agent ships its log every 2 s: the job may end before its first lines arrive.
    const logs = await until(
      async () => {
        const r = await svc(['jobs', 'logs', jobId])
        return r.stdout.includes('"registered"') ? r : null
      },
      'the fellow\'s "registered" line in svc jobs logs',
      { timeoutMs: 10_000, everyMs: 500 },
    )
    expect([logs.code, logs.stderr]).toEqual([0, ''])

    await until(async () => (await svc(['models', 'list', '--quiet'])).stdout.split('\n').includes('tiny-llm'), 'tiny-llm in svc models list', { timeoutMs: 10_000, everyMs: 300 })
    const chat = await svc(['chat', 'tiny-llm', 'It was the best of', '--max-tokens', '6'])
    expect(chat.code).toBe(0)
    expect(chat.stdout.trim().split(/\s+/)).toHaveLength(6)

    // Revoking the token the CLI uses: the next command fails with exit 1 and says why in one line.
    const revoke = await svc(['tokens', 'revoke', 'cli e2e'])
    expect([revoke.code, revoke.stderr]).toEqual([0, ''])
    const after = await svc(['pools', 'list'])
    expect(after.code).toBe(1)
    expect(after.stdout).toBe('')
    expect(oneClearLine(after.stderr)).toContain('the leader refused the token')

    const logout = await svc(['logout'])
    expect(logout.code).toBe(0)
    const none = await svc(['pools', 'list'])
    expect([none.code, oneClearLine(none.stderr)]).toEqual([1, 'svc: no leader: run `svc login URL`, or pass --leader URL (or set SVC_LEADER_URL)'])
    // SIGHUP, as when the terminal the agent ran in closes, stops it cleanly like SIGTERM does
    // (test/e2e/fellow-sh.test.ts): exit 0, after saying goodbye.
    fellow.kill('SIGHUP')
    expect(await fellow.exited).toBe(0)
  }, 60_000)

  test('admin restore refuses while the leader has the state file open; doctor passes on it', async () => {
    const db = join(leader.dir, 'state', 'join_state.sqlite3')
    const copy = join(mkdtempSync(join(tmpdir(), 'svc-cli-backup-')), 'copy.sqlite3')
    expect((await svc(['admin', 'backup', copy, '--db', db])).code).toBe(0)
    const r = await svc(['admin', 'restore', copy, '--db', db])
    expect(r.code).toBe(1)
    expect(oneClearLine(r.stderr)).toMatch(new RegExp(`^svc: ${db.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is in use by process \\d+`))
    const doc = await svc(['admin', 'doctor', '--db', copy])
    expect([doc.code, doc.stdout]).toEqual([0, 'ok     integrity\nok     foreign-keys\nok     migrations\nok     user-counts\nok     user-search\n'])
    // Stopped, the copy goes in place and the old file is kept.
    const other = join(mkdtempSync(join(tmpdir(), 'svc-cli-restore-')), 'state.sqlite3')
    expect((await svc(['admin', 'backup', other, '--db', db])).code).toBe(0)
    const ok = await svc(['admin', 'restore', copy, '--db', other])
    expect([ok.code, ok.stderr]).toEqual([0, ''])
    expect(ok.stdout).toContain(`the file it replaced is kept as ${other}.pre-restore-`)
  })
})

describe('the other commands against a running leader', () => {
  test('whoami, tokens, pools invite and delete, fellows show/release/remove, jobs pause/resume/checkpoint/cancel, users, audit: each does what its help says', async () => {
    const env = { SVC_LEADER_URL: leader.url, SVC_TOKEN: await mintToken(admin, 'rest e2e') }
    const ok = async (args: string[], stdin?: string) => {
      const r = await svc(args, { env, stdin })
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, ''])
      return r.stdout
    }
    expect(await ok(['whoami'])).toStartWith(`admin@example.com (admin, active) at ${leader.url}`)
    // The chat clients' base URL (…/api/v1) pasted as the leader's: taken as the leader's base.
    expect(await ok(['whoami', '--leader', `${leader.url}/api/v1/`])).toStartWith(`admin@example.com (admin, active) at ${leader.url},`)
    const pasted = await svc(['login', `${leader.url}/api/v1`, '--token-stdin'], { stdin: `${env.SVC_TOKEN}\n`, env: { SVC_CLI_CONFIG: join(home, 'pasted.toml') } })
    expect([pasted.code, pasted.stderr, pasted.stdout]).toEqual([0, '', expect.stringMatching(new RegExp(`^logged in to ${leader.url} as admin@example.com`))])

    // A token minted with the password (a token cannot mint tokens), listed, by name.
    // The token alone on stdout (for `T=$(svc tokens create ...)`), what it is on stderr.
    const minted = await svc(['tokens', 'create', 'nightly', '--password-stdin', '--expires-in-days', '30'], { env, stdin: 'cli admin password\n' })
    expect([minted.code, minted.stdout]).toEqual([0, expect.stringMatching(/^svc_pat_\S+\n$/)])
    expect(minted.stderr).toStartWith('token "nightly"')
    expect(await ok(['tokens', 'list'])).toMatch(/nightly/)
    // Someone else's token of the same name: the admin's list says whose each is, and the name
    // means the admin's own (another's goes by its id).
    const dora = await registerUser(leader.url, 'dora@example.org', 'dora has a long password')
    const doraToken = await dora.call('POST', '/api/v1/api-tokens', { name: 'dora-only' })
    expect(doraToken.status).toBe(201)
    const doraId = doraToken.body.id as string
    expect(await ok(['tokens', 'list'])).toMatch(/dora-only\s+dora@example\.org/)
    const others = await svc(['tokens', 'revoke', 'dora-only'], { env })
    expect([others.code, others.stderr]).toEqual([1, `svc: the API token "dora-only" is dora@example.org's, not yours: give its id to revoke it (${doraId})\n`])
    await ok(['tokens', 'revoke', doraId])

    // A pool: an invite (no mail server: the link is printed), a fellow that joins it, a job on it.
    const poolId = (await ok(['pools', 'create', 'Rest lab', '--quiet'])).trim()
    expect(await ok(['pools', 'invite', 'rest-lab', 'bob@example.org'])).toMatch(/^invited bob@example\.org to rest-lab until .*\ninvite link \(mailed when SMTP is set up; else pass it on\): http\S+\/dashboard\?invite=\S+&token=\S+\n$/)
    const joinToken = (await admin.call('POST', '/api/v1/bootstrap/join-sessions', { pool_id: poolId })).body.join_token as string
    const reg = await call(leader.url, 'POST', '/api/v1/workers/register', { bearer: joinToken, body: { hostname: 'rest-box' } })
    const node = reg.body.node_token as string
    expect((await call(leader.url, 'POST', '/api/v1/workers/heartbeat', { bearer: node, body: { status: 'idle' } })).status).toBe(200)
    expect(await ok(['fellows', 'show', 'rest-box'])).toMatch(new RegExp(`^hostname:\\s+rest-box\n(.*\n)*pool:\\s+rest-lab \\(${poolId}\\)$`, 'm'))
    // Without --pool: the caller's only pool, else a usage error naming them (a plain user's job
    // went to the default pool: "Pool not found").
    const bare = await svc(['jobs', 'submit', 'bare-job'], { env })
    expect([bare.code, bare.stderr.split('\n')[0]]).toEqual([2, expect.stringMatching(/^svc: you are in \d+ pools \(.*rest-lab.*\): --pool POOL names one$/)])
    const jobId = (await ok(['jobs', 'submit', 'rest-job', '--pool', 'rest-lab', '--quiet'])).trim()
    expect(await ok(['jobs', 'show', jobId])).toMatch(new RegExp(`^pool:\\s+rest-lab \\(${poolId}\\)$`, 'm'))
    expect(JSON.parse(await ok(['jobs', 'show', jobId, '--json'])).pool_id).toBe(poolId)
    const status = async () => (JSON.parse(await ok(['jobs', 'show', jobId, '--json'])) as { status: string }).status
    await until(async () => ((await status()) === 'scheduled' ? true : null), 'the job placed on rest-box', { timeoutMs: 10_000, everyMs: 200 })
    await ok(['jobs', 'pause', jobId])
    expect(await status()).toBe('paused')
    await ok(['jobs', 'resume', jobId])
    expect(await status()).toBe('running')
    expect(await ok(['jobs', 'checkpoint', jobId])).toBe('asked 1 fellow(s) of job rest-job to checkpoint\n')
    // The fellow got the signals (in its next heartbeat: it has no socket).
    const signals = (await call(leader.url, 'POST', '/api/v1/workers/heartbeat', { bearer: node, body: { status: 'running', job_id: jobId } })).body.pending_signals as { signal: string }[]
    expect(signals.map((x) => x.signal)).toEqual(expect.arrayContaining(['START', 'PAUSE', 'CHECKPOINT']))
    await ok(['jobs', 'cancel', jobId])
    expect(await status()).toBe('cancelled')
    const cancelled = await svc(['jobs', 'cancel', jobId], { env })
    expect([cancelled.code, oneClearLine(cancelled.stderr)]).toEqual([1, expect.stringContaining('cancelled')])

    // A pool with a fellow attached is not deleted without --force; the refusal says it in the CLI's words.
    const attached = await svc(['pools', 'delete', 'rest-lab'], { env })
    expect([attached.code, attached.stderr]).toEqual([1, 'svc: pool rest-lab has 1 fellow attached: svc fellows remove them first, or svc pools delete rest-lab --force detaches them (they get STOP)\n'])

    // Release (the pool lets it go), then remove (its token dies).
    await ok(['fellows', 'release', 'rest-box'])
    await ok(['fellows', 'remove', reg.body.fellow_id as string])
    expect((await call(leader.url, 'POST', '/api/v1/workers/heartbeat', { bearer: node, body: { status: 'idle' } })).status).toBe(401)
    await ok(['pools', 'delete', 'rest-lab'])
    const pools = await svc(['pools', 'list'], { env })
    expect([pools.code, pools.stdout.includes('rest-lab')]).toEqual([0, false])

    // Users: one registers; the admin disables, enables and deletes the account.
    await registerUser(leader.url, 'carol@example.org', 'carol has a long password')
    expect(await ok(['users', 'list', '--search', 'carol'])).toMatch(/carol@example\.org\s.*active/)
    await ok(['users', 'disable', 'carol@example.org'])
    expect(await ok(['users', 'list', '--search', 'carol'])).toMatch(/disabled/)
    await ok(['users', 'enable', 'carol@example.org'])
    await ok(['users', 'delete', 'carol@example.org', '--yes'])
    const gone = await svc(['users', 'list', '--search', 'carol'], { env })
    expect([gone.code, gone.stdout, gone.stderr]).toEqual([0, '', 'no users match\n'])
    const past = await svc(['users', 'list', '--page', '99'], { env })
    expect([past.code, past.stdout]).toEqual([0, ''])
    expect(past.stderr).toMatch(/^page 99 is past the last one \(1; \d+ users\)\n$/)

    // All of it is in the audit log.
    const audit = await ok(['audit', 'list', '--page-size', '200'])
    for (const kind of ['job.cancel', 'worker.release', 'worker.remove', 'pool.delete', 'admin.user.status', 'admin.user.delete']) expect([kind, audit.includes(kind)]).toEqual([kind, true])
    // A page of a longer log says, on stderr, where the next one starts; that cursor goes on.
    const first = await svc(['audit', 'list', '--page-size', '2'], { env })
    const cursor = /^more entries: --cursor (\S+) for the next 2\n$/.exec(first.stderr)?.[1]
    expect(cursor).toBeDefined()
    const next = await svc(['audit', 'list', '--page-size', '2', '--cursor', cursor!], { env })
    expect([next.code, next.stdout.split('\n')[1] !== first.stdout.split('\n')[1]]).toEqual([0, true])
  }, 60_000)

  test('a shown-once token that could not be shown (standard output a full disk) is revoked; login checks its config file before it mints one', async () => {
    const env = { HOME: home, PATH: process.env.PATH ?? '', SVC_LEADER_URL: leader.url, SVC_TOKEN: await mintToken(admin, 'full disk e2e') }
    const live = async () => ((await admin.call('GET', '/api/v1/api-tokens')).body.items as { name: string; revoked_at: string | null }[]).filter((t) => t.revoked_at === null).map((t) => t.name)
    const full = Bun.spawn([SVC_BIN, 'tokens', 'create', 'lost', '--password-stdin', '--quiet'], { env, stdin: new TextEncoder().encode('cli admin password\n'), stdout: Bun.file('/dev/full'), stderr: 'pipe' })
    const [stderr, code] = await Promise.all([new Response(full.stderr).text(), full.exited])
    expect([code, oneClearLine(stderr)]).toEqual([1, expect.stringMatching(/^svc: cannot write the output: ENOSPC: no space left on device; the new token \([0-9a-f-]{36}\) was revoked$/)])
    expect(await live()).not.toContain('lost')

    // A config file that cannot be written (a file where its directory should be): refused before a token is minted.
    const before = (await live()).length
    writeFileSync(join(home, 'a-file'), '')
    const sub = join(home, 'a-file', 'sub.toml')
    const login = await svc(['login', leader.url, '--email', 'admin@example.com', '--password-stdin'], { stdin: 'cli admin password\n', env: { SVC_CLI_CONFIG: sub } })
    expect([login.code, oneClearLine(login.stderr)]).toEqual([1, `svc: cannot write the config file ${sub}: a part of its path is a file, not a directory`])
    expect((await live()).length).toBe(before)
  }, 60_000)

  test('login and logout take --json and --quiet as every command does', async () => {
    const cfg = { SVC_CLI_CONFIG: join(home, 'quiet.toml') }
    const token = await mintToken(admin, 'quiet e2e')
    const quiet = await svc(['login', leader.url, '--name', 'q', '--token-stdin', '--quiet'], { stdin: `${token}\n`, env: cfg })
    expect([quiet.code, quiet.stdout, quiet.stderr]).toEqual([0, `${admin.userId}\n`, ''])
    const json = await svc(['logout', '--json'], { env: cfg })
    expect([json.code, JSON.parse(json.stdout)]).toEqual([0, { removed: ['q'], revoked_token_ids: [], config_file: join(home, 'quiet.toml') }])
    await svc(['login', leader.url, '--name', 'q2', '--token-stdin', '--quiet'], { stdin: `${token}\n`, env: cfg })
    expect((await svc(['logout', '--quiet'], { env: cfg })).stdout).toBe('q2\n')
  }, 60_000)
})

describe('every command', () => {
  const table = COMMANDS.filter((c) => !c.external)
  const remote = table.filter((c) => c.shared.includes('remote') && c.path[0] !== 'logout')
  const fill: Record<string, string> = { POOL: 'lab', FELLOW: 'box', JOB: 'job', USER: 'u@example.org', EMAIL: 'u@example.org', NAME: 'x', MODEL: 'm', PROMPT: 'hi', TOKEN: 't', FILE: 'f.sqlite3', SHELL: 'bash' }
  const argsOf = (c: Command, url?: string) => c.args.filter((a) => !a.optional || a.name === 'URL').map((a) => (a.name === 'URL' ? url ?? 'http://127.0.0.1:1' : fill[a.name]!))
  const label = (c: Command) => c.path.join(' ')

  /** Runs the cases a few at a time: ~200 short processes, without flooding a shared machine. */
  async function each<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
    const queue = [...items]
    await Promise.all(Array.from({ length: 3 }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item)
    }))
  }

  test('artifacts: a model file uploaded (resumed after the connection is cut), listed, downloaded checked, deleted', async () => {
    const env = { SVC_LEADER_URL: leader.url, SVC_TOKEN: await mintToken(admin, 'artifacts e2e') }
    const ok = async (args: string[], extra: Record<string, string> = {}) => {
      const r = await svc(args, { env: { ...env, ...extra } })
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, expect.any(String)])
      return r
    }
    await ok(['pools', 'create', 'Weights lab'])
    const dir = mkdtempSync(join(tmpdir(), 'svc-artifacts-'))
    // 3 MiB of text (standard output is compared as text below).
    const data = new TextEncoder().encode('the quick brown fox jumps over the lazy dog\n'.repeat(72_000))
    writeFileSync(join(dir, 'tiny.gguf'), data)
    const sha = new Bun.CryptoHasher('sha256').update(data).digest('hex')

    // Through a proxy that cuts the first upload's connection after 1 MiB: the CLI asks where the
    // upload stands and sends the rest.
    const proxy = cuttingProxy(new URL(leader.url).port, 'PUT /api/v1/artifacts/uploads/', 1024 * 1024)
    const up = await svc(['artifacts', 'upload', join(dir, 'tiny.gguf'), '--pool', 'weights-lab', '--leader', proxy.url], { env })
    proxy.stop()
    expect([up.code, proxy.cuts()]).toEqual([0, 1])
    expect(up.stderr).toMatch(/^the upload broke off \(.*\); resuming at byte \d+ of 3168000\nan engine of the pool's fellows takes it with model_artifact = "[0-9a-f-]{36}" \(docs\/operations\.md\)\n$/)
    const id = /artifact ([0-9a-f-]{36})$/m.exec(up.stdout)![1]!
    expect(up.stdout).toBe(`uploaded tiny.gguf (3.0 MiB, sha256 ${sha}) to pool weights-lab: artifact ${id}\n`)

    const listed = JSON.parse((await ok(['artifacts', 'list', '--pool', 'weights-lab', '--json'])).stdout) as { items: { id: string; kind: string; size_bytes: number; sha256: string; user_id: string }[] }
    expect(listed.items).toEqual([expect.objectContaining({ id, kind: 'model', size_bytes: data.byteLength, sha256: sha, user_id: admin.userId })])
    expect((await ok(['artifacts', 'list', '--kind', 'checkpoint', '--pool', 'weights-lab'])).stderr).toBe('no artifacts (svc artifacts upload FILE --pool POOL adds one)\n')

    // Saved whole and checked, by name or id; an existing file is not replaced without --force.
    expect((await ok(['artifacts', 'download', 'tiny.gguf', '--output', join(dir, 'back.gguf')])).stdout).toBe(`saved tiny.gguf (3.0 MiB, sha256 checked) as ${join(dir, 'back.gguf')}\n`)
    expect(new Uint8Array(readFileSync(join(dir, 'back.gguf')))).toEqual(data)
    const again = await svc(['artifacts', 'download', id, '--output', join(dir, 'back.gguf')], { env })
    expect([again.code, oneClearLine(again.stderr)]).toEqual([1, `svc: ${join(dir, 'back.gguf')} already exists; --force replaces it, --output FILE names another`])
    expect((await ok(['artifacts', 'download', id, '--output', '-'])).stdout).toBe(new TextDecoder().decode(data))
    const nowhere = await svc(['artifacts', 'download', id, '--output', join(dir, 'no', 'such', 'x.gguf')], { env })
    expect([nowhere.code, oneClearLine(nowhere.stderr)]).toEqual([1, `svc: cannot write ${join(dir, 'no', 'such', 'x.gguf')}: no such directory`])

    // Mistakes: one line each.
    for (const [args, code, words] of [
      [['artifacts', 'upload', join(dir, 'missing.bin'), '--pool', 'weights-lab'], 1, `svc: cannot read ${join(dir, 'missing.bin')}: no such file`],
      [['artifacts', 'upload', dir, '--pool', 'weights-lab'], 1, `svc: ${dir} is not a regular file`],
      [['artifacts', 'upload', join(dir, 'tiny.gguf'), '--pool', 'weights-lab', '--name', 'a/b'], 2, 'svc: --name: must not hold \'/\' or control characters (got "a/b")'],
      [['artifacts', 'download', 'no-such-artifact'], 1, 'svc: no artifact "no-such-artifact" that you can see (svc artifacts list shows them)'],
    ] as const) {
      const r = await svc([...args], { env })
      expect([args.join(' '), r.code, r.stderr.split('\n')[0]]).toEqual([args.join(' '), code, words])
    }

    // On a terminal (a pty from util-linux's script), a progress line for each phase, then cleared.
    if (Bun.which('script') !== null) {
      const term = Bun.spawn(['script', '-qefc', '"$SVC" artifacts upload "$F" --pool weights-lab --name on-a-terminal.gguf && "$SVC" artifacts download on-a-terminal.gguf --output "$F.back"', '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', HOME: home, SVC_CLI_CONFIG: join(home, 'config.toml'), ...env, SVC: SVC_BIN, F: join(dir, 'tiny.gguf'), TERM: 'dumb' },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [shown, code] = await Promise.all([new Response(term.stdout).text(), term.exited])
      expect(code).toBe(0)
      for (const phase of ['hashing tiny.gguf', 'uploading on-a-terminal.gguf', 'downloading on-a-terminal.gguf']) expect(shown).toContain(`\r\x1b[2K${phase} 100 % (3.0 MiB of 3.0 MiB)\r\x1b[2K`)
      expect(new Uint8Array(readFileSync(join(dir, 'tiny.gguf.back')))).toEqual(data)
    } else console.warn('no util-linux script here: the progress lines on a terminal are not checked')

    expect((await ok(['artifacts', 'delete', id])).stdout).toBe(`deleted artifact tiny.gguf (${id})\n`)
    await ok(['artifacts', 'delete', 'on-a-terminal.gguf'])
    expect((await ok(['artifacts', 'list', '--pool', 'weights-lab', '--quiet'])).stdout).toBe('')
  })

  test('--help exits 0 and mentions every flag the command takes', async () => {
    await each(COMMANDS, async (c) => {
      const r = await svc([...c.path, '--help'])
      expect([label(c), r.code, r.stderr]).toEqual([label(c), 0, ''])
      expect(r.stdout).toStartWith(`usage: svc ${label(c)}`)
      const missing = allFlags(c).filter((f) => !r.stdout.includes(`--${f.name}`))
      expect([label(c), missing]).toEqual([label(c), []])
      expect(r.stdout).toContain('examples:')
    })
  })

  test('an unknown flag, a missing argument or a value of the wrong type: exit 2, one line, then the command\'s usage', async () => {
    type Case = [Command, string[], string]
    const cases: Case[] = []
    for (const c of table) {
      cases.push([c, [...c.path, ...argsOf(c), '--no-such-flag'], 'svc: unknown option --no-such-flag'])
      const required = c.args.filter((a) => !a.optional)
      if (required.length > 0) cases.push([c, [...c.path], `svc: missing ${required[0]!.name}`])
      const int = c.flags.find((f) => f.type === 'int')
      if (int) cases.push([c, [...c.path, ...argsOf(c), `--${int.name}`, 'many'], `svc: --${int.name} must be a whole number; got "many"`])
      const choice = c.flags.find((f) => f.choices)
      if (choice) cases.push([c, [...c.path, ...argsOf(c), `--${choice.name}`, 'nonsense'], `svc: --${choice.name} must be one of`])
    }
    await each(cases, async ([c, argv, first]) => {
      const r = await svc(argv)
      expect([argv.join(' '), r.code, r.stdout]).toEqual([argv.join(' '), 2, ''])
      const [line, blank, usage] = r.stderr.split('\n')
      expect([argv.join(' '), line!.startsWith(first), blank, usage!.startsWith(`usage: svc ${label(c)}`)]).toEqual([argv.join(' '), true, '', true])
      expect(r.stderr).not.toMatch(/^\s+at |\.ts:\d+/m)
    })
  })

  test('an argument the leader would refuse (300 characters) is named as the argument, and not repeated whole', async () => {
    const long = 'x'.repeat(300)
    const cases = table.flatMap((c) => c.args.filter((a) => !a.optional && a.name !== 'URL' && a.name !== 'SHELL').map((a) => [c, a.name] as const))
    const named: string[] = []
    await each(cases, async ([c, arg]) => {
      const argv = [...c.path, ...c.args.filter((a) => !a.optional || a.name === 'URL').map((a) => (a.name === arg ? long : a.name === 'URL' ? 'http://127.0.0.1:1' : fill[a.name]!)), '--leader', 'http://127.0.0.1:1', '--token', 'svc_pat_x']
      const r = await svc(c.shared.includes('remote') ? argv : argv.slice(0, -4))
      if (r.code !== 2) return
      const line = r.stderr.split('\n')[0]!
      // A flag the command does not take is never blamed.
      const flags = new Set(allFlags(c).map((f) => `--${f.name}`))
      for (const blamed of line.match(/--[a-z-]+/g) ?? []) expect([label(c), blamed, flags.has(blamed)]).toEqual([label(c), blamed, true])
      if (!line.startsWith(`svc: ${arg}:`)) return
      named.push(label(c))
      expect(line).toEndWith(`(got "${'x'.repeat(39)}... (300 characters))`)
    })
    // The two whose argument goes into a body checked before the call.
    expect(named.sort()).toEqual(expect.arrayContaining(['jobs submit', 'pools create']))
  })

  test('an unreachable leader or an expired token: exit 1 (jobs watch: 3) and one clear line', async () => {
    const port = await closedPort()
    const expired = await mintToken(admin, 'soon expired')
    const db = new Database(join(leader.dir, 'state', 'join_state.sqlite3'))
    db.exec('PRAGMA busy_timeout = 5000')
    db.query("UPDATE api_tokens SET expires_at = 1 WHERE name = 'soon expired'").run()
    db.close()
    const cases: [Command, string[], RegExp][] = []
    for (const c of remote) {
      const unreachable = `http://127.0.0.1:${port}`
      cases.push([c, [...c.path, ...argsOf(c, unreachable), '--leader', unreachable, '--token', 'svc_pat_unused'], new RegExp(`^svc: cannot reach the leader at ${unreachable}`)])
      cases.push([c, [...c.path, ...argsOf(c, leader.url), '--leader', leader.url, '--token', expired], /^svc: .*the leader refused the token/])
    }
    await each(cases, async ([c, argv, pattern]) => {
      const r = await svc(argv, { stdin: '' })
      // jobs watch keeps 1 for a job that failed: it says it could not follow the job with 3.
      const status = label(c) === 'jobs watch' ? 3 : 1
      expect([label(c), argv.includes(expired) ? 'expired' : 'unreachable', r.code]).toEqual([label(c), argv.includes(expired) ? 'expired' : 'unreachable', status])
      expect([label(c), oneClearLine(r.stderr)]).toEqual([label(c), expect.stringMatching(pattern)])
    })
    // Offline commands fail the same way: one line, exit 1.
    const missing = await svc(['admin', 'doctor', '--db', join(home, 'nothing.sqlite3')])
    expect([missing.code, oneClearLine(missing.stderr)]).toEqual([1, `svc: no state database at ${join(home, 'nothing.sqlite3')} (--db PATH names another)`])
    const junk = await svc(['admin', 'restore', join(home, 'nothing.sqlite3'), '--db', join(home, 'state.sqlite3')])
    expect([junk.code, oneClearLine(junk.stderr)]).toEqual([1, `svc: no such file: ${join(home, 'nothing.sqlite3')}`])
  }, 60_000)
})
