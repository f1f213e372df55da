// An engine's life while its leader is away, and what its log lines carry, end to end with the
// built dist/svc as leader and fellow and the stand-in engine (test/fixtures/engine-standin.ts):
// credentials in an engine URL never reach a log line (which the leader's log shipping carries to
// pool members), and an engine started with a model file from the artifact store restarts from
// the kept file while the leader cannot be reached.
import { afterAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { killAll, poll, startCluster, startFellow, waitOnline, type Cluster, type Fellow } from '../helpers/cluster'
import { STANDIN, startStandin } from '../helpers/standin'
import { until } from '../helpers/until'

const external: { proc: ReturnType<typeof Bun.spawn> | null } = { proc: null }

afterAll(async () => {
  external.proc?.kill('SIGKILL')
  await killAll()
})

type Line = { msg?: string; engine?: string; pid?: number; url?: string; artifact_id?: string }
const lines = (f: Fellow): Line[] =>
  f.logs.flatMap((l) => {
    try {
      return [JSON.parse(l) as Line]
    } catch {
      return []
    }
  })
const count = (f: Fellow, msg: string, engine: string) => lines(f).filter((l) => l.msg === msg && l.engine === engine).length

describe('engines while the leader is away', () => {
  let c: Cluster
  let fellow: Fellow
  let artifactId: string
  let extUrl: string
  const weights = 'tiny weights kept on the fellow'

  test('a fellow serves an engine whose URL carries credentials and one whose model file is in the store', async () => {
    const ext = await startStandin(['--model', 'cred-model'])
    external.proc = ext.proc
    extUrl = ext.url
    c = await startCluster('tunnel')
    // The admin puts the model file into the pool's store.
    const csrf = /svc_csrf=([^;]+)/.exec(c.cookie)![1]!
    const bytes = new TextEncoder().encode(weights)
    const sha256 = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
    const begun = await c.api<{ upload_id: string }>('POST', '/api/v1/artifacts/uploads', { kind: 'model', name: 'cached.bin', size_bytes: bytes.length, sha256, pool_id: c.poolId })
    expect(begun.status).toBe(201)
    const put = await fetch(`${c.leader.url}/api/v1/artifacts/uploads/${begun.body.upload_id}?offset=0`, { method: 'PUT', headers: { cookie: c.cookie, 'x-csrf-token': csrf, 'content-type': 'application/octet-stream' }, body: bytes })
    expect(put.status).toBe(201)
    artifactId = ((await put.json()) as { artifact: { id: string } }).artifact.id
    const toml = join(c.leader.dir, 'cached.toml')
    const check = `test "$(cat "$1")" = '${weights}' && exec '${process.execPath}' '${STANDIN}' --port "$0" --model file-model`
    writeFileSync(toml, ['[engines.filed]', `command = ["sh", "-c", ${JSON.stringify(check)}, "{port}", "{model_file}"]`, 'model = "file-model"', `model_artifact = "${artifactId}"`].join('\n'))
    const withCreds = ext.url.replace('http://', 'http://admin:s3cretpw@')
    fellow = startFellow(c, 'cached', ['--config', toml, '--engine', `cred=${withCreds}/v1`])
    await waitOnline(c, 1)
    await until(() => (count(fellow, 'engine healthy; model announced', 'filed') === 1 && count(fellow, 'engine healthy; model announced', 'cred') === 1 ? true : null), 'both engines healthy', poll(20_000))
  }, 30_000)

  test('credentials in an engine URL (user name and password) are in no log line', async () => {
    const healthy = lines(fellow).find((l) => l.msg === 'engine healthy; model announced' && l.engine === 'cred')!
    expect(healthy.url).toBe(`${extUrl.replace('http://', 'http://***@')}/v1`)
    const all = fellow.logs.join('\n')
    expect(all.includes('s3cretpw')).toBe(false)
  })

  test('with the leader gone, a killed engine restarts from the kept model file (its hash checked) and gets healthy again', async () => {
    c.leader.proc.kill('SIGKILL')
    await c.leader.proc.exited
    const pid = lines(fellow).findLast((l) => l.msg === 'engine started' && l.engine === 'filed')!.pid!
    process.kill(pid, 'SIGKILL')
    await until(() => (count(fellow, 'engine healthy; model announced', 'filed') === 2 ? true : null), 'the engine healthy again', poll(20_000))
    expect(lines(fellow).some((l) => l.msg === 'leader not reachable; engine starts from the kept model file' && l.artifact_id === artifactId)).toBe(true)
    expect(count(fellow, 'engine started', 'filed')).toBe(2)
    // The stand-in answers on the port the agent gave it: it really runs.
    const url = lines(fellow).findLast((l) => l.msg === 'engine started' && l.engine === 'filed')!.url!
    expect((await fetch(`${url}/models`)).status).toBe(200)
  }, 45_000)
})
