// Runs the built dist/svc as a user would: from a temporary directory, on a free port.
import { mkdtempSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { track } from './children'

export const SVC_BIN = resolve(import.meta.dir, '../../dist/svc')

export function requireBinary(): void {
  if (!existsSync(SVC_BIN)) throw new Error(`${SVC_BIN} is missing: run \`bun run build\` before the e2e tests`)
}

export interface Leader {
  url: string
  dir: string
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  logs: string[]
  stop(signal?: NodeJS.Signals): Promise<number>
}

/** `prefix` runs the leader through another command that ends by exec-ing its arguments (unshare, say). */
export async function startLeader(env: Record<string, string> = {}, dir = mkdtempSync(join(tmpdir(), 'svc-e2e-')), prefix: string[] = []): Promise<Leader> {
  requireBinary()
  const proc = Bun.spawn([...prefix, SVC_BIN, 'serve'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', SVC_PORT: '0', SVC_COOKIE_SECURE: '0', SVC_LOG_LEVEL: 'info', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  track(proc) // killed when the run ends if the test never stops it
  const logs: string[] = []
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`leader did not start: ${logs.join('\n')}`)), 15_000)
    void (async () => {
      const decoder = new TextDecoder()
      let buf = ''
      const reader = proc.stdout.getReader()
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        buf += decoder.decode(r.value)
        let nl: number
        while ((nl = buf.indexOf('\n')) !== -1) {
          const line = buf.slice(0, nl)
          buf = buf.slice(nl + 1)
          logs.push(line)
          try {
            const o = JSON.parse(line) as { msg?: string; url?: string }
            if (o.msg === 'leader listening' && o.url) {
              clearTimeout(timer)
              resolveUrl(o.url)
            }
          } catch {
            // not JSON: keep it in logs
          }
        }
      }
      clearTimeout(timer)
      reject(new Error(`leader exited before listening (code ${await proc.exited}): ${logs.join('\n')} ${await new Response(proc.stderr).text()}`))
    })()
  })
  return {
    url,
    dir,
    proc,
    logs,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      proc.kill(signal)
      return proc.exited
    },
  }
}

export async function runSvc(args: string[], opts: { cwd?: string; env?: Record<string, string>; stdin?: string } = {}) {
  requireBinary()
  const proc = Bun.spawn([SVC_BIN, ...args], {
    cwd: opts.cwd ?? mkdtempSync(join(tmpdir(), 'svc-cli-')),
    env: { PATH: process.env.PATH ?? '', ...opts.env },
    stdin: opts.stdin === undefined ? 'ignore' : new TextEncoder().encode(opts.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}
