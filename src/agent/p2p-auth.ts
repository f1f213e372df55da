// The handshake that opens every p2p stream (issue 26, item 10: the listeners took frames from
// anyone who could reach the port, and six strangers grew an agent from 50 to 432 MiB). The
// listener speaks first with a fresh nonce; the connecting peer answers with the job it sends
// for, the stage it means to reach and HMAC(job key, job | channel | stage | nonce). The job key
// comes from the leader in START (p2p_key), only to that job's fellows. The listener checks the
// MAC in constant time against the key of the job it runs now and answers one ACK byte; anything
// else closes the socket. A fresh nonce per connection means a recorded handshake is worth
// nothing on replay. Frames are not encrypted: confidentiality is the network's job.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { P2P_KEY_PATTERN } from '../wire/fellow'
import type { Channel } from './p2p'

const SERVER_MAGIC = Buffer.from('svcp2ps1')
const CLIENT_MAGIC = Buffer.from('svcp2pc1')
const NONCE_BYTES = 32
const MAC_BYTES = 32
const MAX_JOB_ID_BYTES = 128
export const SERVER_HELLO_BYTES = SERVER_MAGIC.length + NONCE_BYTES
/** The most a listener reads from a peer before it is authenticated. */
export const MAX_CLIENT_HELLO_BYTES = CLIENT_MAGIC.length + 1 + MAX_JOB_ID_BYTES + 2 + MAC_BYTES
export const ACK = 0x01
export const P2P_KEY_BYTES = 32
const KEY_RE = new RegExp(P2P_KEY_PATTERN)

/** The START payload's p2p_key (base64url of 32 bytes) as bytes; null when absent or malformed. */
export function decodeP2PKey(v: unknown): Buffer | null {
  if (typeof v !== 'string' || !KEY_RE.test(v)) return null
  const key = Buffer.from(v, 'base64url')
  return key.length === P2P_KEY_BYTES ? key : null
}

function mac(key: Uint8Array, jobId: string, channel: Channel, stage: number, nonce: Uint8Array): Buffer {
  return createHmac('sha256', key).update(`svc p2p v1\n${jobId}\n${channel}\n${stage}\n`).update(nonce).digest()
}

export function serverHello(): { bytes: Buffer; nonce: Buffer } {
  const nonce = randomBytes(NONCE_BYTES)
  return { bytes: Buffer.concat([SERVER_MAGIC, nonce]), nonce }
}

/** The nonce of a listener's hello; null when the bytes are not one. */
export function readServerHello(bytes: Uint8Array): Buffer | null {
  if (bytes.byteLength !== SERVER_HELLO_BYTES || !SERVER_MAGIC.equals(bytes.subarray(0, SERVER_MAGIC.length))) return null
  return Buffer.from(bytes.subarray(SERVER_MAGIC.length))
}

export interface PeerAuth {
  jobId: string
  key: Uint8Array
}

/** The connecting peer's answer: it knows the job's key and names the stage it wants to reach. */
export function clientHello(auth: PeerAuth, channel: Channel, stage: number, nonce: Uint8Array): Buffer {
  const job = Buffer.from(auth.jobId)
  if (job.length < 1 || job.length > MAX_JOB_ID_BYTES) throw new Error('job id too long for the p2p handshake')
  const head = Buffer.alloc(CLIENT_MAGIC.length + 1)
  CLIENT_MAGIC.copy(head)
  head[CLIENT_MAGIC.length] = job.length
  const st = Buffer.alloc(2)
  st.writeUInt16BE(stage)
  return Buffer.concat([head, job, st, mac(auth.key, auth.jobId, channel, stage, nonce)])
}

export interface ClientHello {
  jobId: string
  stage: number
  mac: Buffer
  /** Bytes that followed the hello in the same chunk: the first frames. */
  rest: Buffer
}

/**
 * Collects a peer's hello from its first chunks. Never holds more than MAX_CLIENT_HELLO_BYTES,
 * and gives up on the first byte that cannot belong to a hello (a stranger's garbage or an old
 * agent's frames) rather than waiting for more.
 */
export class HelloReader {
  private readonly buf = Buffer.alloc(MAX_CLIENT_HELLO_BYTES)
  private filled = 0

  get buffered(): number {
    return this.filled
  }

  /** The hello once complete; null while more is needed; throws when this is not a hello. */
  push(chunk: Buffer): ClientHello | null {
    const m = CLIENT_MAGIC.length
    let off = 0
    while (off < chunk.length) {
      const need = this.filled < m + 1 ? m + 1 : m + 1 + this.buf[m]! + 2 + MAC_BYTES
      const n = Math.min(need - this.filled, chunk.length - off)
      chunk.copy(this.buf, this.filled, off, off + n)
      this.filled += n
      off += n
      const k = Math.min(this.filled, m)
      if (this.filled - n < m && !CLIENT_MAGIC.subarray(0, k).equals(this.buf.subarray(0, k))) throw new Error('not a p2p hello')
      if (this.filled === m + 1) {
        const len = this.buf[m]!
        if (len < 1 || len > MAX_JOB_ID_BYTES) throw new Error('bad job id length in the p2p hello')
        continue
      }
      if (this.filled === need && need > m + 1) {
        const len = this.buf[m]!
        let jobId: string
        try {
          jobId = new TextDecoder('utf-8', { fatal: true }).decode(this.buf.subarray(m + 1, m + 1 + len))
        } catch {
          throw new Error('job id in the p2p hello is not UTF-8')
        }
        const stage = this.buf.readUInt16BE(m + 1 + len)
        const got = Buffer.from(this.buf.subarray(m + 1 + len + 2, need))
        return { jobId, stage, mac: got, rest: chunk.subarray(off) }
      }
    }
    return null
  }
}

/** True when the hello proves the key of `jobId` for this listener's channel and stage. */
export function helloValid(h: ClientHello, key: Uint8Array, channel: Channel, stage: number, nonce: Uint8Array): boolean {
  const want = mac(key, h.jobId, channel, stage, nonce)
  // Compare the MAC even when the stage differs: the refusal takes the same time either way.
  const same = h.mac.length === want.length && timingSafeEqual(h.mac, want)
  return same && h.stage === stage
}
