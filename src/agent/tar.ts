// A checkpoint directory as one file, and back: POSIX ustar with regular files and directories
// only (what a runner writes), so a checkpoint is one artifact in the leader's store and any tar
// reads it. Paths are relative, at most 255 bytes; anything above the directory is refused on
// both sides. Archiving never follows a symbolic link: a runner could otherwise point one at
// any file the agent can read (an SSH key, another job's data) and have it uploaded. Links,
// devices, sockets and pipes below the directory are left out (and named to the caller); every
// file is opened without following a link and checked to lie inside the directory once open.
// All I/O is asynchronous, a chunk at a time: a checkpoint of gigabytes archived on the agent's
// main thread in one go kept its heartbeats from going out until the leader declared it offline.
import { constants, readlinkSync, realpathSync, lstatSync } from 'node:fs'
import { lstat, mkdir, open, readdir, type FileHandle } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'

const BLOCK = 512
/** Bytes read or written at once: the event loop runs between chunks. */
const CHUNK = 1 << 20

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0'
}

/** The size field's twelve octal digits (the last, the terminator, given up as GNU tar does): below 64 GiB. */
const MAX_FILE_BYTES = 8 ** 12

/**
 * ustar keeps a path over 100 bytes as a prefix (at most 155 bytes) and a name (at most 100) split
 * at a '/' between them: the first '/' where both fit. Only the last one was tried, and a path of
 * 156 to 255 bytes whose last part is short (c/<90 a>/<70 b>/w) could not be archived at all. A
 * directory's own trailing '/' comes last (its name is then empty). Null when no '/' will do.
 */
function splitLong(name: string): [Uint8Array<ArrayBuffer>, Uint8Array<ArrayBuffer>] | null {
  const enc = new TextEncoder()
  for (let cut = name.indexOf('/'); cut > 0; cut = name.indexOf('/', cut + 1)) {
    const prefix = enc.encode(name.slice(0, cut))
    if (prefix.length > 155) return null // further cuts make it only longer
    const rest = enc.encode(name.slice(cut + 1))
    if (rest.length <= 100) return [prefix, rest]
  }
  return null
}

function header(name: string, size: number, dir: boolean, mtime: number): Uint8Array {
  // Thirteen digits would run into the next field and the archive would read back wrong.
  if (size >= MAX_FILE_BYTES) throw new Error(`a file in the checkpoint is 64 GiB or more, more than a tar header holds: ${name} (${size} bytes)`)
  const h = new Uint8Array(BLOCK)
  const enc = new TextEncoder()
  let path = enc.encode(name)
  let prefix = new Uint8Array(0)
  if (path.length > 100) {
    const split = splitLong(name)
    if (!split) throw new Error(`a path in the checkpoint is too long for tar: ${name}`)
    ;[prefix, path] = split
  }
  h.set(path, 0)
  h.set(enc.encode(octal(dir ? 0o755 : 0o644, 8)), 100)
  h.set(enc.encode(octal(0, 8)), 108)
  h.set(enc.encode(octal(0, 8)), 116)
  h.set(enc.encode(octal(size, 12)), 124)
  h.set(enc.encode(octal(Math.floor(mtime / 1000), 12)), 136)
  h.fill(32, 148, 156) // the checksum field counts as spaces
  h[156] = dir ? 53 : 48 // '5' directory, '0' file
  h.set(enc.encode('ustar\0'), 257)
  h.set(enc.encode('00'), 263)
  h.set(prefix, 345)
  let sum = 0
  for (const b of h) sum += b
  h.set(enc.encode(sum.toString(8).padStart(6, '0') + '\0 '), 148)
  return h
}

type Entry = { rel: string; dir: boolean; size: number; mtime: number; dev: number; ino: number }

/** `path` lies in `root` (both real paths). */
export function isInside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep)
}

/** Every file and directory below `dir`, relative, parents first; links and the like go to `skipped`. */
async function entries(dir: string, skipped: string[], at = '', out: Entry[] = []): Promise<Entry[]> {
  for (const name of (await readdir(join(dir, at))).sort()) {
    const rel = at ? `${at}/${name}` : name
    const st = await lstat(join(dir, rel))
    if (st.isDirectory()) {
      out.push({ rel: rel + '/', dir: true, size: 0, mtime: st.mtimeMs, dev: st.dev, ino: st.ino })
      await entries(dir, skipped, rel, out)
    } else if (st.isFile()) out.push({ rel, dir: false, size: st.size, mtime: st.mtimeMs, dev: st.dev, ino: st.ino })
    else skipped.push(rel)
  }
  return out
}

/** Where an open file really is (Linux: its /proc link; elsewhere its path resolved again). */
function realPathOf(fd: number, path: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return realpathSync(path)
  }
}

/** Writes a whole buffer (a FileHandle write may take less than asked). */
async function writeAll(fh: FileHandle, b: Uint8Array): Promise<void> {
  let off = 0
  while (off < b.length) off += (await fh.write(b, off, b.length - off)).bytesWritten
}

/**
 * Writes the directory `dir` (a real directory, not a link to one, and lying in `within` when
 * given) as a tar file to `out`; resolves to its size in bytes and the paths left out because
 * they are not files or directories (symbolic links, sockets, devices).
 */
export async function tarDirectory(dir: string, out: string, within?: string): Promise<{ bytes: number; skipped: string[] }> {
  if (!lstatSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`)
  const root = realpathSync(dir)
  // Checked again here: the directory named earlier may have been moved behind a link since.
  if (within !== undefined && !isInside(realpathSync(within), root)) throw new Error(`${dir} does not lie in ${within}`)
  const skipped: string[] = []
  const list = await entries(root, skipped)
  const fd = await open(out, 'w', 0o600)
  let written = 0
  const put = async (b: Uint8Array) => {
    await writeAll(fd, b)
    written += b.length
  }
  try {
    const buf = new Uint8Array(CHUNK)
    for (const e of list) {
      if (e.dir) {
        await put(header(e.rel, 0, true, e.mtime))
        continue
      }
      const path = join(root, e.rel)
      let src: FileHandle
      try {
        src = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
      } catch (err) {
        // Replaced by a link (or removed) since it was listed: left out, never followed.
        if ((err as NodeJS.ErrnoException).code === 'ELOOP' || (err as NodeJS.ErrnoException).code === 'ENOENT') {
          skipped.push(e.rel)
          continue
        }
        throw err
      }
      try {
        // A directory on its path swapped for a link after it was listed leads outside: the open
        // file is checked where it really is, and must be the file that was listed.
        const st = await src.stat()
        if (!st.isFile() || st.dev !== e.dev || st.ino !== e.ino || !isInside(root, realPathOf(src.fd, path))) {
          skipped.push(e.rel)
          continue
        }
        await put(header(e.rel, e.size, false, e.mtime))
        let left = e.size
        while (left > 0) {
          const { bytesRead: n } = await src.read(buf, 0, Math.min(buf.length, left), null)
          if (n <= 0) throw new Error(`${e.rel} changed while it was being archived`)
          await put(buf.subarray(0, n))
          left -= n
        }
      } finally {
        await src.close()
      }
      if (e.size % BLOCK) await put(new Uint8Array(BLOCK - (e.size % BLOCK)))
    }
    await put(new Uint8Array(2 * BLOCK))
  } finally {
    await fd.close()
  }
  return { bytes: written, skipped }
}

function field(h: Uint8Array, at: number, len: number): string {
  const end = h.indexOf(0, at)
  return new TextDecoder().decode(h.subarray(at, end >= 0 && end < at + len ? end : at + len))
}

/** Unpacks a tar file written by tarDirectory (or any ustar of files and directories) into `dir`. */
export async function untarInto(file: string, dir: string): Promise<void> {
  const root = resolve(dir)
  await mkdir(root, { recursive: true, mode: 0o700 })
  const fd = await open(file, 'r')
  try {
    const total = (await fd.stat()).size
    const h = new Uint8Array(BLOCK)
    const buf = new Uint8Array(CHUNK)
    let pos = 0
    while (pos + BLOCK <= total) {
      if ((await fd.read(h, 0, BLOCK, pos)).bytesRead < BLOCK) throw new Error('the checkpoint archive is cut short')
      pos += BLOCK
      if (h.every((b) => b === 0)) break
      const name = (field(h, 345, 155) ? field(h, 345, 155) + '/' : '') + field(h, 0, 100)
      const size = parseInt(field(h, 124, 12).trim() || '0', 8)
      const type = String.fromCharCode(h[156] || 48)
      const target = resolve(root, name)
      if (!Number.isSafeInteger(size) || size < 0 || pos + size > total) throw new Error('the checkpoint archive is cut short or damaged')
      if (!isInside(root, target)) throw new Error(`the checkpoint archive names a path outside its directory: ${name}`)
      if (type === '5') await mkdir(target, { recursive: true, mode: 0o700 })
      else if (type === '0') {
        await mkdir(dirname(target), { recursive: true, mode: 0o700 })
        const out = await open(target, 'w', 0o600)
        try {
          let left = size
          let at = pos
          while (left > 0) {
            const { bytesRead: n } = await fd.read(buf, 0, Math.min(buf.length, left), at)
            if (n <= 0) throw new Error('the checkpoint archive is cut short')
            await writeAll(out, buf.subarray(0, n))
            left -= n
            at += n
          }
        } finally {
          await out.close()
        }
      } else throw new Error(`the checkpoint archive holds ${relative(root, target)}, which is neither a file nor a directory`)
      pos += Math.ceil(size / BLOCK) * BLOCK
    }
  } finally {
    await fd.close()
  }
}
