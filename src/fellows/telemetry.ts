// Telemetry history of fellows: every heartbeat adds its hardware figures to the fellow's open
// 1-minute and 15-minute buckets (memory, a few additions); a bucket closes when a heartbeat
// arrives in the next one and waits for the heartbeat flush (live.ts), which writes it to
// telemetry_buckets in the same transaction as the fellows' rows. Minute buckets are kept a day,
// quarter-hour ones SVC_TELEMETRY_RETENTION_DAYS; the last hour at full detail is the registry's
// in-memory history (live.ts HistoryPoint).
//
// Why close on the next heartbeat rather than on the minute: fellows beat at their own phase, so
// the closes (and the writes) spread over the interval instead of a whole fleet's buckets landing
// in one flush at the turn of the minute. The writes of one flush are capped, and so are the
// deletes of expired rows, so a big fleet never holds the event loop for long (the heartbeat bench
// measures it: docs/benchmarks.md).
import type { Database, Statement } from 'bun:sqlite'
import type { Clock } from '../time'
import type { Hardware } from './model'

export const MINUTE_MS = 60_000
export const QUARTER_MS = 15 * MINUTE_MS
const DAY_MS = 24 * 60 * MINUTE_MS
/** Bucket rows one flush writes at most; the rest wait for the next flush (every 250 ms). */
const WRITES_PER_FLUSH = 4000
/** Expired rows one prune deletes at most, per resolution; a prune that hit it runs again a second later. */
const DELETES_PER_PRUNE = 4000
const PRUNE_AGAIN_MS = 1000

export const TELEMETRY_RANGES = ['1h', '1d', '30d'] as const
export type TelemetryRange = (typeof TELEMETRY_RANGES)[number]
export const RANGE_MS: Record<TelemetryRange, number> = { '1h': 60 * MINUTE_MS, '1d': DAY_MS, '30d': 30 * DAY_MS }

/** Averages over a bucket (null: no heartbeat in it reported the figure). */
export interface BucketPoint {
  ts: number
  samples: number
  cpu_pct: number | null
  mem_free_mb: number | null
  mem_total_mb: number | null
  gpu_util_pct: number | null
  gpu_free_mb: number | null
  gpu_total_mb: number | null
  gpu_temp_c: number | null
}

export interface PoolPoint {
  ts: number
  /** Machines that sent at least one heartbeat in the bucket. */
  online: number
  vram_total_mb: number
  vram_free_mb: number
  cpu_pct: number | null
}

/** Sums and counts of one open bucket. */
class Acc {
  n = 0
  cpu = 0
  cpuN = 0
  memFree = 0
  memFreeN = 0
  memTotal = 0
  memTotalN = 0
  gpuUtil = 0
  gpuFree = 0
  gpuTotal = 0
  gpuN = 0
  temp: number | null = null

  constructor(
    readonly fellowId: string,
    readonly res: number,
    readonly ts: number,
  ) {}

  add(hw: Hardware | null): void {
    this.n++
    if (!hw) return
    if (hw.cpu_pct !== undefined) {
      this.cpu += hw.cpu_pct
      this.cpuN++
    }
    if (hw.mem_free_mb !== undefined) {
      this.memFree += hw.mem_free_mb
      this.memFreeN++
    }
    if (hw.mem_total_mb !== undefined) {
      this.memTotal += hw.mem_total_mb
      this.memTotalN++
    }
    const gpus = hw.gpus
    if (gpus.length > 0) {
      let util = 0
      let free = 0
      let total = 0
      for (const g of gpus) {
        util += g.utilization_pct
        free += g.memory_free_mb
        total += g.memory_total_mb
        if (g.temperature_c !== undefined && (this.temp === null || g.temperature_c > this.temp)) this.temp = g.temperature_c
      }
      this.gpuUtil += util / gpus.length
      this.gpuFree += free
      this.gpuTotal += total
      this.gpuN++
    }
  }

  point(): BucketPoint {
    const avg = (sum: number, n: number) => (n > 0 ? Math.round((sum / n) * 10) / 10 : null)
    return {
      ts: this.ts,
      samples: this.n,
      cpu_pct: avg(this.cpu, this.cpuN),
      mem_free_mb: avg(this.memFree, this.memFreeN),
      mem_total_mb: avg(this.memTotal, this.memTotalN),
      gpu_util_pct: avg(this.gpuUtil, this.gpuN),
      gpu_free_mb: avg(this.gpuFree, this.gpuN),
      gpu_total_mb: avg(this.gpuTotal, this.gpuN),
      gpu_temp_c: this.temp,
    }
  }
}

interface Open {
  minute: Acc
  quarter: Acc
}

/** A stored bucket and the same bucket's newer samples, as the write merges them (figures weighed by samples). */
function mergePoints(a: BucketPoint, b: BucketPoint): BucketPoint {
  const n = a.samples + b.samples
  const mean = (x: number | null, y: number | null) => (x === null ? y : y === null ? x : Math.round(((x * a.samples + y * b.samples) / n) * 10) / 10)
  return {
    ts: a.ts,
    samples: n,
    cpu_pct: mean(a.cpu_pct, b.cpu_pct),
    mem_free_mb: mean(a.mem_free_mb, b.mem_free_mb),
    mem_total_mb: mean(a.mem_total_mb, b.mem_total_mb),
    gpu_util_pct: mean(a.gpu_util_pct, b.gpu_util_pct),
    gpu_free_mb: mean(a.gpu_free_mb, b.gpu_free_mb),
    gpu_total_mb: mean(a.gpu_total_mb, b.gpu_total_mb),
    gpu_temp_c: a.gpu_temp_c === null ? b.gpu_temp_c : b.gpu_temp_c === null ? a.gpu_temp_c : Math.max(a.gpu_temp_c, b.gpu_temp_c),
  }
}

type Row = { ts: number; samples: number; cpu_pct: number | null; mem_free_mb: number | null; mem_total_mb: number | null; gpu_util_pct: number | null; gpu_free_mb: number | null; gpu_total_mb: number | null; gpu_temp_c: number | null }

export class TelemetryHistory {
  private open = new Map<string, Open>()
  /** Closed buckets the next flush writes, oldest first. */
  private closed: Acc[] = []
  /**
   * When the oldest row expires, so a prune runs only then: an idle leader commits nothing (an
   * empty commit every second made SQLite sync the WAL behind hundreds of MiB of an artifact
   * upload's dirty pages, stalling the event loop past the body deadline).
   */
  private nextPrune = Infinity
  private insert: Statement | null = null

  constructor(
    private sqlite: Database,
    private clock: Clock,
    /** 0: no history in the state file (SVC_TELEMETRY_RETENTION_DAYS=0). */
    private retentionDays: number,
  ) {
    this.nextPrune = retentionDays > 0 ? this.oldestExpiry() : Infinity
  }

  /** When the oldest row of either resolution expires (Infinity: no rows). */
  private oldestExpiry(): number {
    const min = (res: number) => this.sqlite.query<{ ts: number | null }, [number]>('SELECT min(ts) AS ts FROM telemetry_buckets WHERE res = ?').get(res)?.ts ?? null
    const m = min(MINUTE_MS / 1000)
    const q = min(QUARTER_MS / 1000)
    return Math.min(m === null ? Infinity : m + DAY_MS + MINUTE_MS, q === null ? Infinity : q + this.retentionDays * DAY_MS + QUARTER_MS)
  }

  get enabled(): boolean {
    return this.retentionDays > 0
  }

  /** The hot path: a heartbeat's figures into the fellow's open buckets. */
  sample(fellowId: string, hw: Hardware | null, now: number): void {
    if (this.retentionDays === 0) return
    const minute = now - (now % MINUTE_MS)
    const quarter = now - (now % QUARTER_MS)
    let o = this.open.get(fellowId)
    if (!o) this.open.set(fellowId, (o = { minute: new Acc(fellowId, MINUTE_MS, minute), quarter: new Acc(fellowId, QUARTER_MS, quarter) }))
    if (o.minute.ts !== minute) {
      this.closed.push(o.minute)
      o.minute = new Acc(fellowId, MINUTE_MS, minute)
    }
    if (o.quarter.ts !== quarter) {
      this.closed.push(o.quarter)
      o.quarter = new Acc(fellowId, QUARTER_MS, quarter)
    }
    o.minute.add(hw)
    o.quarter.add(hw)
  }

  /** Something for the flush to write (or delete). */
  pending(now: number): boolean {
    return this.closed.length > 0 || now >= this.nextPrune
  }

  /**
   * Writes closed buckets (at most WRITES_PER_FLUSH; `all`: every one, and the open ones too, for a
   * clean stop) and deletes expired rows. Call inside the flush's transaction.
   */
  write(now: number, all = false): number {
    if (this.retentionDays === 0) return 0
    // A row names the fellow's pool as the state file has it, and is skipped for a fellow removed
    // since its bucket closed (the foreign key would refuse it and with it the whole flush).
    // A bucket already in the file (written by the leader before a restart, or before a clean
    // stop's flush) is merged with, not replaced: its samples count, its figures weigh by them.
    const mean = (col: string) =>
      `${col} = CASE WHEN excluded.${col} IS NULL THEN ${col} WHEN ${col} IS NULL THEN excluded.${col} ELSE round((${col} * samples + excluded.${col} * excluded.samples) / (samples + excluded.samples), 1) END`
    this.insert ??= this.sqlite.prepare(
      `INSERT INTO telemetry_buckets (fellow_id, pool_id, res, ts, samples, cpu_pct, mem_free_mb, mem_total_mb, gpu_util_pct, gpu_free_mb, gpu_total_mb, gpu_temp_c)
       SELECT ?1, (SELECT pool_id FROM pool_nodes WHERE fellow_id = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 WHERE EXISTS (SELECT 1 FROM fellows WHERE id = ?1)
       ON CONFLICT (fellow_id, res, ts) DO UPDATE SET pool_id = excluded.pool_id, samples = samples + excluded.samples,
         ${['cpu_pct', 'mem_free_mb', 'mem_total_mb', 'gpu_util_pct', 'gpu_free_mb', 'gpu_total_mb'].map(mean).join(', ')},
         gpu_temp_c = CASE WHEN excluded.gpu_temp_c IS NULL THEN gpu_temp_c WHEN gpu_temp_c IS NULL THEN excluded.gpu_temp_c ELSE max(gpu_temp_c, excluded.gpu_temp_c) END`,
    )
    const take = all ? this.closed.splice(0) : this.closed.splice(0, WRITES_PER_FLUSH)
    if (all) {
      // The open buckets are written as they stand and start again empty: what comes after merges.
      for (const o of this.open.values()) take.push(o.minute, o.quarter)
      this.open.clear()
    }
    // A row written now expires no sooner than a day (a minute bucket) from its start.
    if (take.length > 0 && this.nextPrune === Infinity) this.nextPrune = Math.min(...take.map((a) => a.ts)) + DAY_MS + MINUTE_MS
    for (const a of take) {
      const p = a.point()
      this.insert.run(a.fellowId, a.res / 1000, a.ts, p.samples, p.cpu_pct, p.mem_free_mb, p.mem_total_mb, p.gpu_util_pct, p.gpu_free_mb, p.gpu_total_mb, p.gpu_temp_c)
    }
    if (now >= this.nextPrune) {
      const prune = this.sqlite.prepare('DELETE FROM telemetry_buckets WHERE rowid IN (SELECT rowid FROM telemetry_buckets WHERE res = ? AND ts < ? LIMIT ?)')
      const a = prune.run(MINUTE_MS / 1000, now - DAY_MS - MINUTE_MS, DELETES_PER_PRUNE).changes
      const b = prune.run(QUARTER_MS / 1000, now - this.retentionDays * DAY_MS - QUARTER_MS, DELETES_PER_PRUNE).changes
      this.nextPrune = a >= DELETES_PER_PRUNE || b >= DELETES_PER_PRUNE ? now + PRUNE_AGAIN_MS : this.oldestExpiry()
    }
    return take.length
  }

  forget(fellowId: string): void {
    this.open.delete(fellowId)
    if (this.closed.some((a) => a.fellowId === fellowId)) this.closed = this.closed.filter((a) => a.fellowId !== fellowId)
  }

  /** Buckets of the fellow not yet in the state file (closed and waiting, and the open one). */
  private unwritten(fellowId: string, resMs: number): Acc[] {
    const out = this.closed.filter((a) => a.fellowId === fellowId && a.res === resMs)
    const o = this.open.get(fellowId)
    if (o) out.push(resMs === MINUTE_MS ? o.minute : o.quarter)
    return out
  }

  /** One fellow's buckets of `resMs` since `since`, oldest first. */
  fellowSeries(fellowId: string, resMs: number, since: number): BucketPoint[] {
    const byTs = new Map<number, BucketPoint>()
    if (this.retentionDays === 0) return []
    const rows = this.sqlite
      .query<Row, [string, number, number]>(
        'SELECT ts, samples, cpu_pct, mem_free_mb, mem_total_mb, gpu_util_pct, gpu_free_mb, gpu_total_mb, gpu_temp_c FROM telemetry_buckets WHERE fellow_id = ? AND res = ? AND ts >= ? ORDER BY ts',
      )
      .all(fellowId, resMs / 1000, since)
    for (const r of rows) byTs.set(r.ts, r)
    for (const a of this.unwritten(fellowId, resMs)) {
      if (a.ts < since || a.n === 0) continue
      const stored = byTs.get(a.ts)
      byTs.set(a.ts, stored ? mergePoints(stored, a.point()) : a.point())
    }
    return [...byTs.values()].sort((a, b) => a.ts - b.ts)
  }

  /** A pool's machines summed per bucket: `members` are its fellows now (for the unwritten buckets). */
  poolSeries(poolId: string, members: string[], resMs: number, since: number): PoolPoint[] {
    if (this.retentionDays === 0) return []
    type Sum = { online: number; total: number; free: number; cpu: number; cpuN: number; seen: Set<string> | null }
    const byTs = new Map<number, Sum>()
    const rows = this.sqlite
      .query<{ ts: number; fellow_id: string; cpu_pct: number | null; gpu_free_mb: number | null; gpu_total_mb: number | null }, [string, number, number]>(
        'SELECT ts, fellow_id, cpu_pct, gpu_free_mb, gpu_total_mb FROM telemetry_buckets WHERE pool_id = ? AND res = ? AND ts >= ?',
      )
      .all(poolId, resMs / 1000, since)
    const add = (ts: number, fellowId: string, cpu: number | null, free: number | null, total: number | null) => {
      let s = byTs.get(ts)
      if (!s) byTs.set(ts, (s = { online: 0, total: 0, free: 0, cpu: 0, cpuN: 0, seen: new Set() }))
      if (s.seen!.has(fellowId)) return
      s.seen!.add(fellowId)
      s.online++
      s.total += total ?? 0
      s.free += free ?? 0
      if (cpu !== null) {
        s.cpu += cpu
        s.cpuN++
      }
    }
    // Unwritten buckets first: after a forced flush the same bucket may be in both, and memory is newer.
    for (const id of members) {
      for (const a of this.unwritten(id, resMs)) {
        if (a.ts < since || a.n === 0) continue
        const p = a.point()
        add(a.ts, id, p.cpu_pct, p.gpu_free_mb, p.gpu_total_mb)
      }
    }
    for (const r of rows) add(r.ts, r.fellow_id, r.cpu_pct, r.gpu_free_mb, r.gpu_total_mb)
    return [...byTs.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([ts, s]) => ({ ts, online: s.online, vram_total_mb: Math.round(s.total), vram_free_mb: Math.round(s.free), cpu_pct: s.cpuN > 0 ? Math.round((s.cpu / s.cpuN) * 10) / 10 : null }))
  }

  /** The clock's now: for callers that hold no clock of their own. */
  now(): number {
    return this.clock.now()
  }
}
