// Checkpoint archives never follow a symbolic link: a runner could otherwise point one at any file
// the agent can read and have it uploaded to the leader's store (src/agent/tar.ts).
import { describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
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
  test('links inside the tree are left out (named), files and directories are kept, and it unpacks the same', () => {
    const { root, secret, ckpt } = world()
    symlinkSync(secret, join(ckpt, 'step-8', 'outside-dir'))
    symlinkSync(join(secret, 'id_ed25519'), join(ckpt, 'step-8', 'sub', 'outside-file'))
    symlinkSync('weights.bin', join(ckpt, 'step-8', 'latest'))
    const out = join(root, 'a.tar')
    const { bytes, skipped } = tarDirectory(join(ckpt, 'step-8'), out, ckpt)
    expect(bytes).toBe(readFileSync(out).length)
    expect(skipped).toEqual(['latest', 'outside-dir', 'sub/outside-file'])
    expect(readFileSync(out).includes(SECRET)).toBe(false)
    untarInto(out, join(root, 'back'))
    expect(readdirSync(join(root, 'back')).sort()).toEqual(['sub', 'weights.bin'])
    expect(readFileSync(join(root, 'back', 'sub', 'opt.bin'), 'utf8')).toBe('optimizer')
  })

  test('a link to a directory outside is not archived, and a directory outside `within` is refused', () => {
    const { root, secret, ckpt } = world()
    symlinkSync(secret, join(ckpt, 'link'))
    expect(() => tarDirectory(join(ckpt, 'link'), join(root, 'b.tar'), ckpt)).toThrow('is not a directory')
    expect(() => tarDirectory(secret, join(root, 'c.tar'), ckpt)).toThrow(`${secret} does not lie in ${ckpt}`)
    // A directory on the way swapped for a link: the real path is what counts.
    symlinkSync(secret, join(ckpt, 'step-8', 'via'))
    mkdirSync(join(secret, 'inner'))
    writeFileSync(join(secret, 'inner', 'key'), SECRET)
    expect(() => tarDirectory(join(ckpt, 'step-8', 'via', 'inner'), join(root, 'd.tar'), ckpt)).toThrow('does not lie in')
    expect(existsSync(join(root, 'd.tar'))).toBe(false)
  })
})
