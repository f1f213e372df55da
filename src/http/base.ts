// The plugin every feature's routes are built on: the policy macro and derive, and body parsing.
// Elysia de-duplicates named plugins, so using it in each feature registers it once.
import { Elysia } from 'elysia'
import { policyPlugin, requestGate, type PolicyDeps, type RequestGate } from './policy'
import { bodyPlugin, BodyBudget } from './body'

/** `gate`: the app's request gate, when something besides the routes (src/http/native.ts) uses it too. */
export function createBase(deps: PolicyDeps, budget = new BodyBudget(deps.cfg.maxInflightBodyBytes), gate: RequestGate = requestGate(deps)) {
  const limits = {
    maxJsonBytes: deps.cfg.maxBodyBytes,
    maxBinaryBytes: deps.cfg.relayMaxFrameBytes + 1024 * 1024,
    // The one streamed body is an artifact upload (its route checks its own, smaller, remainder).
    maxStreamBytes: deps.cfg.artifactMaxBytes,
    budget,
    timeoutMs: deps.cfg.bodyTimeoutS * 1000,
    copyIdleS: deps.cfg.uploadIdleTimeoutS,
  }
  return new Elysia({ name: 'base' }).use(bodyPlugin(limits, deps.index, gate)).use(policyPlugin(gate))
}

export type AppBase = ReturnType<typeof createBase>
