import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { clearState, loadState, purgeCheckpoints, readCheckpoint, saveState, STATE_FILE, writeCheckpoint, writeFileAtomic } from '../../src/agent/state'

const dir = () => mkdtempSync(join(tmpdir(), 'fellow-state-'))
const identity = { fellow_id: '01a2b3c4-0000-7000-8000-000000000001', node_token: 'svc_node_secret', leader_url: 'http://leader:8080' }

describe('fellow state file', () => {
  test('saves fellow_id and node token with mode 0600 in a 0700 directory, and loads them back', () => {
    const d = join(dir(), 'nested', 'state')
    saveState(d, identity)
    expect(statSync(join(d, STATE_FILE)).mode & 0o777).toBe(0o600)
    expect(statSync(d).mode & 0o777).toBe(0o700)
    expect(loadState(d)).toEqual(identity)
  })

  test('the mode is 0600 even under a permissive umask, and an existing world-readable file is replaced by a 0600 one', () => {
    const d = dir()
    writeFileSync(join(d, STATE_FILE), '{}', { mode: 0o644 })
    const old = process.umask(0)
    try {
      saveState(d, identity)
    } finally {
      process.umask(old)
    }
    expect(statSync(join(d, STATE_FILE)).mode & 0o777).toBe(0o600)
  })

  test('writes are atomic: a new version replaces the file whole and leaves no temp files behind', () => {
    const d = dir()
    saveState(d, identity)
    const before = statSync(join(d, STATE_FILE)).ino
    saveState(d, { ...identity, node_token: 'svc_node_rotated' })
    // rename() put a new inode in place: a reader never sees a half-written file.
    expect(statSync(join(d, STATE_FILE)).ino).not.toBe(before)
    expect(loadState(d)?.node_token).toBe('svc_node_rotated')
    expect(readdirSync(d)).toEqual([STATE_FILE])
  })

  test('a failed write leaves the previous file intact', () => {
    const d = dir()
    const path = join(d, 'file')
    writeFileAtomic(path, 'old')
    expect(() => writeFileAtomic(join(d, 'missing-dir', 'file'), 'new')).toThrow()
    expect(readFileSync(path, 'utf8')).toBe('old')
    expect(readdirSync(d)).toEqual(['file'])
  })

  test('a missing, corrupt or incomplete file reads as no identity', () => {
    const d = dir()
    expect(loadState(d)).toBeNull()
    writeFileSync(join(d, STATE_FILE), '{"fellow_id": "x"')
    expect(loadState(d)).toBeNull()
    writeFileSync(join(d, STATE_FILE), JSON.stringify({ fellow_id: 'x', leader_url: 'http://l' }))
    expect(loadState(d)).toBeNull()
    saveState(d, identity)
    clearState(d)
    expect(loadState(d)).toBeNull()
  })
})

describe('checkpoints', () => {
  test('round-trip weights and step per job and stage; purge removes them all', () => {
    const d = dir()
    const meta = { job_id: 'job-1', stage: 1, stages: 3, step: 40, ts: new Date().toISOString() }
    const path = writeCheckpoint(d, meta, Uint8Array.of(1, 2, 3))
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const cp = readCheckpoint(d, 'job-1', 1)!
    expect(cp.meta.step).toBe(40)
    expect(Array.from(cp.weights)).toEqual([1, 2, 3])
    expect(readCheckpoint(d, 'job-1', 0)).toBeNull()
    expect(readCheckpoint(d, 'job-2', 1)).toBeNull()
    purgeCheckpoints(d)
    expect(readCheckpoint(d, 'job-1', 1)).toBeNull()
    expect(existsSync(join(d, 'checkpoints'))).toBe(false)
  })

  test('a job id cannot escape the checkpoints directory', () => {
    const d = dir()
    writeCheckpoint(d, { job_id: '../../evil', stage: 0, stages: 1, step: 1, ts: '' }, Uint8Array.of(0))
    expect(readdirSync(d)).toEqual(['checkpoints'])
  })
})
