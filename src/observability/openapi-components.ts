// The named schemas of the OpenAPI document: the resources the routes answer with, under the names
// a generated client gives their types (Pool, JobList, ApiToken...). Routes declare their answers
// inline (the TypeBox schemas of each feature's model.ts), so @elysiajs/openapi writes every one
// out in full and generators invent names (PostApiV1PoolsResponse201, InlineObject12). Here each
// name is given to the model's own schema object; openapi.ts then swaps every answer, or part of
// one, that has the same shape for a $ref. A model that changes changes its named schema with it.
//
// Answers only: request bodies stay inline, since the fuzzer of test/e2e/openapi-fuzz.test.ts
// generates them from the document and reads no $ref (test/helpers/schema-arb.ts).
import { unwrapSchema } from '@elysiajs/openapi/openapi'
import type { TSchema } from '@sinclair/typebox'
import * as accounts from '../accounts/model'
import * as admin from '../admin/model'
import * as artifacts from '../artifacts/model'
import * as audit from '../audit/model'
import * as fellows from '../fellows/model'
import * as inference from '../inference/model'
import * as jobs from '../jobs/model'
import * as pools from '../pools/model'
import * as servables from '../servables/model'
import { ContributionShape, PublicStatsShape } from '../stats/model'
import { isObject, tidySchema } from './openapi-schema'

/** Name -> the schema the routes answer with. A name reads as a type in TypeScript, Python, Go and Java. */
const NAMED: Record<string, TSchema> = {
  User: accounts.Me,
  RegisterResult: accounts.RegisterResult,
  LoginResult: accounts.LoginResult,
  AccountStatus: accounts.StatusResult,
  PasswordResetResult: accounts.ResetResult,
  ApiToken: accounts.ApiTokenRecord,
  NewApiToken: accounts.MintedToken,
  ApiTokenList: accounts.ApiTokenList,

  Pool: pools.Pool,
  PoolList: pools.PoolList,
  PoolDeleteResult: pools.DeleteResult,
  PoolLimits: pools.Limits,
  RoleLimits: pools.RoleLimitsList.properties.items.items,
  RoleLimitsList: pools.RoleLimitsList,
  Invite: pools.Invite,
  InviteList: pools.InviteList,
  NewInvite: pools.InviteCreated,
  PoolInvite: pools.PoolInvite,
  PoolInviteList: pools.PoolInviteList,
  JoinRequest: pools.JoinRequest,
  JoinRequestList: pools.JoinRequestList,
  OwnedJoinRequest: pools.OwnedJoinRequestList.properties.items.items,
  OwnedJoinRequestList: pools.OwnedJoinRequestList,
  JoinResult: pools.JoinResult,
  PoolMember: pools.Member,
  PoolMemberList: pools.MemberList,
  PoolTelemetry: fellows.PoolTelemetrySeries,
  PoolTelemetryPoint: fellows.PoolTelemetryPoint,

  AdminUser: admin.AdminUser,
  AdminUserList: admin.UserList,
  PendingCount: admin.PendingCount,
  UserPasswordReset: admin.ResetResult,
  VerificationResent: admin.ResendResult,
  UserDeleteResult: admin.DeleteResult,
  MailStatus: admin.MailState,
  FailedMail: admin.FailedMail,
  TestMailResult: admin.MailTestResult,
  AuditEntry: audit.AuditEntry,
  AuditList: audit.AuditList,

  JoinSession: fellows.JoinSession,
  RegisterResponse: fellows.RegisterResponse,
  HeartbeatResponse: fellows.HeartbeatResponse,
  Signal: fellows.Signal,
  Fellow: fellows.NodeView,
  FellowList: fellows.NodeList,
  Gpu: fellows.Gpu,
  EngineState: fellows.EngineState,
  Device: fellows.DeviceView,
  DeviceList: fellows.DeviceList,
  FellowTelemetry: fellows.FellowTelemetry,
  FellowTelemetryPoint: fellows.TelemetryPoint,

  Job: jobs.Job,
  JobSummary: jobs.JobSummary,
  JobList: jobs.JobList,
  JobAssignment: jobs.Assignment,

  Artifact: artifacts.Artifact,
  ArtifactList: artifacts.ArtifactList,
  Upload: artifacts.UploadState,
  UploadProgress: artifacts.UploadProgress,
  UploadDone: artifacts.UploadDone,
  Servable: servables.Servable,
  ServableList: servables.ServableList,

  Model: inference.ModelObject,
  ModelList: inference.ModelList,
  ChatCompletion: inference.ChatCompletion,
  ChatUsage: inference.Usage,
  ToolCall: inference.ToolCall,
  Embedding: inference.Embedding,
  EmbeddingList: inference.EmbeddingList,
  ServingList: inference.ServingList,
  InferRequest: inference.InferRequest,

  PublicStats: PublicStatsShape,
  Contribution: ContributionShape,
}

/** Canonical JSON (sorted keys): two schemas are the same shape when theirs are equal. */
const canonical = (v: unknown): string =>
  Array.isArray(v) ? `[${v.map(canonical).join(',')}]` : isObject(v) ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}` : JSON.stringify(v)

// Keywords whose values are data, not schemas: never swapped for a $ref.
const DATA_KEYS = new Set(['enum', 'const', 'default', 'example', 'examples', 'required'])

export interface Components {
  /** components.schemas: each named schema, holding $refs to the others it contains. */
  schemas: Record<string, unknown>
  /** A copy of an answer's schema with every named shape in it a $ref. */
  refer(schema: unknown): unknown
}

/** The named schemas, written as the generator writes an answer's schema, so that equal means equal. */
export function namedComponents(): Components {
  const shapes = new Map<string, string>()
  const written: Record<string, unknown> = {}
  for (const [name, schema] of Object.entries(NAMED)) {
    const json = tidySchema(JSON.parse(JSON.stringify(unwrapSchema(schema, undefined, 'output'))))
    const key = canonical(json)
    // Two names for one shape: answers would take whichever came first.
    if (shapes.has(key)) throw new Error(`OpenAPI: ${name} and ${shapes.get(key)} are the same schema`)
    shapes.set(key, name)
    written[name] = json
  }
  // Bottom up, so that each node's canonical form is built once from its children's.
  const walk = (schema: unknown, top: boolean): { key: string; out: unknown } => {
    if (Array.isArray(schema)) {
      const items = schema.map((s) => walk(s, false))
      return { key: `[${items.map((i) => i.key).join(',')}]`, out: items.map((i) => i.out) }
    }
    if (!isObject(schema)) return { key: JSON.stringify(schema), out: schema }
    const kids = Object.entries(schema).map(([k, v]) => [k, DATA_KEYS.has(k) ? { key: canonical(v), out: v } : walk(v, false)] as const)
    const key = `{${[...kids].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, c]) => `${JSON.stringify(k)}:${c.key}`).join(',')}}`
    const name = top ? undefined : shapes.get(key)
    return { key, out: name !== undefined ? { $ref: `#/components/schemas/${name}` } : Object.fromEntries(kids.map(([k, c]) => [k, c.out])) }
  }
  const refer = (schema: unknown, top: boolean) => walk(schema, top).out
  const schemas = Object.fromEntries(Object.entries(written).map(([name, s]) => [name, refer(s, true)]))
  // An answer is a named schema itself as often as it holds one.
  return { schemas, refer: (schema) => refer(schema, false) }
}
