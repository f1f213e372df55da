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

/** The POSIX sh installer: fetch the manifest, download and verify the binary, start the agent. */
export function fellowScript(baseUrl: string): string {
  return `#!/bin/sh
# Installs the svc fellow agent from the leader at ${baseUrl.replace(/\n/g, '')} and starts it.
# Usage: curl -fsSL URL/api/v1/bootstrap/fellow.sh | sh -s -- --join-token TOKEN [--leader URL] [--dir DIR] [--no-start]
set -eu
LEADER=${shQuote(baseUrl)}
JOIN_TOKEN="\${SVC_JOIN_TOKEN:-}"
DIR="\${SVC_FELLOW_DIR:-\${HOME:-/tmp}/.svc-fellow}"
NOSTART=""
fail() { echo "fellow.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --leader) [ $# -ge 2 ] || fail "--leader needs a value"; LEADER="$2"; shift 2 ;;
    --join-token) [ $# -ge 2 ] || fail "--join-token needs a value"; JOIN_TOKEN="$2"; shift 2 ;;
    --dir) [ $# -ge 2 ] || fail "--dir needs a value"; DIR="$2"; shift 2 ;;
    --no-start) NOSTART=1; shift ;;
    *) fail "unknown option: $1" ;;
  esac
done
command -v curl >/dev/null 2>&1 || fail "curl is required"
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) PLATFORM=linux-x64 ;;
  Linux-aarch64|Linux-arm64) PLATFORM=linux-arm64 ;;
  Darwin-arm64) PLATFORM=darwin-arm64 ;;
  Darwin-x86_64) PLATFORM=darwin-x64 ;;
  *) fail "unsupported platform $(uname -s)-$(uname -m)" ;;
esac
mkdir -p "$DIR/bin" "$DIR/state"
MANIFEST=$(curl -fsSL -H "X-Bootstrap-Token: $JOIN_TOKEN" "$LEADER/api/v1/bootstrap/manifest.json") || fail "cannot fetch the manifest from $LEADER"
SHA=$(printf '%s' "$MANIFEST" | tr -d '\\n' | sed -n 's/.*"sha256":"\\([0-9a-f]\\{64\\}\\)".*/\\1/p')
WANT=$(printf '%s' "$MANIFEST" | tr -d '\\n' | sed -n 's/.*"platform":"\\([a-z0-9-]*\\)".*/\\1/p')
[ -n "$SHA" ] || fail "the leader offers no agent binary (it must run the compiled dist/svc)"
[ "$WANT" = "$PLATFORM" ] || fail "the leader's binary is for $WANT, this machine is $PLATFORM"
curl -fsSL -H "X-Bootstrap-Token: $JOIN_TOKEN" -o "$DIR/bin/svc.part" "$LEADER/api/v1/bootstrap/svc" || fail "downloading the agent failed"
if command -v sha256sum >/dev/null 2>&1; then GOT=$(sha256sum "$DIR/bin/svc.part" | cut -d' ' -f1)
elif command -v shasum >/dev/null 2>&1; then GOT=$(shasum -a 256 "$DIR/bin/svc.part" | cut -d' ' -f1)
else fail "sha256sum or shasum is required"; fi
if [ "$GOT" != "$SHA" ]; then rm -f "$DIR/bin/svc.part"; fail "checksum mismatch: expected $SHA, got $GOT"; fi
chmod 0755 "$DIR/bin/svc.part"
mv -f "$DIR/bin/svc.part" "$DIR/bin/svc"
echo "fellow.sh: installed $DIR/bin/svc (sha256 $SHA)" >&2
[ -z "$NOSTART" ] || exit 0
[ -n "$JOIN_TOKEN" ] || echo "fellow.sh: no join token given; the fellow will join the default pool" >&2
exec "$DIR/bin/svc" fellow --leader "$LEADER" --join-token "$JOIN_TOKEN" --state-dir "$DIR/state"
`
}
