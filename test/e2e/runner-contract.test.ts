// The runner contract at its edges, end to end with the built dist/svc as leader and fellow:
// runners that misbehave (a checkpoint that points outside SVC_CHECKPOINT_DIR through a link, a
// step past 2^53, no SIGUSR1 handler, frames sent to a neighbour that does not exist). Each is a
// small Python script the fellow's operator declared.
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { killAll, poll, startCluster, startFellow, stopCluster, waitOnline, type Cluster, type Fellow } from '../helpers/cluster'
import { until } from '../helpers/until'

afterAll(killAll)

const python = Bun.which('python3')
const dir = mkdtempSync(join(tmpdir(), 'svc-runner-contract-'))
/** What must never leave the machine: a directory and a file outside any checkpoint directory. */
const secretDir = join(dir, 'secretdir')
const SECRET = 'the-secret-that-must-stay-here'

const SCRIPTS: Record<string, string> = {
  // A link in its checkpoint directory to a directory outside, named as the checkpoint; a link to
  // a file outside beside a real file.
  leak: `
import json, os, sys, time
d = os.environ["SVC_CHECKPOINT_DIR"]
open(os.path.join(d, "weights.txt"), "w").write("kept weights")
os.symlink(sys.argv[1], os.path.join(d, "outside"))
os.symlink(os.path.join(sys.argv[1], "key.txt"), os.path.join(d, "key-link"))
print(json.dumps({"step": 8}), flush=True)
print(json.dumps({"checkpoint": os.path.join(d, "outside"), "step": 8}), flush=True)
time.sleep(60)
`,
  // A step no JSON number of the leader's takes, then a clean exit.
  huge: `
import json, time
print(json.dumps({"step": 5}), flush=True)
print('{"step": 1e300}', flush=True)
time.sleep(0.2)
`,
  // Progress, then nothing but waiting: SIGUSR1 (CHECKPOINT) kills it, as it kills any process that does not handle it.
  deaf: `
import json, time
print(json.dumps({"step": 1}), flush=True)
time.sleep(60)
`,
  // A 1-stage job's stage sends activations forward and gradients back: neither has a neighbour.
  solo: `
import json, os, struct, sys, urllib.request, urllib.error
meta = json.dumps({"step": 1}).encode()
body = struct.pack(">I", len(meta)) + meta + struct.pack(">Q", 4) + b"\\0\\0\\0\\0"
for channel in ("activations", "gradients"):
    req = urllib.request.Request(os.environ["SVC_DATA_URL"] + "/" + channel, data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(channel, r.status, r.read().decode().strip(), file=sys.stderr, flush=True)
    except urllib.error.HTTPError as e:
        print(channel, e.code, e.read().decode().strip(), file=sys.stderr, flush=True)
sys.exit(3)
`,
  // Stopped while it waits for frames: its long poll, and the calls after, hear 410 (the stage is
  // stopping), not a closed connection; then it exits on its own.
  stopping: `
import json, os, signal, sys, time, urllib.request, urllib.error
def status(req):
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return str(r.status)
    except urllib.error.HTTPError as e:
        e.read()
        return str(e.code)
    except Exception as e:
        return type(e).__name__
signal.signal(signal.SIGTERM, lambda *_: print("sigterm", file=sys.stderr, flush=True))
data = os.environ["SVC_DATA_URL"]
print(json.dumps({"step": 1}), flush=True)
got = [status(data + "/activations?wait_ms=30000")]
time.sleep(0.3)
got.append(status(urllib.request.Request(data + "/gradients", data=b"", method="POST")))
got.append(status(data + "/gradients?wait_ms=1000"))
print("while stopping:", " ".join(got), file=sys.stderr, flush=True)
sys.exit(143)
`,
}

type Job = { id: string; status: string; reason: string | null; step: number }

describe.skipIf(!python)('runners at the edges of the contract', () => {
  let c: Cluster
  let fellow: Fellow
  // A job a failed test left running must not keep the one fellow from the next test.
  const started: string[] = []
  afterEach(async () => {
    for (const id of started.splice(0)) await c.api('DELETE', `/api/v1/jobs/${id}`)
  })
  const job = async (id: string) => (await c.api<Job>('GET', `/api/v1/jobs/${id}`)).body
  const submit = async (runner: string) => {
    const r = await c.api<Job>('POST', '/api/v1/jobs', { pool_id: c.poolId, name: runner, runner, stages: 1 })
    expect(r.status).toBe(201)
    started.push(r.body.id)
    return r.body
  }
  const ended = (id: string, status: 'failed' | 'completed', ms = 20_000) =>
    until(
      async () => {
        const r = await job(id)
        return r.status === status ? r : null
      },
      `the job ${status}`,
      poll(ms),
    )

  test('a fellow offering the runners joins', async () => {
    mkdirSync(secretDir)
    writeFileSync(join(secretDir, 'key.txt'), SECRET)
    const flags: string[] = []
    for (const [name, text] of Object.entries(SCRIPTS)) {
      writeFileSync(join(dir, `${name}.py`), text)
      flags.push('--runner', `${name}=${python} ${join(dir, `${name}.py`)}${name === 'leak' ? ` ${secretDir}` : ''}`)
    }
    c = await startCluster('tunnel')
    fellow = startFellow(c, 'edges', flags)
    await waitOnline(c, 1)
  }, 30_000)

  test('a checkpoint that names a link to a directory outside SVC_CHECKPOINT_DIR uploads only what lies inside; links are left out', async () => {
    const j = await submit('leak')
    type Art = { id: string; kind: string; step: number; size_bytes: number }
    const art = await until(async () => {
      const items = (await c.api<{ items: Art[] }>('GET', `/api/v1/artifacts?job_id=${j.id}`)).body.items ?? []
      return items.find((a) => a.kind === 'checkpoint') ?? null
    }, 'the checkpoint stored', poll(20_000))
    expect(art.step).toBe(8)
    const res = await fetch(`${c.leader.url}/api/v1/artifacts/${art.id}/content`, { headers: { cookie: c.cookie } })
    expect(res.status).toBe(200)
    const tar = new TextDecoder().decode(await res.arrayBuffer())
    // Said as booleans: the archive is mostly NUL padding.
    expect(tar.includes(SECRET)).toBe(false)
    expect(tar.includes('weights.txt') && tar.includes('kept weights')).toBe(true)
    expect(tar).not.toContain('key.txt')
    expect(tar).not.toContain('key-link')
    const lines = fellow.logs.map((l) => JSON.parse(l) as { msg?: string; job_id?: string; skipped?: string[] })
    expect(lines.some((l) => l.msg === 'checkpoint path outside SVC_CHECKPOINT_DIR; archiving SVC_CHECKPOINT_DIR instead' && l.job_id === j.id)).toBe(true)
    expect(lines.find((l) => l.msg?.startsWith('checkpoint entries left out') && l.job_id === j.id)?.skipped).toEqual(['key-link', 'outside'])
  }, 30_000)

  test('a progress line whose step is past 2^53 is a log line, not progress: the job completes at its last real step', async () => {
    const j = await submit('huge')
    const done = await ended(j.id, 'completed')
    expect(done.step).toBe(5)
    expect(fellow.logs.some((l) => l.includes('"runner output"') && l.includes('1e300'))).toBe(true)
  }, 30_000)

  test('CHECKPOINT on a runner without a SIGUSR1 handler fails the job with a reason that says so', async () => {
    const j = await submit('deaf')
    await until(async () => ((await job(j.id)).step >= 1 ? true : null), 'the runner running', poll(20_000))
    expect((await c.api('POST', `/api/v1/jobs/${j.id}/checkpoint`)).status).toBeLessThan(300)
    const failed = await ended(j.id, 'failed')
    expect(failed.reason).toBe('runner deaf (stage 0) was killed by signal SIGUSR1 (the CHECKPOINT signal: the runner does not handle it; docs/workloads.md, Signals)')
  }, 30_000)

  test('the last stage sending activations, or the first sending gradients, gets 409 saying there is no such neighbour', async () => {
    const j = await submit('solo')
    const failed = await ended(j.id, 'failed')
    expect(failed.reason).toBe(
      "runner solo (stage 0) exited with code 3: activations 409 stage 0 is the last of the job's 1 stage: it has no next stage to send activations to | gradients 409 stage 0 is the first stage: it has no previous stage to send gradients to",
    )
  }, 30_000)

  test('a stage being stopped keeps its data endpoint until its runner exits: every call answers 410, a waiting long poll too', async () => {
    const j = await submit('stopping')
    await until(async () => ((await job(j.id)).step >= 1 ? true : null), 'the runner running', poll(20_000))
    await Bun.sleep(300) // in its long poll now
    expect((await c.api('DELETE', `/api/v1/jobs/${j.id}`)).status).toBeLessThan(300)
    type Line = { msg?: string; job_id?: string; line?: string; code?: number | null }
    const lines = () => fellow.logs.map((l) => JSON.parse(l) as Line).filter((l) => l.job_id === j.id)
    const stopped = await until(() => lines().find((l) => l.msg === 'runner stopped') ?? null, 'the runner stopped', poll(20_000))
    expect(stopped.code).toBe(143)
    expect(lines().filter((l) => l.msg === 'runner output').map((l) => l.line)).toEqual(['sigterm', 'while stopping: 410 410 410'])
  }, 30_000)

  test('the cluster stops cleanly', async () => {
    await stopCluster(c)
  }, 30_000)
})
