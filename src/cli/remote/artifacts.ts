// `svc artifacts ...` over /api/v1/artifacts: the files a pool keeps (checkpoints its fellows wrote,
// model files people put there for its engines). Uploads resume where the leader stands after a
// broken connection; downloads are checked against the artifact's SHA-256 before they get their name.
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { basename, join } from 'node:path'
import type { Static } from '@sinclair/typebox'
import * as A from '../../artifacts/model'
import type { Pool } from '../../pools/model'
import { LeaderRefused, LeaderUnreachable, checkInput, clientFor, isUuid, netReason, type Client } from '../client'
import { ago, modeOf, note, printDone, printList, writeOut } from '../output'
import { CliError, UsageError } from '../usage'
import type { Invocation } from '../spec'
import { onlyPool, resolveJob, resolvePool } from './refs'

type Artifact = A.Artifact

/** Attempts at one upload's bytes before giving up (each resumes where the leader stands). */
const ATTEMPTS = 5

export const size = (n: number): string => {
  if (n < 1024) return `${n} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let v = n / 1024
  let i = 0
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++
  return `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ${units[i]}`
}

async function resolveArtifact(c: Client, ref: string): Promise<Artifact> {
  if (isUuid(ref)) return c.get<Artifact>(`/api/v1/artifacts/${ref.toLowerCase()}`)
  const { items } = await c.get<{ items: Artifact[] }>('/api/v1/artifacts')
  const named = items.filter((a) => a.name === ref)
  if (named.length === 1) return named[0]!
  if (named.length === 0) throw new CliError(`no artifact "${ref}" that you can see (svc artifacts list shows them)`)
  throw new CliError(`"${ref}" names ${named.length} artifacts (${named.slice(0, 5).map((a) => a.id).join(', ')}): give the id`)
}

export async function list({ flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const query = {
    pool_id: flags.pool === undefined ? undefined : (await resolvePool(c, flags.pool as string)).id,
    job_id: flags.job === undefined ? undefined : (await resolveJob(c, flags.job as string)).id,
    kind: flags.kind as A.ArtifactKind | undefined,
  }
  const res = await c.get<{ items: Artifact[] }>('/api/v1/artifacts', query)
  printList(
    modeOf(flags),
    res,
    res.items,
    [
      { head: 'ID', get: (a) => a.id },
      { head: 'KIND', get: (a) => a.kind },
      { head: 'NAME', get: (a) => a.name },
      { head: 'SIZE', get: (a) => size(a.size_bytes) },
      { head: 'JOB', get: (a) => (a.job_id === null ? null : a.stage === null ? a.job_id : `${a.job_id} stage ${a.stage}${a.step === null ? '' : ` step ${a.step}`}`) },
      { head: 'CREATED', get: (a) => ago(a.created_at) },
    ],
    (a) => a.id,
    'no artifacts (svc artifacts upload FILE --pool POOL adds one)',
  )
  return 0
}

/**
 * A progress line on standard error while a terminal shows it (`uploading tiny.gguf 45 % (1.8 GiB
 * of 4.0 GiB)`), redrawn at most ten times a second and cleared at the end; nothing otherwise.
 */
function progress(label: string, total: number): { at(done: number): void; end(): void } {
  if (process.stderr.isTTY !== true) return { at() {}, end() {} }
  let shown = 0
  // Ctrl-C clears the line too, or the shell's prompt follows it.
  const stop = (signal: NodeJS.Signals) => {
    end()
    process.exit(signal === 'SIGINT' ? 130 : 143)
  }
  const end = () => {
    process.off('SIGINT', stop).off('SIGTERM', stop)
    process.stderr.write('\r\x1b[2K')
  }
  process.on('SIGINT', stop).on('SIGTERM', stop)
  return {
    at(done) {
      const now = Date.now()
      if (now - shown < 100 && done < total) return
      shown = now
      const pct = total === 0 ? 100 : Math.floor((done / total) * 100)
      process.stderr.write(`\r\x1b[2K${label} ${pct} % (${size(done)} of ${size(total)})`)
    },
    end,
  }
}

async function sha256Of(path: string, bytes: number): Promise<string> {
  const h = new Bun.CryptoHasher('sha256')
  const p = progress(`hashing ${basename(path)}`, bytes)
  let done = 0
  for await (const chunk of Bun.file(path).stream()) {
    h.update(chunk)
    p.at((done += chunk.byteLength))
  }
  p.end()
  return h.digest('hex')
}

/** How long a transfer may go without a byte either way before it is given up (--idle-timeout). */
const IDLE_TIMEOUT_S = 60

/**
 * Aborts its signal when `poke` is not called for `seconds`: a leader (or a proxy) that stopped
 * sending or reading without closing the connection would otherwise hold the command forever.
 */
function idleWatch(seconds: number) {
  const ctl = new AbortController()
  let stalled = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const poke = () => {
    clearTimeout(timer)
    timer = setTimeout(() => ((stalled = true), ctl.abort()), seconds * 1000)
  }
  poke()
  return { signal: ctl.signal, poke, stop: () => clearTimeout(timer), stalled: () => stalled }
}

const idleSeconds = (flags: Invocation['flags']): number => (flags['idle-timeout'] as number | undefined) ?? IDLE_TIMEOUT_S

/** The file's bytes from `from` on, counted into the progress line as they are sent. */
function sending(path: string, from: number, p: { at(done: number): void }, poke: () => void): ReadableStream<Uint8Array> {
  let sent = from
  return Bun.file(path)
    .slice(from)
    .stream()
    .pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, out) {
          p.at((sent += chunk.byteLength))
          poke()
          out.enqueue(chunk)
        },
      }),
    )
}

/** A file's size, or a plain refusal when it is not a readable regular file. */
function fileSize(path: string): number {
  let st
  try {
    st = statSync(path)
  } catch (e) {
    throw new CliError(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`)
  }
  if (!st.isFile()) throw new CliError(`${path} is not a regular file`)
  try {
    closeSync(openSync(path, 'r'))
  } catch (e) {
    throw new CliError(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
  return st.size
}

export async function upload({ args, flags, usage }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const path = args.FILE!
  const pool = flags.pool !== undefined ? await resolvePool(c, flags.pool as string) : await onlyPool(c, usage)
  const bytes = fileSize(path)
  const body = { kind: (flags.kind as A.ArtifactKind | undefined) ?? 'model', name: (flags.name as string | undefined) ?? basename(path), size_bytes: bytes, sha256: await sha256Of(path, bytes), pool_id: pool.id }
  checkInput(A.UploadBody, body, usage, { name: '--name', kind: '--kind', size_bytes: 'FILE' })
  const begun = await c.call<Static<typeof A.UploadState>>('POST', '/api/v1/artifacts/uploads', { body })
  let offset = begun.offset
  let artifact: Artifact | null = null
  const p = progress(`uploading ${body.name}`, bytes)
  for (let attempt = 1; artifact === null; attempt++) {
    const idle = idleWatch(idleSeconds(flags))
    try {
      const res = await c
        .fetch('PUT', `/api/v1/artifacts/uploads/${begun.upload_id}`, { query: { offset }, raw: sending(path, offset, p, idle.poke), timeoutMs: null, signal: idle.signal })
        .catch((e) => {
          // Stalled: the leader stopped reading (or answering); resumed like a broken connection.
          throw idle.stalled() ? new LeaderUnreachable(`nothing moved for ${idleSeconds(flags)} s (--idle-timeout)`) : e
        })
      const answer = (await res.json()) as { artifact?: Artifact; offset?: number }
      if (res.status === 201 && answer.artifact) artifact = answer.artifact
      else offset = answer.offset ?? offset
    } catch (e) {
      // A broken connection, a restarted leader, a store that did not answer, another writer:
      // ask where the upload stands and send the rest. A wrong hash or a full quota ends it.
      const resumable = e instanceof LeaderUnreachable || (e instanceof LeaderRefused && (e.code === 'conflict' || e.code === 'service_unavailable' || e.code === 'insufficient_storage'))
      p.end()
      if (!resumable || attempt >= ATTEMPTS) throw e instanceof LeaderUnreachable && idle.stalled() ? new CliError(`the upload of ${body.name} stalled: ${e.message}, ${ATTEMPTS} times; the same command resumes it`) : e
      await Bun.sleep(500 * attempt)
      offset = (await c.get<Static<typeof A.UploadState>>(`/api/v1/artifacts/uploads/${begun.upload_id}`)).offset
      note(`the upload broke off (${idle.stalled() ? (e as Error).message : netReason(e)}); resuming at byte ${offset} of ${bytes}`)
    } finally {
      idle.stop()
    }
  }
  p.end()
  printDone(modeOf(flags), artifact, artifact.id, `uploaded ${artifact.name} (${size(artifact.size_bytes)}, sha256 ${artifact.sha256}) to pool ${pool.slug}: artifact ${artifact.id}`)
  if (modeOf(flags) === 'table' && artifact.kind === 'model') note(`an engine of the pool's fellows takes it with model_artifact = "${artifact.id}" (docs/operations.md)`)
  return 0
}

/**
 * The artifact's own name as a file name in a directory: refused when it is not one plain name
 * (`.`, `..`, a slash, a control character) or is `-`, which would read as standard output. The
 * leader refuses such names now, but an older store may hold them.
 */
const plainName = (n: string): boolean => !(n === '' || n === '.' || n === '..' || n === '-' || /[/\x00-\x1f\x7f]/.test(n))

function fileNameOf(a: Artifact): string {
  if (!plainName(a.name)) throw new CliError(`artifact ${a.id} is named ${JSON.stringify(a.name)}, which cannot be a file name here; give --output FILE`)
  return a.name
}

const isDirectory = (path: string): boolean => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

const why = (e: unknown): string => {
  const code = (e as NodeJS.ErrnoException).code
  return code === 'ENOENT' ? 'no such directory' : code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'EISDIR' || code === 'EBUSY' || code === 'ENOTEMPTY' || code === 'EEXIST' ? 'it is a directory' : (e as Error).message
}

export async function download({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const a = await resolveArtifact(c, args.ARTIFACT!)
  // --output - is standard output; no --output saves <name> here. Only the operator's own `-`
  // means standard output, and --output names a file, never a directory to save into.
  const output = flags.output as string | undefined
  const toStdout = output === '-'
  const target = toStdout ? '-' : (output ?? fileNameOf(a))
  if (!toStdout && isDirectory(target)) {
    throw new CliError(`${target} is a directory; --output names the file to save it as${output !== undefined && plainName(a.name) ? ` (${JSON.stringify(join(output, a.name))}, say)` : ''}`)
  }
  if (!toStdout && existsSync(target) && !flags.force) throw new CliError(`${target} already exists; --force replaces it, --output FILE names another`)
  // Into FILE.part first: FILE appears only whole and checked; standard output gets the bytes as
  // they come, and a mismatch is said (and the exit status 1) at the end. A FILE.part that a
  // stopped run left is resumed: its bytes are hashed again and the leader sends the rest, only
  // while the artifact is the one they came from: FILE.part.sha256 beside it names the artifact
  // the bytes are of (another one, a newer upload under the same name, starts afresh), and
  // If-Range on its sha256 holds the leader to it.
  const part = `${target}.part`
  const held = toStdout ? 0 : partSize(part, a)
  const range: Record<string, string> = held > 0 ? { range: `bytes=${held}-`, 'if-range': `"${a.sha256}"` } : {}
  const idleS = idleSeconds(flags)
  const idle = idleWatch(idleS)
  const stalledAt = (got: number) => new CliError(`the download of ${a.name} stalled: no byte for ${idleS} s (--idle-timeout) after ${got} of ${a.size_bytes} bytes${toStdout || got === 0 ? '' : `; the same command resumes from ${part}`}`)
  const res = await c.fetch('GET', `/api/v1/artifacts/${a.id}/content`, { timeoutMs: null, signal: idle.signal, headers: { accept: 'application/octet-stream', ...range } }).catch((e) => {
    idle.stop()
    throw idle.stalled() ? stalledAt(held) : e
  })
  if (!res.body) throw new CliError(`the leader sent no bytes for artifact ${a.id}`)
  const from = res.status === 206 ? held : 0
  const h = new Bun.CryptoHasher('sha256')
  if (from > 0) for await (const chunk of Bun.file(part).slice(0, from).stream()) h.update(chunk)
  let fd = 1
  if (!toStdout) {
    try {
      fd = openSync(part, from > 0 ? 'a' : 'w', 0o600)
      if (from === 0) writeFileSync(`${part}.sha256`, `${a.sha256}\n`, { mode: 0o600 })
    } catch (e) {
      throw new CliError(`cannot write ${target}: ${why(e)}`)
    }
  }
  const write = (chunk: Uint8Array) => {
    if (toStdout) return writeOut(chunk)
    try {
      for (let at = 0; at < chunk.byteLength; ) at += writeSync(fd, chunk, at)
    } catch (e) {
      throw new CliError(`cannot write ${part}: ${why(e)}`)
    }
  }
  const p = progress(`downloading ${a.name}`, a.size_bytes)
  let got = from
  try {
    const reader = res.body.getReader()
    for (;;) {
      let next
      try {
        next = await reader.read()
      } catch (e) {
        if (idle.stalled()) throw stalledAt(got)
        throw new CliError(`the download of ${a.name} broke off after ${got} of ${a.size_bytes} bytes: ${netReason(e)}${toStdout ? '' : `; the same command resumes from ${part}`}`)
      }
      if (next.done) break
      h.update(next.value)
      write(next.value)
      // After the write: a slow reader of standard output (a pager) is not the leader stalling.
      idle.poke()
      p.at((got += next.value.byteLength))
    }
  } finally {
    idle.stop()
    p.end()
    if (!toStdout) closeSync(fd)
  }
  const digest = h.digest('hex')
  if (digest !== a.sha256 || got !== a.size_bytes) {
    if (!toStdout) for (const f of [part, `${part}.sha256`]) rmSync(f, { force: true })
    throw new CliError(`the bytes of ${a.name} received (${got}) hash to ${digest}, not its ${a.sha256}: nothing kept${from > 0 ? ` (it went on from ${part}, which held other bytes: run it again to start afresh)` : ''}`)
  }
  if (toStdout) return 0
  try {
    renameSync(part, target)
  } catch (e) {
    // A directory put there meanwhile, a name the system keeps (EBUSY): nothing half kept.
    rmSync(part, { force: true })
    throw new CliError(`cannot save ${a.name} as ${target}: ${why(e)}; nothing kept`)
  } finally {
    rmSync(`${part}.sha256`, { force: true })
  }
  printDone(modeOf(flags), a, a.id, `saved ${a.name} (${size(a.size_bytes)}, sha256 checked) as ${target}`)
  return 0
}

/**
 * The bytes a FILE.part holds that are worth resuming from: 0 when there is none, it is whole (or
 * more), or FILE.part.sha256 does not name this artifact.
 */
function partSize(part: string, a: { sha256: string; size_bytes: number }): number {
  try {
    const st = statSync(part)
    if (readFileSync(`${part}.sha256`, 'utf8').trim() !== a.sha256) return 0
    return st.isFile() && st.size < a.size_bytes ? st.size : 0
  } catch {
    return 0
  }
}

export async function remove({ args, flags }: Invocation): Promise<number> {
  const c = clientFor(flags)
  const a = await resolveArtifact(c, args.ARTIFACT!)
  await c.call<null>('DELETE', `/api/v1/artifacts/${a.id}`)
  printDone(modeOf(flags), { deleted: true, id: a.id }, a.id, `deleted artifact ${a.name} (${a.id})`)
  return 0
}
