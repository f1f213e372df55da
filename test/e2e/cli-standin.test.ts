// The built dist/svc against a stand-in for the leader whose answers each test sets: a model whose
// answer carries escape sequences, streams that break off and a leader that is away for a while,
// a burst of audit entries, a download that stalls, a server that is not a leader. These are
// answers a real leader gives only at bad moments (or never), so a small server plays them.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SVC_BIN, runSvc } from '../helpers/leader'
import { track } from '../helpers/children'

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
