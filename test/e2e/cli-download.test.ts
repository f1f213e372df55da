// `svc artifacts download` and `svc jobs submit --set` refusing what they cannot do right, with
// the built dist/svc. The artifacts come from a small stand-in for the leader's two artifact
// routes, because it must be able to name an artifact `..` or `-` (names an older leader's store
// may hold; the leader refuses them now): whatever the leader says, the file lands where the
// operator expects, or nowhere, and no `.part` file stays behind.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runSvc } from '../helpers/leader'

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

const leader = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(req) {
    const m = /^\/api\/v1\/artifacts\/([0-9a-f-]{36})(\/content)?$/.exec(new URL(req.url).pathname)
    const a = m ? byId.get(m[1]!) : undefined
    if (!a) return Response.json({ title: 'Not found', status: 404 }, { status: 404, headers: { 'content-type': 'application/problem+json' } })
    return m![2] ? new Response(BYTES, { headers: { 'content-type': 'application/octet-stream' } }) : Response.json(a)
  },
})
afterAll(() => leader.stop(true))

const env = { SVC_LEADER_URL: `http://127.0.0.1:${leader.port}`, SVC_TOKEN: `svc_pat_${'a'.repeat(43)}`, HOME: mkdtempSync(join(tmpdir(), 'svc-dl-home-')) }
const download = (cwd: string, args: string[]) => runSvc(['artifacts', 'download', ...args], { cwd, env })

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
