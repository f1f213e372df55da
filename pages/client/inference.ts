// inference.js: a chat box on POST /api/v1/chat/completions with stream: true (Server-Sent Events).
import type {} from './types'

export function inferenceClient(): void {
  const svc = window.svc
  const el = svc.el
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const log = $('chat-log') as HTMLElement
  const form = $('chat-form') as HTMLFormElement
  const prompt = $('chat-prompt') as HTMLTextAreaElement
  const send = $('chat-send') as HTMLButtonElement
  const stop = $('chat-stop') as HTMLButtonElement
  const messages: { role: string; content: string }[] = []
  /** Counts the conversations: "Clear" starts a new one. */
  let conversation = 0
  let abort: AbortController | null = null

  /**
   * The models the caller may use (GET /api/v1/models): the ones an online machine serves first and
   * selectable; the rest listed but disabled, since a request for them fails at once.
   */
  async function loadModels() {
    const r = await svc.api('GET', '/api/v1/models')
    const select = $('chat-model') as HTMLSelectElement
    const hint = $('model-hint')
    if (!r.ok) {
      svc.render(select, { e: r.status }, () => [el('option', { value: '', text: t('chat.noList') })])
      if (hint) hint.textContent = t('common.loadFailed', { error: r.error ?? '' })
      return
    }
    const all = ((r.data?.data ?? []) as any[]).map((m) => ({ id: String(m.id), fellows: Number(m.fellows) || 0 }))
    const served = all.filter((m) => m.fellows > 0)
    const idle = all.filter((m) => m.fellows === 0)
    const chosen = select.value
    svc.render(select, all, () =>
      all.length
        ? [
            ...served.map((m) => el('option', { value: m.id, selected: m.id === chosen, text: t('chat.modelServed', { name: m.id, n: m.fellows }) })),
            ...idle.map((m) => el('option', { value: m.id, disabled: true, text: t('chat.modelIdle', { name: m.id }) })),
          ]
        : [el('option', { value: '', text: t('chat.noModels') })],
    )
    svc.render(hint, [served.length, all.length], () => [served.length ? t('chat.usable', { n: served.length }) : all.length ? t('chat.noneServed') : t('chat.noModelsHint')])
  }

  /** Which machines serve which model, with their load (requests held / taken at once). */
  async function loadServing() {
    const body = $('serving-body')
    const r = await svc.api('GET', '/api/v1/inference/serving')
    const row = (key: string, cells: (string | Node)[]) => el('tr', { 'data-key': key }, ...cells.map((c) => el('td', {}, c)))
    if (!r.ok) return svc.render(body, { s: r.status }, () => [el('tr', {}, el('td', { colspan: '3', class: 'empty', text: r.error ?? t('common.noData') }))])
    const items = (r.data?.items ?? []) as { model: string; fellows: { id: string; hostname: string; capacity: number; in_flight: number }[] }[]
    // Updated in place: a rebuilt table took the keyboard focus off whatever was focused in it.
    svc.update(body, items, () =>
      items.length
        ? items.flatMap((m) => m.fellows.map((f) => row(m.model + ' ' + f.id, [m.model, f.hostname, t('chat.load', { n: f.in_flight, capacity: f.capacity })])))
        : [el('tr', {}, el('td', { colspan: '3', class: 'empty', text: t('chat.nobodyServes') }))],
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
    // Terminal colour codes are left out of what is shown; one cut between two deltas waits for
    // the rest of it in `partial`.
    let partial = ''
    const shown = (delta: string) => {
      const s = partial + delta
      const cut = /\x1b(?:\[[0-?]*[ -/]*)?$/.exec(s)
      partial = cut ? cut[0] : ''
      return svc.withoutAnsi(cut ? s.slice(0, cut.index) : s)
    }
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
          if (chunk.error) throw new Error(typeof chunk.error.message === 'string' ? svc.fromServer(chunk.error.message) : t('chat.modelError'))
          const delta = chunk.choices?.[0]?.delta?.content ?? chunk.choices?.[0]?.message?.content ?? ''
          if (delta === '') continue
          // Only the new words are added (the "…" goes at the first): setting the whole answer at
          // every token had the log (a live region) hand a screen reader all of it again each time.
          if (text === '') out.textContent = ''
          text += delta
          out.append(shown(delta))
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
      let detail = t('common.httpFailed', { status: String(res.status) })
      try {
        // The chat API answers errors in OpenAI's shape: {error: {message, ...}}. Its English is
        // noted (this fetch is not api()'s), so a German page marks it lang="en".
        const j = await res.json()
        const said = j.error?.message ?? j.detail
        if (typeof said === 'string') detail = svc.fromServer(said)
      } catch {
        // not JSON: keep the generic sentence
      }
      if (!token && (res.status === 401 || res.status === 403)) detail += ' ' + t('chat.pasteToken')
      throw new Error(detail)
    }
    const out = bubble(t('chat.assistant'), '…')
    // Busy while the answer comes in: a screen reader reads it once, whole, when it is complete.
    log.setAttribute('aria-busy', 'true')
    try {
      if ((res.headers.get('content-type') ?? '').includes('application/json')) {
        const data = await res.json()
        const text = data.choices?.[0]?.message?.content ?? ''
        out.textContent = svc.withoutAnsi(text)
        return text
      }
      return await readStream(res, out)
    } catch (e) {
      // Failed midway: the question goes back into the box (below), and its answer leaves the log
      // with it (it stayed, an answer to nothing). Stopped by its asker, both stay.
      if (!(e instanceof Error && e.name === 'AbortError')) out.parentElement?.remove()
      throw e
    } finally {
      log.removeAttribute('aria-busy')
    }
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const f = svc.formJson(form)
    const content = String(f.prompt)
    if (!content) return
    // Tied to the model list it is about, which gets the focus (it was said under the form only).
    if (!f.model) return svc.formError('chat-msg', ['chat-model'], t('chat.chooseModel'))
    messages.push({ role: 'user', content })
    const asked = bubble(t('chat.you'), content).parentElement
    const mine = conversation
    prompt.value = ''
    // Send goes off while the answer comes: a focus on it (the question sent with its button) goes
    // to Stop, the one thing to do meanwhile (it fell to the page).
    const fromSend = document.activeElement === send
    send.disabled = true
    stop.disabled = false
    if (fromSend) stop.focus()
    svc.say('chat-msg', t('chat.waiting'))
    ask(String(f.model), String(f.token ?? ''))
      .then((answer) => {
        // A conversation cleared meanwhile does not get an answer to a question it no longer has.
        if (mine === conversation) messages.push({ role: 'assistant', content: answer })
        svc.say('chat-msg', '')
      })
      .catch((err: Error) => {
        if (mine !== conversation) return // cleared: the log says so already
        messages.pop()
        if (err.name !== 'AbortError') {
          // Refused or failed: the question was not asked. It leaves the log and goes back into the
          // box, to be sent again (it was lost, and its bubble stayed without its turn).
          asked?.remove()
          if (prompt.value === '') prompt.value = content
        }
        svc.say('chat-msg', err.name === 'AbortError' ? t('chat.stopped') : err.message, err.name === 'AbortError' ? '' : 'error')
        void loadModels()
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
    conversation++
    abort?.abort()
    messages.length = 0
    log.replaceChildren(el('p', { class: 'empty', text: t('chat.noMessages') }))
    svc.say('chat-msg', t('chat.cleared'))
  })

  svc.poll(loadModels, 5000)
  svc.poll(loadServing, 5000)
}
