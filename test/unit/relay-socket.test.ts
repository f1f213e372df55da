// The agent's relay socket says so when the leader or the network closes it, and not when the
// agent closed it itself because its stage ended (every finished job used to log a warning).
import { afterAll, expect, test } from 'bun:test'
import { RelaySocketClient } from '../../src/agent/relay-socket'
import { createLogger } from '../../src/log'

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: (req, srv) => (srv.upgrade(req) ? undefined : new Response('no', { status: 400 })),
  websocket: {
    // Any push: the leader goes away instead of answering it.
    message: (ws) => ws.close(1011, 'the leader is going away'),
  },
})
afterAll(() => server.stop(true))

function client() {
  const lines: Record<string, unknown>[] = []
  const socket = new RelaySocketClient({
    url: `ws://127.0.0.1:${server.port}/relay`,
    token: () => null,
    deliver: () => {},
    log: createLogger('info', (l) => lines.push(JSON.parse(l))),
    jobId: 'job-1',
  })
  return { socket, warnings: () => lines.filter((l) => l.msg === 'relay socket closed') }
}

test('closed by the agent at the end of its stage: nothing logged', async () => {
  const { socket, warnings } = client()
  expect(await socket.open()).toBe(true)
  const closed = socket.closed()
  socket.close()
  await closed
  expect(warnings()).toEqual([])
})

test('closed by the other side: a warning with the code and reason', async () => {
  const { socket, warnings } = client()
  expect(await socket.open()).toBe(true)
  const closed = socket.closed()
  expect(await socket.push('activations', new Uint8Array([1, 2, 3]))).toBeNull()
  await closed
  expect(warnings()).toEqual([expect.objectContaining({ level: 'warn', job_id: 'job-1', code: 1011, reason: 'the leader is going away' })])
})
