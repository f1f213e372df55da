// svc chat's own limits, against a leader played by a local server: a streamed answer is cut only
// by silence (no byte for the idle limit), and when it is, the CLI says it was its own limit.
import { afterEach, describe, expect, test } from 'bun:test'
import { chat } from '../../src/cli/remote/chat'

const servers: ReturnType<typeof Bun.serve>[] = []
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true)
})

const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`

/** A leader whose chat answer is written by `write` (each piece after `gapMs`), then ends as `end` says. */
function leader(pieces: string[], gapMs: number, end: 'done' | 'silent') {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: () => {
      const enc = new TextEncoder()
      const body = new ReadableStream<Uint8Array>({
        async start(ctl) {
          for (const p of pieces) {
            await Bun.sleep(gapMs)
            ctl.enqueue(enc.encode(p))
          }
          if (end === 'done') {
            ctl.enqueue(enc.encode('data: [DONE]\n\n'))
            ctl.close()
          }
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    },
  })
  servers.push(server)
  return `http://127.0.0.1:${server.port}`
}

const run = (url: string, limits: { idleMs: number; wholeMs: number }) =>
  chat({ args: { MODEL: 'm', PROMPT: 'hi' }, flags: { leader: url, token: 'svc_tok_test', quiet: true }, usage: '' }, limits)

describe('svc chat waiting for an answer', () => {
  test('goes on as long as bytes come, tokens or keep-alives, past what a total limit allowed (it gave up at 10 min while tokens still came)', async () => {
    // 12 pieces 40 ms apart: 480 ms in all, four times the idle limit, never 120 ms without a byte.
    const pieces = Array.from({ length: 12 }, (_, i) => (i % 3 === 2 ? ': keep-alive\n\n' : chunk(`w${i} `)))
    expect(await run(leader(pieces, 40, 'done'), { idleMs: 120, wholeMs: 120 })).toBe(0)
  })

  test('gives up after the idle limit without a byte, and says it was its own limit, not the leader closing the stream', async () => {
    const url = leader([chunk('partial ')], 10, 'silent')
    await expect(run(url, { idleMs: 150, wholeMs: 150 })).rejects.toThrow(
      "svc chat gave up: nothing came from the leader for 0.15 s (svc chat's own limit; a leader sends a keep-alive every 15 s while an answer is under way, so the connection is likely dead)",
    )
  })
})
