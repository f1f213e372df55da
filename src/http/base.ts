// The plugin every feature's routes are built on: the policy macro and derive, and body parsing.
// The app uses it once (src/app.ts); a feature adds its routes to an app typed as AppBase, so its
// routes' policy options and the caller they get are checked against it.
import { Elysia } from 'elysia'
import { policyPlugin, requestGate, type PolicyDeps, type RequestGate } from './policy'
import { bodyPlugin, BodyBudget, type BodyLimits } from './body'
import type { Config } from '../config'

/** The body limits of every route; Bun's router reads a data route's body with the same (src/http/native.ts). */
export function bodyLimits(cfg: Config, budget = new BodyBudget(cfg.maxInflightBodyBytes)): BodyLimits {
  return {
    maxJsonBytes: cfg.maxBodyBytes,
    maxBinaryBytes: cfg.relayMaxFrameBytes + 1024 * 1024,
    // The one streamed body is an artifact upload (its route checks its own, smaller, remainder).
    maxStreamBytes: cfg.artifactMaxBytes,
    budget,
    timeoutMs: cfg.bodyTimeoutS * 1000,
    copyIdleS: cfg.uploadIdleTimeoutS,
  }
}

/** `gate`, `limits`: the app's own, when something besides the routes (src/http/native.ts) uses them too. */
export function createBase(deps: PolicyDeps, limits: BodyLimits = bodyLimits(deps.cfg), gate: RequestGate = requestGate(deps)) {
  return new Elysia({ name: 'base' }).use(bodyPlugin(limits, deps.index, gate)).use(policyPlugin(gate))
}

export type AppBase = ReturnType<typeof createBase>
