// `svc serve` on an address it cannot listen on: a ListenError naming the address, the variables
// and the reason, after closing what the start had opened (loops, services, the state file).
import { expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { ListenError, startServer } from '../../src/server'

test('a taken port rejects the start with a ListenError; the state file takes another start', async () => {
  const taken = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const dir = mkdtempSync(join(tmpdir(), 'svc-listen-'))
  const lines: string[] = []
  try {
    const cfg = loadConfig({ SVC_STATE_DIR: dir, SVC_PORT: String(taken.port) })
    const start = startServer(cfg, createLogger('info', (l) => lines.push(l)))
    await expect(start).rejects.toThrow(new ListenError('127.0.0.1', taken.port, { code: 'EADDRINUSE' }))
    await expect(start).rejects.toThrow(`cannot listen on 127.0.0.1:${taken.port} (SVC_HOST, SVC_PORT): the port is in use`)
    expect(lines.some((l) => l.includes('leader listening'))).toBe(false)
    // The state file was opened (and migrated) before the listen; a second start on it runs.
    const again = await startServer(loadConfig({ SVC_STATE_DIR: dir, SVC_PORT: '0' }), createLogger('info', (l) => lines.push(l)))
    expect((await fetch(`${again.url}/api/v1/ready`)).status).toBe(200)
    await again.stop()
  } finally {
    taken.stop(true)
  }
})

test('a second leader on a running leader\'s port is refused (it used to share the port and take half its requests)', async () => {
  const lines: string[] = []
  const first = await startServer(loadConfig({ SVC_STATE_DIR: mkdtempSync(join(tmpdir(), 'svc-listen-')), SVC_PORT: '0' }), createLogger('info', (l) => lines.push(l)))
  try {
    const second = startServer(loadConfig({ SVC_STATE_DIR: mkdtempSync(join(tmpdir(), 'svc-listen-')), SVC_PORT: String(first.port) }), createLogger('info', (l) => lines.push(l)))
    await expect(second).rejects.toThrow(`cannot listen on 127.0.0.1:${first.port} (SVC_HOST, SVC_PORT): the port is in use`)
    expect(lines.filter((l) => l.includes('leader listening'))).toHaveLength(1)
  } finally {
    await first.stop()
  }
})

test('the reason in words: a host name that does not resolve, an address not on this machine, a privileged port', () => {
  const msg = (host: string, port: number, code: string) => new ListenError(host, port, Object.assign(new Error(`${code}: system words`), { code })).message
  expect(msg('leader.invalid', 8080, 'EINVAL')).toBe('cannot listen on leader.invalid:8080 (SVC_HOST, SVC_PORT): the host name does not resolve to an address')
  expect(msg('192.0.2.1', 8080, 'EADDRNOTAVAIL')).toBe('cannot listen on 192.0.2.1:8080 (SVC_HOST, SVC_PORT): no interface of this machine has that address')
  expect(msg('::1', 80, 'EACCES')).toBe('cannot listen on [::1]:80 (SVC_HOST, SVC_PORT): permission denied (a port below 1024 needs privileges)')
  // Anything else keeps the system's own words (an IP address with EINVAL is not a lookup).
  expect(msg('127.0.0.1', 8080, 'EINVAL')).toBe('cannot listen on 127.0.0.1:8080 (SVC_HOST, SVC_PORT): EINVAL: system words')
})
