// What both relay load clients (HTTP: relay.ts, WebSocket: relay-ws.ts) are told to do, as JSON in
// BENCH_RELAY (bench/scenarios/relay.ts writes it).
export interface RelaySpec {
  url: string
  kind: 'leader' | 'floor'
  jobId: string
  pushToken: string
  popToken: string
  frameBytes: number
  pushers: number
  poppers: number
  warmupSeconds: number
  seconds: number
}

export const relaySpec = (): RelaySpec => JSON.parse(process.env.BENCH_RELAY!) as RelaySpec
