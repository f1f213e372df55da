// Small things of the operator CLI's setup: where its config file is, what it refuses in it, and
// what --db says it opens.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadClientEnv } from '../../src/config'
import { readConfigFile } from '../../src/cli/config-file'
import { COMMANDS } from '../../src/cli/commands'
import { allFlags } from '../../src/cli/spec'
import { CliError } from '../../src/cli/usage'

describe('where the config file is', () => {
  test('a relative XDG_CONFIG_HOME is ignored, as the XDG spec says (it would put tokens in whatever directory svc runs in); an absolute one is used', () => {
    expect(loadClientEnv({ HOME: '/home/ada', XDG_CONFIG_HOME: 'dotfiles/config' }).configFile).toBe('/home/ada/.config/svc/config.toml')
    expect(loadClientEnv({ HOME: '/home/ada', XDG_CONFIG_HOME: './cfg' }).configFile).toBe('/home/ada/.config/svc/config.toml')
    expect(loadClientEnv({ XDG_CONFIG_HOME: 'cfg' }).configFile).toBeNull()
    expect(loadClientEnv({ HOME: '/home/ada', XDG_CONFIG_HOME: '/etc/xdg-ada' }).configFile).toBe('/etc/xdg-ada/svc/config.toml')
  })
})

describe('the config file', () => {
  test('`leaders = []` is refused like any other value of the wrong type, naming the file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'svc-cfg-')), 'config.toml')
    writeFileSync(path, 'leaders = []\n', { mode: 0o600 })
    expect(() => readConfigFile(path)).toThrow(new CliError(`config file ${path} has \`leaders\` that is not a table; fix it, or remove it and svc login again`))
  })
})

describe('svc admin --db', () => {
  test('its help names every default the admin commands use: SVC_JOIN_STATE_DB, SVC_STATE_DIR/join_state.sqlite3, ./state/join_state.sqlite3', () => {
    const admin = COMMANDS.filter((c) => c.path[0] === 'admin')
    expect(admin.length).toBeGreaterThan(0)
    for (const c of admin) {
      const db = allFlags(c).find((f) => f.name === 'db')
      expect([c.path.join(' '), db?.help]).toEqual([c.path.join(' '), 'the state database (default: SVC_JOIN_STATE_DB, else SVC_STATE_DIR/join_state.sqlite3 when SVC_STATE_DIR is set, else ./state/join_state.sqlite3)'])
    }
  })
})
