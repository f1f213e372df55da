// console.js: the charts and the log tail of the training console (job, machine, pool and dashboard
// pages). Charts are uPlot (/assets/uplot.js, served by the binary) on a canvas the screen reader
// skips; beside each is the text that says the same: a summary of every series (now, lowest,
// highest) and the points as a table behind a disclosure. Log lines are SSE from
// /api/v1/workers/{id}/logs/stream (svc.stream), one machine at a time, shown as text only.
import type { Chart, ChartSeries, LogTail, SvcConsole } from './types'

export function consoleClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const TABLE_ROWS = 30

  const fmtClock = (sec: number, withDate: boolean) => {
    const d = new Date(sec * 1000)
    const p = (n: number) => String(n).padStart(2, '0')
    return (withDate ? `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` : '') + `${p(d.getHours())}:${p(d.getMinutes())}`
  }

  // Axis labels in the page's language: uPlot's own are American whatever the page (8:30pm,
  // 11/27/26) and its numbers follow the browser's locale, not the page's. Times on a 24-hour
  // clock, as the tables beside the charts give them; the day under the first time and under the
  // first time of each new day.
  const clock = new Intl.DateTimeFormat(svc.lang, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
  const clockSeconds = new Intl.DateTimeFormat(svc.lang, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })
  const day = new Intl.DateTimeFormat(svc.lang, { day: '2-digit', month: '2-digit' })
  function timeTicks(_u: unknown, splits: number[], _axis: number, _space: number, incr: number): string[] {
    return splits.map((sec, i) => {
      const d = new Date(sec * 1000)
      const prev = i > 0 ? new Date(splits[i - 1]! * 1000) : null
      if (incr >= 86_400) return day.format(d) + (prev && prev.getFullYear() === d.getFullYear() ? '' : '\n' + d.getFullYear())
      const time = (incr < 60 ? clockSeconds : clock).format(d)
      return prev && prev.toDateString() === d.toDateString() ? time : time + '\n' + day.format(d)
    })
  }
  /** As many decimals as the step between ticks has (0.25: 2), in the page's number format. */
  function numberTicks(_u: unknown, splits: number[], _axis: number, _space: number, incr: number): string[] {
    const [mantissa = '', exponent = '0'] = incr.toExponential().split('e')
    const digits = Math.min(20, Math.max(0, (mantissa.split('.')[1] ?? '').length - Number(exponent)))
    return splits.map((v) => v.toLocaleString(svc.lang, { minimumFractionDigits: digits, maximumFractionDigits: digits }))
  }

  function chart(container: HTMLElement, title: string, series: ChartSeries[], opts: { height?: number; compact?: boolean; xIsStep?: boolean } = {}): Chart {
    const height = opts.height ?? 200
    const id = 'c' + Math.random().toString(36).slice(2, 9)
    const plot = el('div', { class: 'chart-plot', 'aria-hidden': 'true' })
    const empty = el('p', { class: 'empty', text: t('chart.noData') })
    const summary = el('p', { class: 'chart-summary', id: id + '-sum' })
    const body = el('tbody')
    const table = el(
      'table',
      {},
      el('caption', { class: 'sr-only', text: title }),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: opts.xIsStep ? t('chart.step') : t('chart.time') }), ...series.map((s) => el('th', { scope: 'col', text: s.label })))),
      body,
    )
    // The disclosure names its chart for a screen reader: two on a page read alike out of context.
    const details = el('details', { class: 'chart-data' }, el('summary', {}, t('chart.showTable'), el('span', { class: 'sr-only', text: ': ' + title })), el('div', { class: 'table-wrap' }, table))
    const legend = el('ul', { class: 'chart-legend plain', 'aria-hidden': 'true' }, ...series.map((s) => el('li', {}, el('span', { class: 'swatch swatch-' + s.color }), s.label)))
    const figure = el('figure', { class: 'chart' + (opts.compact ? ' compact' : ''), 'aria-describedby': id + '-sum' }, el('figcaption', { text: title }), opts.compact ? '' : legend, plot, empty, summary, opts.compact ? '' : details)
    container.replaceChildren(figure)
    const COLORS: Record<string, string> = { blue: '#1d4ed8', green: '#15803d', orange: '#b45309', purple: '#7e22ce', red: '#b42318' }
    let u: any = null
    let data: (number | null)[][] = [[]]
    const width = () => Math.max(120, plot.clientWidth || container.clientWidth || 300)
    const scales = [...new Set(series.map((s) => s.scale ?? 'y'))]
    function build() {
      const U = (window as any).uPlot
      if (!U) return
      u = new U(
        {
          width: width(),
          height,
          legend: { show: false },
          cursor: { show: !opts.compact, points: { show: false } },
          // The period asked for when given (one point must not span three years); else the data, padded when it is one point.
          scales: { x: { time: !opts.xIsStep, range: (_u: unknown, min: number, max: number) => win ?? (min === max ? [min - 60, max + 60] : [min, max]) } },
          axes: opts.compact
            ? [{ show: false }, { show: false }]
            : [
                { stroke: '#4a5365', grid: { stroke: '#e5e7eb' }, ticks: { stroke: '#d5d9e1' }, values: opts.xIsStep ? numberTicks : timeTicks },
                ...scales.map((sc, i) => ({ scale: sc, side: i === 0 ? 3 : 1, stroke: '#4a5365', grid: { show: i === 0, stroke: '#e5e7eb' }, ticks: { stroke: '#d5d9e1' }, size: 56, values: numberTicks })),
              ],
          series: [{}, ...series.map((s) => ({ label: s.label, scale: s.scale ?? 'y', stroke: COLORS[s.color] ?? '#1d4ed8', width: 2, spanGaps: true, points: { show: (d: any) => d !== undefined, size: 4 } }))],
        },
        data,
        plot,
      )
    }
    function describe(xs: number[], cols: (number | null)[][]) {
      if (xs.length === 0) return ''
      return series
        .map((s, i) => {
          const vals = (cols[i] ?? []).filter((v): v is number => typeof v === 'number')
          if (vals.length === 0) return t('chart.seriesNone', { series: s.label })
          const f = s.fmt ?? ((v: number) => svc.fmtNum(v, 1))
          return t('chart.seriesSummary', { series: s.label, now: f(vals[vals.length - 1]!), min: f(Math.min(...vals)), max: f(Math.max(...vals)) })
        })
        .join(' ')
    }
    let lastKey = ''
    let win: [number, number] | null = null
    function set(xs: number[], cols: (number | null)[][], period?: [number, number]) {
      const key = JSON.stringify([xs.length, xs[0], xs[xs.length - 1], cols.map((c) => c[c.length - 1]), period?.[0]])
      if (key === lastKey) return
      lastKey = key
      win = period ?? null
      data = [xs, ...cols]
      const has = xs.length > 0
      plot.hidden = !has
      empty.hidden = has
      if (has && !u) build()
      else if (u) u.setData(data)
      summary.textContent = has ? t('chart.points', { n: xs.length }) + ' ' + describe(xs, cols) : ''
      const span = xs.length > 1 ? xs[xs.length - 1]! - xs[0]! : 0
      const rows = xs.slice(-TABLE_ROWS).map((x, k) => {
        const j = xs.length - Math.min(xs.length, TABLE_ROWS) + k
        return el(
          'tr',
          {},
          el('td', { text: opts.xIsStep ? svc.fmtNum(x) : fmtClock(x, span > 86_400) }),
          ...series.map((s, i) => {
            const v = cols[i]?.[j]
            return el('td', { text: typeof v === 'number' ? (s.fmt ?? ((n: number) => svc.fmtNum(n, 2)))(v) : '—' })
          }),
        )
      })
      body.replaceChildren(...rows)
    }
    if (typeof ResizeObserver !== 'undefined') {
      let w = 0
      new ResizeObserver(() => {
        const nw = width()
        if (u && nw !== w) {
          w = nw
          u.setSize({ width: nw, height })
        }
      }).observe(container)
    }
    set([], series.map(() => []))
    return { set }
  }

  const LEVELS = ['debug', 'info', 'warn', 'error']

  /**
   * A live tail of the fellows' log lines: follow (scroll along), pause (hold new lines), filter by
   * level. One machine at a time (a chooser when there are several): every open stream holds one of
   * the six connections a browser keeps per host, and a job page of four machines held five.
   */
  function logTail(container: HTMLElement, sources: { id: string; name: string }[]): LogTail {
    const MAX = 500
    const list = el('ol', { class: 'log-lines plain', tabindex: '0', 'aria-label': t('log.lines') })
    const level = el('select', { id: container.id + '-level' }, ...['all', 'info', 'warn', 'error'].map((l) => el('option', { value: l, text: t('log.level.' + l) }))) as HTMLSelectElement
    const machine = el('select', { id: container.id + '-source' }) as HTMLSelectElement
    const machineBox = el('span', { class: 'log-source' }, el('label', { for: machine.id, class: 'inline', text: t('log.machine') }), ' ', machine)
    const pauseBtn = el('button', { type: 'button', class: 'secondary small', 'aria-pressed': 'false', text: t('log.pause') })
    const follow = el('input', { type: 'checkbox', id: container.id + '-follow', checked: true }) as HTMLInputElement
    const status = el('p', { class: 'muted log-status', role: 'status' })
    container.replaceChildren(
      el(
        'div',
        { class: 'actions log-controls' },
        machineBox,
        el('label', { for: level.id, class: 'inline', text: t('log.filter') }),
        level,
        el('label', { class: 'check inline' }, follow, ' ', t('log.follow')),
        pauseBtn,
      ),
      status,
      list,
    )
    let paused = false
    // While paused, the newest MAX lines are held (all the view could show): a tail paused for a
    // while held every line (30,000 of them took 40 MB), and says how many older ones it let go.
    let held: { ts: string; line: string }[] = []
    let dropped = 0
    const heldText = () => (dropped ? t('log.heldDropped', { n: dropped, held: held.length }) : t('log.held', { n: held.length }))
    const lines: { ts: string; line: string; lvl: string }[] = []
    let current: { id: string; close(): void } | null = null
    // Colour codes go before the level is guessed: "ESC[31mERROR" has no word boundary before ERROR.
    const parse = (line: string) => {
      try {
        const o = JSON.parse(line)
        if (o && typeof o === 'object' && typeof o.msg === 'string') {
          const { level: lv, time: _t, msg, ...rest } = o
          const extra = Object.keys(rest).length ? ' ' + JSON.stringify(rest) : ''
          return { lvl: LEVELS.includes(lv) ? String(lv) : 'info', text: svc.withoutAnsi(msg + extra) }
        }
      } catch {
        // not JSON: shown as it came
      }
      const text = svc.withoutAnsi(line)
      return { lvl: /\berror\b/i.test(text) ? 'error' : /\bwarn/i.test(text) ? 'warn' : 'info', text }
    }
    const shown = (lvl: string) => level.value === 'all' || LEVELS.indexOf(lvl) >= LEVELS.indexOf(level.value)
    const row = (l: (typeof lines)[number]) => {
      const p = parse(l.line)
      return el(
        'li',
        { class: 'log-' + p.lvl, 'data-level': p.lvl },
        el('time', { datetime: l.ts, text: fmtClock(Date.parse(l.ts) / 1000, false) }),
        ' ',
        el('span', { class: 'log-lvl', text: p.lvl.toUpperCase() }),
        ' ',
        el('span', { class: 'log-msg', text: p.text }),
      )
    }
    const redraw = () => {
      const visible = lines.filter((l) => shown(l.lvl))
      list.replaceChildren(...visible.map(row))
      if (visible.length === 0) list.append(el('li', { class: 'empty', text: lines.length ? t('log.noneAtLevel') : t('log.none') }))
      if (follow.checked) list.scrollTop = list.scrollHeight
    }
    const take = (batch: { ts: string; line: string }[]) => {
      for (const b of batch) lines.push({ ...b, lvl: parse(b.line).lvl })
      if (lines.length > MAX) lines.splice(0, lines.length - MAX)
      redraw()
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    let incoming: { ts: string; line: string }[] = []
    const arrive = (x: { ts: string; line: string }) => {
      if (paused) {
        held.push(x)
        if (held.length > MAX) dropped += held.splice(0, held.length - MAX).length
        status.textContent = heldText()
        return
      }
      incoming.push(x)
      // Many lines at once (a replay) are drawn once, not once a line.
      timer ??= setTimeout(() => {
        timer = undefined
        const batch = incoming
        incoming = []
        take(batch)
      }, 100)
    }
    /** Follows one machine: its lines from the start of what the leader keeps, then new ones. */
    function connect(id: string) {
      if (current?.id === id) return
      current?.close()
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      incoming = []
      held = []
      dropped = 0
      lines.length = 0
      status.textContent = paused ? heldText() : ''
      redraw()
      const s = svc.stream('/api/v1/workers/' + encodeURIComponent(id) + '/logs/stream', {
        log: (raw) => {
          if (current?.id !== id) return
          try {
            const d = JSON.parse(raw)
            arrive({ ts: String(d.ts), line: String(d.line) })
          } catch {
            // a malformed event is skipped
          }
        },
      })
      current = { id, close: s.close }
    }
    const options = () => {
      machine.replaceChildren(...sources.map((s) => el('option', { value: s.id, selected: s.id === current?.id, text: s.name })))
      machineBox.hidden = sources.length < 2
    }
    machine.addEventListener('change', () => connect(machine.value))
    pauseBtn.addEventListener('click', () => {
      paused = !paused
      // A toggle keeps its name and says its state by aria-pressed (shown by the stylesheet): named
      // Resume when pressed, it was read "Resume, pressed", which says the opposite of what it is.
      pauseBtn.setAttribute('aria-pressed', String(paused))
      if (!paused) {
        const h = held
        held = []
        status.textContent = dropped ? t('log.droppedWhilePaused', { n: dropped, max: MAX }) : ''
        dropped = 0
        take(h)
      } else status.textContent = heldText()
    })
    level.addEventListener('change', redraw)
    follow.addEventListener('change', () => {
      if (follow.checked) list.scrollTop = list.scrollHeight
    })
    redraw()
    if (sources[0]) connect(sources[0].id)
    options()
    return {
      add: (more) => {
        const before = sources.length
        for (const m of more) if (!sources.some((s) => s.id === m.id)) sources.push(m)
        if (!current && sources[0]) connect(sources[0].id)
        if (sources.length !== before) options()
      },
    }
  }

  const api: SvcConsole = { chart, logTail }
  window.svcConsole = api
}
