// pool-upload.js: upload a file from this computer into the pool's files, the way `svc artifacts
// upload` does: hash it slice by slice (sha256.js; the leader checks the bytes against it), open a
// resumable upload, send the bytes with a progress bar, and when the connection breaks, the leader
// restarts or another request was writing, ask where the upload stands and send the rest.
import type {} from './types'

export function poolUploadClient(): void {
  const svc = window.svc
  const t = svc.t
  const $ = (id: string) => document.getElementById(id)
  const form = $('upload-form') as HTMLFormElement | null
  if (!form) return
  const fileInput = $('upload-file-input') as HTMLInputElement
  const nameInput = $('upload-name-input') as HTMLInputElement
  const kindInput = $('upload-kind-input') as HTMLSelectElement
  const button = $('upload-button') as HTMLButtonElement
  const cancel = $('upload-cancel') as HTMLButtonElement
  const bar = $('upload-progress') as HTMLProgressElement
  const poolId = svc.data('pool-id')
  const SLICE = 8 << 20
  const ATTEMPTS = 5
  // As the leader refuses them (src/wire/schema.ts): control characters and text-direction overrides.
  const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/

  let running = false
  let cancelled = false
  let xhr: XMLHttpRequest | null = null

  /** The phase and quarter the message last said. */
  let said = ''
  function show(done: number, total: number, label: string) {
    bar.hidden = false
    bar.max = Math.max(total, 1)
    bar.value = total === 0 ? 1 : done
    const pct = total === 0 ? 100 : Math.floor((done / total) * 100)
    const text = t(label, { pct, done: svc.fmtBytes(done), total: svc.fmtBytes(total) })
    bar.setAttribute('aria-valuetext', text)
    // The message is a live region: it speaks at a new phase and at every quarter, not at every
    // 8 MiB hashed and every progress event (a screen reader was kept talking); the bar has the rest.
    const step = label + ' ' + Math.floor(pct / 25)
    if (step === said) return
    said = step
    svc.say('upload-msg', text)
  }

  async function hash(file: File): Promise<string> {
    const h = window.svcSha256()
    for (let at = 0; at < file.size; at += SLICE) {
      if (cancelled) throw new Error('cancelled')
      h.update(new Uint8Array(await file.slice(at, at + SLICE).arrayBuffer()))
      show(Math.min(at + SLICE, file.size), file.size, 'upload.hashing')
    }
    return h.hex()
  }

  interface Sent {
    status: number
    body: any
  }

  /** PUT the file from `offset` on; status 0 when the connection broke or was cancelled. */
  function send(file: File, uploadId: string, offset: number): Promise<Sent> {
    return new Promise((resolve) => {
      const x = new XMLHttpRequest()
      xhr = x
      x.open('PUT', `/api/v1/artifacts/uploads/${encodeURIComponent(uploadId)}?offset=${offset}`)
      x.setRequestHeader('content-type', 'application/octet-stream')
      x.setRequestHeader('accept', 'application/json')
      x.setRequestHeader('x-csrf-token', svc.csrf())
      x.responseType = 'text'
      x.upload.onprogress = (e) => show(offset + e.loaded, file.size, 'upload.sending')
      x.onload = () => {
        let body: any = null
        try {
          body = JSON.parse(x.responseText)
        } catch {
          body = null
        }
        resolve({ status: x.status, body })
      }
      x.onerror = x.onabort = x.ontimeout = () => resolve({ status: 0, body: null })
      x.send(file.slice(offset))
    })
  }

  async function upload(file: File, kind: string, name: string): Promise<void> {
    const sha256 = await hash(file)
    const begun = await svc.api('POST', '/api/v1/artifacts/uploads', { kind, name, size_bytes: file.size, sha256, pool_id: poolId })
    if (!begun.ok) throw new Error(begun.error ?? '')
    const uploadId = String(begun.data.upload_id)
    let offset = Number(begun.data.offset)
    for (let attempt = 1; ; ) {
      if (cancelled) throw new Error('cancelled')
      const r = await send(file, uploadId, offset)
      if (r.status === 201) {
        svc.say('upload-msg', t('upload.done', { name, size: svc.fmtBytes(file.size) }), 'ok')
        // The button that started it was disabled and the form reset: focus goes to what happened.
        const done = $('upload-msg')
        if (done) {
          done.tabIndex = -1
          done.focus()
        }
        document.dispatchEvent(new CustomEvent('svc:files-changed'))
        return
      }
      if (r.status === 200 && typeof r.body?.offset === 'number') {
        offset = r.body.offset
        continue
      }
      if (cancelled) throw new Error('cancelled')
      // A broken connection, a restarted leader, a store that did not answer, another writer: ask
      // where the upload stands and send the rest. A wrong hash or a full quota ends it.
      const code = r.body?.code
      // 502/504: a proxy in front of the leader while it restarts (an HTML page, no code).
      const resumable = r.status === 0 || r.status === 502 || r.status === 504 || code === 'conflict' || code === 'service_unavailable' || code === 'insufficient_storage'
      if (code === 'checksum_mismatch') throw new Error(t('upload.changed'))
      if (!resumable) throw new Error(typeof r.body?.detail === 'string' ? svc.fromServer(r.body.detail) : t('common.httpFailed', { status: String(r.status) }))
      if (attempt++ >= ATTEMPTS) throw new Error(t('upload.gaveUp', { n: ATTEMPTS }))
      svc.say('upload-msg', t('upload.resuming'))
      said = ''
      await new Promise((ok) => setTimeout(ok, 500 * attempt))
      const state = await svc.api('GET', `/api/v1/artifacts/uploads/${encodeURIComponent(uploadId)}`)
      if (state.ok) offset = Number(state.data.offset)
      else if (state.status !== 0) throw new Error(state.error ?? '')
    }
  }

  // Leaving the page mid-upload loses the upload; the browser asks first.
  const stay = (e: BeforeUnloadEvent) => {
    if (!running) return
    e.preventDefault()
    e.returnValue = ''
  }
  window.addEventListener('beforeunload', stay)

  cancel.addEventListener('click', () => {
    cancelled = true
    xhr?.abort()
  })

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    if (running) return
    const file = fileInput.files?.[0]
    const name = nameInput.value.trim() || file?.name || ''
    const ok = [
      svc.fieldError(fileInput.id, file ? '' : t('upload.noFile')),
      svc.fieldError(nameInput.id, name.length > 200 ? t('upload.nameLong') : name.includes('/') || CONTROL.test(name) ? t('upload.nameBad') : ''),
    ].every(Boolean)
    if (!ok || !file) {
      svc.say('upload-msg', t('submit.fix'), 'error')
      ;(form.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus()
      return
    }
    running = true
    cancelled = false
    said = ''
    // Upload goes off and Cancel comes while it runs: a focus on Upload goes to Cancel, and one on
    // Cancel when it goes away to what happened (each fell to the page).
    const fromButton = document.activeElement === button
    button.disabled = true
    cancel.hidden = false
    if (fromButton) cancel.focus()
    void upload(file, kindInput.value, name)
      .then(() => form.reset())
      .catch((err: Error) => svc.say('upload-msg', cancelled ? t('upload.cancelled') : err.message, 'error'))
      .finally(() => {
        running = false
        xhr = null
        button.disabled = false
        const onCancel = document.activeElement === cancel
        cancel.hidden = true
        bar.hidden = true
        if (onCancel) svc.focus('upload-msg')
      })
  })
}
