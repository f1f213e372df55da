// Prometheus counters and gauges. Counters are plain numbers bumped on the hot path (no labels
// parsed, no allocation per request); the text format is built only when /metrics is scraped.
export class Counters {
  readonly http = new Map<string, number>() // "class status" -> count
  heartbeats = 0
  relayBytesIn = 0
  relayBytesOut = 0
  relayFramesIn = 0

  httpRequest(cls: string, status: number): void {
    const key = `${cls} ${status}`
    this.http.set(key, (this.http.get(key) ?? 0) + 1)
  }
}

export interface Gauge {
  name: string
  help: string
  type: 'gauge' | 'counter'
  samples: { labels?: Record<string, string>; value: number }[]
}

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')

export function renderPrometheus(metrics: Gauge[]): string {
  let out = ''
  for (const m of metrics) {
    out += `# HELP ${m.name} ${m.help}\n# TYPE ${m.name} ${m.type}\n`
    for (const s of m.samples) {
      const labels = s.labels ? `{${Object.entries(s.labels).map(([k, v]) => `${k}="${esc(v)}"`).join(',')}}` : ''
      out += `${m.name}${labels} ${Number.isFinite(s.value) ? s.value : 0}\n`
    }
  }
  return out
}
