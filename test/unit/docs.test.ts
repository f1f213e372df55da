import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { CONFIG_VARIABLES } from '../../src/config'

describe('docs/operations.md', () => {
  test('describes every SVC_* variable src/config.ts reads, and no other', () => {
    const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8')
    const table = doc.slice(doc.indexOf('## Configuration'), doc.indexOf('## TLS'))
    const documented = new Set([...table.matchAll(/`(SVC_[A-Z0-9_]+)`/g)].map((m) => m[1]!))
    const missing = CONFIG_VARIABLES.filter((v) => !documented.has(v))
    expect(missing).toEqual([])
    const leader = new Set<string>(CONFIG_VARIABLES)
    const extra = [...documented].filter((v) => !leader.has(v) && v !== 'SVC_LEADER_URL' && v !== 'SVC_JOIN_TOKEN')
    expect(extra).toEqual([])
  })

  test('config.ts reads only the variables it lists', () => {
    const src = readFileSync(new URL('../../src/config.ts', import.meta.url), 'utf8')
    const read = new Set([...src.matchAll(/'(SVC_[A-Z0-9_]+)'/g)].map((m) => m[1]!))
    const listed = new Set<string>(CONFIG_VARIABLES)
    // The fellow's and the operator CLI's own variables (docs/cli.md) are not the leader's.
    const client = new Set(['SVC_LEADER_URL', 'SVC_JOIN_TOKEN', 'SVC_TOKEN', 'SVC_CLI_CONFIG'])
    expect([...read].filter((v) => !listed.has(v) && !client.has(v))).toEqual([])
  })
})
