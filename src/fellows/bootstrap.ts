// Bootstrap downloads: the manifest, the install script, and the leader's own executable, which
// carries the fellow agent (`svc fellow`). A new machine needs nothing but curl and sh.
import { VERSION } from '../version'

export function isCompiledBinary(): boolean {
  return Bun.main.startsWith('/$bunfs/') || Bun.main.includes('~BUN')
}

let digest: Promise<{ sha256: string; size: number }> | null = null

/** SHA-256 of the running executable, computed once, off the request path after the first call. */
export function binaryDigest(): Promise<{ sha256: string; size: number }> | null {
  if (!isCompiledBinary()) return null
  digest ??= (async () => {
    const file = Bun.file(process.execPath)
    const hasher = new Bun.CryptoHasher('sha256')
    const reader = file.stream().getReader()
    for (let r = await reader.read(); !r.done; r = await reader.read()) hasher.update(r.value)
    return { sha256: hasher.digest('hex'), size: file.size }
  })()
  return digest
}

export const PLATFORM = `${process.platform}-${process.arch}`

export async function manifest(baseUrl: string, heartbeatIntervalS: number) {
  const d = binaryDigest()
  const bin = d ? await d : null
  return {
    version: VERSION,
    leader_url: baseUrl,
    heartbeat_interval_s: heartbeatIntervalS,
    binary: bin ? { url: `${baseUrl}/api/v1/bootstrap/svc`, sha256: bin.sha256, size: bin.size, platform: PLATFORM } : null,
  }
}

/** One shell word, single-quoted. */
export const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

/**
 * The POSIX sh installer: fetch the manifest, download and verify the binary, start the agent. With
 * --service it installs a systemd unit instead of running in the foreground: the join token goes in
 * an EnvironmentFile of mode 0600 (root only), not on a command line any user can read with ps.
 * Options it does not know (--engine, --runner, --config, --hostname...) are handed to the agent.
 * Fetched with a valid join token, the script carries it (`joinToken`), so the join command needs
 * it on no command line; its own downloads send it from curl's stdin for the same reason.
 */
export function fellowScript(baseUrl: string, joinToken: string | null = null): string {
  return `#!/bin/sh
# Installs the svc fellow agent from the leader at ${baseUrl.replace(/\n/g, '')} and starts it.
# Usage: curl -fsSL URL/api/v1/bootstrap/fellow.sh | sh -s -- --join-token TOKEN [--leader URL] [--dir DIR]
#          [--no-start] [--service [--name NAME]] [AGENT OPTIONS...]
# --service (as root): install and start a systemd unit NAME.service (default svc-fellow) that keeps
# the agent running and starts it at boot; the token is kept in /etc/NAME/fellow.env (mode 0600).
# Any other option is passed to the agent (svc fellow --help lists them), also into the unit.
set -eu
LEADER=${shQuote(baseUrl)}
${joinToken === null ? 'JOIN_TOKEN="${SVC_JOIN_TOKEN:-}"' : `# The token this script was fetched with: the pasted command's, over an SVC_JOIN_TOKEN left in the shell.\nJOIN_TOKEN=${shQuote(joinToken)}`}
DIR="\${SVC_FELLOW_DIR:-\${HOME:-/tmp}/.svc-fellow}"
NOSTART=""
SERVICE=""
NAME=svc-fellow
UNIT_DIR="\${SVC_SYSTEMD_DIR:-/etc/systemd/system}"
ETC_DIR="\${SVC_FELLOW_ETC:-/etc}"
fail() { echo "fellow.sh: $*" >&2; exit 1; }
# The agent's extra options, each quoted for systemd's ExecStart (and kept as words for exec).
EXTRA=""
quote_unit() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\\\/\\\\\\\\/g' -e 's/"/\\\\"/g' -e 's/\\$/$$/g' -e 's/%/%%/g')"; }
# One pass over the arguments: known options are taken, every other word is put back at the end, so
# "$@" holds only the agent's options afterwards.
N=$#
while [ "$N" -gt 0 ]; do
  A="$1"; shift; N=$((N - 1))
  case "$A" in
    --leader|--join-token|--dir|--name)
      [ "$N" -gt 0 ] || fail "$A needs a value"
      V="$1"; shift; N=$((N - 1))
      case "$A" in --leader) LEADER="$V" ;; --join-token) JOIN_TOKEN="$V" ;; --dir) DIR="$V" ;; --name) NAME="$V" ;; esac ;;
    --no-start) NOSTART=1 ;;
    --service) SERVICE=1 ;;
    *) EXTRA="$EXTRA $(quote_unit "$A")"; set -- "$@" "$A" ;;
  esac
done
case "$NAME" in *[!A-Za-z0-9_.-]*|"") fail "--name may use letters, digits, . _ - only" ;; esac
command -v curl >/dev/null 2>&1 || fail "curl is required"
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) PLATFORM=linux-x64 ;;
  Linux-aarch64|Linux-arm64) PLATFORM=linux-arm64 ;;
  Darwin-arm64) PLATFORM=darwin-arm64 ;;
  Darwin-x86_64) PLATFORM=darwin-x64 ;;
  *) fail "unsupported platform $(uname -s)-$(uname -m)" ;;
esac
mkdir -p "$DIR/bin" "$DIR/state"
# The token goes to curl on its stdin: on its command line, ps would show it to every user.
bootstrap_header() { printf 'X-Bootstrap-Token: %s\\n' "$JOIN_TOKEN"; }
MANIFEST=$(bootstrap_header | curl -fsSL -H @- "$LEADER/api/v1/bootstrap/manifest.json") || fail "cannot fetch the manifest from $LEADER"
SHA=$(printf '%s' "$MANIFEST" | tr -d '\\n' | sed -n 's/.*"sha256":"\\([0-9a-f]\\{64\\}\\)".*/\\1/p')
WANT=$(printf '%s' "$MANIFEST" | tr -d '\\n' | sed -n 's/.*"platform":"\\([a-z0-9-]*\\)".*/\\1/p')
[ -n "$SHA" ] || fail "the leader offers no agent binary (it must run the compiled dist/svc)"
[ "$WANT" = "$PLATFORM" ] || fail "the leader's binary is for $WANT, this machine is $PLATFORM"
bootstrap_header | curl -fsSL -H @- -o "$DIR/bin/svc.part" "$LEADER/api/v1/bootstrap/svc" || fail "downloading the agent failed"
if command -v sha256sum >/dev/null 2>&1; then GOT=$(sha256sum "$DIR/bin/svc.part" | cut -d' ' -f1)
elif command -v shasum >/dev/null 2>&1; then GOT=$(shasum -a 256 "$DIR/bin/svc.part" | cut -d' ' -f1)
else fail "sha256sum or shasum is required"; fi
if [ "$GOT" != "$SHA" ]; then rm -f "$DIR/bin/svc.part"; fail "checksum mismatch: expected $SHA, got $GOT"; fi
chmod 0755 "$DIR/bin/svc.part"
mv -f "$DIR/bin/svc.part" "$DIR/bin/svc"
echo "fellow.sh: installed $DIR/bin/svc (sha256 $SHA)" >&2
[ -n "$JOIN_TOKEN" ] || echo "fellow.sh: no join token given; the fellow will join the default pool" >&2
if [ -n "$SERVICE" ]; then
  case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
  [ -d "$UNIT_DIR" ] || fail "no systemd unit directory $UNIT_DIR (is this a systemd machine?)"
  [ -w "$UNIT_DIR" ] || fail "--service must run as root (try: ... | sudo sh -s -- ...)"
  mkdir -p "$ETC_DIR/$NAME"
  ENV_FILE="$ETC_DIR/$NAME/fellow.env"
  # Created empty with mode 0600 first, so the token is never readable by others, not even briefly.
  ( umask 077; : > "$ENV_FILE" )
  chmod 0600 "$ENV_FILE"
  printf 'SVC_JOIN_TOKEN=%s\nSVC_LEADER_URL=%s\n' "$JOIN_TOKEN" "$LEADER" > "$ENV_FILE"
  cat > "$UNIT_DIR/$NAME.service" <<UNIT
[Unit]
Description=svc fellow agent for $LEADER
Wants=network-online.target
After=network-online.target

[Service]
EnvironmentFile=$ENV_FILE
ExecStart="$DIR/bin/svc" fellow --state-dir "$DIR/state"$EXTRA
Restart=on-failure
RestartSec=5
# The agent says goodbye to the leader on SIGTERM; give it time to.
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
UNIT
  echo "fellow.sh: wrote $UNIT_DIR/$NAME.service (join token in $ENV_FILE, mode 0600)" >&2
  [ -z "$NOSTART" ] || exit 0
  command -v systemctl >/dev/null 2>&1 || fail "systemctl not found; start the agent with: systemctl enable --now $NAME"
  systemctl daemon-reload
  systemctl enable --now "$NAME.service"
  echo "fellow.sh: started $NAME.service; follow it with: journalctl -u $NAME -f" >&2
  exit 0
fi
[ -z "$NOSTART" ] || exit 0
# The token goes to the agent in its environment, not on its command line (visible in ps).
SVC_JOIN_TOKEN="$JOIN_TOKEN" exec "$DIR/bin/svc" fellow --leader "$LEADER" --state-dir "$DIR/state" "$@"
`
}
