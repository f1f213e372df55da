// A checkpoint upload outlives a leader restart (src/agent/checkpoints.ts): the leader keeps the
// bytes it took, and the fellow waits for it to come back and goes on from the offset it has.
import { describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fetchCheckpoint, uploadCheckpoint, FETCH_PATIENCE_MS, UPLOAD_PATIENCE_MS } from '../../src/agent/checkpoints'
import { LeaderError, NetworkError, type LeaderClient, type StoredArtifact } from '../../src/agent/client'
import { tarDirectory } from '../../src/agent/tar'
import { createLogger } from '../../src/log'
import type { TimerClock } from '../../src/time'

/** Time moves only when the code waits, and a wait is over at once: retries without sleeping. */
function jumpingClock(): TimerClock {
  let t = Date.UTC(2026, 0, 1)
  return {
    now: () => t,
    setTimeout: (fn, ms) => {
      t += Math.max(0, ms)
      const h = setTimeout(fn, 0)
      return () => clearTimeout(h)
    },
  }
}

/**
 * A leader that takes the first `cutAt` bytes of the upload and then goes away (every call
 * refused, as ECONNREFUSED) until `downForMs` of the clock have passed; then it is back with the
 * bytes it kept.
 */
function restartingLeader(clock: TimerClock, o: { cutAt: number; downForMs: number }) {
  let stored = new Uint8Array(0)
  let downSince: number | null = null
  const calls: string[] = []
  const down = () => downSince !== null && clock.now() - downSince < o.downForMs
  const refused = () => new NetworkError('GET /api/v1/artifacts/uploads/u1: ECONNREFUSED')
  let meta = { size_bytes: 0, sha256: '' }
  const client = {
    beginUpload: async (b: { size_bytes: number; sha256: string }) => {
      calls.push('begin')
      meta = b
      return { upload_id: 'u1', offset: 0, size_bytes: b.size_bytes }
    },
    uploadState: async () => {
      calls.push(down() ? 'state refused' : 'state')
      if (down()) throw refused()
      return { upload_id: 'u1', offset: stored.length, size_bytes: meta.size_bytes }
    },
    putUpload: async (_id: string, offset: number, bytes: Blob): Promise<StoredArtifact | null> => {
      calls.push(down() ? 'put refused' : `put@${offset}`)
      if (down()) throw refused()
      if (offset !== stored.length) throw new Error(`offset ${offset}, the leader has ${stored.length}`)
      const got = new Uint8Array(await bytes.arrayBuffer())
      if (downSince === null && stored.length + got.length > o.cutAt) {
        // The leader is killed mid-upload: what it wrote so far stays in its uploads directory.
        stored = Buffer.concat([stored, got.subarray(0, o.cutAt - stored.length)])
        downSince = clock.now()
        throw new NetworkError('PUT /api/v1/artifacts/uploads/u1: the socket connection was closed unexpectedly')
      }
      stored = Buffer.concat([stored, got])
      if (stored.length < meta.size_bytes) return null
      return { id: 'art-1', kind: 'checkpoint', name: 'stage-0-step-7.tar', size_bytes: stored.length, sha256: meta.sha256, step: 7, stage: 0 }
    },
  } as unknown as LeaderClient
  return { client, calls, stored: () => stored, meta: () => meta }
}

function checkpoint() {
  const root = mkdtempSync(join(tmpdir(), 'agent-ckpt-'))
  const dir = join(root, 'checkpoints', 'step-7')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'weights.bin'), Buffer.alloc(300_000, 7))
  return { root, dir, workDir: join(root, 'transfer') }
}

describe('a checkpoint upload', () => {
  test('a leader restart mid-upload (refused for 20 s) still gets the checkpoint: the upload goes on from the offset it kept', async () => {
    const clock = jumpingClock()
    const leader = restartingLeader(clock, { cutAt: 100_000, downForMs: 20_000 })
    const lines: string[] = []
    const log = createLogger('info', (l) => lines.push(l))
    const { root, dir, workDir } = checkpoint()
    try {
      const art = await uploadCheckpoint({ client: leader.client, log, clock, signal: new AbortController().signal }, { jobId: 'j1', stage: 0, step: 7, dir, workDir })
      expect(lines.filter((l) => l.includes('not uploaded'))).toEqual([])
      expect(art?.id).toBe('art-1')
      expect(leader.stored().length).toBe(leader.meta().size_bytes)
      expect(new Bun.CryptoHasher('sha256').update(leader.stored()).digest('hex')).toBe(leader.meta().sha256)
      // It resumed where the leader stood, after it came back: the first 100 000 bytes went once.
      expect(leader.calls.filter((c) => c.startsWith('put@'))).toEqual(['put@0', 'put@100000'])
      expect(leader.calls.some((c) => c.endsWith('refused'))).toBe(true)
      expect(lines.some((l) => l.includes('checkpoint upload interrupted'))).toBe(true)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('a leader that stays away longer than the patience is given up on, and the log says the checkpoint stayed here', async () => {
    const clock = jumpingClock()
    const leader = restartingLeader(clock, { cutAt: 100_000, downForMs: UPLOAD_PATIENCE_MS * 2 })
    const lines: string[] = []
    const { root, dir, workDir } = checkpoint()
    try {
      const started = clock.now()
      const art = await uploadCheckpoint({ client: leader.client, log: createLogger('info', (l) => lines.push(l)), clock, signal: new AbortController().signal }, { jobId: 'j1', stage: 0, step: 7, dir, workDir })
      expect(art).toBeNull()
      expect(clock.now() - started).toBeGreaterThanOrEqual(UPLOAD_PATIENCE_MS)
      expect(clock.now() - started).toBeLessThan(UPLOAD_PATIENCE_MS + 30_000)
      const given = lines.map((l) => JSON.parse(l) as { msg: string; error?: string }).find((l) => l.msg === 'checkpoint not uploaded; it stays on this fellow only')
      expect(given?.error).toContain('ECONNREFUSED')
      // The archive is not left behind on the fellow's disk.
      expect(readdirSync(workDir)).toEqual([])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('a leader that answers without taking a byte is waited out like one that fails, not sent the bytes again at once', async () => {
    const clock = jumpingClock()
    let puts = 0
    const client = {
      beginUpload: async (b: { size_bytes: number }) => ({ upload_id: 'u1', offset: 0, size_bytes: b.size_bytes }),
      uploadState: async () => ({ upload_id: 'u1', offset: 0, size_bytes: 300_000 }),
      putUpload: async () => (puts++, null),
    } as unknown as LeaderClient
    const lines: string[] = []
    const { root, dir, workDir } = checkpoint()
    try {
      const started = clock.now()
      const art = await uploadCheckpoint({ client, log: createLogger('info', (l) => lines.push(l)), clock, signal: new AbortController().signal }, { jobId: 'j1', stage: 0, step: 7, dir, workDir })
      expect(art).toBeNull()
      // With a growing pause up to 15 s over the patience: dozens of tries, not a tight loop.
      expect(clock.now() - started).toBeGreaterThanOrEqual(UPLOAD_PATIENCE_MS)
      expect(puts).toBeLessThan(40)
      expect(lines.some((l) => l.includes('took none of the bytes'))).toBe(true)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('two uploads of the same stage and step at once (a new worker of the stage while the last one still uploads) each send their own archive', async () => {
    const got = new Map<string, { sha256: string; bytes: Uint8Array }>()
    let n = 0
    const client = {
      beginUpload: async (b: { sha256: string }) => {
        const id = `u${++n}`
        got.set(id, { sha256: b.sha256, bytes: new Uint8Array(0) })
        return { upload_id: id, offset: 0, size_bytes: 0 }
      },
      putUpload: async (id: string, _offset: number, bytes: Blob): Promise<StoredArtifact | null> => {
        await Bun.sleep(30) // both archives are written before either is read
        got.get(id)!.bytes = new Uint8Array(await bytes.arrayBuffer())
        return { id, kind: 'checkpoint', name: 'x.tar', size_bytes: got.get(id)!.bytes.length, sha256: got.get(id)!.sha256, step: 7, stage: 0 }
      },
    } as unknown as LeaderClient
    const a = checkpoint()
    const b = checkpoint()
    writeFileSync(join(b.dir, 'weights.bin'), Buffer.alloc(500_000, 9))
    const workDir = join(a.root, 'transfer') // one stage directory: both workers' transfers land there
    try {
      const log = createLogger('info', () => {})
      const deps = { client, log, clock: jumpingClock(), signal: new AbortController().signal }
      const arts = await Promise.all([a.dir, b.dir].map((dir) => uploadCheckpoint(deps, { jobId: 'j1', stage: 0, step: 7, dir, workDir })))
      expect(arts.map((x) => x?.id).sort()).toEqual(['u1', 'u2'])
      for (const { sha256, bytes } of got.values()) expect(new Bun.CryptoHasher('sha256').update(bytes).digest('hex')).toBe(sha256)
      expect(readdirSync(workDir)).toEqual([])
    } finally {
      for (const c of [a, b]) rmSync(c.root, { recursive: true, force: true })
    }
  })
})

/** A stored checkpoint (a tar of one file) and a leader that fails its download `failures` times first. */
async function storedCheckpoint(failures: (n: number) => Error | 'cut' | null) {
  const { root, dir } = checkpoint()
  const tar = join(root, 'stored.tar')
  await tarDirectory(dir, tar)
  const bytes = readFileSync(tar)
  const art: StoredArtifact = { id: 'art-9', kind: 'checkpoint', name: 'stage-0-step-7.tar', size_bytes: bytes.length, sha256: new Bun.CryptoHasher('sha256').update(bytes).digest('hex'), step: 7, stage: 0 }
  let tries = 0
  const client = {
    latestCheckpoint: async () => art,
    artifactContent: async () => {
      const failure = failures(++tries)
      if (failure === 'cut') {
        // 200 headers, then the connection breaks after the first bytes.
        let sent = false
        return new ReadableStream<Uint8Array>({
          pull(c) {
            if (!sent) return void ((sent = true), c.enqueue(bytes.subarray(0, 1000)))
            c.error(new Error('socket connection was closed unexpectedly'))
          },
        })
      }
      if (failure) throw failure
      return new Response(bytes).body!
    },
  } as unknown as LeaderClient
  return { root, client, tries: () => tries }
}

describe('fetching the checkpoint a stage resumes from', () => {
  const slowDown = () => new LeaderError(503, 'service_unavailable', 'The artifact store did not answer; retry shortly.', 5)

  test('a store that fails a few times (503, a download cut off) is waited out: the stage resumes from its checkpoint, and the log says it tried again', async () => {
    const clock = jumpingClock()
    const s = await storedCheckpoint((n) => (n <= 3 ? slowDown() : n === 4 ? 'cut' : null))
    const lines: string[] = []
    try {
      const started = clock.now()
      const got = await fetchCheckpoint({ client: s.client, log: createLogger('info', (l) => lines.push(l)), clock, signal: new AbortController().signal }, { jobId: 'j1', stage: 0, workDir: join(s.root, 'transfer') })
      expect(got?.step).toBe(7)
      expect(readFileSync(join(got!.dir, 'weights.bin')).length).toBe(300_000)
      expect(s.tries()).toBe(5)
      // The leader's Retry-After (5 s) is honoured between tries.
      expect(clock.now() - started).toBeGreaterThanOrEqual(3 * 5_000)
      const msgs = lines.map((l) => JSON.parse(l).msg as string)
      expect(msgs.filter((m) => m === 'checkpoint fetch failed; trying again').length).toBe(4)
      expect(msgs.some((m) => m.includes('afresh'))).toBe(false)
    } finally {
      rmSync(s.root, { recursive: true, force: true })
    }
  })

  test('a store that keeps failing is given up on after the patience, and the log says the stage starts afresh', async () => {
    const clock = jumpingClock()
    const s = await storedCheckpoint(() => new NetworkError('GET /api/v1/artifacts/art-9/content: ECONNREFUSED'))
    const lines: string[] = []
    try {
      const started = clock.now()
      const got = await fetchCheckpoint({ client: s.client, log: createLogger('info', (l) => lines.push(l)), clock, signal: new AbortController().signal }, { jobId: 'j1', stage: 0, workDir: join(s.root, 'transfer') })
      expect(got).toBeNull()
      expect(clock.now() - started).toBeGreaterThanOrEqual(FETCH_PATIENCE_MS)
      expect(clock.now() - started).toBeLessThan(FETCH_PATIENCE_MS + 1_000)
      expect(s.tries()).toBeLessThan(30)
      const last = JSON.parse(lines.at(-1)!)
      expect(last.msg).toContain('starting afresh')
      expect(last.error).toContain('ECONNREFUSED')
    } finally {
      rmSync(s.root, { recursive: true, force: true })
    }
  })

  test('a stage that stops while the fetch waits gives up at once; a checkpoint that is gone (410) is not waited for', async () => {
    const stopper = new AbortController()
    const clock = jumpingClock()
    const s = await storedCheckpoint(() => (stopper.abort(), slowDown()))
    try {
      const got = await fetchCheckpoint({ client: s.client, log: createLogger('info', () => {}), clock, signal: stopper.signal }, { jobId: 'j1', stage: 0, workDir: join(s.root, 'transfer') })
      expect(got).toBeNull()
      expect(s.tries()).toBe(1)
      const bad = await storedCheckpoint(() => new LeaderError(410, 'gone', 'missing', null))
      expect(await fetchCheckpoint({ client: bad.client, log: createLogger('info', () => {}), clock, signal: new AbortController().signal }, { jobId: 'j1', stage: 0, workDir: join(bad.root, 'transfer') })).toBeNull()
      expect(bad.tries()).toBe(1)
      rmSync(bad.root, { recursive: true, force: true })
    } finally {
      rmSync(s.root, { recursive: true, force: true })
    }
  })
})
