// Runner contract v1: a runner's stdin is a pipe from the agent that nobody writes to, and its end
// means the agent is gone (docs/workloads.md). The built-in runner and both examples stop on it,
// so none outlives an agent that died without stopping it.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { readLines } from '../../src/agent/lines'

const ROOT = resolve(import.meta.dir, '../..')
const RUNNERS: [string, string[]][] = [
  ['svc runner mlp', [process.execPath, join(ROOT, 'src/main.ts'), 'runner', 'mlp']],
  ['examples/runners/pipeline.ts', [process.execPath, join(ROOT, 'examples/runners/pipeline.ts')]],
  ['examples/runners/pipeline.py', ['python3', join(ROOT, 'examples/runners/pipeline.py')]],
]

describe('a runner whose stdin ends', () => {
  for (const [name, command] of RUNNERS) {
    test(`${name} stops (exit 143) once it is running`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'runner-stdin-'))
      const proc = Bun.spawn(command, {
        stdin: 'pipe',
        stdout: 'pipe',
        stderr: 'pipe',
        env: {
          PATH: process.env.PATH ?? '',
          SVC_RUNNER_CONTRACT: '1',
          SVC_JOB_ID: 'job-stdin',
          SVC_STAGE: '0',
          SVC_STAGES: '1',
          SVC_JOB_CONFIG: JSON.stringify({ steps: 1_000_000, report_every: 1, step_ms: 5 }),
          SVC_CHECKPOINT_DIR: join(dir, 'checkpoints'),
          SVC_DATA_URL: 'http://127.0.0.1:9/unused',
          SVC_LEADER_URL: 'http://127.0.0.1:9',
          SVC_RELAY_TOKEN: '',
        },
      })
      try {
        const progress = Promise.withResolvers<void>()
        void readLines(proc.stdout, (l) => l.startsWith('{"step"') && progress.resolve())
        await Promise.race([progress.promise, proc.exited.then((c) => Promise.reject(new Error(`exited early with ${c}: ${proc.stderr}`)))])
        expect(proc.exitCode).toBeNull()
        void proc.stdin.end()
        expect(await proc.exited).toBe(143)
      } finally {
        proc.kill('SIGKILL')
      }
    }, 20_000)
  }
})
