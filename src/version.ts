import pkg from '../package.json' with { type: 'json' }

/** Set by build.ts to the commit dist/svc is built from; absent when run from source. */
declare const SVC_BUILD_COMMIT: string | undefined

/** package.json's version, and in a built binary the commit (`0.1.0+6e0c678e5a`, `.dirty` for uncommitted changes). */
export const VERSION: string = typeof SVC_BUILD_COMMIT === 'string' ? `${pkg.version}+${SVC_BUILD_COMMIT}` : pkg.version
