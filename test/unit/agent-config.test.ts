import { describe, expect, test } from 'bun:test'
import { ConfigError, loadFellowConfig } from '../../src/config'
import { listenHostFor } from '../../src/cli/fellow'

const token = 'svc_join_' + 'a'.repeat(43)

function errorFor(env: Record<string, string>, flags = {}): ConfigError {
  try {
    loadFellowConfig(env, flags)
  } catch (e) {
    if (e instanceof ConfigError) return e
    throw e
  }
  throw new Error('expected a ConfigError')
}

describe('fellow configuration', () => {
  test('flags win over variables; defaults fill the rest', () => {
    const cfg = loadFellowConfig({ SVC_LEADER_URL: 'http://env:1', SVC_JOIN_TOKEN: token }, { leader: 'https://flag.example/', p2pPortBase: '7000' })
    expect(cfg.leaderUrl).toBe('https://flag.example')
    expect(cfg.joinToken).toBe(token)
    expect(cfg.p2pPortBase).toBe(7000)
    expect(cfg.advertiseHost).toBeNull()
    expect(cfg.stateDir.endsWith('fellow-state')).toBe(true)
    expect(loadFellowConfig({ SVC_LEADER_URL: 'http://env:1' }).p2pPortBase).toBe(5557)
  })

  test("the chat clients' base URL (…/api/v1) given as the leader's is taken as its base; a path prefix before it stays", () => {
    expect(loadFellowConfig({ SVC_LEADER_URL: 'http://env:1/api/v1/' }).leaderUrl).toBe('http://env:1')
    expect(loadFellowConfig({}, { leader: 'https://example.org/leader/api/v1' }).leaderUrl).toBe('https://example.org/leader')
    expect(loadFellowConfig({}, { leader: 'https://example.org/leader/' }).leaderUrl).toBe('https://example.org/leader')
  })

  test('the p2p listeners bind the advertised address only, unless --p2p-listen-host names another', () => {
    expect(listenHostFor('10.0.0.5')).toBe('10.0.0.5')
    expect(listenHostFor('fd00::5')).toBe('fd00::5')
    expect(listenHostFor('127.0.0.1')).toBe('127.0.0.1')
    expect(listenHostFor('localhost')).toBe('127.0.0.1')
    expect(listenHostFor('203.0.113.7', '192.168.1.20')).toBe('192.168.1.20')
    const cfg = loadFellowConfig({}, { leader: 'http://l:1', p2pListenHost: '[::]' })
    expect(cfg.p2pListenHost).toBe('::')
    expect(loadFellowConfig({}, { leader: 'http://l:1' }).p2pListenHost).toBeNull()
  })

  test('an empty join token means none (the default pool), as fellow.sh passes when it has none', () => {
    expect(loadFellowConfig({}, { leader: 'http://l:1', joinToken: '' }).joinToken).toBeNull()
  })

  test.each([
    ['no leader at all', {}, {}, '--leader'],
    ['a leader without a scheme', {}, { leader: 'leader.example' }, '--leader'],
    ['a leader variable that is not http(s)', { SVC_LEADER_URL: 'ftp://x' }, {}, 'SVC_LEADER_URL'],
    ['a port base without room for base+1', { SVC_LEADER_URL: 'http://l' }, { p2pPortBase: '65535' }, '--p2p-port-base'],
    ['a port base that is not a number', { SVC_LEADER_URL: 'http://l' }, { p2pPortBase: 'x' }, '--p2p-port-base'],
    ['a join token variable of the wrong kind', { SVC_LEADER_URL: 'http://l', SVC_JOIN_TOKEN: 'svc_pat_x' }, {}, 'SVC_JOIN_TOKEN'],
    ['a node token given as join token', { SVC_LEADER_URL: 'http://l' }, { joinToken: 'svc_node_abc' }, '--join-token'],
    ['an advertise host with a space', { SVC_LEADER_URL: 'http://l' }, { advertiseHost: 'a b' }, '--advertise-host'],
    ['a p2p listen host with a slash', { SVC_LEADER_URL: 'http://l' }, { p2pListenHost: '0.0.0.0/0' }, '--p2p-listen-host'],
  ])('%s is refused, naming the flag or variable', (_, env, flags, name) => {
    expect(errorFor(env as Record<string, string>, flags).variable).toBe(name)
  })
})
