// HTTP surface of the artifact store: fellows and the pool's people upload (open, PUT the bytes,
// resume), operators of the pool and its fellows list, download and resume from checkpoints; the
// pool's owner deletes.
import { t } from 'elysia'
import { AppError } from '../errors'
import { BodyStream } from '../http/body'
import { actorOf } from '../http/callers'
import { problem } from '../http/problem'
import { noneMatchHits, parseRange, rangeStillApplies } from '../http/range'
import type { AppBase } from '../http/base'
import type { Caller } from '../caller'
import type { ArtifactService, Uploader } from './service'
import * as M from './model'

/**
 * Uploads need a credential even where the switches let anonymous callers through: a fellow's node
 * token (its pool owns the artifact) or a person's session or API token (they name a pool of theirs).
 */
function uploader(caller: Caller): Uploader {
  if (caller.kind === 'anonymous') throw new AppError('unauthorized', "A credential is required: a fellow's node token or a person's session or API token.")
  return caller
}

/** `attachment` with the name percent-encoded (RFC 6266 filename*): never rendered inline, never a header break. */
const disposition = (name: string) => `attachment; filename*=UTF-8''${encodeURIComponent(name)}`

export function artifactRoutes(app: AppBase, artifacts: ArtifactService) {
  return app
    .post(
      '/api/v1/artifacts/uploads',
      ({ caller, body, set }) => {
        const { resumed, ...state } = artifacts.beginUpload(uploader(caller), body)
        set.status = resumed ? 200 : 201
        return state
      },
      { policy: 'member', body: M.UploadBody, response: { 200: M.UploadState, 201: M.UploadState } },
    )
    .get('/api/v1/artifacts/uploads/:upload_id', ({ caller, params }) => artifacts.uploadState(uploader(caller), params.upload_id), {
      policy: 'member',
      params: M.UploadParams,
      response: { 200: M.UploadState },
    })
    .put(
      '/api/v1/artifacts/uploads/:upload_id',
      async ({ caller, clientIp, params, query, body, set }) => {
        const by = uploader(caller)
        // The owner first: anyone else learns "not found", not what they should have sent.
        artifacts.checkUpload(by, params.upload_id)
        if (!(body instanceof BodyStream)) throw new AppError('unsupported_media_type', 'Send the bytes as application/octet-stream.')
        const r = await artifacts.write(by, params.upload_id, query.offset, body, clientIp)
        if (!r.done) return { upload_id: r.state.upload_id, offset: r.state.offset }
        set.status = 201
        return { artifact: r.artifact }
      },
      {
        policy: 'member',
        // Streamed to the upload's temp file, never held whole (src/http/body.ts BodyStream).
        detail: { 'x-body': 'binary', 'x-body-stream': true },
        params: M.UploadParams,
        query: M.OffsetQuery,
        response: { 200: M.UploadProgress, 201: M.UploadDone },
      },
    )
    .delete(
      '/api/v1/artifacts/uploads/:upload_id',
      async ({ caller, params, set }) => {
        await artifacts.cancelUpload(uploader(caller), params.upload_id)
        set.status = 204
      },
      { policy: 'member', params: M.UploadParams, response: { 204: t.Undefined() } },
    )
    .get('/api/v1/artifacts', ({ caller, query }) => ({ items: artifacts.list(caller, query) }), {
      policy: 'operator',
      query: M.ArtifactFilter,
      response: { 200: M.ArtifactList },
    })
    .get('/api/v1/artifacts/:id', ({ caller, params }) => artifacts.get(caller, params.id), {
      policy: 'member',
      params: M.ArtifactParams,
      response: { 200: M.Artifact },
    })
    .get(
      '/api/v1/artifacts/:id/content',
      async ({ caller, params, request }) => {
        const found = artifacts.get(caller, params.id)
        const size = found.size_bytes
        const etag = `"${found.sha256}"`
        // The bytes of an artifact never change (the tag is their hash): a client holding them is
        // told so, and a range is served only of the bytes the client holds a part of.
        if (noneMatchHits(request.headers.get('if-none-match'), etag)) {
          return new Response(null, { status: 304, headers: { etag, 'cache-control': 'private, no-cache' } })
        }
        let range
        try {
          range = rangeStillApplies(request.headers.get('if-range'), etag) ? parseRange(request.headers.get('range'), size) : null
        } catch (e) {
          if (e instanceof AppError) return problem(e.code, e.message, e.extra, { 'content-range': `bytes */${size}` })
          throw e
        }
        const { artifact, body } = await artifacts.open(caller, params.id, range)
        const headers: Record<string, string> = {
          'content-type': 'application/octet-stream',
          'content-length': String(range ? range.end - range.start : size),
          etag: `"${artifact.sha256}"`,
          'accept-ranges': 'bytes',
          // Uploaded bytes from the leader's own origin: a browser must save them, never render or sniff them.
          'content-disposition': disposition(artifact.name),
          'x-content-type-options': 'nosniff',
          'cache-control': 'private, no-cache',
        }
        if (range) headers['content-range'] = `bytes ${range.start}-${range.end - 1}/${size}`
        return new Response(body, { status: range ? 206 : 200, headers })
      },
      { policy: 'member', params: M.ArtifactParams },
    )
    .delete(
      '/api/v1/artifacts/:id',
      ({ caller, clientIp, params, set }) => {
        artifacts.delete(actorOf(caller, clientIp), params.id)
        set.status = 204
      },
      { policy: 'operator', params: M.ArtifactParams },
    )
    .get('/api/v1/jobs/:job_id/checkpoints/latest', ({ caller, params, query }) => artifacts.latestCheckpoint(caller, params.job_id, query.stage ?? 0), {
      policy: 'member',
      params: M.JobParams,
      query: M.LatestQuery,
      response: { 200: M.Artifact },
    })
}
