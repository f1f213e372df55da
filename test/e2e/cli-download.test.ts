// `svc artifacts download` and `svc jobs submit --set` refusing what they cannot do right, with
// the built dist/svc. The artifacts come from a small stand-in for the leader's two artifact
// routes, because it must be able to name an artifact `..` or `-` (names an older leader's store
// may hold; the leader refuses them now): whatever the leader says, the file lands where the
// operator expects, or nowhere, and no `.part` file stays behind.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SVC_BIN, runSvc } from '../helpers/leader'
import { until } from '../helpers/until'

const BYTES = new TextEncoder().encode('the bytes of the artifact\n')
const SHA = new Bun.CryptoHasher('sha256').update(BYTES).digest('hex')
const ids: Record<string, string> = {
  '..': '11111111-1111-4111-8111-111111111111',
  '-': '22222222-2222-4222-8222-222222222222',
  '.': '33333333-3333-4333-8333-333333333333',
  'weights.bin': '44444444-4444-4444-8444-444444444444',
}
const artifact = (name: string) => ({ id: ids[name], pool_id: '55555555-5555-4555-8555-555555555555', job_id: null, stage: null, kind: 'model', name, size_bytes: BYTES.length, sha256: SHA, step: null, fellow_id: null, user_id: null, created_at: '2026-01-01T00:00:00Z' })
const byId = new Map(Object.keys(ids).map((n) => [ids[n]!, artifact(n)]))

// A big artifact, sent slowly enough to be stopped in the middle; resumed with Range + If-Range.
const BIG = new Uint8Array(4 << 20).map((_, i) => (i * 7) % 251)
ids['big.bin'] = '66666666-6666-4666-8666-666666666666'
byId.set(ids['big.bin'], { ...artifact('big.bin'), size_bytes: BIG.length, sha256: new Bun.CryptoHasher('sha256').update(BIG).digest('hex') })
const ranges: (string | null)[] = []
const job = { id: '77777777-7777-4777-8777-777777777777', name: 'toy', pool_id: null, status: 'completed', reason: null, runner: 'mlp', stages: 1, min_free_vram_mb: 0, transport: 'relay', step: 200, loss: 0.01, assignments: [], config: { a: 1 }, created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z' }

/** The bytes of `body` from `from` on, 64 KiB every 20 ms. */
const slowly = (body: Uint8Array, from: number) => {
  let at = from
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      await Bun.sleep(20)
      if (at >= body.length) return ctl.close()
      ctl.enqueue(body.slice(at, (at += 65536)))
    },
  })
}

const NEWER = `svc_pat_${'n'.repeat(43)}`
const leader = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(req) {
    const path = new URL(req.url).pathname
    if (path === `/api/v1/jobs/${job.id}`) return Response.json(job)
    // A server on the port that is not a leader: an HTML page, an answer of the wrong shape.
    if (path === '/api/v1/auth/me') {
      // A newer leader's account, with a role and a status this CLI does not know.
      if (req.headers.get('authorization') === `Bearer ${NEWER}`) return Response.json({ id: 'u-1', email: 'ada@example.org', display_name: null, role: 'auditor', status: 'frozen', created_at: '2026-11-27T00:00:00Z', last_login_at: null })
      return Response.json({})
    }
    if (path.startsWith('/api/v1/pools')) return new Response('<!DOCTYPE HTML><html><body><h1>Error response</h1><p>Error code: 404</p></body></html>', { status: 404, headers: { 'content-type': 'text/html' } })
    if (path === '/api/v1/chat/completions') {
      const enc = new TextEncoder()
      let n = 0
      const events = new ReadableStream<Uint8Array>({
        async pull(ctl) {
          await Bun.sleep(5)
          ctl.enqueue(enc.encode(`data: ${JSON.stringify({ choices: [{ delta: { content: `word${n++} ` }, finish_reason: null }] })}\n\n`))
        },
      })
      return new Response(events, { headers: { 'content-type': 'text/event-stream' } })
    }
    const m = /^\/api\/v1\/artifacts\/([0-9a-f-]{36})(\/content)?$/.exec(path)
    const a = m ? byId.get(m[1]!) : undefined
    if (!a) return Response.json({ title: 'Not found', status: 404 }, { status: 404, headers: { 'content-type': 'application/problem+json' } })
    if (!m![2]) return Response.json(a)
    if (a.name !== 'big.bin') return new Response(BYTES, { headers: { 'content-type': 'application/octet-stream' } })
    ranges.push(req.headers.get('range'))
    const from = req.headers.get('if-range') === `"${a.sha256}"` ? Number(/^bytes=(\d+)-$/.exec(req.headers.get('range') ?? '')?.[1] ?? 0) : 0
    const headers = { 'content-type': 'application/octet-stream', 'content-length': String(BIG.length - from), ...(from > 0 ? { 'content-range': `bytes ${from}-${BIG.length - 1}/${BIG.length}` } : {}) }
    return new Response(slowly(BIG, from), { status: from > 0 ? 206 : 200, headers })
  },
})
afterAll(() => leader.stop(true))

const env = { SVC_LEADER_URL: `http://127.0.0.1:${leader.port}`, SVC_TOKEN: `svc_pat_${'a'.repeat(43)}`, HOME: mkdtempSync(join(tmpdir(), 'svc-dl-home-')) }
const download = (cwd: string, args: string[]) => runSvc(['artifacts', 'download', ...args], { cwd, env })

/** `svc ARGS | READER` in bash: svc's exit status and what it said on stderr. */
async function piped(args: string[], reader: string) {
  const err = join(mkdtempSync(join(tmpdir(), 'svc-pipe-')), 'stderr')
  const proc = Bun.spawn(['bash', '-c', `"$SVC" "$@" 2>"$ERR" | ${reader} >/dev/null; echo "\${PIPESTATUS[0]}"`, 'bash', ...args], {
    env: { ...env, PATH: process.env.PATH ?? '', SVC: SVC_BIN, ERR: err },
    stdout: 'pipe',
  })
  const status = Number((await new Response(proc.stdout).text()).trim())
  return { status, stderr: readFileSync(err, 'utf8') }
}

describe('svc artifacts download', () => {
  test("an artifact named '..', '.' or '-' is not saved under its name (nor sent to standard output): one line, nothing left behind", async () => {
    for (const name of ['..', '.', '-']) {
      const cwd = mkdtempSync(join(tmpdir(), 'svc-dl-'))
      for (const force of [[], ['--force']]) {
        const r = await download(cwd, [ids[name]!, ...force])
        expect([r.code, r.stdout, r.stderr]).toEqual([1, '', `svc: artifact ${ids[name]} is named ${JSON.stringify(name)}, which cannot be a file name here; give --output FILE\n`])
      }
      expect(readdirSync(cwd)).toEqual([])
      expect(readdirSync(join(cwd, '..')).some((f) => f.endsWith('.part'))).toBe(false)
    }
    // Named by the operator, it is saved; and only the operator's `-` is standard output.
    const cwd = mkdtempSync(join(tmpdir(), 'svc-dl-'))
    const saved = await download(cwd, [ids['..']!, '--output', 'parent.bin'])
    expect([saved.code, saved.stderr]).toEqual([0, ''])
    expect(readFileSync(join(cwd, 'parent.bin'))).toEqual(Buffer.from(BYTES))
    const out = await download(cwd, [ids['-']!, '--output', '-'])
    expect([out.code, out.stdout]).toEqual([0, new TextDecoder().decode(BYTES)])
  }, 30_000)

  test('--output naming a directory is refused up front, --force or not, and no DIR.part is left', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'svc-dl-'))
    mkdirSync(join(cwd, 'models'))
    for (const force of [[], ['--force']]) {
      const r = await download(cwd, [ids['weights.bin']!, '--output', 'models', ...force])
      expect([r.code, r.stderr]).toEqual([1, 'svc: models is a directory; --output names the file to save it as ("models/weights.bin", say)\n'])
    }
    expect(readdirSync(cwd)).toEqual(['models'])
    expect(readdirSync(join(cwd, 'models'))).toEqual([])
    // A directory where the artifact's own name would go: the same.
    mkdirSync(join(cwd, 'weights.bin'))
    const r = await download(cwd, [ids['weights.bin']!, '--force'])
    expect([r.code, r.stderr]).toEqual([1, 'svc: weights.bin is a directory; --output names the file to save it as\n'])
    expect(readdirSync(cwd).sort()).toEqual(['models', 'weights.bin'])
    // A file is replaced with --force, as before.
    writeFileSync(join(cwd, 'models', 'w.bin'), 'old')
    const ok = await download(cwd, [ids['weights.bin']!, '--output', join('models', 'w.bin'), '--force'])
    expect([ok.code, ok.stderr]).toEqual([0, ''])
    expect(readFileSync(join(cwd, 'models', 'w.bin'))).toEqual(Buffer.from(BYTES))
    expect(existsSync(join(cwd, 'models', 'w.bin.part'))).toBe(false)
  }, 30_000)
})

describe('svc artifacts download, stopped and run again', () => {
  test('its reader gone (--output - | head -c 10), it ends quietly with 141, as SIGPIPE ends other tools', async () => {
    expect(await piped(['artifacts', 'download', ids['big.bin']!, '--output', '-'], 'head -c 10')).toEqual({ status: 141, stderr: '' })
  }, 30_000)

  test('Ctrl-C keeps FILE.part, and the next run resumes from it (Range + If-Range), checked whole', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'svc-dl-'))
    const proc = Bun.spawn([SVC_BIN, 'artifacts', 'download', ids['big.bin']!], { cwd, env: { ...env, PATH: process.env.PATH ?? '' }, stdout: 'pipe', stderr: 'pipe' })
    await until(() => statSync(join(cwd, 'big.bin.part')).size > 256 << 10, 'a part of big.bin downloaded')
    proc.kill('SIGINT')
    await proc.exited
    const held = statSync(join(cwd, 'big.bin.part')).size
    expect(held).toBeLessThan(BIG.length)
    ranges.length = 0
    const r = await download(cwd, [ids['big.bin']!])
    expect([r.code, r.stderr, ranges]).toEqual([0, '', [`bytes=${held}-`]])
    expect(readFileSync(join(cwd, 'big.bin')).equals(Buffer.from(BIG))).toBe(true)
    expect(readdirSync(cwd)).toEqual(['big.bin'])
  }, 30_000)

  test("a FILE.part of another artifact (an older upload of the same name), or one that does not say, is not resumed: it starts afresh", async () => {
    for (const says of ['0'.repeat(64), null]) {
      const cwd = mkdtempSync(join(tmpdir(), 'svc-dl-'))
      writeFileSync(join(cwd, 'big.bin.part'), new Uint8Array(1 << 20).fill(9))
      if (says !== null) writeFileSync(join(cwd, 'big.bin.part.sha256'), `${says}\n`)
      ranges.length = 0
      const r = await download(cwd, [ids['big.bin']!])
      expect([r.code, r.stderr, ranges]).toEqual([0, '', [null]])
      expect(readFileSync(join(cwd, 'big.bin')).equals(Buffer.from(BIG))).toBe(true)
      expect(readdirSync(cwd)).toEqual(['big.bin'])
    }
  }, 30_000)
})

describe('streams and output', () => {
  test('chat whose reader is gone (| head -c 5) ends quietly with 141: no stack trace', async () => {
    expect(await piped(['chat', 'tiny-llm', 'It was'], 'head -c 5')).toEqual({ status: 141, stderr: '' })
  }, 30_000)

  test('jobs watch --json prints the final job as one JSON line; --quiet prints its id', async () => {
    const json = await runSvc(['jobs', 'watch', job.id, '--json'], { env })
    expect([json.code, json.stdout]).toEqual([0, `${JSON.stringify(job)}\n`])
    const quiet = await runSvc(['jobs', 'watch', job.id, '--quiet'], { env })
    expect([quiet.code, quiet.stdout]).toEqual([0, `${job.id}\n`])
  }, 30_000)

  test('a server that is not a leader is named as such: its HTML page is not echoed, its {} is no login', async () => {
    const html = await runSvc(['pools', 'list'], { env })
    expect([html.code, html.stderr]).toEqual([1, `svc: GET /api/v1/pools: the answer (404 Not Found) is not a leader's: is ${env.SVC_LEADER_URL} a leader? (one served under a path by a proxy needs that path in the URL: https://HOST/PATH)\n`])
    const home = mkdtempSync(join(tmpdir(), 'svc-notleader-'))
    const login = await runSvc(['login', env.SVC_LEADER_URL, '--token', env.SVC_TOKEN], { env: { HOME: home } })
    expect([login.code, login.stdout, login.stderr]).toEqual([1, '', `svc: GET /api/v1/auth/me: the answer is not the one a leader gives (is ${env.SVC_LEADER_URL} a leader?)\n`])
    expect(existsSync(join(home, '.config', 'svc', 'config.toml'))).toBe(false)
    // A leader newer than this CLI is still a leader.
    const newer = await runSvc(['login', env.SVC_LEADER_URL, '--token', NEWER], { env: { HOME: home } })
    expect([newer.code, newer.stderr]).toEqual([0, ''])
    expect(newer.stdout).toContain('as ada@example.org (auditor)')
  }, 30_000)

  test('audit list --page with --cursor is bad usage (exit 2), said before any call', async () => {
    const r = await runSvc(['audit', 'list', '--page', '2', '--cursor', 'x'], { env })
    expect([r.code, r.stderr.split('\n')[0]]).toEqual([2, 'svc: --page and --cursor do not go together (a cursor already says where the page starts)'])
  }, 30_000)
})

describe('svc jobs submit --set', () => {
  test('a number JSON cannot carry (1e400) is refused naming the key, not sent as null', async () => {
    const cases: [string[], string][] = [
      [['--set', 'steps=1e400'], 'svc: --set steps: 1e400 is a number too large for JSON (it would be sent as null)'],
      [['--set', 'lr=-1e999'], 'svc: --set lr: -1e999 is a number too large for JSON (it would be sent as null)'],
      [['--set', 'a={"b":[1,1e400]}'], 'svc: --set a: {"b":[1,1e400]} holds a number too large for JSON (it would be sent as null)'],
      [['--config', '{"x":{"y":1e400}}'], 'svc: --config: the value at x.y is a number too large for JSON (it would be sent as null)'],
    ]
    for (const [args, line] of cases) {
      const r = await runSvc(['jobs', 'submit', 'toy', '--pool', 'p', ...args], { env })
      expect(r.code).toBe(2)
      expect(r.stderr.split('\n')[0]).toBe(line)
      expect(r.stderr).not.toContain('    at ')
    }
  }, 30_000)
})

describe('help, version and completion output', () => {
  test('a reader gone before they print ends them quietly with 141; a full disk is one line and exit 1', async () => {
    // `true` exits at once: svc writes into a pipe nobody reads any more.
    for (const args of [['--help'], ['help', 'pools', 'create'], ['--version'], ['completion', 'bash']]) expect(await piped(args, 'true')).toEqual({ status: 141, stderr: '' })
    for (const args of [['--help'], ['completion', 'zsh']]) {
      const proc = Bun.spawn([SVC_BIN, ...args], { env: { ...env, PATH: process.env.PATH ?? '' }, stdout: Bun.file('/dev/full'), stderr: 'pipe' })
      expect([await proc.exited, await new Response(proc.stderr).text()]).toEqual([1, 'svc: cannot write the output: ENOSPC: no space left on device\n'])
    }
  })

  test('svc admin commands too: a full disk is one line and exit 1, a reader gone ends them quietly', async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'svc-admin-out-')), 'state.sqlite3')
    const spawn = (args: string[], stdin?: string) =>
      Bun.spawn([SVC_BIN, 'admin', ...args, '--db', db], { env: { PATH: process.env.PATH ?? '' }, stdin: stdin === undefined ? 'ignore' : new TextEncoder().encode(stdin), stdout: Bun.file('/dev/full'), stderr: 'pipe' })
    for (const [args, stdin] of [[['create-user', 'root@example.org', '--password-stdin'], 'a long password\n'], [['doctor']]] as const) {
      const proc = spawn([...args], stdin)
      expect([args[0], await proc.exited, await new Response(proc.stderr).text()]).toEqual([args[0], 1, 'svc: cannot write the output: ENOSPC: no space left on device\n'])
    }
    expect(await piped(['admin', 'doctor', '--db', db], 'true')).toEqual({ status: 141, stderr: '' })
  }, 30_000)
})
