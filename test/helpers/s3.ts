// A real S3-compatible server on loopback for the artifact store's S3 tests: s3rver (a fake S3
// for node, which runs under Bun as it is), one bucket, its objects in a temp directory.
import S3rver from 's3rver'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface FakeS3 {
  endpoint: string
  bucket: string
  /** s3rver's fixed credentials. */
  accessKeyId: string
  secretAccessKey: string
  stop(): Promise<void>
}

export async function startFakeS3(bucket = 'artifacts'): Promise<FakeS3> {
  const directory = mkdtempSync(join(tmpdir(), 'svc-s3-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] })
  const { port } = await server.run()
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    stop: async () => {
      await server.close()
      rmSync(directory, { recursive: true, force: true })
    },
  }
}
