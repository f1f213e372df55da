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
.p{font-family:ui-monospace,monospace}.s{color:#424a53}.cls{margin-left:auto;font-size:.8rem;background:#eef;padding:.1rem .5rem;border-radius:1rem}
pre{background:#f6f8fa;padding:.75rem;overflow:auto;margin:0 .75rem .75rem}
input{font:inherit;padding:.4rem;width:100%;max-width:30rem}
</style></head>
<body><header><h1>svc leader API</h1><p>Generated from the routes' schemas. Policy classes: public, page, node, chat, session, operator, admin.</p></header>
<main><label for="filter">Filter operations</label><br><input id="filter" type="search" placeholder="/api/v1/pools"><p id="count" aria-live="polite"></p><div id="ops">Loading…</div></main>
<script src="/api/v1/docs/docs.js"></script></body></html>`

export const DOCS_JS = `(async () => {
  const box = document.getElementById('ops')
  const count = document.getElementById('count')
  const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
  let doc
  try {
    doc = await (await fetch('/api/v1/openapi.json')).json()
  } catch (e) {
    box.textContent = 'The OpenAPI document could not be loaded: ' + e
    return
  }
  const text = (tag, content, cls) => { const e = document.createElement(tag); e.textContent = content; if (cls) e.className = cls; return e }
  // Local $refs ("#/components/...") point into the document itself.
  const deref = (v) => {
    for (let i = 0; v && typeof v === 'object' && typeof v.$ref === 'string' && i < 20; i++) {
      v = v.$ref.slice(2).split('/').reduce((o, k) => (o ? o[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), doc)
    }
    return v
  }
  const security = (op) => {
    const reqs = op.security || doc.security || []
    if (reqs.length === 0) return 'none'
    return reqs.map((r) => Object.keys(r).join(' + ') || 'none').join(' or ')
  }
  const ops = []
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item || {})) if (METHODS.includes(method) && op) ops.push({ path, method, op })
  }
  ops.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))
  const section = (d, title, value) => d.append(text('pre', title + ': ' + (typeof value === 'string' ? value : JSON.stringify(value, null, 2))))
  const render = (q) => {
    box.replaceChildren()
    let shown = 0
    const needle = q.trim().toLowerCase()
    for (const { path, method, op } of ops) {
      const hay = (method + ' ' + path + ' ' + (op.summary || '') + ' ' + (op['x-policy'] || '') + ' ' + (op.tags || []).join(' ')).toLowerCase()
      if (needle && !hay.includes(needle)) continue
      shown++
      const d = document.createElement('details'); d.className = 'op'
      const s = document.createElement('summary')
      s.append(text('span', method.toUpperCase(), 'm'), text('span', path, 'p'))
      if (op.summary) s.append(text('span', op.summary, 's'))
      if (op['x-websocket']) s.append(text('span', 'WebSocket', 'cls'))
      s.append(text('span', op['x-policy'] || 'admin', 'cls'))
      d.append(s)
      section(d, 'Credentials', security(op))
      const params = (op.parameters || []).map(deref).filter(Boolean)
      if (params.length) section(d, 'Parameters', params.map((p) => ({ name: p.name, in: p.in, required: !!p.required, schema: p.schema })))
      const body = deref(op.requestBody)
      if (body && body.content) for (const [type, media] of Object.entries(body.content)) section(d, 'Request body (' + type + ')', (media && media.schema) || {})
      for (const [status, r] of Object.entries(op.responses || {})) {
        const res = deref(r) || {}
        const types = Object.keys(res.content || {})
        section(d, 'Response ' + status, (res.description || '') + (types.length ? ' [' + types.join(', ') + ']' : ''))
      }
      box.append(d)
    }
    count.textContent = shown === ops.length ? ops.length + ' operations' : shown + ' of ' + ops.length + ' operations'
  }
  render('')
  document.getElementById('filter').addEventListener('input', (e) => render(e.target.value))
})()`
