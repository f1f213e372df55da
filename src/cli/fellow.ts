// `svc fellow`: runs the reference fellow agent on this machine until SIGTERM/SIGINT.
import os from 'node:os'
import { parseArgs } from 'node:util'
import { loadFellowConfig } from '../config'
import { Agent } from '../agent/agent'
import { LogBuffer, agentLogger } from '../agent/logship'
import { FellowConfigError, checkPrograms, loadWorkloads, type EngineSpec, type RunnerSpec } from '../agent/fellow-config'
import { UsageError } from './usage'
import { dropStartupCode } from '../memory'

/** This machine's first non-internal IPv4 address: what neighbours on a LAN or mesh can reach. */
export function defaultAdvertiseHost(): string {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address
  }
  return '127.0.0.1'
}

/**
 * Where the p2p listeners bind: the advertised address and nothing else (issue 26, item 10: they
 * bound every interface, so a public or container interface took frames too), unless
 * --p2p-listen-host says otherwise (NAT, port forwarding: the advertised address is not local).
 */
export function listenHostFor(advertise: string, override: string | null = null): string {
  if (override !== null) return override
  return advertise === 'localhost' ? '127.0.0.1' : advertise
}

export async function runFellow(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      leader: { type: 'string' },
      'join-token': { type: 'string' },
      'state-dir': { type: 'string' },
      'p2p-port-base': { type: 'string' },
      'advertise-host': { type: 'string' },
      'p2p-listen-host': { type: 'string' },
      hostname: { type: 'string' },
      once: { type: 'boolean' },
      engine: { type: 'string', multiple: true },
      'engine-cmd': { type: 'string', multiple: true },
      runner: { type: 'string', multiple: true },
      config: { type: 'string' },
    },
  })
  if (positionals.length > 0) throw new UsageError(`fellow takes no positional arguments, got: ${positionals.join(' ')}`)
  if (values.hostname !== undefined && !/^[^\s]{1,253}$/.test(values.hostname)) throw new UsageError('--hostname must be 1 to 253 characters without spaces')
  const cfg = loadFellowConfig(process.env, {
    leader: values.leader,
    joinToken: values['join-token'],
    stateDir: values['state-dir'],
    p2pPortBase: values['p2p-port-base'],
    advertiseHost: values['advertise-host'],
    p2pListenHost: values['p2p-listen-host'],
    hostname: values.hostname,
  })
  let workloads: { engines: EngineSpec[]; runners: RunnerSpec[] }
  try {
    workloads = loadWorkloads({ engine: values.engine, engineCmd: values['engine-cmd'], runner: values.runner, config: values.config })
    checkPrograms(workloads, process.env)
  } catch (e) {
    if (!(e instanceof FellowConfigError)) throw e
    process.stderr.write(`svc: configuration error: ${e.message}\n`)
    return 2
  }
  const logs = new LogBuffer()
  const log = agentLogger(cfg.logLevel, logs)
  const advertiseHost = cfg.advertiseHost ?? defaultAdvertiseHost()
  const agent = new Agent({
    leaderUrl: cfg.leaderUrl,
    joinToken: cfg.joinToken,
    stateDir: cfg.stateDir,
    hostname: cfg.hostname ?? os.hostname(),
    advertiseHost,
    listenHost: listenHostFor(advertiseHost, cfg.p2pListenHost),
    p2pPortBase: cfg.p2pPortBase,
    once: values.once === true,
    log,
    logs,
    engines: workloads.engines,
    runners: workloads.runners,
  })
  const onSignal = (sig: string) => agent.shutdown(sig)
  // SIGHUP (the terminal it ran in closed) too: a goodbye to the leader and engines stopped within
  // their grace, as on SIGTERM, instead of dying on the spot.
  const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const
  for (const s of signals) process.on(s, onSignal)
  dropStartupCode()
  try {
    return await agent.run()
  } finally {
    for (const s of signals) process.off(s, onSignal)
  }
}
