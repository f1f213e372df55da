// What a START or RECONFIGURE signal tells a fellow about its part of a job, checked once on
// arrival: a bad payload must fail the job with a reason at START, not as NaN losses later.
import { decodeP2PKey } from './p2p-auth'
import type { Peer, TransportMode } from './transport'
export { parseTrainConfig, type TrainConfig } from '../wire/mlp-config'

export interface StageAssignment {
  stage: number
  stages: number
  prev: Peer | null
  next: Peer | null
  transport: TransportMode
  relayUrl: string
  config: Record<string, unknown>
  resume: boolean
  /** The job's p2p key; null from a leader that sends none (then no p2p: auto uses the relay). */
  p2pKey?: Buffer | null
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function peer(v: unknown, name: string): Peer | null {
  if (v === null || v === undefined) return null
  if (!isObj(v) || typeof v.fellow_id !== 'string') throw new Error(`${name} must be {fellow_id, address} or null`)
  return { fellow_id: v.fellow_id, address: typeof v.address === 'string' ? v.address : null }
}

export function parseAssignment(payload: unknown): StageAssignment {
  if (!isObj(payload)) throw new Error('payload missing')
  const { stage, stages } = payload
  if (!Number.isInteger(stages) || (stages as number) < 1) throw new Error('stages must be an integer >= 1')
  if (!Number.isInteger(stage) || (stage as number) < 0 || (stage as number) >= (stages as number)) throw new Error('stage out of range')
  const transport = payload.transport ?? 'tunnel'
  if (transport !== 'p2p' && transport !== 'tunnel' && transport !== 'auto') throw new Error(`unknown transport ${JSON.stringify(transport)}`)
  if (typeof payload.relay_url !== 'string') throw new Error('relay_url missing')
  const p2pKey = decodeP2PKey(payload.p2p_key)
  if (payload.p2p_key !== undefined && !p2pKey) throw new Error('p2p_key must be 32 bytes in base64url')
  if (transport === 'p2p' && !p2pKey) throw new Error('transport p2p needs a p2p_key, which this leader did not send: upgrade the leader or use SVC_PIPELINE_TRANSPORT=tunnel')
  return {
    stage: stage as number,
    stages: stages as number,
    prev: peer(payload.prev, 'prev'),
    next: peer(payload.next, 'next'),
    transport,
    relayUrl: payload.relay_url,
    config: isObj(payload.config) ? payload.config : {},
    resume: payload.resume === true,
    p2pKey,
  }
}
