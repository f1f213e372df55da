// Every command of the binary: path, arguments, flags, help text and examples, and the code that
// runs it (loaded when it runs). Parsing, --help, shell completion and docs/cli.md come from here.
import { CHECKS } from '../admin/doctor'
import { JOB_STATUSES } from '../jobs/model'
import { USER_SORT_KEYS } from '../admin/model'
import { commandHelp, groupHelp, parseInvocation, type Command, type Group, type Invocation } from './spec'
import { UsageError } from './usage'
import { Ended, note } from './output'

type Handler = (inv: Invocation) => Promise<number>
const lazy =
  <M extends Record<string, unknown>>(load: () => Promise<M>, name: keyof M): Handler =>
  async (inv) =>
    ((await load())[name] as Handler)(inv)

const pools = () => import('./remote/pools')
const fellows = () => import('./remote/fellows')
const jobs = () => import('./remote/jobs')
const chat = () => import('./remote/chat')
const account = () => import('./remote/account')
const admin = () => import('./remote/admin')
const artifactsCli = () => import('./remote/artifacts')
const offline = () => import('./admin')

const POOL = { name: 'POOL', help: 'a pool\'s slug, name or id' }
const FELLOW = { name: 'FELLOW', help: 'a fellow\'s host name or id' }
const JOB = { name: 'JOB', help: 'a job\'s name or id' }
const USER = { name: 'USER', help: 'a user\'s email or id' }
const ARTIFACT = { name: 'ARTIFACT', help: 'an artifact\'s id, or its name when no other has it' }
const R = ['remote', 'output'] as ('remote' | 'output')[]
const poolFlag = { name: 'pool', type: 'string', value: 'POOL', help: 'only this pool (slug, name or id)' } as const
const passwordStdin = { name: 'password-stdin', type: 'boolean', help: 'read the password from the first line of standard input (else a prompt without echo)' } as const

export const GROUPS: Group[] = [
  { name: 'pools', summary: 'Pools: list, show, create and delete them, print a join command, invite people.' },
  { name: 'fellows', summary: 'Fellows (the machines in your pools): list with liveness, GPUs, free VRAM and job; release or remove one.' },
  { name: 'jobs', summary: 'Training jobs: submit, list, act on, and follow them live.' },
  { name: 'models', summary: 'Models your pools\' fellows serve (the chat API\'s `model`).' },
  { name: 'artifacts', summary: 'Files your pools keep: checkpoints their fellows wrote, model files for their engines. List, upload, download, delete.' },
  { name: 'tokens', summary: 'Personal API tokens: list, create (needs your password), revoke.' },
  { name: 'users', summary: 'Accounts (admins only): list, disable, enable, delete.' },
  { name: 'audit', summary: 'The audit log (admins only).' },
  { name: 'admin', summary: 'Offline administration on the state file (no leader needed; run it where the file is).' },
]

export const COMMANDS: Command[] = [
  // --- the leader and the fellow agent (handled in main.ts and their own modules)
  { path: ['serve'], summary: 'Run the leader (configured by SVC_* variables; docs/operations.md).', args: [], flags: [], shared: [], examples: ['SVC_PORT=8080 svc serve'], external: true },
  { path: ['health'], summary: 'Exit 0 when the local leader answers /api/v1/health (the container\'s HEALTHCHECK).', args: [], flags: [], shared: [], examples: ['svc health || echo down'], external: true },
  {
    path: ['fellow'],
    summary: 'Run the fellow agent on this machine until SIGTERM, SIGINT or SIGHUP. Flags win over SVC_LEADER_URL and SVC_JOIN_TOKEN.',
    args: [],
    flags: [
      { name: 'leader', type: 'string', value: 'URL', help: 'the leader\'s base URL (SVC_LEADER_URL)' },
      { name: 'join-token', type: 'string', value: 'T', help: 'a pool\'s join token, svc_join_... (SVC_JOIN_TOKEN); none: the default pool' },
      { name: 'state-dir', type: 'string', value: 'DIR', help: 'keeps fellow_id, node token (0600) and checkpoints (default ./fellow-state)' },
      { name: 'p2p-port-base', type: 'int', help: 'activations in on N, gradients on N+1 (default 5557)' },
      { name: 'advertise-host', type: 'string', value: 'HOST', help: 'where neighbours reach those ports, and the only address they are bound on (default: first LAN address)' },
      { name: 'p2p-listen-host', type: 'string', value: 'HOST', help: 'bind those ports here instead (NAT: the advertised address is not local)' },
      { name: 'hostname', type: 'string', value: 'NAME', help: 'the name shown for this machine (default: the system host name)' },
      { name: 'once', type: 'boolean', help: 'a connectivity check: one heartbeat with the saved node token (nothing rotated, recorded or written, no p2p ports, safe beside a running agent), then exit; without a saved identity it registers first and keeps it' },
      { name: 'engine', type: 'string', multiple: true, value: 'NAME=URL', help: 'serve the model NAME with the OpenAI-compatible engine already running at URL (e.g. http://127.0.0.1:8081/v1)' },
      { name: 'engine-cmd', type: 'string', multiple: true, value: "'NAME=CMD'", help: 'start CMD and serve the model NAME with it; {port} in CMD is a free loopback port; restarted when it exits' },
      { name: 'runner', type: 'string', multiple: true, value: "'NAME=CMD'", help: 'offer the training runner NAME: jobs with "runner": "NAME" start CMD for their stage here (docs/workloads.md); mlp is always offered' },
      { name: 'config', type: 'string', value: 'FILE', help: 'a TOML file of engines ([engines.NAME]) and runners ([runners.NAME]); docs/operations.md. No engine declared: the built-in tiny-llm model is served' },
    ],
    shared: [],
    examples: ['svc fellow --leader https://leader.example.org --join-token svc_join_...'],
    external: true,
  },
  { path: ['runner'], summary: 'The built-in training runner; the fellow agent starts it (`svc runner mlp`; docs/workloads.md).', args: [{ name: 'NAME', help: 'mlp' }], flags: [], shared: [], examples: ['svc runner mlp'], external: true },

  // --- signing in
  {
    path: ['login'],
    summary: 'Check an API token against a leader and save both in the config file (mode 0600), as the default leader.',
    description: 'The token comes from --token, --token-stdin or a prompt; with --email the CLI logs in with your password and mints a token itself. Logging in again under the same name revokes the token an earlier --email login minted for it (best effort, said when it fails). Logins run at the same time each keep their entry (the file is changed under a lock, FILE.lock).',
    args: [{ name: 'URL', help: 'the leader\'s base URL, or the name of a saved leader (default: --leader, else SVC_LEADER_URL)', optional: true }],
    flags: [
      { name: 'name', type: 'string', value: 'NAME', help: 'save the leader under this name (default: its host:port)' },
      { name: 'token-stdin', type: 'boolean', help: 'read the token from the first line of standard input' },
      { name: 'email', type: 'string', value: 'EMAIL', help: 'log in with this account\'s password instead and mint a token for this machine' },
      passwordStdin,
    ],
    shared: R,
    examples: ['svc login https://leader.example.org', 'printf %s "$TOKEN" | svc login http://127.0.0.1:8080 --name lab --token-stdin', 'svc login https://leader.example.org --email me@example.org'],
    run: lazy(account, 'login'),
  },
  {
    path: ['logout'],
    summary: 'Forget the default leader (or --leader NAME, or --all) and its token. A token svc login --email minted is revoked (best effort: a failure is said, with the command that ends it); a token you gave svc login stays valid on the leader: `svc tokens revoke` ends it.',
    args: [],
    flags: [{ name: 'all', type: 'boolean', help: 'forget every saved leader' }],
    shared: ['remote', 'output'],
    examples: ['svc logout', 'svc logout --leader lab'],
    run: lazy(account, 'logout'),
  },
  { path: ['whoami'], summary: 'Who the token acts as, on which leader.', args: [], flags: [], shared: R, examples: ['svc whoami', 'svc whoami --leader lab --json'], run: lazy(account, 'whoami') },

  // --- pools
  { path: ['pools', 'list'], summary: 'Pools you can see (an admin: all).', args: [], flags: [{ name: 'mine', type: 'boolean', help: 'only pools you are a member of' }], shared: R, examples: ['svc pools list', 'svc pools list --mine --quiet'], run: lazy(pools, 'list') },
  { path: ['pools', 'show'], summary: 'One pool.', args: [POOL], flags: [], shared: R, examples: ['svc pools show gpu-lab'], run: lazy(pools, 'show') },
  {
    path: ['pools', 'create'],
    summary: 'Create a pool within your plan.',
    args: [{ name: 'NAME', help: 'the pool\'s name (1 to 100 characters)' }],
    flags: [
      { name: 'slug', type: 'string', value: 'SLUG', help: 'its fixed short name (default: made from NAME)' },
      { name: 'description', type: 'string', value: 'TEXT', help: 'what it is for' },
      { name: 'visibility', type: 'string', value: 'V', choices: ['private', 'public'], help: 'who sees it' },
      { name: 'node-limit', type: 'int', min: 0, help: 'most fellows it takes (admins only)' },
      { name: 'open-join', type: 'boolean', help: 'with --visibility public: anyone may join without approval' },
    ],
    shared: R,
    examples: ['svc pools create "GPU lab" --description "two A100s"', 'svc pools create commons --visibility public --open-join --quiet'],
    run: lazy(pools, 'create'),
  },
  { path: ['pools', 'delete'], summary: 'Delete a pool (owner or admin). Refused while fellows are attached, unless --force detaches them.', args: [POOL], flags: [{ name: 'force', type: 'boolean', help: 'detach its fellows (they get STOP) and delete anyway' }], shared: R, examples: ['svc pools delete gpu-lab', 'svc pools delete gpu-lab --force'], run: lazy(pools, 'remove') },
  { path: ['pools', 'join-command'], summary: 'Print the one shell line that adds a machine to the pool (a join token valid for 24 h).', args: [POOL], flags: [], shared: R, examples: ['svc pools join-command gpu-lab', 'ssh gpu-box "$(svc pools join-command gpu-lab)"'], run: lazy(pools, 'joinCommand') },
  { path: ['pools', 'invite'], summary: 'Invite someone to the pool by email; prints the invite link.', args: [POOL, { name: 'EMAIL', help: 'their email address' }], flags: [], shared: R, examples: ['svc pools invite gpu-lab ada@example.org'], run: lazy(pools, 'invite') },

  // --- fellows
  { path: ['fellows', 'list'], summary: 'Fellows of your pools: state, status, GPUs, free VRAM, current job, last heartbeat.', args: [], flags: [poolFlag, { name: 'all', type: 'boolean', help: 'include released fellows' }], shared: R, examples: ['svc fellows list', 'svc fellows list --pool gpu-lab --json'], run: lazy(fellows, 'list') },
  { path: ['fellows', 'show'], summary: 'One fellow, with every GPU.', args: [FELLOW], flags: [], shared: R, examples: ['svc fellows show gpu-box-1'], run: lazy(fellows, 'show') },
  { path: ['fellows', 'release'], summary: 'Release a fellow: STOP, its node token revoked (audited).', args: [FELLOW], flags: [], shared: R, examples: ['svc fellows release gpu-box-1'], run: lazy(fellows, 'release') },
  { path: ['fellows', 'remove'], summary: 'Remove a fellow from the leader (token revoked, STOP sent).', args: [FELLOW], flags: [], shared: R, examples: ['svc fellows remove 01890a5d-ac96-774b-b9aa-0c9f2d2f6a0e'], run: lazy(fellows, 'remove') },

  // --- jobs
  {
    path: ['jobs', 'submit'],
    summary: 'Submit a training job.',
    args: [{ name: 'NAME', help: 'the job\'s name (1 to 100 characters)' }],
    flags: [
      { name: 'pool', type: 'string', value: 'POOL', help: 'the pool to run in (slug, name or id); may be left out when you are in one pool' },
      { name: 'stages', type: 'int', min: 1, max: 64, help: 'pipeline stages, one fellow each (default 1)' },
      { name: 'min-free-vram-mb', type: 'int', min: 0, help: 'free VRAM each stage\'s fellow needs (default 0)' },
      { name: 'runner', type: 'string', value: 'NAME', help: 'the runner fellows start (default mlp, the built-in one)' },
      { name: 'config', type: 'string', value: 'JSON|@FILE', help: 'the job\'s config object, handed to its fellows' },
      { name: 'set', type: 'string', multiple: true, value: 'KEY=VALUE', help: 'one config field (VALUE as JSON when it parses, else text)' },
    ],
    shared: R,
    examples: ['svc jobs submit toy --pool gpu-lab --stages 2 --set steps=500 --set lr=0.05', 'svc jobs submit big --pool gpu-lab --config @job.json --quiet'],
    run: lazy(jobs, 'submit'),
  },
  {
    path: ['jobs', 'list'],
    summary: 'Jobs of your pools, newest first: the newest 500, and where the next ones start (--cursor).',
    args: [],
    flags: [poolFlag, { name: 'status', type: 'string', value: 'STATUS', choices: JOB_STATUSES, help: 'only jobs in this state' }, { name: 'cursor', type: 'string', value: 'CURSOR', help: 'the jobs after a page (its next_cursor, printed with --json and on stderr)' }],
    shared: R,
    examples: ['svc jobs list --status running'],
    run: lazy(jobs, 'list'),
  },
  { path: ['jobs', 'show'], summary: 'One job: status, reason, placement, step and loss.', args: [JOB], flags: [], shared: R, examples: ['svc jobs show toy'], run: lazy(jobs, 'show') },
  { path: ['jobs', 'cancel'], summary: 'Cancel a job (STOP to its fellows).', args: [JOB], flags: [], shared: R, examples: ['svc jobs cancel toy'], run: lazy(jobs, 'cancel') },
  { path: ['jobs', 'pause'], summary: 'Pause a running job.', args: [JOB], flags: [], shared: R, examples: ['svc jobs pause toy'], run: lazy(jobs, 'pause') },
  { path: ['jobs', 'resume'], summary: 'Resume a paused job.', args: [JOB], flags: [], shared: R, examples: ['svc jobs resume toy'], run: lazy(jobs, 'resume') },
  { path: ['jobs', 'checkpoint'], summary: 'Ask the job\'s fellows to write a checkpoint now.', args: [JOB], flags: [], shared: R, examples: ['svc jobs checkpoint toy'], run: lazy(jobs, 'checkpoint') },
  {
    path: ['jobs', 'logs'],
    summary: 'The log lines of the fellows the job is placed on (each fellow keeps its last 1000).',
    description: 'With several stages each line starts with [stage N HOST]. --json prints one JSON object a line. With --follow a leader that is away (restarting, or its proxy answering 5xx) is waited out for as long as it takes, saying so on stderr, and the lines resume after the last one seen.',
    args: [JOB],
    flags: [
      { name: 'follow', short: 'f', type: 'boolean', help: 'keep printing new lines until the job ends (or Ctrl-C)' },
      { name: 'stage', type: 'int', min: 0, help: 'only the fellow of this stage' },
      // Log lines have no ids for --quiet to print.
      { name: 'json', type: 'boolean', help: 'print each line as a JSON object {stage, fellow_id, ts, line}' },
    ],
    shared: ['remote'],
    examples: ['svc jobs logs toy', 'svc jobs logs toy --follow --stage 1'],
    run: lazy(jobs, 'logs'),
  },
  {
    path: ['jobs', 'watch'],
    summary: 'Follow a job\'s step and loss live until it ends: a progress bar on a terminal, a line per step otherwise.',
    description: 'Exits 0 when the job completes, 1 when it fails or is cancelled (the reason on stderr), 3 when it cannot follow the job to its end (no leader answers when it starts, the leader refuses the token, the job is not found or was deleted). A leader that goes away while it watches (restarting, or its proxy answering 5xx) is waited out for as long as it takes, retrying every few seconds and saying so on stderr. --json prints each metrics event as a JSON line, then the final job as one more; --quiet prints nothing while it runs, then the job\'s id.',
    args: [JOB],
    flags: [],
    shared: R,
    examples: ['svc jobs watch toy', 'svc jobs submit toy --pool gpu-lab --quiet | xargs svc jobs watch'],
    run: lazy(jobs, 'watch'),
  },

  // --- inference
  { path: ['models', 'list'], summary: 'Models you may chat with, and how many online fellows serve each now.', args: [], flags: [], shared: R, examples: ['svc models list'], run: lazy(chat, 'models') },
  {
    path: ['chat'],
    summary: 'Send one prompt to a model and print the answer as it streams in.',
    description: 'PROMPT - reads the prompt from standard input. Control characters in the answer other than line breaks and tabs are replaced with ?, on a terminal or not (escape sequences from a fellow\'s engine never reach the terminal). --json waits for the whole answer and prints the chat.completion object as it came. A streamed answer is waited for as long as it takes while bytes come (the leader sends a keep-alive every 15 s); svc chat gives up after 2 minutes without a byte, and --json after 10 minutes without the whole answer, saying it was its own limit.',
    args: [{ name: 'MODEL', help: 'a name from svc models list' }, { name: 'PROMPT', help: 'the user message, or - for standard input' }],
    flags: [
      { name: 'system', type: 'string', value: 'TEXT', help: 'a system message before the prompt' },
      { name: 'max-tokens', type: 'int', min: 1, help: 'the most tokens to generate' },
      { name: 'temperature', type: 'string', value: 'T', help: 'sampling temperature, 0 to 2' },
      { name: 'pool', type: 'string', value: 'POOL', help: 'only fellows of this pool answer' },
    ],
    shared: R,
    examples: ['svc chat tiny-llm "It was the best of"', 'git diff | svc chat llama-3-8b - --system "Review this patch" --max-tokens 400'],
    run: lazy(chat, 'chat'),
  },

  // --- artifacts
  {
    path: ['artifacts', 'list'],
    summary: 'Artifacts of your pools (an admin: all), newest first.',
    args: [],
    flags: [poolFlag, { name: 'job', type: 'string', value: 'JOB', help: 'only this job\'s (name or id)' }, { name: 'kind', type: 'string', value: 'KIND', choices: ['checkpoint', 'model', 'file'], help: 'only this kind' }],
    shared: R,
    examples: ['svc artifacts list', 'svc artifacts list --pool gpu-lab --kind model'],
    run: lazy(artifactsCli, 'list'),
  },
  {
    path: ['artifacts', 'upload'],
    summary: 'Upload a file to a pool (any member may); it resumes where it broke off, also when run again after it was stopped. Prints the artifact id an engine\'s model_artifact takes.',
    args: [{ name: 'FILE', help: 'the file to upload' }],
    flags: [
      { name: 'pool', type: 'string', value: 'POOL', help: 'the pool that keeps it (slug, name or id); may be left out when you see one pool only' },
      { name: 'kind', type: 'string', value: 'KIND', choices: ['model', 'file'], help: 'what it is (default model)' },
      { name: 'name', type: 'string', value: 'NAME', help: 'its name (default: the file\'s name)' },
      { name: 'idle-timeout', type: 'int', min: 1, value: 'S', help: 'give up when no byte moves for S seconds (default 60): the upload resumes, up to 5 times' },
    ],
    shared: R,
    examples: ['svc artifacts upload ./qwen2.5-0.5b-q4.gguf --pool gpu-lab', 'svc artifacts upload weights.bin --pool gpu-lab --kind file --name base-weights --quiet'],
    run: lazy(artifactsCli, 'upload'),
  },
  {
    path: ['artifacts', 'download'],
    summary: 'Download an artifact, checked against its SHA-256; the file appears only whole. Stopped (Ctrl-C, a lost connection), the same command again resumes from the FILE.part it left (FILE.part.sha256 beside it names the artifact; a part of another one starts afresh).',
    args: [ARTIFACT],
    flags: [
      { name: 'output', type: 'string', value: 'FILE', help: 'where to save it (default: its name, here; not a directory); - for standard output' },
      { name: 'force', type: 'boolean', help: 'replace FILE if it exists' },
      { name: 'idle-timeout', type: 'int', min: 1, value: 'S', help: 'give up when no byte moves for S seconds (default 60); FILE.part is kept for the next run' },
    ],
    shared: R,
    examples: ['svc artifacts download 01890a5d-ac96-774b-b9aa-0c9f2d2f6a0e', 'svc artifacts download stage-0-step-200.tar --output - | tar -x'],
    run: lazy(artifactsCli, 'download'),
  },
  { path: ['artifacts', 'delete'], summary: 'Delete an artifact (the pool\'s owner or an admin; audited).', args: [ARTIFACT], flags: [], shared: R, examples: ['svc artifacts delete 01890a5d-ac96-774b-b9aa-0c9f2d2f6a0e'], run: lazy(artifactsCli, 'remove') },

  // --- tokens
  { path: ['tokens', 'list'], summary: 'Your API tokens that still work (an admin: everyone\'s).', args: [], flags: [{ name: 'all', type: 'boolean', help: 'include revoked and expired ones' }], shared: R, examples: ['svc tokens list'], run: lazy(account, 'tokensList') },
  {
    path: ['tokens', 'create'],
    summary: 'Mint an API token and print it once. Minting needs your password (a token cannot mint tokens).',
    args: [{ name: 'NAME', help: 'what the token is for (1 to 100 characters)' }],
    flags: [
      { name: 'expires-in-days', type: 'int', min: 1, max: 3650, help: 'it stops working after this many days (default: never)' },
      { name: 'email', type: 'string', value: 'EMAIL', help: 'your account (default: the one the current token acts as)' },
      passwordStdin,
    ],
    shared: R,
    examples: ['svc tokens create ci --expires-in-days 90', 'printf %s "$PASSWORD" | svc tokens create ci --password-stdin --quiet > ci.token'],
    run: lazy(account, 'tokensCreate'),
  },
  { path: ['tokens', 'revoke'], summary: 'Revoke an API token (yours; an admin: anyone\'s).', args: [{ name: 'TOKEN', help: 'the token\'s id or name' }], flags: [], shared: R, examples: ['svc tokens revoke ci'], run: lazy(account, 'tokensRevoke') },

  // --- users and audit (admins)
  {
    path: ['users', 'list'],
    summary: 'Accounts, a page at a time.',
    args: [],
    flags: [
      { name: 'search', type: 'string', value: 'TEXT', help: 'email or display name contains TEXT' },
      { name: 'status', type: 'string', value: 'STATUS', choices: ['unverified', 'pending_approval', 'active', 'disabled'], help: 'only this status' },
      { name: 'role', type: 'string', value: 'ROLE', choices: ['user', 'admin'], help: 'only this role' },
      { name: 'sort', type: 'string', value: 'KEY', choices: USER_SORT_KEYS, help: 'sort key' },
      { name: 'order', type: 'string', value: 'ORDER', choices: ['asc', 'desc'], help: 'sort order' },
      { name: 'page', type: 'int', min: 1, max: 1_000_000_000, help: 'page number (from 1)' },
      { name: 'page-size', type: 'int', min: 1, max: 200, help: 'users per page (default 50)' },
    ],
    shared: R,
    examples: ['svc users list --status pending_approval', 'svc users list --sort node_count --order desc --page-size 10'],
    run: lazy(admin, 'usersList'),
  },
  { path: ['users', 'disable'], summary: 'Disable an account: its sessions and API tokens are revoked at once.', args: [USER], flags: [], shared: R, examples: ['svc users disable mallory@example.org'], run: lazy(admin, 'usersDisable') },
  { path: ['users', 'enable'], summary: 'Enable a disabled account again.', args: [USER], flags: [], shared: R, examples: ['svc users enable mallory@example.org'], run: lazy(admin, 'usersEnable') },
  { path: ['users', 'delete'], summary: 'Delete an account with its pools, memberships and tokens (cannot be undone).', args: [USER], flags: [{ name: 'yes', type: 'boolean', help: 'do not ask (needed without a terminal)' }], shared: R, examples: ['svc users delete mallory@example.org --yes'], run: lazy(admin, 'usersDelete') },
  {
    path: ['audit', 'list'],
    summary: 'Audit entries, newest first; --follow prints them oldest first and keeps printing new ones.',
    args: [],
    flags: [
      { name: 'kind', type: 'string', value: 'KIND', help: 'an exact kind (auth.login) or a prefix ending in a dot (auth.)' },
      { name: 'actor', type: 'string', value: 'USER', help: 'only what this user did (email or id)' },
      { name: 'target', type: 'string', value: 'ID', help: 'only entries about this target (a user, pool, job or fellow id)' },
      { name: 'since', type: 'string', value: 'TIME', help: 'from this ISO 8601 time' },
      { name: 'until', type: 'string', value: 'TIME', help: 'up to this ISO 8601 time' },
      { name: 'page', type: 'int', min: 1, max: 1_000_000_000, help: 'page number (from 1)' },
      { name: 'cursor', type: 'string', value: 'CURSOR', help: 'the entries after a page (its next_cursor, printed with --json)' },
      { name: 'page-size', type: 'int', min: 1, max: 200, help: 'entries per page (default 50)' },
      { name: 'follow', short: 'f', type: 'boolean', help: 'keep printing new entries (every 2 s) until Ctrl-C' },
    ],
    shared: R,
    examples: ['svc audit list --kind auth.', 'svc audit list --target 0190a4c2-7e1b-7c3d-9f00-5b2a1c9e8d77 --json', 'svc audit list --follow --json'],
    run: lazy(admin, 'auditList'),
  },

  // --- offline administration
  { path: ['admin', 'create-user'], summary: 'Create an active admin account; asks for the password.', args: [{ name: 'EMAIL', help: 'the admin\'s email address' }], flags: [{ name: 'display-name', type: 'string', value: 'NAME', help: 'the name shown for them' }, passwordStdin], shared: ['db'], examples: ['svc admin create-user root@example.org', 'printf %s "$PW" | svc admin create-user root@example.org --password-stdin --db /data/join_state.sqlite3'], run: lazy(offline, 'createUser') },
  { path: ['admin', 'set-password'], summary: 'Set a user\'s password; revokes their sessions, API tokens and join tokens.', args: [{ name: 'EMAIL', help: 'the account\'s email address' }], flags: [passwordStdin], shared: ['db'], examples: ['svc admin set-password ada@example.org'], run: lazy(offline, 'setPassword') },
  { path: ['admin', 'send-test-mail'], summary: 'Send a test mail with the SVC_SMTP_* settings (from the environment; --db, which every admin command takes, is not read).', args: [{ name: 'EMAIL', help: 'where to send it' }], flags: [], shared: ['db'], examples: ['svc admin send-test-mail ops@example.org'], run: lazy(offline, 'sendTestMailCmd') },
  { path: ['admin', 'backup'], summary: "Write a consistent copy of the state database to FILE, while the leader runs. Refused when --db is no leader's state file.", args: [{ name: 'FILE', help: 'where to write it (must not exist; not a directory, not -: ./- for a file of that name)' }], flags: [], shared: ['db'], examples: ['svc admin backup /backups/leader-$(date +%F).sqlite3'], run: lazy(offline, 'backup') },
  {
    path: ['admin', 'restore'],
    summary: 'Put a backup in place of the state database. Refused while a process (a leader) has the file open; the backup\'s integrity is checked first; the replaced file is kept beside it.',
    description: "The backup is copied beside the state file first (.NAME.restore-PID) and renamed into place; a leader that starts meanwhile is refused (the restore holds the state file's lock until the swap). Ctrl-C or SIGTERM during the copy lets it finish, then removes it and leaves the state file as it was (exit 130 or 143); a copy left by a restore that was killed outright is removed by the next restore. What changed since the backup is undone: accounts, passwords and tokens revoked since are valid again (the command says so).",
    args: [{ name: 'FILE', help: 'a file written by svc admin backup' }],
    flags: [],
    shared: ['db'],
    examples: ['svc admin restore /backups/leader-2025-01-31.sqlite3 --db /data/join_state.sqlite3'],
    run: lazy(offline, 'restore'),
  },
  {
    path: ['admin', 'doctor'],
    summary: 'Check the state database; exit 1 when a check finds a problem.',
    description: `Checks: ${CHECKS.map((c) => `${c.name} (${c.description})`).join('; ')}.`,
    args: [],
    flags: [
      { name: 'check', type: 'string', multiple: true, value: 'NAME', choices: CHECKS.map((c) => c.name), help: 'run only this check' },
      { name: 'fix', type: 'boolean', help: 'repair what the checks know how to repair (stop the leader and take a backup first)' },
      { name: 'json', type: 'boolean', help: 'print the report as JSON' },
    ],
    shared: ['db'],
    examples: ['svc admin doctor', 'svc admin doctor --db /data/join_state.sqlite3 --json'],
    run: lazy(offline, 'doctor'),
  },

  // --- the shell
  { path: ['completion'], summary: 'Print a completion script for bash or zsh.', description: 'bash: `source <(svc completion bash)` in ~/.bashrc. zsh: `source <(svc completion zsh)` in ~/.zshrc.', args: [{ name: 'SHELL', help: 'bash or zsh' }], flags: [], shared: [], examples: ['source <(svc completion bash)', 'svc completion zsh > "${fpath[1]}/_svc"'], run: async (inv) => (await import('./completion')).printCompletion(inv) },
]

export const groupNames = new Set(GROUPS.map((g) => g.name))

export function findCommand(argv: string[]): Command | undefined {
  const [a, b] = argv
  if (a !== undefined && groupNames.has(a)) return COMMANDS.find((c) => c.path.length === 2 && c.path[0] === a && c.path[1] === b)
  return COMMANDS.find((c) => c.path.length === 1 && c.path[0] === a)
}

export function rootHelp(): string {
  const rows: [string, string][] = []
  for (const c of COMMANDS.filter((c) => c.path.length === 1 && c.external)) rows.push([c.path[0]!, c.summary])
  for (const g of GROUPS) rows.push([`${g.name} ...`, g.summary])
  for (const c of COMMANDS.filter((c) => c.path.length === 1 && !c.external)) rows.push([c.path[0]!, c.summary])
  const w = Math.max(...rows.map(([a]) => a.length))
  const admin = COMMANDS.filter((c) => c.path[0] === 'admin').map((c) => `  svc ${c.path.join(' ')} ${c.args.map((a) => a.name).join(' ')}`.trimEnd())
  return `usage: svc <command> [options]

commands:
${rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`).join('\n')}

offline administration:
${admin.join('\n')}

Remote commands talk to a leader with a personal API token: --token, else SVC_TOKEN, else the
config file \`svc login\` writes. They print tables; --json gives the API's JSON, --quiet ids only.
Exit codes: 0 done, 1 failed (one line on stderr), 2 bad usage.

Run \`svc <command> --help\` (or \`svc <command> <sub> --help\`) for its options and examples.
  -h, --help     show help
  -v, --version  print the version
`
}

/** The help of whatever argv names (a command, a group, or the root). */
export function helpFor(argv: string[]): string {
  const words = argv.filter((a) => !a.startsWith('-'))
  const cmd = findCommand(words)
  if (cmd) return commandHelp(cmd)
  const group = GROUPS.find((g) => g.name === words[0])
  if (group) return groupHelp(group, COMMANDS.filter((c) => c.path[0] === group.name))
  return rootHelp()
}

/** `svc help WORDS`: the help of a command or group, or a usage error naming what is not one. */
export function helpTopic(words: string[]): string {
  if (words.length > 0 && !findCommand(words) && !GROUPS.some((g) => g.name === words[0])) throw new UsageError(`no such command: ${words.join(' ')}`)
  return helpFor(words)
}

/** Runs a table command (not serve, fellow, runner or health: main.ts has those). */
export async function runCommand(argv: string[]): Promise<number> {
  const [first, second] = argv
  const group = GROUPS.find((g) => g.name === first)
  if (group) {
    const gh = groupHelp(group, COMMANDS.filter((c) => c.path[0] === group.name))
    if (second === undefined || second.startsWith('-')) throw new UsageError(`missing ${group.name} command`, gh)
    const cmd = findCommand(argv)
    if (!cmd) throw new UsageError(`unknown ${group.name} command: ${second}`, gh)
    return run(cmd, argv.slice(2))
  }
  const cmd = findCommand(argv)
  if (!cmd || cmd.external || !cmd.run) throw new UsageError(`unknown command: ${first}`)
  return run(cmd, argv.slice(1))
}

async function run(cmd: Command, argv: string[]): Promise<number> {
  try {
    return await cmd.run!(parseInvocation(cmd, argv))
  } catch (e) {
    if (!(e instanceof Ended)) throw e
    if (e.message) note(`svc: ${e.message}`)
    return e.status
  }
}
