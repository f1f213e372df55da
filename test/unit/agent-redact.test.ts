// Which declared env values the agent masks in what a runner or an engine prints (pool members
// read fellow logs): a name any of whose `_`-separated parts starts or ends with key, token,
// secret, pass, auth or cred. A secret shown is worse than a harmless value hidden.
import { describe, expect, test } from 'bun:test'
import { secretEnvValues } from '../../src/agent/redact'

const masked = (names: string[]) => secretEnvValues(Object.fromEntries(names.map((n) => [n, `value-of-${n}`]))).map((v) => v.slice('value-of-'.length))

describe('env names taken for secrets', () => {
  test('a word run together with another counts (PASSPHRASE, SECRETKEY, HFTOKEN, OPENAIKEY, GH_AUTHTOKEN were shipped unmasked)', () => {
    const secrets = ['PASSPHRASE', 'SECRETKEY', 'HFTOKEN', 'OPENAIKEY', 'GH_AUTHTOKEN', 'HF_TOKEN', 'WANDB_API_KEY', 'APIKEY', 'DB_PASSWORD', 'PGPASS', 'AWS_SECRET_ACCESS_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'my_creds', 'Hf_Hub_Token', 'TOKEN']
    expect(masked(secrets)).toEqual(secrets)
  })

  test('names with none of the words at the start or end of a part stay readable', () => {
    expect(masked(['THREADS', 'RUN_NAME', 'CUDA_VISIBLE_DEVICES', 'HF_HOME', 'OMP_NUM_THREADS', 'MODEL_PATH', 'BYPASSED_MODE'])).toEqual([])
  })

  test('some harmless names are masked too, by the same rule (their values hidden, nothing shown)', () => {
    expect(masked(['TOKENIZERS_PARALLELISM', 'AUTHOR', 'MONKEY', 'COMPASS_DIR'])).toEqual(['TOKENIZERS_PARALLELISM', 'AUTHOR', 'MONKEY', 'COMPASS_DIR'])
  })
})
