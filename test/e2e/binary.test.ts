import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { startLeader, runSvc } from '../helpers/leader'

describe('the built dist/svc', () => {
  test('serves health from another directory on a new state file, migrates once, and stops cleanly on SIGTERM, SIGINT and SIGHUP', async () => {
    const leader = await startLeader()
    const res = await fetch(`${leader.url}/api/v1/health`)
    expect(res.status).toBe(200)
    expect(((await res.json()) as { status: string }).status).toBe('ok')
    expect(((await (await fetch(`${leader.url}/api/v1/ready`)).json()) as { status: string }).status).toBe('ready')
    const db = join(leader.dir, 'state', 'join_state.sqlite3')
    expect(existsSync(db)).toBe(true)
    expect(await leader.stop()).toBe(0)
    // A second start on the same file applies nothing twice.
    const again = await startLeader({}, leader.dir)
    expect((await fetch(`${again.url}/api/v1/ready`)).status).toBe(200)
    expect(await again.stop('SIGINT')).toBe(0)
    // A closed terminal (SIGHUP) stops it as cleanly: the default action would kill it outright.
    const hung = await startLeader({}, leader.dir)
    expect(await hung.stop('SIGHUP')).toBe(0)
    expect(hung.logs.some((l) => l.includes('"leader stopped"'))).toBe(true)
    const check = new Database(db, { readonly: true })
    const tags = check.query('SELECT tag FROM __migrations').all() as { tag: string }[]
    expect(new Set(tags.map((t) => t.tag)).size).toBe(tags.length)
    check.close()
  })

  test('serve runs with a 1 s allocator purge delay in the process that was started; an operator\'s own value is kept', async () => {
    const environOf = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
    const tuned = await startLeader()
    // Started again in place (src/entry.ts): the same PID now carries the setting.
    expect(environOf(tuned.proc.pid)).toContain('MIMALLOC_PURGE_DELAY=1000')
    expect(readFileSync(`/proc/${tuned.proc.pid}/cmdline`, 'utf8').split('\0').slice(1, 2)).toEqual(['serve'])
    expect((await fetch(`${tuned.url}/api/v1/ready`)).status).toBe(200)
    expect(await tuned.stop()).toBe(0)
    const own = await startLeader({ MIMALLOC_PURGE_DELAY: '25' })
    expect(environOf(own.proc.pid)).toContain('MIMALLOC_PURGE_DELAY=25')
    expect(await own.stop()).toBe(0)
  })

  test('admin backup while the leader runs produces a file that passes integrity_check, and names the leader\'s artifact directory', async () => {
    const leader = await startLeader()
    await fetch(`${leader.url}/api/v1/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'first@example.com', password: 'a long password' }),
    })
    const db = join(leader.dir, 'state', 'join_state.sqlite3')
    const out = join(leader.dir, 'backup.sqlite3')
    const r = await runSvc(['admin', 'backup', out, '--db', db])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    // The artifacts to keep beside it are the leader's, under the state file's directory (the
    // command runs elsewhere, without SVC_STATE_DIR), not ./state of wherever it ran.
    expect(r.stdout).toContain(`back up ${join(leader.dir, 'state', 'artifacts', 'blobs')} alongside`)
    const copy = new Database(out, { readonly: true })
    expect((copy.query('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check).toBe('ok')
    expect((copy.query('SELECT email FROM users').all() as { email: string }[]).map((u) => u.email)).toEqual(['first@example.com'])
    copy.close()
    // Refuses to overwrite an existing file.
    const again = await runSvc(['admin', 'backup', out, '--db', db])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain('already exists')
    // A leader that keeps its artifacts in a bucket: the bucket is named, and the store's keys
    // (which a backup does not need) are not asked for.
    const s3 = await runSvc(['admin', 'backup', join(leader.dir, 'backup-2.sqlite3'), '--db', db], { env: { SVC_ARTIFACTS_URL: 's3://team-artifacts/svc' } })
    expect(s3.stderr).toBe('')
    expect(s3.code).toBe(0)
    expect(s3.stdout).toContain('back up s3://team-artifacts/svc/sha256/ alongside')
    expect((await runSvc(['admin', 'backup', join(leader.dir, 'backup-3.sqlite3'), '--db', db], { env: { SVC_ARTIFACTS_URL: 'http://nope' } })).code).toBe(2)
    expect(await leader.stop()).toBe(0)
    // Without SVC_ARTIFACTS_URL and no blobs directory, it says there are none there, not "back up" a path that is not there.
    rmSync(join(leader.dir, 'state', 'artifacts'), { recursive: true, force: true })
    const none = await runSvc(['admin', 'backup', join(leader.dir, 'backup-4.sqlite3'), '--db', db])
    expect(none.code).toBe(0)
    expect(none.stdout).toContain(`${join(leader.dir, 'state', 'artifacts', 'blobs')} holds none`)
  })

  test('bad configuration stops serve with one line naming the variable and exit code 2', async () => {
    for (const [name, value] of [['SVC_PORT', 'abc'], ['SVC_SMTP_TLS', 'maybe'], ['SVC_PIPELINE_TRANSPORT', 'x']] as const) {
      const r = await runSvc(['serve'], { env: { [name]: value } })
      expect(r.code).toBe(2)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr).toContain(name)
    }
  })

  test('a second serve on the same state file is refused in one line; once the first is gone, even by SIGKILL, a leader starts on it', async () => {
    const first = await startLeader()
    const db = join(first.dir, 'state', 'join_state.sqlite3')
    const second = await runSvc(['serve'], { cwd: first.dir, env: { SVC_PORT: '0' } })
    expect([second.code, second.stderr]).toEqual([1, `svc: another leader is running on the state file ${db}: stop it first, or give this one its own SVC_STATE_DIR\n`])
    // The first is untouched, and offline commands still run beside it.
    expect((await fetch(`${first.url}/api/v1/ready`)).status).toBe(200)
    expect((await runSvc(['admin', 'doctor', '--db', db])).code).toBe(0)
    first.proc.kill('SIGKILL')
    await first.proc.exited
    const next = await startLeader({}, first.dir)
    expect((await fetch(`${next.url}/api/v1/ready`)).status).toBe(200)
    expect(await next.stop()).toBe(0)
  })

  test('an address serve cannot listen on stops it with one line naming the address, the variables and the reason, exit 1', async () => {
    const taken = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const cases = [
        [{ SVC_HOST: '127.0.0.1', SVC_PORT: String(taken.port) }, `cannot listen on 127.0.0.1:${taken.port} (SVC_HOST, SVC_PORT): the port is in use`],
        // TEST-NET-1 (RFC 5737): no interface of this machine has it.
        [{ SVC_HOST: '192.0.2.1', SVC_PORT: '0' }, 'cannot listen on 192.0.2.1:0 (SVC_HOST, SVC_PORT): no interface of this machine has that address'],
      ] as const
      for (const [env, line] of cases) {
        const r = await runSvc(['serve'], { env })
        expect(r.stderr).toBe(`svc: ${line}\n`)
        expect(r.code).toBe(1)
      }
    } finally {
      taken.stop(true)
    }
  })

  test("a fellow whose runner or engine program is missing stops before it joins, in one line naming it, exit 2", async () => {
    const leader = ['--leader', 'http://127.0.0.1:9', '--join-token', 'svc_join_aaaaaaaaaaaaaaaaaaaaaaaa']
    for (const [flags, words] of [
      [['--runner', 'torch=/opt/venv/bin/python-not-there train.py'], 'runner torch: /opt/venv/bin/python-not-there: no such file, or not executable'],
      [['--engine-cmd', 'llama=llama-server-not-installed --port {port}'], 'engine llama: llama-server-not-installed: not found on PATH, or not executable'],
    ] as const) {
      const r = await runSvc(['fellow', ...leader, ...flags])
      expect(r.code).toBe(2)
      expect(r.stderr).toBe(`svc: configuration error: ${words}\n`)
    }
  })

  test('unknown subcommands and flags print usage on stderr and exit 2', async () => {
    for (const args of [['bogus'], ['admin', 'frobnicate'], ['admin', 'backup', 'x', '--nope'], ['serve', 'extra'], []]) {
      const r = await runSvc(args)
      expect(r.code).toBe(2)
      expect(r.stderr).toContain('usage: svc')
      expect(r.stdout).toBe('')
    }
  })

  test('--version and --help', async () => {
    // package.json's version, and the commit a build from a git checkout was made from
    expect((await runSvc(['--version'])).stdout).toMatch(/^svc \d+\.\d+\.\d+(\+[0-9a-f]{4,40}(\.dirty)?)?\n$/)
    const help = await runSvc(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('admin backup FILE')
    // Help on a command that is not one is bad usage (it printed the root help, exit 0).
    const none = await runSvc(['help', 'nonexistent'])
    expect([none.code, none.stdout, none.stderr.split('\n')[0]]).toEqual([2, '', 'svc: no such command: nonexistent'])
    expect((await runSvc(['help', 'pools', 'create'])).stdout).toContain('usage: svc pools create NAME')
  })

  test('--help after a command prints that command\'s usage and exits 0; an unknown flag is named in one plain line', async () => {
    for (const args of [['fellow', '--help'], ['admin', '--help'], ['admin', 'backup', '-h'], ['serve', '--help'], ['health', '-h']]) {
      const r = await runSvc(args)
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, ''])
      expect(r.stdout).toContain(`usage: svc ${args.filter((a) => !a.startsWith('-')).join(' ')}`)
    }
    expect((await runSvc(['fellow', '--help'])).stdout).toContain('--join-token T')
    const bad = await runSvc(['fellow', '--leader', 'http://127.0.0.1:1', '--bogus'])
    expect(bad.code).toBe(2)
    expect(bad.stderr.split('\n')[0]).toBe('svc: unknown option --bogus')
    // A value that starts with a dash: how to write it (it read "Option '--p2p-port-base' argument is ambiguous.").
    const dash = await runSvc(['fellow', '--p2p-port-base', '-1', '--once'])
    expect([dash.code, dash.stderr.split('\n')[0]]).toEqual([2, 'svc: option --p2p-port-base needs a value (a value that starts with "-" is written --p2p-port-base=-x)'])
  })

  test('anonymous half-sent 60 MiB relay pushes are answered 401 at once, over real sockets, without waiting for their bodies', async () => {
    const leader = await startLeader()
    const port = Number(new URL(leader.url).port)
    const head = () =>
      `POST /api/v1/relay/${crypto.randomUUID()}/activations/push HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${60 * 1024 * 1024}\r\n\r\n`
    // 64 KiB of body and never the rest; the answer's head is enough.
    const answers = await Promise.all(Array.from({ length: 8 }, () => rawExchange(port, [head(), new Uint8Array(64 * 1024)], { untilHead: true })))
    for (const a of answers) expect(a.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized')
    expect(await leader.stop()).toBe(0)
  })

  test('a body trickled in slower than SVC_BODY_TIMEOUT_S is answered 408 and its connection closed', async () => {
    const leader = await startLeader({ SVC_BODY_TIMEOUT_S: '1' })
    // One byte of a 100-byte body; the leader closes the connection (a hang here is the defect: 125 s before).
    const got = await rawExchange(Number(new URL(leader.url).port), ['POST /api/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{'])
    expect(got.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout')
    expect(got).toContain('"code":"request_timeout"')
    expect(await leader.stop()).toBe(0)
  })
})

/**
 * Writes `parts` on a raw TCP connection and answers what came back: when the server closes it,
 * or (untilHead) once a response head has arrived, closing it then.
 */
function rawExchange(port: number, parts: (string | Uint8Array)[], opts: { untilHead?: boolean } = {}): Promise<string> {
  const { promise, resolve, reject } = Promise.withResolvers<string>()
  let got = ''
  void Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      open(socket) {
        for (const p of parts) socket.write(p)
      },
      data(socket, data) {
        got += new TextDecoder().decode(data)
        if (opts.untilHead && got.includes('\r\n\r\n')) {
          resolve(got)
          socket.end()
        }
      },
      error: (_s, e) => reject(e),
      close: () => resolve(got),
    },
  })
  return promise
}

