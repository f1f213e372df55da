// The one stylesheet, served from the binary at /assets/app.css (no CDN, no web fonts).
// Colours are chosen for at least 4.5:1 contrast on their backgrounds; focus is always visible.
export const CSS = `
:root {
  --bg: #f5f6f8; --fg: #1b2130; --muted: #4a5365; --card: #ffffff; --line: #d5d9e1;
  --accent: #1d4ed8; --accent-fg: #ffffff; --accent-dark: #1e3a8a;
  --danger: #b42318; --ok-bg: #dcfce7; --ok-fg: #14532d; --warn-bg: #fef3c7; --warn-fg: #78350f;
  --off-bg: #e5e7eb; --off-fg: #1f2937; --err-bg: #fee4e2; --err-fg: #7a1a12;
  --radius: 10px; --focus: 3px solid #1d4ed8;
}
* { box-sizing: border-box; }
html { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; line-height: 1.5; }
body { margin: 0; background: var(--bg); color: var(--fg); min-height: 100vh; display: flex; flex-direction: column; }
main { flex: 1; width: 100%; max-width: 1100px; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
main:focus, main:focus-visible { outline: none; box-shadow: none; }
[hidden] { display: none !important; }
.plain { list-style: none; padding: 0; margin: 0; }
a { color: var(--accent); text-underline-offset: 2px; }
a:hover { color: var(--accent-dark); }
:focus-visible { outline: var(--focus); outline-offset: 2px; box-shadow: 0 0 0 5px #ffffff; border-radius: 4px; }
h1 { font-size: 1.75rem; margin: 0 0 .5rem; line-height: 1.25; }
h2 { font-size: 1.2rem; margin: 0 0 .75rem; }
h3 { font-size: 1rem; margin: 1rem 0 .5rem; }
/* Names people choose can be one long word: they wrap rather than push the page sideways. */
h1, h2, h3, dd, figcaption, .lead { overflow-wrap: anywhere; }
p { margin: 0 0 .75rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9rem; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
.skip { position: absolute; left: 1rem; top: -4rem; background: var(--accent); color: var(--accent-fg); padding: .5rem 1rem; border-radius: 6px; z-index: 10; }
.skip:focus { top: .5rem; color: var(--accent-fg); }

.top { background: var(--card); border-bottom: 1px solid var(--line); }
.top-inner { max-width: 1100px; margin: 0 auto; padding: .6rem 1rem; display: flex; flex-wrap: wrap; gap: .75rem 1.5rem; align-items: center; }
.brand { display: inline-flex; align-items: center; gap: .5rem; font-weight: 700; color: var(--fg); text-decoration: none; font-size: 1.1rem; }
.nav, .foot-links { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
.nav a { text-decoration: none; color: var(--fg); padding: .35rem .2rem; display: inline-flex; gap: .35rem; align-items: center; }
.nav a:hover { color: var(--accent); text-decoration: underline; }
.nav a[aria-current="page"] { color: var(--accent); font-weight: 600; box-shadow: inset 0 -2px 0 var(--accent); }
.top nav { flex: 1; }
.chip { display: inline-flex; align-items: center; gap: .6rem; background: var(--bg); border: 1px solid var(--line); border-radius: 999px; padding: .2rem .4rem .2rem .25rem; }
.chip-name { font-weight: 600; max-width: 14rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.avatar { width: 1.9rem; height: 1.9rem; border-radius: 50%; background: var(--accent); color: var(--accent-fg); display: inline-flex; align-items: center; justify-content: center; font-weight: 700; }
.badge { background: var(--danger); color: #fff; border-radius: 999px; padding: 0 .45rem; font-size: .8rem; font-weight: 700; }

.foot { border-top: 1px solid var(--line); background: var(--card); }
.foot nav { max-width: 1100px; margin: 0 auto; padding: 1rem; display: flex; flex-wrap: wrap; justify-content: space-between; gap: 1rem; }
.foot a { color: var(--muted); }
.foot a[aria-current="true"] { color: var(--fg); font-weight: 700; text-decoration: none; }

.card { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: 1.25rem; margin: 0 0 1.25rem; }
.grid { display: grid; gap: 1.25rem; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); }
.card > h2:first-child, .card > h3:first-child { margin-top: 0; }
.tiles { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); margin-bottom: 1.25rem; }
.tile { display: block; background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: 1rem 1.25rem; text-decoration: none; color: var(--fg); }
.tile strong { display: block; color: var(--accent); font-size: 1.05rem; }
.tile:hover { border-color: var(--accent); }
.lead { color: var(--muted); font-size: 1.05rem; }
.muted { color: var(--muted); }
.hero { padding: 2.5rem 0 1.5rem; }
.hero h1 { font-size: 2.25rem; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .75rem 0; }

label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
.check label, label.check { display: flex; gap: .5rem; align-items: center; font-weight: 400; }
input[type=text], input[type=email], input[type=password], input[type=number], input[type=search], select, textarea {
  width: 100%; max-width: 32rem; font: inherit; padding: .55rem .65rem; border: 1px solid #7b8494; border-radius: 6px; background: #fff; color: var(--fg);
}
textarea { max-width: none; min-height: 5rem; }
input:focus-visible, select:focus-visible, textarea:focus-visible { box-shadow: none; }
.hint { color: var(--muted); font-size: .9rem; margin: .2rem 0 0; }
button, .btn { font: inherit; font-weight: 600; border-radius: 6px; padding: .5rem 1rem; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg); cursor: pointer; text-decoration: none; display: inline-block; }
button:hover, .btn:hover { background: var(--accent-dark); color: var(--accent-fg); }
button.secondary, .btn.secondary { background: #fff; color: var(--accent); }
button.secondary:hover, .btn.secondary:hover { background: #eef2ff; color: var(--accent-dark); }
button.danger { background: #fff; color: var(--danger); border-color: var(--danger); }
button.danger:hover { background: var(--err-bg); }
button.small { padding: .2rem .6rem; font-size: .875rem; }
/* A toggle that is on (the log tail's Pause) looks pressed: its name stays the same. */
button.secondary[aria-pressed="true"] { background: var(--accent-dark); color: var(--accent-fg); }
button:disabled, button[aria-disabled="true"] { opacity: .6; cursor: not-allowed; }
.btn-link { background: none; border: none; color: var(--accent); padding: .2rem .4rem; text-decoration: underline; font-weight: 400; }
.btn-link:hover { background: none; color: var(--accent-dark); }
form .actions { margin-top: 1rem; }

.notice { margin: .5rem 0; min-height: 1.5rem; }
.notice.error { color: var(--err-fg); background: var(--err-bg); padding: .5rem .75rem; border-radius: 6px; }
.notice.ok { color: var(--ok-fg); background: var(--ok-bg); padding: .5rem .75rem; border-radius: 6px; }
.notice:empty { min-height: 0; margin: 0; }
.empty { color: var(--muted); font-style: italic; }

table { border-collapse: collapse; width: 100%; }
.table-wrap { overflow-x: auto; }
th, td { text-align: left; padding: .5rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .85rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
td .actions { margin: 0; flex-wrap: nowrap; gap: .35rem; }
.state { display: inline-block; border-radius: 999px; padding: .05rem .6rem; font-size: .85rem; font-weight: 600; }
.state-online, .state-active, .state-running, .state-completed, .state-healthy { background: var(--ok-bg); color: var(--ok-fg); }
.state-stale, .state-pending_approval, .state-unverified, .state-queued, .state-scheduled, .state-paused { background: var(--warn-bg); color: var(--warn-fg); }
.state-offline, .state-released, .state-disabled, .state-cancelled, .state-revoked, .state-expired { background: var(--off-bg); color: var(--off-fg); }
.state-idle, .state-checkpointing, .state-pending { background: var(--warn-bg); color: var(--warn-fg); }
.reason { color: var(--muted); font-size: .875rem; margin-top: .25rem; max-width: 28rem; }
td.detail { font-size: .875rem; word-break: break-word; }
.requests li, .invites li { border-bottom: 1px solid var(--line); padding: .35rem 0; }
.menu-button { display: none; }

/* Before the narrow layout below, which makes it one column: after it, this rule undid that, and at
   320 px the facts' values got what their names left ("Eigentü|mer"). */
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 0; }
dl.facts dt { font-weight: 600; color: var(--muted); }
dl.facts dd { margin: 0; }

/* Narrow screens (phones, 390 px): the main navigation folds behind the menu button, and table rows
   stack as cards, each cell with its column's name (data-label, set by app.js from the header). */
@media (max-width: 720px) {
  .menu-button { display: inline-block; margin-left: auto; }
  .top nav { flex-basis: 100%; display: none; }
  .top.open nav { display: block; }
  .top .nav { flex-direction: column; gap: 0; }
  /* Signed out there is no menu button (nor a menu to fold): Log in and Register stay in the bar. */
  .top.signed-out nav { display: block; flex: 0 1 auto; margin-left: auto; }
  .top.signed-out .nav { flex-direction: row; gap: .25rem 1rem; }
  .chip { flex-wrap: wrap; border-radius: 12px; }
  .chip-name { max-width: 9rem; }
  .table-wrap { overflow-x: visible; }
  .table-wrap table, .table-wrap tbody, .table-wrap tr, .table-wrap td { display: block; width: 100%; }
  /* Block, so the 1 px box clips its cells: as a table header group it let them widen the page. */
  .table-wrap thead { display: block; position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  .table-wrap tr { border-bottom: 2px solid var(--line); padding: .4rem 0; }
  .table-wrap td { border: none; padding: .2rem .25rem; overflow-wrap: anywhere; }
  .table-wrap td[data-label]::before { content: attr(data-label); display: block; font-size: .75rem; font-weight: 600; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
  td .actions { flex-wrap: wrap; }
  .filters > div { min-width: 0; flex: 1 1 100%; }
  .steps > li { padding-left: 0; }
  .steps > li::before { position: static; margin: 1rem 0 0 1rem; }
  main { padding: 1rem .75rem 2rem; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: .4rem; overflow-wrap: anywhere; }
}
.state-failed, .state-error, .state-unhealthy { background: var(--err-bg); color: var(--err-fg); }

.cmd { display: flex; gap: .5rem; align-items: stretch; flex-wrap: wrap; }
/* The command takes the row, and the button goes under it, where the two do not fit side by side:
   at 320 px the command was squeezed to six characters a line beside a full-height button. */
.cmd pre { flex: 1 1 16rem; min-width: 0; margin: 0; background: #111827; color: #f3f4f6; padding: .75rem; border-radius: 6px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; min-height: 2.75rem; }
/* What an empty box says comes from the page (data-empty), in its language. */
.cmd pre[data-empty]:empty::before { content: attr(data-empty); color: #b6bcc8; font-style: italic; }
.secret { background: var(--warn-bg); color: var(--warn-fg); padding: .75rem; border-radius: 6px; overflow-wrap: anywhere; }
.steps { counter-reset: step; list-style: none; padding: 0; }
.steps > li { counter-increment: step; position: relative; padding-left: 4rem; margin-bottom: 1.25rem; }
.steps > li::before { content: counter(step); position: absolute; left: 1.1rem; top: 1.2rem; width: 2rem; height: 2rem; border-radius: 50%; background: var(--accent); color: #fff; display: flex; align-items: center; justify-content: center; font-weight: 700; }
.chat-log { border: 1px solid var(--line); border-radius: 6px; min-height: 16rem; max-height: 28rem; overflow-y: auto; padding: .75rem; background: #fbfbfc; }
/* A model's answer can be one long word (a hash, a URL, a run of one letter): it wraps in the log. */
.msg { margin: 0 0 .75rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.msg b { display: block; font-size: .85rem; color: var(--muted); }
.filters { display: flex; flex-wrap: wrap; gap: .75rem; align-items: flex-end; }
.filters > div { min-width: 10rem; }
.filters label { margin-top: 0; }
.pager { display: flex; gap: .75rem; align-items: center; margin-top: .75rem; }
.legal { max-width: 48rem; }
video { max-width: 100%; border-radius: 6px; background: #000; }

/* The training console: charts (uPlot canvas, hidden from screen readers; the summary and table
   beside it say the same), step progress, the log tail, field errors of the submit form. */
.charts { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(min(100%, 420px), 1fr)); }
figure.chart { margin: 0; min-width: 0; }
figure.chart figcaption { font-weight: 600; margin-bottom: .25rem; }
.chart-plot { width: 100%; overflow: hidden; }
.chart-summary { color: var(--muted); font-size: .9rem; margin: .25rem 0; }
figure.chart.compact .chart-summary { font-size: .85rem; }
.chart-legend { display: flex; flex-wrap: wrap; gap: .25rem 1rem; font-size: .9rem; margin-bottom: .25rem; }
.swatch { display: inline-block; width: .9rem; height: .25rem; margin-right: .35rem; vertical-align: middle; border-radius: 2px; }
.swatch-blue { background: #1d4ed8; } .swatch-green { background: #15803d; } .swatch-orange { background: #b45309; }
.swatch-purple { background: #7e22ce; } .swatch-red { background: #b42318; }
.chart-data summary { cursor: pointer; color: var(--accent); margin: .25rem 0; }
.fleet-list { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(min(100%, 260px), 1fr)); }
.fleet-list h3 { margin: 0 0 .25rem; }
progress { width: 100%; height: 1rem; accent-color: var(--accent); }
label.inline { display: inline-block; margin: 0 .25rem 0 0; }
.log-controls { gap: .5rem 1rem; }
.log-controls select { width: auto; }
.log-lines { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; background: #111827; color: #f3f4f6; border-radius: 6px; padding: .5rem .75rem; max-height: 22rem; overflow-y: auto; }
.log-lines li { white-space: pre-wrap; overflow-wrap: anywhere; padding: .05rem 0; }
.log-lines time, .log-src { color: #b6bcc8; }
.log-lines .empty { color: #d1d5db; }
.log-lvl { font-weight: 700; }
.log-warn .log-lvl { color: #fcd34d; } .log-error .log-lvl { color: #fca5a5; } .log-info .log-lvl { color: #93c5fd; } .log-debug .log-lvl { color: #d1d5db; }
.field-error { color: var(--err-fg); margin: .25rem 0 0; font-weight: 600; }
.field-error:empty { display: none; }
[aria-invalid="true"] { border-color: var(--danger) !important; box-shadow: 0 0 0 1px var(--danger); }
`

/** A small mark for the tab icon and the header. */
export const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1d4ed8"/><path d="M8 22V10h4v12zm6 0V6h4v16zm6 0v-8h4v8z" fill="#fff"/></svg>`
