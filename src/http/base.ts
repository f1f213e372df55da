// The plugin every feature's routes are built on: the policy macro and derive, and body parsing.
// Elysia de-duplicates named plugins, so using it in each feature registers it once.
import { Elysia } from 'elysia'
import { policyPlugin, type PolicyDeps } from './policy'
import { bodyPlugin } from './body'

export function createBase(deps: PolicyDeps) {
  return new Elysia({ name: 'base' })
    .use(bodyPlugin(deps.cfg.maxBodyBytes, deps.cfg.relayMaxFrameBytes + 1024 * 1024, deps.index))
    .use(policyPlugin(deps))
}

export type AppBase = ReturnType<typeof createBase>
