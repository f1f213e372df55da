// A checkpoint directory as one file, and back: POSIX ustar with regular files and directories
// only (what a runner writes), so a checkpoint is one artifact in the leader's store and any tar
// reads it. Paths are relative, at most 255 bytes; links, devices and anything above the
// directory are refused on both sides.
import { closeSync, mkdirSync, openSync, readdirSync, readSync, statSync, writeSync, lstatSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'

const BLOCK = 512

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0'
}

function header(name: string, size: number, dir: boolean, mtime: number): Uint8Array {
  const h = new Uint8Array(BLOCK)
  const enc = new TextEncoder()
  let path = enc.encode(name)
  let prefix = new Uint8Array(0)
  if (path.length > 100) {
    // ustar splits a long path at a '/' into prefix (155) and name (100).
    const cut = name.lastIndexOf('/', name.length - 1)
    const pre = enc.encode(name.slice(0, cut))
    const rest = enc.encode(name.slice(cut + 1))
    if (cut <= 0 || pre.length > 155 || rest.length > 100) throw new Error(`a path in the checkpoint is too long for tar: ${name}`)
    prefix = pre
    path = rest
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

/** Every file and directory below `dir`, relative, parents first; links and others refused. */
function entries(dir: string, at = ''): { rel: string; dir: boolean; size: number; mtime: number }[] {
  const out: { rel: string; dir: boolean; size: number; mtime: number }[] = []
  for (const name of readdirSync(join(dir, at)).sort()) {
    const rel = at ? `${at}/${name}` : name
    const st = lstatSync(join(dir, rel))
    if (st.isDirectory()) {
      out.push({ rel: rel + '/', dir: true, size: 0, mtime: st.mtimeMs })
      out.push(...entries(dir, rel))
    } else if (st.isFile()) out.push({ rel, dir: false, size: st.size, mtime: st.mtimeMs })
    else throw new Error(`the checkpoint holds ${rel}, which is neither a file nor a directory`)
  }
  return out
}

/** Writes `dir` as a tar file to `out`; returns its size in bytes. */
export function tarDirectory(dir: string, out: string): number {
  const fd = openSync(out, 'w', 0o600)
  let written = 0
  const put = (b: Uint8Array) => {
    writeSync(fd, b)
    written += b.length
  }
  try {
    const buf = new Uint8Array(1 << 20)
    for (const e of entries(dir)) {
      put(header(e.rel, e.size, e.dir, e.mtime))
      if (e.dir) continue
      const src = openSync(join(dir, e.rel), 'r')
      try {
        let left = e.size
        while (left > 0) {
          const n = readSync(src, buf, 0, Math.min(buf.length, left), null)
          if (n <= 0) throw new Error(`${e.rel} changed while it was being archived`)
          put(buf.subarray(0, n))
          left -= n
        }
      } finally {
        closeSync(src)
      }
      if (e.size % BLOCK) put(new Uint8Array(BLOCK - (e.size % BLOCK)))
    }
    put(new Uint8Array(2 * BLOCK))
  } finally {
    closeSync(fd)
  }
  return written
}

function field(h: Uint8Array, at: number, len: number): string {
  const end = h.indexOf(0, at)
  return new TextDecoder().decode(h.subarray(at, end >= 0 && end < at + len ? end : at + len))
}

/** Unpacks a tar file written by tarDirectory (or any ustar of files and directories) into `dir`. */
export function untarInto(file: string, dir: string): void {
  const root = resolve(dir)
  mkdirSync(root, { recursive: true, mode: 0o700 })
  const fd = openSync(file, 'r')
  const total = statSync(file).size
  try {
    const h = new Uint8Array(BLOCK)
    let pos = 0
    while (pos + BLOCK <= total) {
      readSync(fd, h, 0, BLOCK, pos)
      pos += BLOCK
      if (h.every((b) => b === 0)) break
      const name = (field(h, 345, 155) ? field(h, 345, 155) + '/' : '') + field(h, 0, 100)
      const size = parseInt(field(h, 124, 12).trim() || '0', 8)
      const type = String.fromCharCode(h[156] || 48)
      const target = resolve(root, name)
      if (!Number.isSafeInteger(size) || size < 0 || pos + size > total) throw new Error('the checkpoint archive is cut short or damaged')
      if (target !== root && !target.startsWith(root + sep)) throw new Error(`the checkpoint archive names a path outside its directory: ${name}`)
      if (type === '5') mkdirSync(target, { recursive: true, mode: 0o700 })
      else if (type === '0') {
        mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
        const out = openSync(target, 'w', 0o600)
        try {
          const buf = new Uint8Array(1 << 20)
          let left = size
          let at = pos
          while (left > 0) {
            const n = readSync(fd, buf, 0, Math.min(buf.length, left), at)
            if (n <= 0) throw new Error('the checkpoint archive is cut short')
            writeSync(out, buf.subarray(0, n))
            left -= n
            at += n
          }
        } finally {
          closeSync(out)
        }
      } else throw new Error(`the checkpoint archive holds ${relative(root, target)}, which is neither a file nor a directory`)
      pos += Math.ceil(size / BLOCK) * BLOCK
    }
  } finally {
    closeSync(fd)
  }
}
