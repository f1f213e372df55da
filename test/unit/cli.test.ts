// The operator CLI's table, parser, docs, completion, config file, doctor and restore, in process.
// The built binary against a running leader is test/e2e/cli.test.ts.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { lstatSync, mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { COMMANDS, helpFor } from '../../src/cli/commands'
import { Client, LeaderRefused, LeaderUnreachable, checkInput, netReason, resolveTarget } from '../../src/cli/client'
import { SubmitBody } from '../../src/jobs/model'
import { ChatCompletionBody } from '../../src/inference/model'
import { allFlags, commandHelp, parseInvocation } from '../../src/cli/spec'
import { renderCommandReference, withReference } from '../../src/cli/docs'
import { bashScript } from '../../src/cli/completion'
import { checkWritable, configPath, readConfigFile, writeConfigFile } from '../../src/cli/config-file'
import { loadClientEnv } from '../../src/config'
import { UsageError } from '../../src/cli/usage'
import { CHECKS, runDoctor, type DoctorCheck } from '../../src/admin/doctor'
import { openDb } from '../../src/db/client'
import { RestoreError, restoreDatabase } from '../../src/db/restore'

const tmp = () => mkdtempSync(join(tmpdir(), 'svc-cli-unit-'))

/** Splits an example line the way sh would for the simple quoting the examples use. */
function shellWords(line: string): string[] {
  const out: string[] = []
  let cur = ''
  let quote: string | null = null
  let any = false
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null
      else cur += ch
    } else if (ch === '"' || ch === "'") {
      quote = ch
      any = true
    } else if (ch === ' ') {
      if (cur !== '' || any) out.push(cur)
      cur = ''
      any = false
    } else cur += ch
  }
  if (cur !== '' || any) out.push(cur)
  return out
}

/** The `svc ...` invocation of an example (after a pipe, without redirections), or null for a wrapper. */
function invocationOf(example: string, path: string[]): string[] | null {
  if (example.includes('<(') || example.includes('"$(svc')) return null
  const segment = example.split(' | ').find((s) => s.includes(`svc ${path.join(' ')}`))
  if (!segment) return null
  // A command substitution inside a word ($(date +%F)) is one word's worth of text.
  const words = shellWords(segment.replace(/\$\([^)]*\)/g, 'X').trim().replace(/^(\w+=\S+ )+/, '').replace(/^xargs /, ''))
  const gt = words.findIndex((w) => w === '>' || w.startsWith('>'))
  const argv = (gt === -1 ? words : words.slice(0, gt)).slice(1)
  return argv
}

/** The message of what `fn` throws, or null when it throws nothing. */
function refusal(fn: () => unknown): string | null {
  try {
    fn()
  } catch (e) {
    return (e as Error).message
  }
  return null
}

/** Runs `fn` with these variables set (undefined: unset), then puts them back. */
function withEnv(env: Record<string, string | undefined>, fn: () => void) {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]))
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k]
  else process.env[k] = v
  try {
    fn()
  } finally {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]
    else process.env[k] = v
  }
}

describe('the command table', () => {
  test('docs/cli.md carries the reference generated from the table (run scripts/cli-docs.ts after a change)', () => {
    const doc = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8')
    expect(doc).toContain(renderCommandReference())
    expect(withReference(doc)).toBe(doc)
    for (const c of COMMANDS) expect(doc).toContain(`### svc ${c.path.join(' ')}\n`)
  })

  test('every example in the help and the docs parses as its command', () => {
    let checked = 0
    for (const c of COMMANDS) {
      expect(c.examples.length).toBeGreaterThan(0)
      if (c.external) continue
      for (const ex of c.examples) {
        const argv = invocationOf(ex, c.path)
        if (argv === null) continue
        expect([ex, argv.slice(0, c.path.length)]).toEqual([ex, c.path])
        // xargs appends the id a previous command printed.
        const args = ex.includes('xargs') ? [...argv.slice(c.path.length), '0190c4d1-0000-7000-8000-000000000000'] : argv.slice(c.path.length)
        expect(() => parseInvocation(c, args)).not.toThrow()
        checked++
      }
    }
    expect(checked).toBeGreaterThan(40)
  })

  test('every command\'s help names each of its flags and arguments, and says how to use it', () => {
    for (const c of COMMANDS) {
      const help = commandHelp(c)
      expect(help.startsWith(`usage: svc ${c.path.join(' ')}`)).toBe(true)
      for (const f of allFlags(c)) expect([c.path.join(' '), help.includes(`--${f.name}`)]).toEqual([c.path.join(' '), true])
      for (const a of c.args) expect(help).toContain(a.name)
      expect(helpFor([...c.path, '--help'])).toBe(help)
    }
    expect(helpFor(['pools'])).toContain('join-command POOL')
    expect(helpFor([])).toContain('admin backup FILE')
  })

  test('bad input is a UsageError with the command\'s usage: unknown option, missing or extra argument, wrong type, bad choice', () => {
    const find = (...path: string[]) => COMMANDS.find((c) => c.path.join(' ') === path.join(' '))!
    const cases: [string[], string[], string][] = [
      [['pools', 'create'], ['x', '--nope'], 'unknown option --nope'],
      [['pools', 'create'], [], 'missing NAME'],
      [['pools', 'show'], ['a', 'b'], 'unexpected argument: b'],
      [['pools', 'create'], ['x', '--node-limit', 'ten'], '--node-limit must be a whole number; got "ten"'],
      // A negative number is the option's value, refused by its own rule (it read "needs a value").
      [['pools', 'create'], ['x', '--node-limit', '-1'], '--node-limit must be at least 0; got -1'],
      [['chat'], ['m', 'hi', '--max-tokens', '-1'], '--max-tokens must be at least 1; got -1'],
      [['jobs', 'logs'], ['J', '--stage', '-2'], '--stage must be at least 0; got -2'],
      [['users', 'list'], ['--page', '2000000000'], '--page must be from 1 to 1000000000; got 2000000000'],
      [['pools', 'create'], ['x', '--visibility', 'secret'], '--visibility must be one of private, public; got "secret"'],
      [['jobs', 'submit'], ['x', '--stages', '65'], '--stages must be from 1 to 64; got 65'],
      [['jobs', 'submit'], ['x', '--pool'], 'option --pool needs a value'],
      [['jobs', 'list'], ['--json=yes'], 'option --json takes no value'],
      // Log lines have no ids: --quiet is not taken rather than taken and ignored.
      [['jobs', 'logs'], ['J', '--quiet'], 'unknown option --quiet'],
      // A value or an argument that starts with a dash: how to write it (they read "needs a value", "unknown option 1").
      [['pools', 'create'], ['x', '--description', '-starts with a dash'], 'option --description needs a value (a value that starts with "-" is written --description=-x)'],
      [['chat'], ['m', '-1 is a number'], 'unknown option -1 (an argument that starts with "-" goes after "--": svc ... -- "-x")'],
    ]
    for (const [path, argv, message] of cases) {
      let err: unknown
      try {
        parseInvocation(find(...path), argv)
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(UsageError)
      expect((err as UsageError).message).toBe(message)
      expect((err as UsageError).usage).toContain(`usage: svc ${path.join(' ')}`)
    }
    const ok = parseInvocation(find('jobs', 'submit'), ['toy', '--stages', '3', '--set', 'a=1', '--set', 'b=x', '-q'])
    expect(ok).toMatchObject({ args: { NAME: 'toy' }, flags: { stages: 3, set: ['a=1', 'b=x'], quiet: true } })
  })
})

describe('shell completion', () => {
  const complete = (line: string[]) => {
    const script = bashScript()
    const words = line.map((w) => `'${w}'`).join(' ')
    const r = Bun.spawnSync(['bash', '-c', `${script}\nCOMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}; _svc_complete; printf '%s\\n' "\${COMPREPLY[@]}"`])
    expect(r.exitCode).toBe(0)
    return r.stdout.toString().split('\n').filter(Boolean)
  }

  test('bash completes commands, subcommands, flags and fixed values', () => {
    expect(complete(['svc', 'po'])).toEqual(['pools'])
    expect(complete(['svc', 'pools', ''])).toEqual(expect.arrayContaining(['list', 'show', 'create', 'delete', 'join-command', 'invite']))
    expect(complete(['svc', 'pools', 'create', 'x', '--vis'])).toEqual(['--visibility'])
    expect(complete(['svc', 'pools', 'create', 'x', '--visibility', ''])).toEqual(['private', 'public'])
    expect(complete(['svc', 'jobs', 'list', '--pool', 'lab', '--st'])).toEqual(['--status'])
    expect(complete(['svc', 'completion', ''])).toEqual(expect.arrayContaining(['bash', 'zsh']))
  })

  test('the values of an option are those of the command it is given to, where several commands share its name', () => {
    expect(complete(['svc', 'jobs', 'list', '--status', ''])).toEqual(['queued', 'scheduled', 'running', 'paused', 'completed', 'failed', 'cancelled'])
    expect(complete(['svc', 'users', 'list', '--status', ''])).toEqual(['unverified', 'pending_approval', 'active', 'disabled'])
    expect(complete(['svc', 'users', 'list', '--role', 'admin', '--status', 'a'])).toEqual(['active'])
    expect(complete(['svc', 'artifacts', 'list', '--kind', ''])).toEqual(['checkpoint', 'model', 'file'])
    expect(complete(['svc', 'artifacts', 'upload', 'w.bin', '--kind', ''])).toEqual(['model', 'file'])
    // Free text (an audit kind): no one else's values, and no options in its place.
    expect(complete(['svc', 'audit', 'list', '--kind', ''])).toEqual([])
  })
})

describe('the config file', () => {
  test('is written with mode 0600 and read back, several leaders with a default', () => {
    const path = join(tmp(), 'svc', 'config.toml')
    writeConfigFile(path, { default: 'lab', leaders: { lab: { url: 'http://10.0.0.5:8080', token: 'svc_pat_a"b\\c' }, 'prod.example:443': { url: 'https://prod.example', token: 'svc_pat_x' } } })
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(readConfigFile(path)).toEqual({ default: 'lab', leaders: { lab: { url: 'http://10.0.0.5:8080', token: 'svc_pat_a"b\\c' }, 'prod.example:443': { url: 'https://prod.example', token: 'svc_pat_x' } } })
    expect(readConfigFile(join(tmp(), 'none.toml'))).toEqual({ default: null, leaders: {} })
  })

  test('a broken file is one plain error naming it, with a way out that works (svc login and logout refuse it too)', () => {
    const path = join(tmp(), 'config.toml')
    writeFileSync(path, '[leaders.x]\nurl = 3\n', { mode: 0o600 })
    expect(refusal(() => readConfigFile(path))).toBe(`config file ${path} has a leader "x" without a url and a token; fix it, or remove it and svc login again`)
    writeFileSync(path, 'this is = = not toml', { mode: 0o600 })
    expect(refusal(() => readConfigFile(path))).toMatch(new RegExp(`^config file ${path} is not valid TOML \\(.+\\); fix it, or remove it and svc login again$`))
    // A directory is not "not valid TOML" (it read: is not valid TOML: EISDIR ...).
    expect(refusal(() => readConfigFile(tmp()))).toMatch(/^cannot read the config file .+: it is a directory$/)
  })

  test('any name and token is written so that TOML reads it back: DEL and other control characters are escaped', () => {
    const path = join(tmp(), 'config.toml')
    const odd = 'del\x7fname \x00\x01\t\n\x1b[31m "q" \\ é 😀'
    const cfg = { default: odd, leaders: { [odd]: { url: 'http://10.0.0.5:8080', token: `svc_pat_${odd}` } } }
    writeConfigFile(path, cfg)
    expect(readConfigFile(path)).toEqual(cfg)
  })

  test('a symlinked file is written through to its target, the link stays', () => {
    const dir = tmp()
    const real = join(dir, 'dotfiles', 'svc.toml')
    writeConfigFile(real, { default: null, leaders: {} })
    symlinkSync(real, join(dir, 'config.toml'))
    writeConfigFile(join(dir, 'config.toml'), { default: 'lab', leaders: { lab: { url: 'http://10.0.0.5:8080', token: 'svc_pat_a' } } })
    expect(lstatSync(join(dir, 'config.toml')).isSymbolicLink()).toBe(true)
    expect(readConfigFile(real).default).toBe('lab')
    expect(readdirSync(join(dir, 'dotfiles'))).toEqual(['svc.toml'])
    // A link whose target is not written yet (a fresh dotfiles checkout) is written through too.
    const fresh = tmp()
    symlinkSync(join(fresh, 'dotfiles-svc.toml'), join(fresh, 'config.toml'))
    writeConfigFile(join(fresh, 'config.toml'), { default: 'lab', leaders: { lab: { url: 'http://10.0.0.5:8080', token: 'svc_pat_a' } } })
    expect(lstatSync(join(fresh, 'config.toml')).isSymbolicLink()).toBe(true)
    expect(readConfigFile(join(fresh, 'dotfiles-svc.toml')).default).toBe('lab')
  })

  test('a file that cannot be written is said so in words, before anything is minted for it', () => {
    const file = join(tmp(), 'a.toml')
    writeFileSync(file, '')
    const under = join(file, 'sub.toml')
    expect(refusal(() => checkWritable(under))).toBe(`cannot write the config file ${under}: a part of its path is a file, not a directory`)
    expect(refusal(() => writeConfigFile(under, { default: null, leaders: {} }))).toBe(`cannot write the config file ${under}: a part of its path is a file, not a directory`)
    expect(refusal(() => checkWritable(join(tmp(), 'new', 'config.toml')))).toBe(null)
  })

  test('with HOME unset (and no SVC_CLI_CONFIG, XDG_CONFIG_HOME) there is no config file, never one in the current directory', () => {
    expect(loadClientEnv({}).configFile).toBe(null)
    expect(loadClientEnv({ HOME: '/home/ada' }).configFile).toBe('/home/ada/.config/svc/config.toml')
    expect(refusal(() => configPath(null))).toBe('no config file: HOME is not set; set HOME, or SVC_CLI_CONFIG to the file to use')
    withEnv({ HOME: undefined, SVC_CLI_CONFIG: undefined, XDG_CONFIG_HOME: undefined, SVC_LEADER_URL: undefined, SVC_TOKEN: undefined }, () => {
      expect(refusal(() => resolveTarget({}))).toBe('no leader: pass --leader URL (or set SVC_LEADER_URL); there is no config file, as HOME is not set (SVC_CLI_CONFIG names one)')
      expect(resolveTarget({ leader: 'http://10.0.0.5:8080', token: 'svc_pat_a' }).url).toBe('http://10.0.0.5:8080')
    })
  })
})

describe('svc admin doctor', () => {
  const fresh = () => openDb(join(tmp(), 'state.sqlite3'))

  test('a freshly migrated state file passes every check', () => {
    const state = fresh()
    expect(runDoctor(state).map((r) => [r.name, r.findings])).toEqual(CHECKS.map((c) => [c.name, []]))
    state.close()
  })

  test('finds dangling references and missing or unknown migrations', () => {
    const state = fresh()
    state.sqlite.exec('PRAGMA foreign_keys = OFF')
    state.sqlite.query("INSERT INTO api_tokens (id, user_id, name, prefix, token_hash, created_at) VALUES ('t1', 'no-such-user', 'n', 'p', 'h', 0)").run()
    const first = (state.sqlite.query('SELECT tag FROM __migrations ORDER BY tag LIMIT 1').get() as { tag: string }).tag
    state.sqlite.query('DELETE FROM __migrations WHERE tag = ?').run(first)
    state.sqlite.query("INSERT INTO __migrations (tag, applied_at) VALUES ('9999_from_the_future', 0)").run()
    const byName = Object.fromEntries(runDoctor(state).map((r) => [r.name, r.findings]))
    expect(byName['integrity']).toEqual([])
    expect(byName['foreign-keys']).toEqual(['1 row(s) of api_tokens point at missing rows of users'])
    expect(byName['migrations']).toEqual([`not applied (the leader applies them when it starts): ${first}`, 'applied by a newer leader, unknown to this binary: 9999_from_the_future'])
    state.close()
  })

  test('a check with a fix repairs what it found with --fix, and only then', () => {
    const state = fresh()
    state.sqlite.exec('CREATE TABLE doctor_probe (n INTEGER)')
    state.sqlite.exec('INSERT INTO doctor_probe VALUES (-1)')
    const probe: DoctorCheck = {
      name: 'probe',
      description: 'no negative numbers',
      run: ({ sqlite }) => ((sqlite.query('SELECT count(*) AS n FROM doctor_probe WHERE n < 0').get() as { n: number }).n ? ['a negative number'] : []),
      fix: ({ sqlite }) => [`${sqlite.query('UPDATE doctor_probe SET n = 0 WHERE n < 0').run().changes} row(s) set to 0`],
    }
    expect(runDoctor(state, { checks: [probe] })).toEqual([{ name: 'probe', findings: ['a negative number'], fixed: [], fixable: true }])
    expect(runDoctor(state, { checks: [probe], fix: true })).toEqual([{ name: 'probe', findings: [], fixed: ['1 row(s) set to 0'], fixable: true }])
    state.close()
  })
})

describe('svc admin restore', () => {
  test('refuses a file that is not a state file, and keeps the file it replaces', () => {
    const dir = tmp()
    const junk = join(dir, 'junk.sqlite3')
    writeFileSync(junk, 'not a database at all, just text '.repeat(200))
    expect(() => restoreDatabase(junk, join(dir, 'state.sqlite3'))).toThrow(RestoreError)
    const plain = join(dir, 'plain.sqlite3')
    new Database(plain, { create: true }).exec('CREATE TABLE t (x)')
    expect(() => restoreDatabase(plain, join(dir, 'state.sqlite3'))).toThrow("is not a leader's state file")

    const backup = openDb(join(dir, 'backup.sqlite3'))
    backup.sqlite.exec("CREATE TABLE restore_marker (v TEXT); INSERT INTO restore_marker VALUES ('from the backup')")
    backup.close()
    const live = openDb(join(dir, 'state.sqlite3'))
    live.sqlite.exec("CREATE TABLE restore_marker (v TEXT); INSERT INTO restore_marker VALUES ('before')")
    live.close()
    const r = restoreDatabase(join(dir, 'backup.sqlite3'), join(dir, 'state.sqlite3'), new Date('2025-01-02T03:04:05Z'))
    expect(r.previous).toBe(join(dir, 'state.sqlite3.pre-restore-20250102T030405Z'))
    expect(r.missing).toBe(0)
    expect(statSync(r.path).mode & 0o777).toBe(0o600)
    const read = (p: string) => {
      const db = new Database(p, { readonly: true })
      const v = (db.query('SELECT v FROM restore_marker').get() as { v: string }).v
      db.close()
      return v
    }
    expect(read(r.path)).toBe('from the backup')
    expect(read(r.previous!)).toBe('before')
    expect(existsSync(join(dir, `.state.sqlite3.restore-${process.pid}`))).toBe(false)
  })
})

describe('checkInput: a refused value in plain words before anything is sent', () => {
  test("a pattern is said in words (the regex was quoted, once lower-cased: '^[a-za-z0-9]...', a different rule)", () => {
    expect(refusal(() => checkInput(SubmitBody, { name: 'x', runner: 'bad runner' }))).toBe(`--runner: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (got "bad runner")`)
  })
  test('a nullable number names its range (it read "expected union value")', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 5 }
    expect(refusal(() => checkInput(ChatCompletionBody, body))).toBe('--temperature: must be null or a number from 0 to 2 (got 5)')
  })
})

describe('the client names what the leader refused', () => {
  test('a wrong password is said as such, not blamed on the token; a refused token still gets its hint', async () => {
    const server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (req) => {
        const login = new URL(req.url).pathname === '/api/v1/auth/login'
        const body = login ? { detail: 'Wrong email or password.', code: 'invalid_credentials' } : { detail: 'The credential is wrong, expired or revoked.', code: 'unauthorized' }
        return Response.json({ type: 'about:blank', status: 401, ...body }, { status: 401, headers: { 'content-type': 'application/problem+json' } })
      },
    })
    try {
      const c = new Client({ url: `http://127.0.0.1:${server.port}`, token: 'svc_pat_x', source: 'test' })
      const message = async (path: string) => c.call('POST', path, { body: {} }).then(() => '', (e: Error) => e.message)
      expect(await message('/api/v1/auth/login')).toBe('Wrong email or password.')
      expect(await message('/api/v1/pools')).toBe('The credential is wrong, expired or revoked (the leader refused the token: svc login with a new one, or check --token and SVC_TOKEN)')
    } finally {
      server.stop(true)
    }
  })
})

describe("a proxy's answer for a leader that is away", () => {
  test('502, 503 and 504 in the proxy\'s words are an unreachable leader (followers wait it out); the leader\'s own 503 stays its refusal', async () => {
    const server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (req) => {
        const status = Number(new URL(req.url).searchParams.get('s'))
        if (new URL(req.url).pathname === '/own') return Response.json({ type: 'about:blank', status: 503, detail: 'The artifact store does not answer.', code: 'service_unavailable' }, { status: 503 })
        return new Response('<html><body>Bad Gateway</body></html>', { status, headers: { 'content-type': 'text/html' } })
      },
    })
    try {
      const c = new Client({ url: `http://127.0.0.1:${server.port}`, token: 'svc_pat_x', source: 'test' })
      for (const s of [502, 503, 504]) {
        const e = await c.get('/proxied', { s }).then(() => null, (x: Error) => x)
        expect([s, e instanceof LeaderUnreachable]).toEqual([s, true])
      }
      const own = await c.get('/own').then(() => null, (x: Error) => x)
      expect([own instanceof LeaderRefused, own instanceof LeaderUnreachable, own?.message]).toEqual([true, false, 'The artifact store does not answer.'])
      expect((await c.get('/proxied', { s: 500 }).then(() => null, (x: Error) => x)) instanceof LeaderUnreachable).toBe(false)
    } finally {
      server.stop(true)
    }
  })
})

describe('which leader: mistakes in the config file and SVC_LEADER_URL said plainly', () => {
  test('a default that names no leader of the file, several leaders and no default, a URL-ish SVC_LEADER_URL', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'svc-cfg-')), 'config.toml')
    writeConfigFile(path, { default: 'x', leaders: { y: { url: 'http://10.0.0.5:8080', token: 'svc_pat_a' } } })
    withEnv({ SVC_CLI_CONFIG: path, SVC_LEADER_URL: undefined, SVC_TOKEN: undefined }, () => {
      expect(refusal(() => resolveTarget({}))).toBe(`the default leader "x" of ${path} is not among its leaders (y): svc login URL --name x, or pass --leader NAME`)
    })
    writeConfigFile(path, { default: null, leaders: { y: { url: 'http://10.0.0.5:8080', token: 'a' }, z: { url: 'http://10.0.0.6:8080', token: 'b' } } })
    withEnv({ SVC_CLI_CONFIG: path, SVC_LEADER_URL: undefined, SVC_TOKEN: undefined }, () => {
      expect(refusal(() => resolveTarget({}))).toBe(`several leaders in ${path} (y, z) and none is the default: pass --leader NAME`)
    })
    for (const bad of ['notaurl', 'ftp://x', 'leader.example.org:8080']) {
      withEnv({ SVC_CLI_CONFIG: path, SVC_LEADER_URL: bad, SVC_TOKEN: undefined }, () => {
        const said = refusal(() => resolveTarget({}))
        if (bad === 'notaurl') expect(said).toBe(`no leader named "notaurl" in ${path} (known: y, z) (SVC_LEADER_URL); give a URL (http://HOST:PORT) or run svc login`)
        else expect(said).toBe(`SVC_LEADER_URL: not a leader URL: ${JSON.stringify(bad)} (want http://HOST:PORT or https://HOST, or the name of a leader you logged in to)`)
      })
    }
  })

  test("a broken connection is said as its error code, without Bun's advice to programmers", () => {
    const bun = Object.assign(new Error('The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()'), { code: 'ECONNRESET' })
    expect(netReason(bun)).toBe('ECONNRESET')
    expect(netReason(new Error('The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()'))).toBe('The socket connection was closed unexpectedly.')
    expect(netReason({})).toBe('connection failed')
  })

  test('pools create --open-join without --visibility public is bad usage, said before any call (it made a private pool nobody could join openly)', async () => {
    const cmd = COMMANDS.find((c) => c.path.join(' ') === 'pools create')!
    const { create } = await import('../../src/cli/remote/pools')
    const env = { leader: process.env.SVC_LEADER_URL }
    process.env.SVC_LEADER_URL = 'http://127.0.0.1:9' // never called
    try {
      await expect(create(parseInvocation(cmd, ['commons', '--open-join']))).rejects.toThrow('--open-join lets anyone join a public pool: add --visibility public')
    } finally {
      if (env.leader === undefined) delete process.env.SVC_LEADER_URL
      else process.env.SVC_LEADER_URL = env.leader
    }
  })
})
