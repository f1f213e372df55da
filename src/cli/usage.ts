// The CLI's two kinds of failure. main.ts prints either as one line: a UsageError (exit 2) with
// the usage of the command it concerns (or the root usage), a CliError (exit 1) alone.

export class UsageError extends Error {
  constructor(
    message: string,
    /** The usage text of the command the mistake concerns; the root usage when absent. */
    readonly usage?: string,
  ) {
    super(message)
  }
}

/** A command that was understood but failed: the leader refused, could not be reached, a file was bad. */
export class CliError extends Error {}
