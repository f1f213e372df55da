// Placement by runner (issue 21): a job is placed only on fellows that offer its runner, and its
// pending reason names the runner and how many fellows lack it.
import { describe, expect, test } from 'bun:test'
import { pendingReason, place, type Candidate } from '../../src/jobs/placement'
import { FellowConfigError, loadRunners } from '../../src/agent/fellow-config'

const fellow = (id: string, runners: string[], freeVramMb = 1000): Candidate => ({ id, freeVramMb, registeredAt: 0, address: null, runners })

describe('placing a job by its runner', () => {
  test('only fellows offering the runner are eligible; the built-in mlp is offered by all', () => {
    const all = [fellow('a', ['mlp', 'torch']), fellow('b', ['mlp']), fellow('c', ['mlp', 'torch'], 10)]
    expect(place(all, 2, 0, 'torch')).toMatchObject({ ok: true, fellows: [{ id: 'a' }, { id: 'c' }] })
    expect(place(all, 2, 100, 'torch')).toEqual({ ok: false, eligible: 1, lacking: 1 })
    expect(place(all, 3, 0)).toMatchObject({ ok: true })
  })

  test('the pending reason names the runner and the fellows without it', () => {
    expect(pendingReason(2, 0, 1, 'torch', 3)).toBe("needs 2 fellows offering the runner 'torch' online and free; pool has 1 (3 more without that runner)")
    expect(pendingReason(1, 2048, 0, 'torch', 0)).toBe("needs 1 fellow offering the runner 'torch' with >= 2 GiB free; pool has 0")
    expect(pendingReason(3, 0, 2)).toBe('needs 3 fellows online and free; pool has 2')
  })
})

describe('declaring runners', () => {
  test('flags and the config file; the built-in name and duplicates are refused', () => {
    const toml = '[runners.torch]\ncommand = ["python3", "train.py", "--fast"]\nenv = { OMP_NUM_THREADS = "4" }\nstop_grace_s = 30\n'
    expect(loadRunners({ config: 'f.toml', runner: ["sh=sh -c 'exec ./run.sh'"] }, () => toml)).toEqual([
      { name: 'torch', command: ['python3', 'train.py', '--fast'], env: { OMP_NUM_THREADS: '4' }, stopGraceS: 30 },
      { name: 'sh', command: ['sh', '-c', 'exec ./run.sh'], env: {}, stopGraceS: 10 },
    ])
    const refused = (f: () => unknown) => {
      try {
        f()
      } catch (e) {
        expect(e).toBeInstanceOf(FellowConfigError)
        return (e as Error).message
      }
      return 'not refused'
    }
    expect(refused(() => loadRunners({ runner: ['mlp=./x'] }))).toBe("--runner mlp: 'mlp' is the built-in runner's name; give yours another")
    expect(refused(() => loadRunners({ runner: ['x'] }))).toBe('--runner takes NAME=COMMAND, got "x"')
    expect(refused(() => loadRunners({ runner: ['x=a', 'x=b'] }))).toBe('the runner x is declared twice')
    expect(refused(() => loadRunners({ config: 'f.toml' }, () => '[runners.x]\nenv = {}\n'))).toContain('f.toml: runners.x')
  })
})

describe('what a child process inherits', () => {
  test("the agent's SVC_* settings (a join token among them) never reach an engine or a runner", async () => {
    const { childEnv } = await import('../../src/agent/lines')
    process.env.SVC_JOIN_TOKEN = 'svc_join_secret_for_the_test_only'
    try {
      const env = childEnv()
      expect(Object.keys(env).some((k) => k.startsWith('SVC_'))).toBe(false)
      expect(env.PATH).toBe(process.env.PATH!)
    } finally {
      delete process.env.SVC_JOIN_TOKEN
    }
  })
})
