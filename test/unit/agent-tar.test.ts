// Checkpoint archives never follow a symbolic link: a runner could otherwise point one at any file
// the agent can read and have it uploaded to the leader's store (src/agent/tar.ts).
import { describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tarDirectory, untarInto } from '../../src/agent/tar'

const SECRET = 'ssh-private-key-that-stays-here'

function world() {
  const root = mkdtempSync(join(tmpdir(), 'agent-tar-'))
  const secret = join(root, 'secret')
  mkdirSync(secret)
  writeFileSync(join(secret, 'id_ed25519'), SECRET)
  const ckpt = join(root, 'checkpoints')
  mkdirSync(join(ckpt, 'step-8', 'sub'), { recursive: true })
  writeFileSync(join(ckpt, 'step-8', 'weights.bin'), 'weights')
  writeFileSync(join(ckpt, 'step-8', 'sub', 'opt.bin'), 'optimizer')
  return { root, secret, ckpt }
}

describe('tarDirectory', () => {
  test('a path of 156 to 255 bytes is split at a slash where both parts fit (prefix 155, name 100), not only at the last one; what tar reads back is the same', async () => {
    const { root, ckpt } = world()
    try {
      // The exploratory test's checkpoint: c/<90 a>/<70 b>/w, 163 bytes, was never uploaded.
      const deep = join('c', 'a'.repeat(90), 'b'.repeat(70))
      mkdirSync(join(ckpt, 'step-8', deep), { recursive: true })
      writeFileSync(join(ckpt, 'step-8', deep, 'w'), 'weights')
      // And a name of 100 bytes below a long directory: the split can only be at the last slash.
      const long = join('d'.repeat(150), 'e'.repeat(100))
      mkdirSync(join(ckpt, 'step-8', 'd'.repeat(150)))
      writeFileSync(join(ckpt, 'step-8', long), 'long')
      const out = join(root, 'long.tar')
      await tarDirectory(join(ckpt, 'step-8'), out, ckpt)
      const listed = Bun.spawnSync(['tar', '-tf', out]).stdout.toString().split('\n')
      expect(listed).toContain(`${deep}/w`)
      expect(listed).toContain(long)
      await untarInto(out, join(root, 'back'))
      expect(readFileSync(join(root, 'back', deep, 'w'), 'utf8')).toBe('weights')
      expect(readFileSync(join(root, 'back', long), 'utf8')).toBe('long')
      // No split fits: a name part over 100 bytes, or a path past 256.
      writeFileSync(join(ckpt, 'step-8', 'f'.repeat(101)), 'x')
      await expect(tarDirectory(join(ckpt, 'step-8'), join(root, 'no.tar'), ckpt)).rejects.toThrow('too long for tar')
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('links inside the tree are left out (named), files and directories are kept, and it unpacks the same', async () => {
    const { root, secret, ckpt } = world()
    symlinkSync(secret, join(ckpt, 'step-8', 'outside-dir'))
    symlinkSync(join(secret, 'id_ed25519'), join(ckpt, 'step-8', 'sub', 'outside-file'))
    symlinkSync('weights.bin', join(ckpt, 'step-8', 'latest'))
    const out = join(root, 'a.tar')
    const { bytes, skipped } = await tarDirectory(join(ckpt, 'step-8'), out, ckpt)
    expect(bytes).toBe(readFileSync(out).length)
    expect(skipped).toEqual(['latest', 'outside-dir', 'sub/outside-file'])
    expect(readFileSync(out).includes(SECRET)).toBe(false)
    await untarInto(out, join(root, 'back'))
    expect(readdirSync(join(root, 'back')).sort()).toEqual(['sub', 'weights.bin'])
    expect(readFileSync(join(root, 'back', 'sub', 'opt.bin'), 'utf8')).toBe('optimizer')
  })

  test('a link to a directory outside is not archived, and a directory outside `within` is refused', async () => {
    const { root, secret, ckpt } = world()
    symlinkSync(secret, join(ckpt, 'link'))
    await expect(tarDirectory(join(ckpt, 'link'), join(root, 'b.tar'), ckpt)).rejects.toThrow('is not a directory')
    await expect(tarDirectory(secret, join(root, 'c.tar'), ckpt)).rejects.toThrow(`${secret} does not lie in ${ckpt}`)
    // A directory on the way swapped for a link: the real path is what counts.
    symlinkSync(secret, join(ckpt, 'step-8', 'via'))
    mkdirSync(join(secret, 'inner'))
    writeFileSync(join(secret, 'inner', 'key'), SECRET)
    await expect(tarDirectory(join(ckpt, 'step-8', 'via', 'inner'), join(root, 'd.tar'), ckpt)).rejects.toThrow('does not lie in')
    expect(existsSync(join(root, 'd.tar'))).toBe(false)
  })

  // Defect 4 of the exploratory test: a 2-3 GB checkpoint archived in one synchronous go kept the
  // agent's heartbeats from going out for 11-31 s, and the leader declared the fellow offline.
  test('a file of 64 GiB or more is refused by name: its size would not fit the header and the archive would read back wrong', async () => {
    const { root, ckpt } = world()
    try {
      truncateSync(join(ckpt, 'step-8', 'weights.bin'), 64 * 1024 ** 3) // sparse: nothing is written
      await expect(tarDirectory(join(ckpt, 'step-8'), join(root, 'huge.tar'), ckpt)).rejects.toThrow(/64 GiB or more, more than a tar header holds: weights.bin/)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('archiving and unpacking a large checkpoint leave the event loop free: timers keep running between chunks', async () => {
    const { root, ckpt } = world()
    const MiB = 1 << 20
    truncateSync(join(ckpt, 'step-8', 'weights.bin'), 400 * MiB) // sparse: cheap to make, read like real bytes
    writeFileSync(join(ckpt, 'step-8', 'sub', 'tail.bin'), 'x'.repeat(1000))
    const out = join(root, 'big.tar')
    try {
      const gaps = async (work: () => unknown) => {
        let last = performance.now()
        let worst = 0
        let ticks = 0
        const timer = setInterval(() => {
          const now = performance.now()
          worst = Math.max(worst, now - last)
          last = now
          ticks++
        }, 5)
        const started = performance.now()
        try {
          await work()
        } finally {
          clearInterval(timer)
        }
        worst = Math.max(worst, performance.now() - last)
        return { worst, ticks, ms: performance.now() - started }
      }
      const tar = await gaps(() => tarDirectory(join(ckpt, 'step-8'), out, ckpt))
      expect(statSync(out).size).toBe(400 * MiB + 5 * 512 + 1024 + 1024)
      const untar = await gaps(() => untarInto(out, join(root, 'back')))
      expect(statSync(join(root, 'back', 'weights.bin')).size).toBe(400 * MiB)
      expect(readFileSync(join(root, 'back', 'sub', 'tail.bin'), 'utf8')).toBe('x'.repeat(1000))
      // A heartbeat timer waits at most a small fraction of a second at any one time (here a few ms
      // a chunk; archiving the 400 MiB in one synchronous go held it for the whole copy).
      // 250 ms leaves room for a busy machine; the copy in one go took seconds.
      expect({ tar: tar.worst < 250, untar: untar.worst < 250 }).toEqual({ tar: true, untar: true })
      expect(tar.ticks).toBeGreaterThan(2)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  }, 60_000)
})
