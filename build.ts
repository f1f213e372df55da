// `bun run build`: one self-contained executable at dist/svc. Identifiers are not minified:
// Elysia reads handler parameter names to decide what each route needs.
import { $ } from 'bun'

await $`bun run scripts/embed-migrations.ts`.quiet()
await $`mkdir -p dist`
await $`bun build --compile --minify-whitespace --minify-syntax --sourcemap src/entry.ts --outfile dist/svc`
console.log('built dist/svc')
