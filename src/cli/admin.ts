// `svc admin ...`: operates directly on the state database, through the same services as the API.
import { parseArgs } from 'node:util'
import { loadConfig } from '../config'
import { backupDatabase } from '../db/backup'
import { blobStoreFor } from '../artifacts/store'
import { systemClock } from '../time'
import { createLogger } from '../log'
import { Accounts } from '../accounts/service'
import { readPassword } from './prompt'
import { sendTestMail } from '../mail/sender'
import { AppError } from '../errors'
import { UsageError } from './usage'
import { createContext, type Ctx } from '../context'

function adminContext(dbFlag: string | undefined, withSecret: boolean): Ctx {
  const cfg = loadConfig(dbFlag ? { ...process.env, SVC_JOIN_STATE_DB: dbFlag } : process.env, { withoutSecret: !withSecret })
  const log = createLogger('warn', (l) => process.stderr.write(l + '\n'))
  return createContext(cfg, log, systemClock, { mailEnabled: false })
}

function oneArg(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one ${what}`)
  return positionals[0]!
}

function email(v: string): string {
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v) || v.length > 254) throw new UsageError(`not an email address: ${v}`)
  return v
}

export async function runAdmin(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: {
      db: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      'display-name': { type: 'string' },
      token: { type: 'string' },
    },
  })
  switch (sub) {
    case 'create-user': {
      const addr = email(oneArg(positionals, 'EMAIL'))
      const password = await readPassword(values['password-stdin'] === true, true)
      const ctx = adminContext(values.db, false)
      try {
        const user = await new Accounts(ctx).createAdminUser(addr, password, values['display-name'])
        process.stdout.write(`created admin ${user.email} (${user.id})\n`)
      } finally {
        ctx.sqlite.close()
      }
      return 0
    }
    case 'set-password': {
      const addr = email(oneArg(positionals, 'EMAIL'))
      const password = await readPassword(values['password-stdin'] === true, true)
      const ctx = adminContext(values.db, false)
      try {
        const { revokedSessions, revokedApiTokens } = await new Accounts(ctx).setUserPassword(addr, password)
        process.stdout.write(`password set for ${addr.toLowerCase()}; ${revokedSessions} session(s) revoked, ${revokedApiTokens} API token(s) revoked\n`)
      } finally {
        ctx.sqlite.close()
      }
      return 0
    }
    case 'send-test-mail': {
      const to = email(oneArg(positionals, 'EMAIL'))
      const cfg = loadConfig(process.env, { withoutSecret: true })
      if (cfg.smtp === null) throw new AppError('mail_disabled', 'SMTP is not configured: set SVC_SMTP_HOST and SVC_SMTP_FROM (see docs/operations.md)')
      await sendTestMail(cfg.smtp, to, cfg.baseUrl, cfg.smtp.ca ?? undefined)
      process.stdout.write(`test mail sent to ${to} through ${cfg.smtp.host}:${cfg.smtp.port} (${cfg.smtp.tls})\n`)
      return 0
    }
    case 'backup': {
      const file = oneArg(positionals, 'FILE')
      const cfg = loadConfig(values.db ? { ...process.env, SVC_JOIN_STATE_DB: values.db } : process.env, { withoutSecret: true })
      const { path, bytes } = backupDatabase(cfg.dbPath, file)
      process.stdout.write(`backup written to ${path} (${bytes} bytes, integrity ok)\n`)
      // The copy holds the artifacts' rows, not their bytes: say where those are, so they are kept too.
      const blobs = blobStoreFor(cfg.artifactStore, cfg.stateDir).location
      process.stdout.write(`artifact bytes are not in this file: back up ${blobs} alongside (docs/operations.md, Backup and restore)\n`)
      return 0
    }
    default:
      throw new UsageError(sub === undefined ? 'missing admin command' : `unknown admin command: ${sub}`)
  }
}
