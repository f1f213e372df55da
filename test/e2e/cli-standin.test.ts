// The built dist/svc against a stand-in for the leader whose answers each test sets: a model whose
// answer carries escape sequences, streams that break off and a leader that is away for a while,
// a burst of audit entries, a download that stalls, a server that is not a leader. These are
// answers a real leader gives only at bad moments (or never), so a small server plays them.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SVC_BIN, runSvc } from '../helpers/leader'
import { track } from '../helpers/children'
import { until } from '../helpers/until'

type Handler = (req: Request, url: URL) => Response | Promise<Response>
let handler: Handler = () => new Response('no handler', { status: 500 })

/** A port of this suite's own range (46700-46799), so that it meets no other suite's server. */
function serveInRange(fetch: (req: Request) => Response | Promise<Response>) {
  for (let port = 46700; port < 46800; port++) {
    try {
      return Bun.serve({ hostname: '127.0.0.1', port, idleTimeout: 0, fetch })
    } catch {
      // taken: the next one
    }
  }
  throw new Error('no free port in 46700-46799')
}

const server = serveInRange((req) => handler(req, new URL(req.url)))
afterAll(() => server.stop(true))

const base = `http://127.0.0.1:${server.port}`
const env = { SVC_LEADER_URL: base, SVC_TOKEN: `svc_pat_${'a'.repeat(43)}`, HOME: mkdtempSync(join(tmpdir(), 'svc-standin-home-')) }
const svc = (args: string[], cwd?: string) => runSvc(args, { env, cwd })
/** dist/svc running on its own (a watch, a follow), its output read as it comes. */
function spawnSvc(args: string[], cwd?: string) {
  const proc = track(Bun.spawn([SVC_BIN, ...args], { cwd: cwd ?? mkdtempSync(join(tmpdir(), 'svc-cli-')), env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe' }))
  const stdout = new Response(proc.stdout).text()
  const stderr = new Response(proc.stderr).text()
  return { proc, done: async () => ({ code: await proc.exited, stdout: await stdout, stderr: await stderr }) }
}

const enc = new TextEncoder()
const sse = (events: string[]) => new Response(events.join(''), { headers: { 'content-type': 'text/event-stream' } })
const delta = (content: string) => `data: ${JSON.stringify({ choices: [{ delta: { content }, finish_reason: null }] })}\n\n`

describe('svc chat', () => {
  test("a model's answer cannot drive the terminal: escape sequences and C1 controls are replaced, line breaks and tabs kept, on a pipe too", async () => {
    handler = (_req, url) => {
      if (url.pathname !== '/api/v1/chat/completions') return Response.json({ title: 'Not found', status: 404 }, { status: 404 })
      return sse([delta('plain\tline\r\n'), delta('\x1b]52;c;ZWNobyBwd25lZA==\x07clip'), delta(' \x1b[31mred\x1b[0m'), delta(' \u009b2J c1 \x00nul\n'), 'data: [DONE]\n\n'])
    }
    const r = await svc(['chat', 'evil', 'hi'])
    expect([r.code, r.stderr]).toEqual([0, ''])
    expect(r.stdout).toBe('plain\tline\n?]52;c;ZWNobyBwd25lZA==?clip ?[31mred?[0m ?2J c1 ?nul\n\n')
    // --json is the API's JSON: the characters stay, escaped by JSON.
    handler = () => Response.json({ id: 'c', object: 'chat.completion', created: 1, model: 'evil', choices: [{ index: 0, message: { role: 'assistant', content: '\x1b[31mred' }, finish_reason: 'stop' }] })
    const json = await svc(['chat', 'evil', 'hi', '--json'])
    expect([json.code, json.stdout.includes('\\u001b[31mred'), json.stdout.includes('\x1b')]).toEqual([0, true, false])
  }, 30_000)
})

const JOB = { id: '77777777-7777-4777-8777-777777777777', name: 'toy', pool_id: '55555555-5555-4555-8555-555555555555', status: 'running', reason: null, runner: 'sh', stages: 1, min_free_vram_mb: 0, transport: 'relay', step: 0, loss: null, assignments: [{ stage: 0, fellow_id: '88888888-8888-4888-8888-888888888888' }], config: {}, created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z' }
const metrics = (n: number) => `id: ${n}\nevent: metrics\ndata: ${JSON.stringify({ fellow_id: JOB.assignments[0]!.fellow_id, stage: 0, step: n, loss: null, throughput: null, status: 'running', ts: '2026-01-01T00:00:00Z' })}\n\n`
const END = 'event: end\ndata: {}\n\n'

/** An event stream kept open until `close` (the leader going away) or the test's server stops. */
function openStream(first: string, open: Set<ReadableStreamDefaultController<Uint8Array>>) {
  return new Response(
    new ReadableStream<Uint8Array>({
      start(ctl) {
        open.add(ctl)
        ctl.enqueue(enc.encode(first))
      },
      cancel() {
        // the client went away
      },
    }),
    { headers: { 'content-type': 'text/event-stream' } },
  )
}

describe('svc jobs watch and jobs logs --follow', () => {
  test('a watch whose stream breaks off after every event (a proxy, restarts) keeps following: each good stream starts its retries afresh', async () => {
    let streams = 0
    const lastIds: (string | null)[] = []
    handler = (req, url) => {
      if (url.pathname === `/api/v1/jobs/${JOB.id}`) return Response.json({ ...JOB, step: streams, status: streams > 25 ? 'completed' : 'running' })
      if (url.pathname === `/api/v1/jobs/${JOB.id}/metrics/stream`) {
        lastIds.push(req.headers.get('last-event-id'))
        streams++
        // One report, then the connection ends: 25 times (the watch gave up after 21), then the end.
        return sse(streams > 25 ? [END] : [metrics(streams)])
      }
      return Response.json({ title: 'Not found', status: 404 }, { status: 404 })
    }
    const r = await svc(['jobs', 'watch', JOB.id])
    expect([r.code, r.stderr]).toEqual([0, ''])
    expect(r.stdout.trim().split('\n').at(-1)).toBe('job toy completed at step 26')
    // Each reconnect resumes after the last event seen.
    expect(lastIds.slice(0, 4)).toEqual([null, '1', '2', '3'])
  }, 60_000)

  test('a leader away for longer than half a minute (its proxy answering 502) is waited out by a watch and a log follow, which say so on stderr and go on', async () => {
    const open = new Set<ReadableStreamDefaultController<Uint8Array>>()
    let state: 'up' | 'down' | 'back' = 'up'
    const refused = { watch: 0, logs: 0 }
    handler = (req, url) => {
      const p = url.pathname
      if (state === 'down') {
        if (p.endsWith('/metrics/stream')) refused.watch++
        if (p.endsWith('/logs/stream')) refused.logs++
        return new Response('<html>502 Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } })
      }
      const done = state === 'back'
      if (p === `/api/v1/jobs/${JOB.id}`) return Response.json({ ...JOB, step: done ? 2 : 1, status: done ? 'completed' : 'running' })
      if (p === '/api/v1/cluster/nodes') return Response.json({ items: [] })
      if (p === `/api/v1/jobs/${JOB.id}/metrics/stream`) return done ? sse([metrics(2), END]) : openStream(metrics(1), open)
      if (p === `/api/v1/workers/${JOB.assignments[0]!.fellow_id}/logs/stream`) {
        const after = Number(req.headers.get('last-event-id') ?? 0)
        const lines = [1, 2].filter((n) => n > after && (done || n === 1)).map((n) => `id: ${n}\nevent: log\ndata: ${JSON.stringify({ ts: '2026-01-01T00:00:00Z', line: `line ${n}` })}\n\n`)
        return openStream(`${lines.join('')}: keep-alive\n\n`, open)
      }
      return Response.json({ title: 'Not found', status: 404 }, { status: 404 })
    }
    const watch = spawnSvc(['jobs', 'watch', JOB.id])
    const logs = spawnSvc(['jobs', 'logs', JOB.id, '--follow'])
    await until(() => open.size >= 2, 'the watch and the log follow connected')
    state = 'down'
    for (const ctl of open) ctl.close()
    open.clear()
    await until(() => refused.watch > 0 && refused.logs > 0, 'both noticed the leader away')
    // The outage itself: longer than the 20 and 30 one-second tries the two used to give up after.
    await Bun.sleep(35_000)
    expect([watch.proc.exitCode, logs.proc.exitCode]).toEqual([null, null])
    state = 'back'
    const [w, l] = [await watch.done(), await logs.done()]
    expect([w.code, w.stdout.trim().split('\n').at(-1)]).toEqual([0, 'job toy completed at step 2'])
    expect([l.code, l.stdout]).toEqual([0, 'line 1\nline 2\n'])
    // Said once each, however many times they tried (the log follow may end before it is back).
    expect(w.stderr).toMatch(/^svc: [^\n]*; waiting for the leader to come back \(Ctrl-C to stop\)\nsvc: the leader answers again; following\n$/)
    expect(l.stderr).toMatch(/^svc: [^\n]*; waiting for the leader to come back \(Ctrl-C to stop\)\n(svc: the leader answers again; following\n)?$/)
  }, 90_000)

  test('a watch the leader refuses for good (the job deleted while watched) ends with 3, not 1 (which says the job failed)', async () => {
    let gone = false
    handler = (_req, url) => {
      if (url.pathname === `/api/v1/jobs/${JOB.id}` && !gone) return Response.json(JOB)
      if (url.pathname === `/api/v1/jobs/${JOB.id}/metrics/stream` && !gone) {
        gone = true
        return sse([metrics(1)])
      }
      return Response.json({ title: 'Not found', status: 404, detail: 'Job not found', code: 'not_found' }, { status: 404, headers: { 'content-type': 'application/problem+json' } })
    }
    const r = await svc(['jobs', 'watch', JOB.id])
    expect([r.code, r.stderr]).toEqual([3, 'svc: job toy no longer exists: it was deleted while it was watched (with its pool, or by an admin\'s purge)\n'])
  }, 30_000)
})

const POOL = { id: '55555555-5555-4555-8555-555555555555', slug: 'lab', name: 'lab' }
const BIG = new Uint8Array(1 << 20).map((_, i) => (i * 7) % 251)
const ARTIFACT = { id: '66666666-6666-4666-8666-666666666666', pool_id: POOL.id, job_id: null, stage: null, kind: 'model', name: 'big.bin', size_bytes: BIG.length, sha256: new Bun.CryptoHasher('sha256').update(BIG).digest('hex'), step: null, fellow_id: null, user_id: null, created_at: '2026-01-01T00:00:00Z' }

describe('svc artifacts download and upload against a leader that stops mid-transfer', () => {
  test('a download whose leader stops sending (the connection open) ends after --idle-timeout with one line, keeping FILE.part; the next run resumes from it', async () => {
    const ranges: (string | null)[] = []
    let stall = true
    handler = (req, url) => {
      if (url.pathname === `/api/v1/artifacts/${ARTIFACT.id}`) return Response.json(ARTIFACT)
      if (url.pathname !== `/api/v1/artifacts/${ARTIFACT.id}/content`) return Response.json({ title: 'Not found', status: 404 }, { status: 404 })
      ranges.push(req.headers.get('range'))
      const from = Number(/^bytes=(\d+)-$/.exec(req.headers.get('range') ?? '')?.[1] ?? 0)
      // The first 100 KiB, then nothing more, the connection held open.
      const body = stall ? new ReadableStream<Uint8Array>({ start: (ctl) => ctl.enqueue(BIG.slice(0, 100 << 10)) }) : BIG.slice(from)
      return new Response(body, { status: from > 0 ? 206 : 200, headers: { 'content-type': 'application/octet-stream', 'content-length': String(BIG.length - from), ...(from > 0 ? { 'content-range': `bytes ${from}-${BIG.length - 1}/${BIG.length}` } : {}) } })
    }
    const cwd = mkdtempSync(join(tmpdir(), 'svc-dl-'))
    const stalled = spawnSvc(['artifacts', 'download', ARTIFACT.id, '--idle-timeout', '1'], cwd)
    const r = await Promise.race([stalled.done(), Bun.sleep(20_000).then(() => null)])
    if (r === null) stalled.proc.kill('SIGKILL')
    expect(r).toEqual({ code: 1, stdout: '', stderr: `svc: the download of big.bin stalled: no byte for 1 s (--idle-timeout) after ${100 << 10} of ${BIG.length} bytes; the same command resumes from big.bin.part\n` })
    expect(statSync(join(cwd, 'big.bin.part')).size).toBe(100 << 10)
    stall = false
    const again = await svc(['artifacts', 'download', ARTIFACT.id], cwd)
    expect([again.code, again.stderr, ranges]).toEqual([0, '', [null, `bytes=${100 << 10}-`]])
    expect(readdirSync(cwd)).toEqual(['big.bin'])
  }, 30_000)

  test('an upload whose leader stops reading and answering is resumed after --idle-timeout, then given up with one line', async () => {
    let puts = 0
    handler = async (req, url) => {
      if (url.pathname === `/api/v1/pools/${POOL.id}`) return Response.json(POOL)
      if (url.pathname === '/api/v1/artifacts/uploads' && req.method === 'POST') return Response.json({ upload_id: 'u1', offset: 0, size_bytes: BIG.length }, { status: 201 })
      if (url.pathname === '/api/v1/artifacts/uploads/u1' && req.method === 'GET') return Response.json({ upload_id: 'u1', offset: 0, size_bytes: BIG.length })
      if (url.pathname === '/api/v1/artifacts/uploads/u1' && req.method === 'PUT') {
        puts++
        return new Promise<Response>(() => {}) // never read, never answered
      }
      return Response.json({ title: 'Not found', status: 404 }, { status: 404 })
    }
    const cwd = mkdtempSync(join(tmpdir(), 'svc-up-'))
    writeFileSync(join(cwd, 'big.bin'), BIG)
    const up = spawnSvc(['artifacts', 'upload', 'big.bin', '--pool', POOL.id, '--idle-timeout', '1'], cwd)
    const r = await Promise.race([up.done(), Bun.sleep(40_000).then(() => null)])
    if (r === null) up.proc.kill('SIGKILL')
    expect(r?.code).toBe(1)
    expect(r?.stderr.trim().split('\n').at(-1)).toBe('svc: the upload of big.bin stalled: nothing moved for 1 s (--idle-timeout), 5 times; the same command resumes it')
    expect(puts).toBe(5)
    expect(existsSync(join(cwd, 'big.bin'))).toBe(true)
  }, 60_000)
})

describe('a server that answers JSON but is not a leader (a wrong port)', () => {
  test('every list and show, and chat, say "is URL a leader?" in one line and exit 1: no engine error, no table of undefined, no silent exit 0', async () => {
    const commands = [['pools', 'list'], ['jobs', 'list'], ['models', 'list'], ['artifacts', 'list'], ['fellows', 'list'], ['tokens', 'list'], ['users', 'list'], ['audit', 'list'], ['jobs', 'show', JOB.id], ['pools', 'show', POOL.id], ['chat', 'm', 'hi'], ['chat', 'm', 'hi', '--json']]
    for (const answer of [{}, { items: [{}], data: [{}] }, []]) {
      handler = () => Response.json(answer)
      for (const args of commands) {
        const r = await svc(args)
        expect([JSON.stringify(answer), ...args, r.code, r.stdout, r.stderr]).toEqual([JSON.stringify(answer), ...args, 1, '', expect.stringMatching(new RegExp(`^svc: [^\\n]*\\(is ${base.replace(/[.]/g, '\\.')} a leader\\?\\)\\n$`))])
      }
    }
    // A stream of something else: events that are not chat chunks.
    handler = () => sse(['data: not json\n\n'])
    const r = await svc(['chat', 'm', 'hi'])
    expect([r.code, r.stderr]).toEqual([1, `svc: POST /api/v1/chat/completions: the answer is not the one a leader gives (is ${base} a leader?)\n`])
  }, 60_000)
})
