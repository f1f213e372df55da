// URLs as the agent logs them: an engine's or the leader's URL may carry credentials
// (`http://admin:s3cret@host/v1`, `?api_key=...`), and the agent's log lines reach the leader,
// where pool members read them. The user name, the password and any query value whose name says
// key, token, secret, password or auth become `***`; the rest stays readable.
const SECRET_PARAM = /key|token|secret|pass|auth|sig|cred/i

export function redactUrl(url: string): string {
  let u: URL
  try {
    u = new URL(url.replaceAll('{port}', '1'))
  } catch {
    // Not parseable: still no userinfo and no secret-looking parameter in the line.
    return url.replace(/\/\/[^/?#\s]*@/, '//***@').replace(/([?&][^=&#]*(?:key|token|secret|pass|auth|sig|cred)[^=&#]*=)[^&#]*/gi, '$1***')
  }
  let out = url
  // Up to the last @ of the authority, as URL parsers read it (a password may hold an "@").
  if (u.username !== '' || u.password !== '') out = out.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/, '$1***@')
  if (u.search !== '') {
    const q = out.indexOf('?')
    const hash = out.indexOf('#', q)
    const query = out.slice(q + 1, hash < 0 ? undefined : hash)
    const clean = query
      .split('&')
      .map((kv) => {
        const eq = kv.indexOf('=')
        return eq > 0 && SECRET_PARAM.test(decodeURIComponentSafe(kv.slice(0, eq))) ? `${kv.slice(0, eq)}=***` : kv
      })
      .join('&')
    out = out.slice(0, q + 1) + clean + (hash < 0 ? '' : out.slice(hash))
  }
  return out
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/**
 * A part of a declared environment variable's name (split at `_`) that says its value is a secret:
 * one that starts or ends with key, token, secret, pass, auth or cred (or ends with their plural).
 * Whole parts only let PASSPHRASE, SECRETKEY, HFTOKEN and OPENAIKEY through; a harmless name caught
 * too (TOKENIZERS_PARALLELISM, AUTHOR) costs a hidden value, a secret let through is shown to the pool.
 */
const SECRET_NAME_PART = /^(key|token|secret|pass|auth|cred)|(key|token|secret|pass|auth|cred)s?$/i

const isSecretName = (name: string) => name.split('_').some((part) => SECRET_NAME_PART.test(part))
/** Shorter values are not masked: "0" in a line is not a secret, and masking it would garble every line. */
const MIN_SECRET_CHARS = 8

/** The values of `env` whose names say they are secrets. */
export function secretEnvValues(env: Record<string, string>): string[] {
  return Object.entries(env)
    .filter(([name]) => isSecretName(name))
    .map(([, value]) => value)
}

/**
 * A filter for what a runner or an engine prints, before it is logged and shipped to the leader
 * (where pool members read it, and a failed runner's last lines become its job's reason): every
 * occurrence of a secret the agent handed it (the node token as SVC_RELAY_TOKEN, an engine's
 * api_key, declared env values named like secrets) becomes `***`. `sh -x`, a launcher echoing its
 * arguments (vLLM logs its --api-key) or a curl trace printed them as they were. Asked per line:
 * the node token changes when the agent registers again.
 */
export function secretMask(secrets: () => Iterable<string | null | undefined>): (line: string) => string {
  return (line) => {
    let out = line
    for (const s of secrets()) if (s && s.length >= MIN_SECRET_CHARS && out.includes(s)) out = out.replaceAll(s, '***')
    return out
  }
}
