import { describe, expect, test } from 'bun:test'
import { chmodSync, mkdtempSync, statSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig, ConfigError, securityWarnings, parseLangTag } from '../../src/config'
import { openDb } from '../../src/db/client'
import { backupDatabase } from '../../src/db/backup'
import { joinCommand } from '../../src/fellows/service'

const dir = () => mkdtempSync(join(tmpdir(), 'svc-cfg-'))

function errorFor(env: Record<string, string>): ConfigError {
  try {
    loadConfig({ SVC_STATE_DIR: dir(), ...env })
  } catch (e) {
    if (e instanceof ConfigError) return e
    throw e
  }
  throw new Error('expected a ConfigError')
}

describe('config', () => {
  test('defaults match the spec and contract', () => {
    const d = dir()
    const cfg = loadConfig({ SVC_STATE_DIR: d })
    expect(cfg.host).toBe('127.0.0.1')
    expect(cfg.port).toBe(8080)
    expect(cfg.baseUrl).toBe('http://127.0.0.1:8080')
    expect(cfg.dbPath).toBe(join(d, 'join_state.sqlite3'))
    expect(cfg.requireNodeAuth && cfg.requireOperatorAuth && cfg.requireCsrf && cfg.cookieSecure).toBe(true)
    expect(cfg.requireEmailVerification || cfg.requireAdminApproval).toBe(false)
    expect(cfg.trustedProxyHops).toBe(1)
    expect(cfg.sessionTtlHours).toBe(336)
    expect([cfg.authRateMax, cfg.authRateWindowS]).toEqual([10, 60])
    expect([cfg.loginLockoutThreshold, cfg.loginLockoutSeconds, cfg.accountLockoutThreshold, cfg.accountLockoutSeconds]).toEqual([5, 300, 40, 900])
    expect(cfg.maxBodyBytes).toBe(1024 * 1024)
    expect(cfg.relayMaxFrameBytes).toBe(64 * 1024 * 1024)
    expect(cfg.relayMaxQueueBytes).toBe(256 * 1024 * 1024)
    expect(cfg.heartbeatIntervalS).toBe(10)
    expect(cfg.pipelineTransport).toBe('auto')
    expect([cfg.publicStatsMinNodes, cfg.publicStatsTtlS]).toEqual([3, 60])
    expect(cfg.smtp).toBeNull()
    expect(cfg.legalLang).toBe('en')
  })

  test('SVC_BASE_URL keeps plain origins with a path, IPv6 literals and ports', () => {
    for (const v of ['https://leader.example.org', 'https://leader.example.org/svc', 'http://[::1]:8080', 'http://10.0.0.5:8080/a_b-c~d']) {
      expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_BASE_URL: v }).baseUrl).toBe(v)
    }
  })

  test('SVC_HOST takes an IP address (IPv6 with or without brackets) or a host name; anything else stops with its name', () => {
    const hostOf = (v: string) => loadConfig({ SVC_STATE_DIR: dir(), SVC_HOST: v })
    for (const v of ['0.0.0.0', '127.0.0.1', '::', '::1', 'localhost', 'leader-1.example.org', 'LEADER']) expect(hostOf(v).host).toBe(v)
    const bracketed = hostOf('[::1]')
    expect([bracketed.host, bracketed.baseUrl]).toEqual(['::1', 'http://[::1]:8080'])
    for (const v of ['a b', '::::', '[::1', 'host:8080', 'http://leader', '-leader', 'leader..example', 'le_ader', `${'a'.repeat(64)}.example`, '1.2.3.4/8', '999.1.1.1', '1.2.3.256']) {
      expect(() => hostOf(v)).toThrow(new ConfigError('SVC_HOST', `expected an IP address or a host name, got ${JSON.stringify(v)}`))
    }
  })

  test('relay totals and job queue caps default to sizes relative to the channel cap; a pool cap above the total is refused', () => {
    const d = loadConfig({ SVC_STATE_DIR: dir() })
    expect([d.relayMaxTotalBytes, d.relayMaxPoolBytes]).toEqual([256 * 1024 * 1024, 128 * 1024 * 1024])
    expect([d.maxQueuedJobsPerUser, d.maxQueuedJobsPerPool]).toEqual([20, 100])
    const big = loadConfig({ SVC_STATE_DIR: dir(), SVC_RELAY_MAX_QUEUE_BYTES: String(1024 * 1024 * 1024) })
    expect([big.relayMaxTotalBytes, big.relayMaxPoolBytes]).toEqual([1024 * 1024 * 1024, 512 * 1024 * 1024])
    expect(errorFor({ SVC_RELAY_MAX_TOTAL_BYTES: String(8 * 1024 * 1024), SVC_RELAY_MAX_POOL_BYTES: String(16 * 1024 * 1024), SVC_RELAY_MAX_FRAME_BYTES: String(1024 * 1024), SVC_RELAY_MAX_QUEUE_BYTES: String(4 * 1024 * 1024) }).variable).toBe('SVC_RELAY_MAX_POOL_BYTES')
    expect(errorFor({ SVC_RELAY_MAX_TOTAL_BYTES: String(1024 * 1024) }).variable).toBe('SVC_RELAY_MAX_TOTAL_BYTES') // below one 64 MiB frame
    expect(errorFor({ SVC_MAX_QUEUED_JOBS_PER_USER: '0' }).variable).toBe('SVC_MAX_QUEUED_JOBS_PER_USER')
  })

  test('account lockout threshold defaults to 8 times the login threshold', () => {
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_LOGIN_LOCKOUT_THRESHOLD: '3' }).accountLockoutThreshold).toBe(24)
  })

  test('a generated secret key is kept in the state dir with mode 0600 and reused', () => {
    const d = dir()
    const a = loadConfig({ SVC_STATE_DIR: d })
    const b = loadConfig({ SVC_STATE_DIR: d })
    expect(a.secretKey.equals(b.secretKey)).toBe(true)
    expect(statSync(join(d, 'secret_key')).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(d, 'secret_key'), 'utf8').trim().length).toBeGreaterThanOrEqual(32)
  })

  test.each([
    ['SVC_PORT', 'abc'],
    ['SVC_PORT', '70000'],
    ['SVC_SMTP_TLS', 'maybe'],
    ['SVC_PIPELINE_TRANSPORT', 'carrier-pigeon'],
    ['SVC_REQUIRE_CSRF', 'perhaps'],
    ['SVC_TRUSTED_PROXY_HOPS', '-1'],
    ['SVC_BASE_URL', 'ftp://x'],
    ['SVC_BASE_URL', 'not a url'],
    ["SVC_BASE_URL", "http://a'$(id)'.example.org"],
    ['SVC_BASE_URL', 'https://leader.example.org/x;reboot'],
    ['SVC_BASE_URL', 'https://user:pw@leader.example.org'],
    ['SVC_BASE_URL', 'https://leader.example.org/?next=1'],
    ['SVC_MAX_INFLIGHT_BODY_BYTES', '4096'],
    ['SVC_SESSION_TTL_HOURS', '1.5'],
    ['SVC_SECRET_KEY', 'short'],
    ['SVC_LOG_LEVEL', 'chatty'],
    ['SVC_IMPRINT_FILE', '/nonexistent/imprint.html'],
  ])('%s=%s is refused with a message naming the variable', (name, value) => {
    const e = errorFor({ [name]: value })
    expect(e.variable).toBe(name)
    expect(e.message.startsWith(`${name}: `)).toBe(true)
  })

  test('SVC_TRUSTED_PROXIES defaults to loopback only, takes addresses and CIDR blocks, and stops on anything else (issue 26)', () => {
    expect(loadConfig({ SVC_STATE_DIR: dir() }).trustedProxies).toEqual(['127.0.0.0/8', '::1/128'])
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_TRUSTED_PROXIES: ' 192.0.2.10 , 10.8.0.0/16,::1,' }).trustedProxies).toEqual(['192.0.2.10/32', '10.8.0.0/16', '::1/128'])
    for (const bad of ['proxy.example.org', '10.0.0.0/40', '192.0.2.10, nope', ',']) {
      const e = errorFor({ SVC_TRUSTED_PROXIES: bad })
      expect([bad, e.variable]).toEqual([bad, 'SVC_TRUSTED_PROXIES'])
      expect(e.message).toStartWith('SVC_TRUSTED_PROXIES: ')
    }
  })

  test('SVC_ALLOWED_HOSTS takes host names, .domains and *, lower-cased, and stops on anything else (a port, a URL)', () => {
    expect(loadConfig({ SVC_STATE_DIR: dir() }).allowedHosts).toEqual([])
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_ALLOWED_HOSTS: ' GPU-Box , .corp.example,leader.lan.,' }).allowedHosts).toEqual(['gpu-box', '.corp.example', 'leader.lan'])
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_ALLOWED_HOSTS: '*' }).allowedHosts).toEqual(['*'])
    for (const bad of ['gpu-box:8080', 'http://gpu-box', 'a b', '*.corp.example', '..corp']) {
      const e = errorFor({ SVC_ALLOWED_HOSTS: bad })
      expect([bad, e.variable]).toEqual([bad, 'SVC_ALLOWED_HOSTS'])
    }
  })

  test('SVC_PASSWORD_HASH_QUEUE defaults to twice the hashing concurrency and must be a whole number (issue 26)', () => {
    expect(loadConfig({ SVC_STATE_DIR: dir() }).passwordHashQueue).toBe(4)
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_PASSWORD_HASH_QUEUE: '0' }).passwordHashQueue).toBe(0)
    expect(errorFor({ SVC_PASSWORD_HASH_QUEUE: '-1' }).variable).toBe('SVC_PASSWORD_HASH_QUEUE')
    expect(errorFor({ SVC_PASSWORD_HASH_QUEUE: 'lots' }).variable).toBe('SVC_PASSWORD_HASH_QUEUE')
  })

  test('token-less join is on by default (SPEC: no token, the default pool), limited to 10 per address and 30 in all per 60 s; logs keep 16 MiB in all (issue 26)', () => {
    const cfg = loadConfig({ SVC_STATE_DIR: dir() })
    expect([cfg.allowTokenlessJoin, cfg.tokenlessJoinRateMax, cfg.tokenlessJoinMax, cfg.tokenlessJoinWindowS, cfg.logMaxTotalBytes]).toEqual([true, 10, 30, 60, 16 * 1024 * 1024])
    expect(loadConfig({ SVC_STATE_DIR: dir(), SVC_ALLOW_TOKENLESS_JOIN: 'off' }).allowTokenlessJoin).toBe(false)
    expect(errorFor({ SVC_ALLOW_TOKENLESS_JOIN: 'maybe' }).variable).toBe('SVC_ALLOW_TOKENLESS_JOIN')
    expect(errorFor({ SVC_TOKENLESS_JOIN_MAX: '0' }).variable).toBe('SVC_TOKENLESS_JOIN_MAX')
    expect(errorFor({ SVC_LOG_MAX_TOTAL_BYTES: '1000' }).variable).toBe('SVC_LOG_MAX_TOTAL_BYTES')
  })

  test('artifacts: files under the state dir, 10 GiB each and 50 GiB a pool, unless told; s3:// takes its keys from SVC_ARTIFACTS_S3_* or AWS_*', () => {
    const d = dir()
    const cfg = loadConfig({ SVC_STATE_DIR: d })
    expect(cfg.artifactStore).toEqual({ kind: 'local' })
    expect([cfg.artifactMaxBytes, cfg.artifactPoolQuotaBytes]).toEqual([10 * 1024 ** 3, 50 * 1024 ** 3])
    const s3 = loadConfig({ SVC_STATE_DIR: d, SVC_ARTIFACTS_URL: 's3://ckpt-bucket/leader/a', SVC_ARTIFACTS_S3_ENDPOINT: 'http://127.0.0.1:9000/', AWS_ACCESS_KEY_ID: 'AK', AWS_SECRET_ACCESS_KEY: 'SK', AWS_REGION: 'eu-central-1' })
    expect(s3.artifactStore).toEqual({ kind: 's3', bucket: 'ckpt-bucket', prefix: 'leader/a', endpoint: 'http://127.0.0.1:9000', region: 'eu-central-1', accessKeyId: 'AK', secretAccessKey: 'SK', sessionToken: null })
    const own = loadConfig({ SVC_STATE_DIR: d, SVC_ARTIFACTS_URL: 's3://b-1', SVC_ARTIFACTS_S3_ACCESS_KEY_ID: 'mine', SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY: 'secret', AWS_ACCESS_KEY_ID: 'theirs', AWS_SECRET_ACCESS_KEY: 'x' })
    expect(own.artifactStore).toMatchObject({ bucket: 'b-1', prefix: '', endpoint: null, region: 'us-east-1', accessKeyId: 'mine', secretAccessKey: 'secret' })
    for (const bad of ['/srv/artifacts', 's3://', 's3://B', 's3://bucket/../x', 's3://bucket//x', 'https://bucket/x', 's3://user:pw@bucket/x']) {
      expect(errorFor({ SVC_ARTIFACTS_URL: bad, AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }).variable).toBe('SVC_ARTIFACTS_URL')
    }
    expect(errorFor({ SVC_ARTIFACTS_URL: 's3://bucket' }).variable).toBe('SVC_ARTIFACTS_S3_ACCESS_KEY_ID')
    expect(errorFor({ SVC_ARTIFACTS_URL: 's3://bucket', SVC_ARTIFACTS_S3_ACCESS_KEY_ID: 'a' }).variable).toBe('SVC_ARTIFACTS_S3_SECRET_ACCESS_KEY')
    expect(errorFor({ SVC_ARTIFACTS_URL: 's3://bucket', AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b', SVC_ARTIFACTS_S3_ENDPOINT: 'ftp://x' }).variable).toBe('SVC_ARTIFACTS_S3_ENDPOINT')
    // Credentials in a refused value are not repeated: the error goes to the service log.
    const keys = { SVC_ARTIFACTS_URL: 's3://bucket', AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }
    expect(errorFor({ ...keys, SVC_ARTIFACTS_URL: 's3://user:pw-in-url@bucket/x' }).message).toBe('SVC_ARTIFACTS_URL: expected s3://bucket or s3://bucket/prefix (unset: files under SVC_STATE_DIR), got "s3://***@bucket/x"')
    expect(errorFor({ ...keys, SVC_ARTIFACTS_S3_ENDPOINT: 'http://u:pw-in-endpoint@h:99999' }).message).toBe('SVC_ARTIFACTS_S3_ENDPOINT: not a URL: "http://***@h:99999"')
    expect(errorFor({ ...keys, SVC_ARTIFACTS_S3_ENDPOINT: 'https://AKIA:abc/def+ghi@s3.example.com' }).message).toBe('SVC_ARTIFACTS_S3_ENDPOINT: not a URL: "https://***@s3.example.com"')
    expect(errorFor({ ...keys, SVC_ARTIFACTS_S3_ENDPOINT: 'ftp://u:pw-in-endpoint@h' }).message).toBe('SVC_ARTIFACTS_S3_ENDPOINT: must be an http:// or https:// URL, got "ftp://***@h"')
    expect(errorFor({ SVC_ARTIFACT_MAX_BYTES: '0' }).message).toContain('SVC_ARTIFACT_MAX_BYTES: must be between 1')
    expect(errorFor({ SVC_ARTIFACT_POOL_QUOTA_BYTES: '1.5' }).variable).toBe('SVC_ARTIFACT_POOL_QUOTA_BYTES')
  })

  test('SMTP host without a sender is refused', () => {
    expect(errorFor({ SVC_SMTP_HOST: 'mail.example' }).variable).toBe('SVC_SMTP_FROM')
  })

  test('a SECURITY warning for each enforcement flag switched off', () => {
    const cfg = loadConfig({ SVC_STATE_DIR: dir(), SVC_REQUIRE_NODE_AUTH: '0', SVC_REQUIRE_OPERATOR_AUTH: '0', SVC_REQUIRE_CSRF: '0' })
    const w = securityWarnings(cfg)
    for (const v of ['SVC_REQUIRE_NODE_AUTH', 'SVC_REQUIRE_OPERATOR_AUTH', 'SVC_REQUIRE_CSRF']) {
      expect(w.some((l) => l.startsWith('SECURITY:') && l.includes(v))).toBe(true)
    }
    expect(securityWarnings(loadConfig({ SVC_STATE_DIR: dir() }))).toEqual([])
  })

  test('legal language: BCP 47 tags pass, anything else falls back to en', () => {
    expect(parseLangTag('de-DE')).toBe('de-DE')
    expect(parseLangTag('<script>')).toBe('en')
    expect(parseLangTag(null)).toBe('en')
  })

  test('the state file, its directory and a backup copy are readable by their owner only (0600, 0700), an older 0644 file is tightened', () => {
    const d = join(dir(), 'fresh', 'state')
    const store = openDb(join(d, 'join_state.sqlite3'))
    expect(statSync(d).mode & 0o777).toBe(0o700)
    expect(statSync(join(d, 'join_state.sqlite3')).mode & 0o777).toBe(0o600)
    const copy = join(d, 'copy.sqlite3')
    backupDatabase(join(d, 'join_state.sqlite3'), copy)
    expect(statSync(copy).mode & 0o777).toBe(0o600)
    store.close()
    chmodSync(join(d, 'join_state.sqlite3'), 0o644)
    openDb(join(d, 'join_state.sqlite3')).close()
    expect(statSync(join(d, 'join_state.sqlite3')).mode & 0o777).toBe(0o600)
  })

  test('the join command quotes every word it pastes into a shell, and puts the token on no command line (printf is the shell\'s own; curl reads it from stdin)', () => {
    const cmd = joinCommand("http://x'y.example", "svc_join_a'b")
    expect(cmd).toBe(
      `printf '%s\\n' 'X-Bootstrap-Token: svc_join_a'\\''b' | curl -fsSL -H @- 'http://x'\\''y.example/api/v1/bootstrap/fellow.sh' | sh -s -- --leader 'http://x'\\''y.example'`,
    )
  })
})
