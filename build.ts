// `bun run build`: one self-contained executable at dist/svc. Identifiers are not minified:
// Elysia reads handler parameter names to decide what each route needs. The bundle carries
// JavaScriptCore bytecode (ESM, as src/entry.ts awaits at top level): a start to ready takes
// about half the time, since nothing is parsed and compiled before the first request
// (docs/benchmarks.md, cold start). --splitting keeps what a dynamic import() loads (the fellow
// agent, the admin CLI, nodemailer, the OpenAPI generator) out of `serve` until it is used,
// node: modules included: about 4 MiB less idle memory.
import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { $ } from 'bun'

await $`bun run scripts/embed-migrations.ts`.quiet()
// Chunk source maps carry a hash in their names: the last build's go first, or dist/ fills up.
mkdirSync('dist', { recursive: true })
for (const name of readdirSync('dist')) if (name.endsWith('.map')) rmSync(`dist/${name}`)
// The commit goes into the version (`svc --version`, the agent_version fellows report: which
// machines still run an older agent); a build outside a git checkout has the package's alone.
const described = Bun.spawnSync(['git', 'describe', '--always', '--dirty=.dirty', '--abbrev=10', '--exclude=*'], { stderr: 'ignore' })
const commit = described.exitCode === 0 ? described.stdout.toString().trim() : ''
const define = /^[0-9a-f]{4,40}(\.dirty)?$/.test(commit) ? ['--define', `SVC_BUILD_COMMIT=${JSON.stringify(commit)}`] : []
await $`bun build --compile --splitting --bytecode --format=esm --minify-whitespace --minify-syntax --sourcemap ${define} src/entry.ts --outfile dist/svc`
console.log('built dist/svc')
