// Rewrites the generated command reference in docs/cli.md from src/cli/commands.ts.
import { readFileSync, writeFileSync, existsSync } from 'node:fs'
import { withReference } from '../src/cli/docs'

const path = new URL('../docs/cli.md', import.meta.url)
const doc = existsSync(path) ? readFileSync(path, 'utf8') : '# The svc command line\n'
writeFileSync(path, withReference(doc))
console.log('docs/cli.md: command reference written')
