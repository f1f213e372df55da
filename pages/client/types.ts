// Types shared by the page scripts. The scripts are plain functions serialised with toString() and
// served from /assets/*.js, so they must not reference anything outside their own body except
// `window.svc`, which app.js (common.ts) installs first.

export interface ApiResult<T = any> {
  ok: boolean
  status: number
  data: T
  /** problem+json `detail`, or a generic sentence; null when ok. */
  error: string | null
}

export type Child = Node | string | number | null | undefined | false
export type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>

export interface Svc {
  api<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResult<T>>
  /**
   * Notes a message of the leader's that came some other way than api() (a raw fetch, an event
   * stream), so that say() and fieldError() mark it lang="en" on a page that is not English.
   */
  fromServer(text: string): string
  /**
   * Runs `fn` unless one started from the same form or button is still under way (then nothing):
   * the form's submit buttons, or the button, are aria-disabled meanwhile (focus stays on them).
   */
  exclusive(owner: Element, fn: () => Promise<unknown>): Promise<void>
  /** A form's submit handler (default prevented) that sends one request at a time (exclusive). */
  onSubmit(form: string | HTMLFormElement | null, handler: (form: HTMLFormElement) => Promise<unknown>): void
  /**
   * Server-sent events (`on[event](data)`): closed while the tab is hidden, opened again when it is
   * shown, resuming with Last-Event-ID; reconnects after a dropped connection; `end` closes it.
   */
  stream(url: string, on: Record<string, (data: string) => void>): { close(): void }
  el(tag: string, attrs?: Attrs, ...children: Child[]): HTMLElement
  say(target: string | Element | null, text: string, kind?: 'ok' | 'error' | ''): void
  /** Keyboard focus to an element (a message gets tabindex=-1): after an action took the focused control away. */
  focus(target: string | Element | null): void
  /**
   * An error under a form (element `msg`) tied to its fields (ids): aria-invalid, the message in
   * their aria-describedby, focus on the first; undone when a field changes or `msg` says otherwise.
   */
  formError(msg: string, fields: string[], text: string): void
  /** The field ids a refusal concerns: `map` from an errors[].path ('/password') or a code ('email_taken'). */
  refusedFields(r: ApiResult, map: Record<string, string[]>): string[]
  /** Previous/Next (#page-prev, #page-next) off or on; focus on one going off moves to the other. */
  pager(prevOff: boolean, nextOff: boolean): void
  /** Sets the message beside a form field (`<id>-error`) and its aria-invalid; true when `text` is empty. */
  fieldError(id: string, text: string): boolean
  /** Takes an error under the form (the element `msg`) down once the form is changed. */
  clearOnInput(form: string, msg: string): void
  /** Runs `fn` now and every `ms` after it ends (a function: asked each time), skipped while the tab is hidden; now() runs it at once. */
  poll(fn: () => Promise<void>, ms: number | (() => number)): { now(): void }
  /**
   * A long table drawn 50 rows at a time: draw limit() rows, then say shown(rows drawn, total or
   * null when unknown, whether there are more); the line under the table says how many, and its
   * "Show 50 more" raises the limit and calls `redraw`.
   */
  showMore(body: Element | null, redraw: () => void): { limit(): number; shown(n: number, total: number | null, more?: boolean): void }
  /** Replaces a container's children only when the data changed, so polling keeps keyboard focus. */
  render(container: Element | null, key: unknown, build: () => Child[]): void
  /**
   * As render, but the content is updated in place: text and attributes change, the elements stay
   * (a focused link keeps focus while the numbers beside it change). Children with data-key (rows)
   * are matched by it. Listeners attached through el() are carried over to the element kept.
   */
  update(container: Element | null, key: unknown, build: () => Child[]): void
  formJson(form: HTMLFormElement): Record<string, string | boolean>
  /** The fields whose value differs from their default (as loaded or last saved): what an edit sends. */
  changedFields(form: HTMLFormElement): Record<string, string | boolean>
  /** Makes the fields' current values their defaults (after loading them into the form, or a save). */
  settleFields(form: HTMLFormElement): void
  /** One date format everywhere: YYYY-MM-DD HH:MM in the viewer's time zone. */
  fmtTime(iso: string | null | undefined): string
  /** "3 minutes ago" / "vor 3 Minuten", in the page's language. */
  fmtAgo(iso: string | null | undefined): string
  /** A <time> element with the relative time as text and the absolute one as its title. */
  ago(iso: string | null | undefined): HTMLElement
  /** The page's language (html lang): 'en' or 'de'. */
  lang: string
  /**
   * A string of the page's language from /assets/strings-LANG.js: {name} placeholders filled from
   * `vars`; an entry with plural forms picks its form by vars.n (Intl.PluralRules).
   */
  t(key: string, vars?: Record<string, string | number>): string
  fmtNum(n: number | null | undefined, digits?: number): string
  fmtBytes(n: number | null | undefined): string
  /** The text without terminal colour and cursor codes (ESC [ … m and the like). */
  withoutAnsi(text: string): string
  copy(text: string, status: string | Element | null): Promise<void>
  artifactLink(x: { id: string; name: string }): HTMLElement
  /** The CSRF cookie's value, for a state change sent without api() (an upload through XHR). */
  csrf(): string
  badge(state: string): HTMLElement
  data(name: string): string
}

/** A message: plain, or plural forms chosen by Intl.PluralRules (one, other; few/many if a language needs them). */
export type Message = string | { one: string; other: string; [form: string]: string }

export interface ChartSeries {
  label: string
  /** blue, green, orange, purple or red (contrasting on white). */
  color: string
  /** Series on different scales get an axis each (left, then right). */
  scale?: string
  fmt?: (n: number) => string
}

export interface Chart {
  /** x: seconds since the epoch (or steps); one column of values per series, null for none. */
  /** `period`: the x range to show (seconds), e.g. the last hour, whatever the points cover. */
  set(xs: number[], cols: (number | null)[][], period?: [number, number]): void
}

export interface LogTail {
  add(sources: { id: string; name: string }[]): void
}

/** console.js (console.ts): charts with their text alternative, and the log tail. */
export interface SvcConsole {
  chart(container: HTMLElement, title: string, series: ChartSeries[], opts?: { height?: number; compact?: boolean; xIsStep?: boolean }): Chart
  logTail(container: HTMLElement, sources: { id: string; name: string }[]): LogTail
}

/** sha256.js: SHA-256 fed slice by slice (window.svcSha256() makes one). */
export interface Sha256 {
  update(data: Uint8Array): void
  /** The digest as 64 lowercase hex digits; no update() after it. */
  hex(): string
}

declare global {
  interface Window {
    svc: Svc
    svcSha256: () => Sha256
    svcStrings?: Record<string, Message>
    svcConsole: SvcConsole
  }
}
