// Reads a password: one line from stdin with --password-stdin, else a no-echo prompt on a TTY.
import { Ended } from './output'
import { UsageError } from './usage'

export async function readLine(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) {
    chunks.push(Buffer.from(chunk))
    if (Buffer.concat(chunks).includes(10)) break
  }
  const text = Buffer.concat(chunks).toString('utf8')
  const nl = text.indexOf('\n')
  return (nl === -1 ? text : text.slice(0, nl)).replace(/\r$/, '')
}

/** A line typed on the terminal, not shown unless `echo` (a yes, not a secret); Ctrl-C cancels (exit 130), Ctrl-D ends it. */
export function promptHidden(question: string, echo = false): Promise<string> {
  const stdin = process.stdin
  if (!stdin.isTTY) throw new UsageError('no terminal to prompt on; pass --password-stdin and pipe the password in')
  return new Promise((resolve, reject) => {
    let value = ''
    // Raw before the question shows: keys typed at once are not taken by the terminal's line
    // editing (which echoes them, and turns Ctrl-D into an end of input).
    stdin.setRawMode(true)
    process.stderr.write(question)
    stdin.resume()
    stdin.setEncoding('utf8')
    const done = (err?: Error) => {
      stdin.setRawMode(false)
      stdin.pause()
      stdin.off('data', onData)
      stdin.off('end', onEnd)
      process.stderr.write('\n')
      if (err) reject(err)
      else resolve(value)
    }
    // The terminal closed (or its line editing ended the input): there is no more to read.
    const onEnd = () => (value === '' ? done(new Ended(1, 'no input (Ctrl-D at the prompt)')) : done())
    const onData = (s: string) => {
      for (const ch of s) {
        if (ch === '\r' || ch === '\n') return done()
        if (ch === '\u0003') return done(new Ended(130, 'cancelled'))
        // Ctrl-D, the terminal's end of input: what was typed is the answer; nothing typed, none.
        if (ch === '\u0004') return onEnd()
        if (ch === '\u007f' || ch === '\b') {
          if (echo && value !== '') process.stderr.write('\b \b')
          value = value.slice(0, -1)
        } else {
          if (echo) process.stderr.write(ch)
          value += ch
        }
      }
    }
    stdin.on('data', onData)
    stdin.on('end', onEnd)
  })
}

export async function readPassword(fromStdin: boolean, confirm: boolean): Promise<string> {
  if (fromStdin) {
    const p = await readLine()
    if (p === '') throw new UsageError('no password on standard input')
    return p
  }
  const p = await promptHidden('Password: ')
  if (confirm && (await promptHidden('Repeat password: ')) !== p) throw new UsageError('the passwords do not match')
  return p
}
