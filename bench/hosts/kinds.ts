/**
 * The host kinds the hosts bench measures, one entry each: the catalogue host of the kind on the
 * fake upstream (bench/hosts/fake-host.ts), the host model it names, and what the gateway's
 * environment needs for it. Every entry's fields are those its kind's tests give (test/hosts/),
 * with the same key for every kind that takes one. A kind this checkout does not have is skipped by
 * the bench, with a line saying so: its entry is here so that a checkout that has it is measured.
 */
import { BEDROCK_TEST_CREDENTIALS } from '../../test/support/fakes/bedrock';

/** The variable every keyed host's `apiKeyEnv` names; its value is what the fake takes (any, for most). */
export const BENCH_KEY_ENV = 'BENCH_HOST_KEY';
export const BENCH_KEY = 'upstream-bench-key';

/** The bench's fake provider (./fake-host.ts): its address, and the key file of the service account its Google token endpoint trusts. */
export interface FakeHost {
  url: string;
  googleKeyFile: string;
}

export interface BenchKind {
  /** The host kind's name, as HOST_KIND_NAMES has it. */
  kind: string;
  /** The host model named: the fake answers any, in the kind's wire. */
  hostModel: string;
  /** The catalogue host entry named `id`, on the fake. */
  host(fake: FakeHost, id: string): Record<string, unknown>;
  /** Added to the gateway's environment (credentials the kind reads from it). */
  env?: Record<string, string>;
}

const keyed = { apiKeyEnv: BENCH_KEY_ENV };

/** In the order of the bench's tables: `openai`, the reference, first. */
export const BENCH_KINDS: readonly BenchKind[] = [
  { kind: 'openai', hostModel: 'gpt-4.1-mini', host: ({ url }, id) => ({ id, kind: 'openai', baseUrl: `${url}/v1`, ...keyed }) },
  {
    kind: 'anthropic',
    hostModel: 'claude-haiku-4-5',
    host: ({ url }, id) => ({ id, kind: 'anthropic', baseUrl: `${url}/v1`, ...keyed }),
  },
  {
    kind: 'openai-responses',
    hostModel: 'gpt-5-mini',
    host: ({ url }, id) => ({ id, kind: 'openai-responses', baseUrl: `${url}/v1`, ...keyed }),
  },
  // A deployment on the deployments route, its key in `api-key`.
  { kind: 'azure', hostModel: 'gpt-4o-mini', host: ({ url }, id) => ({ id, kind: 'azure', endpoint: url, ...keyed }) },
  {
    kind: 'gemini',
    hostModel: 'gemini-2.5-flash',
    host: ({ url }, id) => ({ id, kind: 'gemini', baseUrl: `${url}/v1beta`, ...keyed }),
  },
  // Claude on Vertex AI, a Google access token from the fake's token endpoint for the service account's key file.
  {
    kind: 'vertex',
    hostModel: 'claude-haiku-4-5@20251001',
    host: ({ url, googleKeyFile }, id) => ({
      id,
      kind: 'vertex',
      baseUrl: `${url}/v1/projects/bench-project/locations/us-east5`,
      project: 'bench-project',
      location: 'us-east5',
      credentialsFile: googleKeyFile,
    }),
  },
  // Converse, every call signed with SigV4 from AWS's credential chain (here the environment), no API key: the account the fake checks signatures of.
  {
    kind: 'bedrock',
    hostModel: 'anthropic.claude-3-5-haiku-20241022-v1:0',
    host: ({ url }, id) => ({ id, kind: 'bedrock', baseUrl: url, region: 'us-east-1' }),
    env: {
      AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
    },
  },
];
