// inference.js: a chat box on POST /api/v1/chat/completions with stream: true (Server-Sent Events).
import type {} from './types'

export function inferenceClient(): void {
  const svc = window.svc
  const el = svc.el
  const $ = (id: string) => document.getElementById(id)
  const log = $('chat-log') as HTMLElement
  const form = $('chat-form') as HTMLFormElement
  const prompt = $('chat-prompt') as HTMLTextAreaElement
  const send = $('chat-send') as HTMLButtonElement
  const stop = $('chat-stop') as HTMLButtonElement
  const messages: { role: string; content: string }[] = []
  let abort: AbortController | null = null

  async function loadModels() {
    // The OpenAI-style list names what live fellows serve; the servable catalog is the fallback.
    const models = await svc.api('GET', '/api/v1/models')
    const r = models.ok ? models : await svc.api('GET', '/api/v1/servables')
    const hint = $('model-hint')
    if (!r.ok) {
      if (hint) hint.textContent = 'The model list is not available yet; type a model name.'
      return
    }
    const list = (models.ok ? (r.data?.data ?? []).map((m: any) => m.id) : (r.data?.items ?? []).map((m: any) => m.name)) as unknown[]
    const names = Array.from(new Set(list.map(String)))
    svc.render($('model-list'), names, () => names.map((n) => el('option', { value: n })))
    const input = $('chat-model') as HTMLInputElement
    if (!input.value && names[0]) input.value = names[0]
    if (hint) hint.textContent = names.length ? `Models you can use: ${names.join(', ')}.` : 'No models yet: train one in a pool first, or type a model name.'
  }

  /** Which machines serve which model, with their load (requests held / taken at once). */
  async function loadServing() {
    const body = $('serving-body')
    const r = await svc.api('GET', '/api/v1/inference/serving')
    const row = (cells: (string | Node)[]) => el('tr', {}, ...cells.map((c) => el('td', {}, c)))
    if (!r.ok) return svc.render(body, { s: r.status }, () => [el('tr', {}, el('td', { colspan: '3', class: 'empty', text: r.error ?? 'Not available.' }))])
    const items = (r.data?.items ?? []) as { model: string; fellows: { id: string; hostname: string; capacity: number; in_flight: number }[] }[]
    svc.render(body, items, () =>
      items.length
        ? items.flatMap((m) => m.fellows.map((f) => row([m.model, f.hostname, `${f.in_flight} of ${f.capacity}`])))
        : [el('tr', {}, el('td', { colspan: '3', class: 'empty', text: 'No machine of your pools serves a model right now.' }))],
    )
  }

  const bubble = (who: string, text: string) => {
    if (log.querySelector('.empty')) log.replaceChildren()
    const body = el('span', { text })
    const p = el('p', { class: 'msg' }, el('b', { text: who }), body)
    log.append(p)
    log.scrollTop = log.scrollHeight
    return body
  }

  async function readStream(res: Response, out: HTMLElement): Promise<string> {
    let text = ''
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let buf = ''
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buf += decoder.decode(value, { stream: true })
      let nl: number
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl).trim()
        buf = buf.slice(nl + 1)
        if (!line.startsWith('data:')) continue
        const payload = line.slice(5).trim()
        if (payload === '[DONE]') return text
        try {
          const chunk = JSON.parse(payload)
          if (chunk.error) throw new Error(chunk.error.message ?? 'The model reported an error.')
          const delta = chunk.choices?.[0]?.delta?.content ?? chunk.choices?.[0]?.message?.content ?? ''
          text += delta
          out.textContent = text
          log.scrollTop = log.scrollHeight
        } catch (e) {
          if (e instanceof SyntaxError) continue
          throw e
        }
      }
    }
    return text
  }

  async function ask(model: string, token: string) {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' }
    if (token) headers.authorization = 'Bearer ' + token
    else headers['x-csrf-token'] = (/(?:^|;\s*)svc_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? '')
    abort = new AbortController()
    const res = await fetch('/api/v1/chat/completions', {
      method: 'POST',
      headers,
      credentials: 'same-origin',
      signal: abort.signal,
      body: JSON.stringify({ model, messages, stream: true }),
    })
    if (!res.ok) {
      let detail = `The request failed (HTTP ${res.status}).`
      try {
        // The chat API answers errors in OpenAI's shape: {error: {message, ...}}.
        const j = await res.json()
        detail = j.error?.message ?? j.detail ?? detail
      } catch {
        // not JSON: keep the generic sentence
      }
      if (!token && (res.status === 401 || res.status === 403)) detail += ' Paste a personal API token under "Use a personal API token".'
      throw new Error(detail)
    }
    const out = bubble('Assistant', '…')
    if ((res.headers.get('content-type') ?? '').includes('application/json')) {
      const data = await res.json()
      const text = data.choices?.[0]?.message?.content ?? ''
      out.textContent = text
      return text
    }
    return readStream(res, out)
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const f = svc.formJson(form)
    const content = String(f.prompt)
    if (!content) return
    messages.push({ role: 'user', content })
    bubble('You', content)
    prompt.value = ''
    send.disabled = true
    stop.disabled = false
    svc.say('chat-msg', 'Waiting for the model…')
    ask(String(f.model), String(f.token ?? ''))
      .then((answer) => {
        messages.push({ role: 'assistant', content: answer })
        svc.say('chat-msg', '')
      })
      .catch((err: Error) => {
        messages.pop()
        svc.say('chat-msg', err.name === 'AbortError' ? 'Stopped.' : err.message, err.name === 'AbortError' ? '' : 'error')
      })
      .finally(() => {
        send.disabled = false
        stop.disabled = true
        abort = null
        prompt.focus()
      })
  })

  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) form.requestSubmit()
  })
  stop.addEventListener('click', () => abort?.abort())
  $('chat-clear')?.addEventListener('click', () => {
    messages.length = 0
    log.replaceChildren(el('p', { class: 'empty', text: 'No messages yet.' }))
    svc.say('chat-msg', 'Conversation cleared.')
  })

  void loadModels()
  svc.poll(loadServing, 5000)
}
