// Preloaded by `bun test` (bunfig.toml). The suites make thousands of temporary directories (state
// directories, fellow homes with a copy of the binary, agent and runner dirs) under tmpdir() and do
// not remove each one: a few runs left gigabytes in /tmp. They all go under one directory of this
// run instead, removed when the run ends. Child processes keep the system's temp dir (Bun.spawn
// does not see this change of TMPDIR); their state dirs are given to them from here.
import { afterAll } from 'bun:test'
import { killTracked } from './children'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = mkdtempSync(join(tmpdir(), 'svc-test-run-'))
process.env.TMPDIR = root
// In a preload, afterAll runs once, after the last file of the run: leaders and fellows a failed
// test left running go first (test/helpers/children.ts), then their directories.
afterAll(async () => {
  await killTracked()
  rmSync(root, { recursive: true, force: true })
})
