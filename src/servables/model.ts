// Wire shapes of the model catalog (servable manifests).
import { t, type Static } from 'elysia'
import { Timestamp, Int } from '../model'
import { MODEL_NAME } from '../wire/fellow'

/** Also the `model` of the chat API, so kept to characters a URL path and a log line carry safely. */
export const ServableName = t.String({ pattern: MODEL_NAME, maxLength: 200, 'x-rule': "1 to 200 letters, digits or any of . _ : / @ + -, starting with a letter or digit" })

export const ServableBody = t.Object(
  {
    name: ServableName,
    version: t.String({ minLength: 1, maxLength: 100 }),
    format: t.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,31}$', maxLength: 32, 'x-rule': "1 to 32 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit" }),
    size_bytes: Int({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    job_id: t.Optional(t.String({ format: 'uuid' })),
    /** The model file in the artifact store the engine loads: an artifact of the fellow's pool. */
    artifact_id: t.Optional(t.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
)
export type ServableInput = Static<typeof ServableBody>

export const Servable = t.Object({
  id: t.String(),
  name: t.String(),
  version: t.String(),
  format: t.String(),
  size_bytes: Int(),
  pool_id: t.Nullable(t.String()),
  job_id: t.Nullable(t.String()),
  fellow_id: t.Nullable(t.String()),
  artifact_id: t.Nullable(t.String()),
  created_at: Timestamp,
})
export type Servable = Static<typeof Servable>
export const ServableList = t.Object({ items: t.Array(Servable) })

export const ServableFilter = t.Object({ pool_id: t.Optional(t.String({ format: 'uuid' })) }, { additionalProperties: false })
