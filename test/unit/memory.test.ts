// dropStartupCode: a second after the start, JavaScriptCore drops the compiled code of everything
// that ran, so code that ran once at start-up does not stay resident; and the executable's pages
// the start read are unmapped.
import { describe, expect, test } from 'bun:test'
import { readFileSync, readlinkSync } from 'node:fs'
import { numberOfDFGCompiles } from 'bun:jsc'
import { dropStartupCode, parseSmaps, releasableMappings, releaseExecutablePages } from '../../src/memory'
import { until } from '../helpers/until'

/** A function JavaScriptCore has optimized (DFG-compiled). */
async function optimizedFunction() {
  const hot = (n: number) => {
    let s = 0
    for (let i = 0; i < n; i++) s = (s + i * 7) % 1_000_003
    return s
  }
  await until(() => {
    for (let i = 0; i < 200; i++) hot(1000)
    return numberOfDFGCompiles(hot) > 0 ? true : null
  }, 'the function to be optimized', { timeoutMs: 20_000, everyMs: 1 })
  return hot
}

const codeDropped = (f: (...args: never[]) => unknown) =>
  until(() => (numberOfDFGCompiles(f) === 0 ? true : null), 'its optimized code to be dropped', { timeoutMs: 10_000, everyMs: 20 })

test('compiled code is dropped once the process is idle; the function still runs', async () => {
  const hot = await optimizedFunction()
  const expected = hot(1000)
  let released = 0
  dropStartupCode({ everyMs: 50, release: () => released++ })
  await codeDropped(hot)
  expect(released).toBe(1)
  expect(hot(1000)).toBe(expected)
  await Bun.sleep(200) // four more checks' worth: the drop happens once
  expect(released).toBe(1)
})

test('after the first drop, each idle period lets go again of the executable pages the process mapped back meanwhile', async () => {
  if (process.platform !== 'linux') return
  const start = execResidentKb()
  // Polled slowly: reading smaps is work, and a busy process is not quiet.
  const cancel = dropStartupCode({ everyMs: 100, idleEveryMs: 1000 })
  try {
    await until(() => (execResidentKb() < start / 2 ? true : null), 'the first drop', { timeoutMs: 10_000, everyMs: 700 })
    // Work that maps pages of the executable back in: crypto, regular expressions, Intl, JSON.
    for (let i = 0; i < 200; i++) new Bun.CryptoHasher('sha512').update(JSON.stringify({ i, d: new Date(i).toLocaleString('de-DE') }).replace(/[0-9]+/g, 'n')).digest('hex')
    const busy = execResidentKb()
    expect(busy).toBeGreaterThan(0)
    await until(() => (execResidentKb() < busy / 2 ? true : null), 'an idle period to let them go again', { timeoutMs: 10_000, everyMs: 700 })
  } finally {
    cancel()
  }
}, 30_000)

test('a cancelled drop does nothing, even at a quiet moment', async () => {
  let released = 0
  const cancel = dropStartupCode({ everyMs: 20, release: () => released++ })
  cancel()
  await Bun.sleep(100) // five checks' worth
  expect(released).toBe(0)
})

test('a release that throws does not stop the drop', async () => {
  const hot = await optimizedFunction()
  dropStartupCode({ everyMs: 50, release: () => { throw new Error('state file closed') } })
  await codeDropped(hot)
})

/** Resident kB of the executable's mappings that hold only its file's bytes. */
function execResidentKb(): number {
  const exe = readlinkSync('/proc/self/exe')
  return readFileSync('/proc/self/smaps', 'utf8')
    .split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)
    .filter((block) => releasableMappings(parseSmaps(block), exe).length === 1)
    .reduce((kb, block) => kb + Number(/\nRss:\s+(\d+) kB/.exec(block)?.[1] ?? 0), 0)
}

describe('the executable\'s pages', () => {
  const smaps = [
    '00200000-01a39000 r--p 00000000 fe:00 2834755                            /opt/svc',
    'Rss:                5540 kB',
    'Anonymous:             0 kB',
    '01a40000-0684a000 r-xp 01838000 fe:00 2834755                            /opt/svc',
    'Rss:               34088 kB',
    'Anonymous:             0 kB',
    '0684a000-0685f000 rw-p 06641000 fe:00 2834755                            /opt/svc',
    'Anonymous:            56 kB',
    // read-only after the loader relocated it: its written pages are no longer the file's
    '0685f000-06867000 r--p 06656000 fe:00 2834755                            /opt/svc',
    'Anonymous:            12 kB',
    // the same, with its written pages swapped out: Anonymous says 0, Swap does not
    '06870000-06872000 r--p 06656000 fe:00 2834755                            /opt/svc',
    'Anonymous:             0 kB',
    'Swap:                  8 kB',
    '06867000-0752b000 rw-p 0665e000 fe:00 2834755                            /opt/svc',
    'Anonymous:           116 kB',
    '7f0000000000-7f0000200000 r-xp 00000000 fe:00 99                         /usr/lib/x86_64-linux-gnu/libc.so.6',
    'Anonymous:             0 kB',
    '7f0000400000-7f0000600000 r-xs 00000000 fe:00 2834755                    /opt/svc',
    'Anonymous:             0 kB',
    '7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]',
    'Anonymous:           132 kB',
  ].join('\n')

  test('only private mappings of the executable that were never writable nor written are let go', () => {
    const maps = parseSmaps(smaps)
    expect(maps).toHaveLength(9)
    expect(maps[0]).toEqual({ start: 0x200000n, end: 0x1a39000n, perms: 'r--p', inode: 2834755, path: '/opt/svc', anonymousKb: 0, swapKb: 0 })
    const released = releasableMappings(maps, '/opt/svc').map((m) => m.start)
    expect(released).toEqual([0x200000n, 0x1a40000n])
    // other files' mappings (libc, another binary of the same inode number) are not the executable's
    expect(releasableMappings(maps, '/opt/other')).toEqual([])
  })

  test('letting them go unmaps them, and the process runs on from the file', async () => {
    if (process.platform !== 'linux') return
    const resident = execResidentKb
    const before = resident()
    expect(before).toBeGreaterThan(1024)
    expect(releaseExecutablePages()).toBeGreaterThan(before * 1024)
    // what reading smaps and this test's next lines need comes back; most of the rest does not
    expect(resident()).toBeLessThan(before / 2)
    const hot = await optimizedFunction()
    expect(hot(10)).toBe(315)
  })
})
