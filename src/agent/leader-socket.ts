// A WebSocket to the leader with the node token (the relay and inference channels): open within
// OPEN_TIMEOUT_MS or count as unavailable, so the caller falls back to HTTP.
const OPEN_TIMEOUT_MS = 5000

export interface LeaderSocket {
  ws: WebSocket
  /** True once open; false when it closed (or timed out) before. */
  opened: Promise<boolean>
  /** Resolves once it has closed, after onClose ran. */
  closed: Promise<void>
}

export function openLeaderSocket(
  url: string,
  token: string | null,
  on: { binary?: boolean; message: (data: unknown) => void; close: (ev: CloseEvent, wasOpen: boolean) => void },
): LeaderSocket {
  const ws = new WebSocket(url, { headers: token ? { authorization: `Bearer ${token}` } : {} } as unknown as string[])
  if (on.binary) ws.binaryType = 'arraybuffer'
  let closed!: () => void
  const whenClosed = new Promise<void>((resolve) => (closed = resolve))
  const opened = new Promise<boolean>((resolve) => {
    let wasOpen = false
    const timer = setTimeout(() => {
      if (!wasOpen) ws.close()
    }, OPEN_TIMEOUT_MS)
    ws.onopen = () => {
      wasOpen = true
      clearTimeout(timer)
      resolve(true)
    }
    ws.onmessage = (ev) => on.message(ev.data)
    ws.onclose = (ev) => {
      clearTimeout(timer)
      on.close(ev, wasOpen)
      closed()
      resolve(false)
    }
  })
  return { ws, opened, closed: whenClosed }
}
