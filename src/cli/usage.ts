export const USAGE = `usage: svc <command> [options]

commands:
  serve                               run the leader (configured by SVC_* variables)
  health                              exit 0 when the local leader answers /api/v1/health
  admin create-user EMAIL             create an active admin; prompts for the password
  admin set-password EMAIL            set a user's password; revokes that user's sessions
  admin send-test-mail EMAIL          send a test mail with the SVC_SMTP_* settings
  admin backup FILE                   write a consistent copy of the state database to FILE
  fellow --leader URL --join-token T  run the fellow agent on this machine

options:
  --db PATH           state database for admin commands (default: SVC_JOIN_STATE_DB or ./state/join_state.sqlite3)
  --password-stdin    read the password from the first line of standard input
  --display-name NAME display name for create-user
  -h, --help          show this help
  -v, --version       print the version
`

export class UsageError extends Error {}
