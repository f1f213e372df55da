// `svc login` and `svc logout` and the config file they share, with the built dist/svc against a
// running leader: logins at the same time all keep their entries, and a token `svc login --email`
// minted is not left valid with nobody holding it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runSvc, startLeader, type Leader } from '../helpers/leader'
import { call, mintToken, registerUser, type Session } from '../helpers/e2e'

const PASSWORD = 'login test password'
let leader: Leader
let admin: Session & { userId: string }

beforeAll(async () => {
  leader = await startLeader({ SVC_PORT: '46751' })
  admin = await registerUser(leader.url, 'admin@example.com', PASSWORD)
})
afterAll(async () => {
  await leader?.stop()
})

const configIn = () => join(mkdtempSync(join(tmpdir(), 'svc-login-')), 'config.toml')
const svc = (config: string, args: string[], stdin?: string) => runSvc(args, { stdin, env: { HOME: tmpdir(), SVC_CLI_CONFIG: config } })
/** Whether the leader still takes a token. */
const valid = async (token: string) => (await call(leader.url, 'GET', '/api/v1/auth/me', { bearer: token })).status === 200

describe('svc login', () => {
  test('ten logins run at the same time each keep their entry; a lock left by a process that is gone is taken over', async () => {
    const config = configIn()
    const token = await mintToken(admin, 'parallel')
    // A lock of a process that died while it held it (a pid that ran and exited).
    const dead = Bun.spawn(['true'])
    await dead.exited
    writeFileSync(`${config}.lock`, `${dead.pid}\n`)
    const runs = await Promise.all(Array.from({ length: 10 }, (_, i) => svc(config, ['login', leader.url, '--token', token, '--name', `n${i}`])))
    expect(runs.map((r) => [r.code, r.stderr])).toEqual(Array.from({ length: 10 }, () => [0, '']))
    const saved = [...readFileSync(config, 'utf8').matchAll(/^\[leaders\."(n\d)"\]$/gm)].map((m) => m[1]).sort()
    expect(saved).toEqual(Array.from({ length: 10 }, (_, i) => `n${i}`))
    expect(existsSync(`${config}.lock`)).toBe(false)
  }, 60_000)

  test('logging in with --email again under the same name revokes the token the first login minted; logout revokes the second, and leaves a token the user gave valid', async () => {
    const config = configIn()
    const tokenIn = () => /^token = "([^"]+)"$/m.exec(readFileSync(config, 'utf8'))![1]!
    const first = await svc(config, ['login', leader.url, '--name', 'lab', '--email', 'admin@example.com', '--password-stdin'], `${PASSWORD}\n`)
    expect([first.code, first.stderr]).toEqual([0, ''])
    const firstToken = tokenIn()
    const again = await svc(config, ['login', 'lab', '--email', 'admin@example.com', '--password-stdin'], `${PASSWORD}\n`)
    expect([again.code, again.stderr]).toEqual([0, ''])
    expect(again.stdout).toContain('the token svc login minted before for "lab" was revoked')
    const secondToken = tokenIn()
    expect([await valid(firstToken), await valid(secondToken)]).toEqual([false, true])

    const out = await svc(config, ['logout'])
    expect([out.code, out.stderr]).toEqual([0, ''])
    expect(out.stdout).toContain('revoked the token svc login minted')
    expect(await valid(secondToken)).toBe(false)

    // A token the user gave stays theirs.
    const given = await mintToken(admin, 'given')
    expect((await svc(config, ['login', leader.url, '--name', 'lab', '--token', given])).code).toBe(0)
    const bye = await svc(config, ['logout', '--json'])
    expect([bye.code, JSON.parse(bye.stdout).revoked_token_ids, await valid(given)]).toEqual([0, [], true])
  }, 60_000)
})
