// What the fellow's operator declares (src/agent/fellow-config.ts) refused in plain words, and
// URLs logged without their credentials (src/agent/redact.ts).
import { describe, expect, test } from 'bun:test'
import { FellowConfigError, checkPrograms, enginesFromToml, loadEngines, loadRunners } from '../../src/agent/fellow-config'
import { spawnChild } from '../../src/agent/lines'
import { redactUrl } from '../../src/agent/redact'

function refused(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    if (e instanceof FellowConfigError) return e.message
    throw e
  }
  throw new Error('expected a FellowConfigError')
}
const toml = (text: string) => () => loadRunners({ config: 'fellow.toml' }, () => text)
const engines = (text: string) => () => enginesFromToml(text, 'fellow.toml')

describe('declarations refused in plain words', () => {
  test('a command line over 8000 characters is said to be too long (it read "must be a command line ... not empty")', () => {
    const long = 'x'.repeat(8001)
    expect(refused(toml(`[runners.torch]\ncommand = "${long}"`))).toBe('fellow.toml: runners.torch.command: the command line is too long: 8001 characters, at most 8000')
    expect(refused(engines(`[engines.e]\ncommand = "${long} {port}"`))).toBe('fellow.toml: engines.e.command: the command line is too long: 8008 characters, at most 8000')
    expect(refused(() => loadRunners({ runner: [`torch=${long}`] }))).toBe('--runner torch: the command line is too long: 8001 characters, at most 8000')
    expect(refused(toml(`[runners.torch]\ncommand = [${Array(501).fill('"a"').join(',')}]`))).toBe('fellow.toml: runners.torch.command: the command has too many words: 501, at most 500')
    expect(refused(toml('[runners.torch]\ncommand = ""'))).toBe('fellow.toml: runners.torch.command: must be a command line (a string) or its words (a list of strings), not empty')
  })

  test('a bad model or model_artifact is said in words, not as a regular expression', () => {
    const model = refused(engines('[engines.e]\nurl = "http://127.0.0.1:1/v1"\nmodel = "-bad model"'))
    expect(model).toBe('fellow.toml: engines.e.model: the model name must be 1 to 200 characters: letters, digits and . _ : / @ + -, starting with a letter or digit')
    const artifact = refused(engines('[engines.e]\ncommand = "srv {port} {model_file}"\nmodel_artifact = "weights.gguf"'))
    expect(artifact).toBe('fellow.toml: engines.e.model_artifact: must be an artifact id, a UUID like 0b6f3c1e-5d2a-4c8e-9f10-2a3b4c5d6e7f (svc artifacts list shows them)')
    for (const m of [model, artifact]) expect(m).not.toContain('^[')
  })

  test('{port} in an --engine URL gets its own message, not "not a URL"', () => {
    expect(refused(() => loadEngines({ engine: ['x=http://127.0.0.1:{port}/v1'] }))).toBe('--engine x: {port} in the url needs a command that listens on it (--engine-cmd, or command = ... in the config file)')
  })

  test('an empty program word is said to be an empty command (it read "runner toy: : not found on PATH")', () => {
    expect(refused(toml('[runners.toy]\ncommand = [""]'))).toBe('fellow.toml: runners.toy: the command is empty (its first word, the program, is "")')
    expect(refused(toml('[runners.toy]\ncommand = ["", "x"]'))).toBe('fellow.toml: runners.toy: the command is empty (its first word, the program, is "")')
    expect(refused(engines('[engines.e]\ncommand = ["", "{port}"]'))).toBe('fellow.toml: engines.e: the command is empty (its first word, the program, is "")')
    expect(refused(() => loadRunners({ runner: ["toy=''"] }))).toBe('--runner toy: the command is empty (its first word, the program, is "")')
    expect(() => checkPrograms({ engines: [], runners: loadRunners({ runner: ['toy=true'] }) }, process.env)).not.toThrow()
    // And the agent says the same if one reaches it anyway.
    expect(() => spawnChild([''], { PATH: process.env.PATH ?? '' }, 'ignore')).toThrow('the command is empty (its first word, the program, is "")')
  })

  test('a name that does not start with a letter or digit is refused saying so', () => {
    expect(refused(() => loadRunners({ runner: ['-toy=true'] }))).toContain("starting with a letter or digit, got \"-toy\"")
  })
})

describe('URLs as the agent logs them', () => {
  test('user name, password and secret-looking query values become ***', () => {
    expect(redactUrl('http://admin:s3cretpw@127.0.0.1:47160/v1')).toBe('http://***@127.0.0.1:47160/v1')
    expect(redactUrl('https://token@engine.example/v1')).toBe('https://***@engine.example/v1')
    expect(redactUrl('http://127.0.0.1:8080/v1?api_key=abc&x=1&Access-Token=t#f')).toBe('http://127.0.0.1:8080/v1?api_key=***&x=1&Access-Token=***#f')
    expect(redactUrl('http://127.0.0.1:{port}/v1')).toBe('http://127.0.0.1:{port}/v1')
    expect(redactUrl('http://u:p@[not a url')).toBe('http://***@[not a url')
    expect(redactUrl('http://127.0.0.1:1/v1')).toBe('http://127.0.0.1:1/v1')
    // Up to the last @ of the authority, where URL parsers end the user part (it showed "ss@host").
    expect(redactUrl('http://admin:p@ss@host:8000/v1')).toBe('http://***@host:8000/v1')
    expect(redactUrl('http://admin:p@ss@[bad/v1?x=a@b')).toBe('http://***@[bad/v1?x=a@b')
    expect(redactUrl('http://host:8000/v1?next=a@b')).toBe('http://host:8000/v1?next=a@b')
  })

  test('a URL refused as not a URL is not repeated with its password', () => {
    expect(refused(() => loadEngines({ engine: ['x=http://admin:s3cretpw@[bad/v1'] }))).toBe('--engine x: not a URL: "http://***@[bad/v1"')
    // Nor one refused for its missing name.
    expect(refused(() => loadEngines({ engine: ['=http://admin:s3cretpw@host/v1'] }))).toBe('--engine takes NAME=URL, got "=http://***@host/v1"')
  })
})
