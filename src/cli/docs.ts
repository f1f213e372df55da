// The command reference of docs/cli.md, generated from the command table (scripts/cli-docs.ts
// writes it; test/unit/cli.test.ts fails when the file and the table differ).
import { COMMANDS, GROUPS } from './commands'
import { SHARED_FLAGS, synopsis, type Command, type Flag } from './spec'

export const DOCS_BEGIN = '<!-- BEGIN GENERATED: the command reference (bun run scripts/cli-docs.ts writes it; test/unit/cli.test.ts checks it) -->'
export const DOCS_END = '<!-- END GENERATED -->'

const cell = (s: string) => s.replace(/\|/g, '\\|')
const label = (f: Flag) => `${f.short ? `-${f.short}, ` : ''}--${f.name}${f.type === 'boolean' ? '' : ` ${f.value ?? (f.type === 'int' ? 'N' : f.name.toUpperCase())}`}`

function section(c: Command): string {
  const out = [`### svc ${c.path.join(' ')}`, '', `\`${synopsis(c)}\``, '', c.summary + (c.description ? ` ${c.description}` : '')]
  const rows = [
    ...c.args.map((a) => `| \`${a.name}\`${a.optional ? ' (optional)' : ''} | ${cell(a.help)} |`),
    ...c.flags.map((f) => `| \`${label(f)}\` | ${cell(f.help + (f.choices ? `: ${f.choices.join(', ')}` : '') + (f.multiple ? '; repeatable' : ''))} |`),
  ]
  if (rows.length > 0) out.push('', '| Argument or option | Meaning |', '|---|---|', ...rows)
  const shared = c.shared.map((s) => SHARED_FLAGS[s].map((f) => `\`--${f.name}\``).join(', ')).join(', ')
  out.push('', `Also: ${shared ? `${shared}, ` : ''}\`--help\`.`)
  out.push('', '```sh', ...c.examples, '```')
  return out.join('\n')
}

export function renderCommandReference(): string {
  const parts: string[] = [DOCS_BEGIN, '']
  const top = COMMANDS.filter((c) => c.path.length === 1)
  parts.push('## Top-level commands', '', ...top.map((c) => section(c) + '\n'))
  for (const g of GROUPS) {
    parts.push(`## svc ${g.name}`, '', g.summary, '', ...COMMANDS.filter((c) => c.path[0] === g.name).map((c) => section(c) + '\n'))
  }
  parts.push(DOCS_END)
  return parts.join('\n') + '\n'
}

/** docs/cli.md with its generated part replaced by the table's current reference. */
export function withReference(doc: string): string {
  const a = doc.indexOf(DOCS_BEGIN)
  const b = doc.indexOf(DOCS_END)
  if (a === -1 || b === -1) return doc.trimEnd() + '\n\n' + renderCommandReference()
  return doc.slice(0, a) + renderCommandReference() + doc.slice(b + DOCS_END.length + 1)
}
