// The API reference page: static HTML plus a small script that renders /api/v1/openapi.json.
// Served by the binary itself, so offline operators need no CDN.
export const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc leader API</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fff}
header{background:#14213d;color:#fff;padding:1rem 2rem}main{padding:1rem 2rem;max-width:70rem}
.op{border:1px solid #d0d7de;border-radius:6px;margin:.5rem 0}
.op summary{cursor:pointer;padding:.5rem .75rem;display:flex;gap:.75rem;align-items:center}
.op summary:focus-visible{outline:3px solid #0b62d6}
.m{font-weight:700;min-width:4.5rem;font-family:ui-monospace,monospace}
.p{font-family:ui-monospace,monospace}.cls{margin-left:auto;font-size:.8rem;background:#eef;padding:.1rem .5rem;border-radius:1rem}
pre{background:#f6f8fa;padding:.75rem;overflow:auto;margin:0 .75rem .75rem}
input{font:inherit;padding:.4rem;width:100%;max-width:30rem}
</style></head>
<body><header><h1>svc leader API</h1><p>Generated from the routes' schemas. Policy classes: public, page, node, chat, session, operator, admin.</p></header>
<main><label for="filter">Filter routes</label><br><input id="filter" type="search" placeholder="/api/v1/pools"><div id="ops" aria-live="polite">Loading…</div></main>
<script src="/api/v1/docs/docs.js"></script></body></html>`

export const DOCS_JS = `(async () => {
  const box = document.getElementById('ops')
  const doc = await (await fetch('/api/v1/openapi.json')).json()
  const text = (tag, content, cls) => { const e = document.createElement(tag); e.textContent = content; if (cls) e.className = cls; return e }
  const ops = []
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) ops.push({ path, method, op })
  ops.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))
  const render = (q) => {
    box.replaceChildren()
    for (const { path, method, op } of ops) {
      if (q && !path.includes(q)) continue
      const d = document.createElement('details'); d.className = 'op'
      const s = document.createElement('summary')
      s.append(text('span', method.toUpperCase(), 'm'), text('span', path, 'p'), text('span', op['x-policy'] || 'admin', 'cls'))
      d.append(s)
      const body = op.requestBody && op.requestBody.content
      if (body) d.append(text('pre', 'Request: ' + JSON.stringify(Object.values(body)[0].schema, null, 2)))
      if (op.parameters && op.parameters.length) d.append(text('pre', 'Parameters: ' + JSON.stringify(op.parameters, null, 2)))
      if (op.responses) d.append(text('pre', 'Responses: ' + JSON.stringify(op.responses, null, 2)))
      box.append(d)
    }
  }
  render('')
  document.getElementById('filter').addEventListener('input', (e) => render(e.target.value))
})()`
