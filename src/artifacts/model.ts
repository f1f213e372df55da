// Wire shapes of the artifact store: uploads fellows and people make, artifacts operators and fellows read.
import { t, type Static } from 'elysia'
import { Timestamp, Int, UnionEnum } from '../model'
import { FILE_NAME_PATTERN } from '../wire/schema'

export const ARTIFACT_KINDS = ['checkpoint', 'model', 'file'] as const
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number]
export const ArtifactKind = UnionEnum(ARTIFACT_KINDS)

/**
 * A label, never a path: blobs are stored by their hash. Still no '/' (a client that saves the
 * download under this name must not be steered into another directory) and no control characters
 * (C0, DEL, C1: the name reaches log lines and a Content-Disposition header).
 */
export const ArtifactName = t.String({ minLength: 1, maxLength: 200, pattern: FILE_NAME_PATTERN })
export const Sha256Hex = t.String({ pattern: '^[0-9a-f]{64}$', minLength: 64, maxLength: 64, 'x-rule': '64 lower-case hex digits (0-9, a-f)' })
const Count = (max = Number.MAX_SAFE_INTEGER) => Int({ minimum: 0, maximum: max })

export const UploadBody = t.Object(
  {
    kind: ArtifactKind,
    name: ArtifactName,
    size_bytes: Count(),
    sha256: Sha256Hex,
    /** A person's upload names its pool; a fellow's goes to the fellow's own pool and sends none. */
    pool_id: t.Optional(t.String({ format: 'uuid' })),
    job_id: t.Optional(t.String({ format: 'uuid' })),
    stage: t.Optional(Count(1_000_000)),
    step: t.Optional(Count()),
  },
  { additionalProperties: false },
)
export type UploadInput = Static<typeof UploadBody>

/** Where an upload stands: PUT the bytes from `offset` on. */
export const UploadState = t.Object({ upload_id: t.String(), offset: Int(), size_bytes: Int() })
export type UploadState = Static<typeof UploadState>
export const UploadProgress = t.Object({ upload_id: t.String(), offset: Int() })

export const Artifact = t.Object({
  id: t.String(),
  pool_id: t.String(),
  job_id: t.Nullable(t.String()),
  stage: t.Nullable(Int()),
  kind: ArtifactKind,
  name: t.String(),
  size_bytes: Int(),
  sha256: t.String(),
  step: t.Nullable(Int()),
  fellow_id: t.Nullable(t.String()),
  user_id: t.Nullable(t.String()),
  created_at: Timestamp,
})
export type Artifact = Static<typeof Artifact>
export const ArtifactList = t.Object({ items: t.Array(Artifact) })
export const UploadDone = t.Object({ artifact: Artifact })

export const UploadParams = t.Object({ upload_id: t.String({ format: 'uuid' }) })
export const ArtifactParams = t.Object({ id: t.String({ format: 'uuid' }) })
export const JobParams = t.Object({ job_id: t.String({ format: 'uuid' }) })
export const OffsetQuery = t.Object({ offset: t.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }) }, { additionalProperties: false })
export const ArtifactFilter = t.Object(
  {
    pool_id: t.Optional(t.String({ format: 'uuid' })),
    job_id: t.Optional(t.String({ format: 'uuid' })),
    kind: t.Optional(ArtifactKind),
  },
  { additionalProperties: false },
)
export type ArtifactFilter = Static<typeof ArtifactFilter>
/** The stage of a job a fellow resumes: 0 unless given (a one-stage job has only stage 0). */
export const LatestQuery = t.Object({ stage: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000 })) }, { additionalProperties: false })
