export const USAGE = `usage: svc <command> [options]

commands:
  serve                               run the leader (configured by SVC_* variables)
  health                              exit 0 when the local leader answers /api/v1/health
  admin create-user EMAIL             create an active admin; prompts for the password
  admin set-password EMAIL            set a user's password; revokes that user's sessions and API tokens
  admin send-test-mail EMAIL          send a test mail with the SVC_SMTP_* settings
  admin backup FILE                   write a consistent copy of the state database to FILE
  fellow --leader URL --join-token T  run the fellow agent on this machine (until SIGTERM/SIGINT)
  runner mlp                          the built-in training runner; the agent starts it (docs/workloads.md)

options:
  --db PATH           state database for admin commands (default: SVC_JOIN_STATE_DB or ./state/join_state.sqlite3)
  --password-stdin    read the password from the first line of standard input
  --display-name NAME display name for create-user
  -h, --help          show this help
  -v, --version       print the version

fellow options (flags win over the SVC_* variables named):
  --leader URL             the leader's base URL (SVC_LEADER_URL)
  --join-token T           a pool's join token, svc_join_... (SVC_JOIN_TOKEN); none: the default pool
  --state-dir DIR          keeps fellow_id, node token (0600) and checkpoints (default ./fellow-state)
  --p2p-port-base N        activations in on N, gradients on N+1 (default 5557)
  --advertise-host HOST    where neighbours reach those ports, and the only address they are
                           bound on (default: first LAN address)
  --p2p-listen-host HOST   bind those ports here instead (NAT: the advertised address is not local)
  --hostname NAME          the name shown for this machine (default: the system host name)
  --once                   register, send one heartbeat and exit (a connectivity check)
  --engine NAME=URL        serve the model NAME with the OpenAI-compatible engine already
                           running at URL (e.g. http://127.0.0.1:8081/v1); repeatable
  --engine-cmd 'NAME=CMD'  start CMD and serve the model NAME with it; {port} in CMD is replaced
                           by a free loopback port; restarted when it exits, stopped with the
                           agent; repeatable
  --runner 'NAME=CMD'      offer the training runner NAME: jobs with "runner": "NAME" start CMD
                           for their stage here (the runner contract: docs/workloads.md);
                           repeatable; the built-in runner mlp is always offered
  --config FILE            a TOML file of engines and runners ([runners.NAME] with command, env,
                           stop_grace_s) and of engines ([engines.NAME] with url or command, model,
                           max_concurrent, health_path, env, api_key, ...; docs/operations.md)
                           No engine declared: the built-in tiny-llm model is served.
`

export class UsageError extends Error {}
