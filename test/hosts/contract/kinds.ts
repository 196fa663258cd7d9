import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostKindName } from '../../../src/hosts/hosts';
import { testServiceAccount } from '../../support/fakes/google-oauth';
import { tempDir } from '../../support/temp';
import type { FakeUpstream, FakeUsage, ReceivedRequest } from '../../support/fake-upstream';
import { BEDROCK_TEST_CREDENTIALS } from '../../support/fakes/bedrock';
import { TEST_HOST_KEYS } from '../../support/gateway';

/** The AWS credentials a gateway signing Bedrock calls has, read by AWS's chain from its environment. */
const BEDROCK_AWS_ENV = {
  AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
};

/**
 * The host kinds the contract suite (host-contract.spec.ts) runs against, one entry each: how a
 * catalogue host of the kind reaches the fake upstream, its prices, the token classes it reports,
 * what it supports, and how to read what the fake received in the kind's wire. Adding a kind is
 * adding its entry here (and its routes to the fake).
 */

/** A catalogue's `pricing`: US dollars per million tokens of each class the kind reports. */
export interface ListPrices {
  input: string;
  output: string;
  cacheRead?: string;
  cacheWrite?: string;
  cacheWrite1h?: string;
}

/** What a kind needs set up before the gateway starts (a token server, a credential file), and taken down after. */
export interface KindFixture {
  /** Fields every catalogue host of the kind gets (a credential file, a token URI…). */
  hostFields?: Record<string, unknown>;
  /** Key variables the catalogue reads beside TEST_HOST_KEYS; the gateway's log is searched for their values. */
  hostKeys?: Record<string, string>;
  close(): Promise<void>;
}

/** A request body in the kind's wire, as the fake received it (any JSON). */
type Body = any;

export interface ContractKind {
  kind: HostKindName;
  /** A catalogue host of this kind named `id`, on the fake. */
  host(fake: FakeUpstream, id: string): Record<string, unknown>;
  /**
   * The host model a call names, as the fake received it: the body's `model` when this is absent.
   * A kind whose route names the model (`…/models/{model}:generateContent`) reads it from the path,
   * and the fake keys its behaviours (`on(model, …)`) the same way.
   */
  modelOf?: (request: ReceivedRequest) => string | undefined;
  /** The host's name for a contract model, when the kind reads something from it (Bedrock: an Anthropic model id takes thinking). */
  hostModel?: (name: string) => string;
  /** The fake's path for a call on `hostModel`. */
  path(hostModel: string, stream: boolean): string;
  /** The call carries the host's credentials, as the kind sends them. */
  authorized(request: ReceivedRequest): boolean;
  prices: ListPrices;
  /** Every token class the kind reports (as the fake's usage), each a count that makes the rounding up show. */
  usage: FakeUsage;
  /** A usage object in the kind's own fields, with its input and output counts written as given (JSON text). */
  wireUsage(input: string, output: string): string;
  supports: { images: boolean; reasoning: boolean; tools: boolean };
  /** The host sends each call whole (Gemini): its arguments reach a streamed client in one piece, not several. */
  wholeCalls?: true;
  /** What the host was sent, read from its body: the output cap, the tools offered (names), the images (data URLs), whether reasoning was asked for. */
  sent: {
    cap(body: Body): unknown;
    tools(body: Body): string[];
    images(body: Body): string[];
    reasoning(body: Body): boolean;
  };
  /** Set-up of the kind's own, before the gateway starts. */
  setup?(): Promise<KindFixture>;
}

const bearer = (key: string) => (r: ReceivedRequest) => r.headers.authorization === `Bearer ${key}`;

/** Where the vertex entry's service-account key files are written (its setup makes it, its close removes it). */
let vertexKeys: ReturnType<typeof tempDir> | null = null;

/** Content parts of the messages of a chat-completions or Responses body, whatever their shape. */
const partsOf = (messages: unknown): Body[] =>
  Array.isArray(messages) ? messages.flatMap((m: Body) => (Array.isArray(m?.content) ? m.content : [])) : [];

export const CONTRACT_KINDS: ContractKind[] = [
  {
    kind: 'openai',
    host: (fake, id) => ({ id, kind: 'openai', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_OPENAI_KEY' }),
    path: () => '/v1/chat/completions',
    authorized: bearer(TEST_HOST_KEYS.FAKE_OPENAI_KEY),
    // A compatible host's cache writes at a price of four decimals: the sum is no whole nano-credit until rounded up.
    prices: { input: '0.15', cacheRead: '0.075', cacheWrite: '0.1875', output: '0.60' },
    usage: { input: 1_237, cacheRead: 20_011, cacheWrite: 3_003, output: 523, reasoning: 211 },
    wireUsage: (input, output) => `{"prompt_tokens":${input},"completion_tokens":${output},"total_tokens":18}`,
    supports: { images: true, reasoning: true, tools: true },
    sent: {
      cap: (body) => body.max_completion_tokens ?? body.max_tokens,
      tools: (body) => (body.tools ?? []).map((t: Body) => t.function.name),
      images: (body) =>
        partsOf(body.messages)
          .filter((p) => p.type === 'image_url')
          .map((p) => p.image_url.url),
      reasoning: (body) => typeof body.reasoning_effort === 'string',
    },
  },
  {
    kind: 'anthropic',
    host: (fake, id) => ({ id, kind: 'anthropic', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_ANTHROPIC_KEY' }),
    path: () => '/v1/messages',
    authorized: (r) =>
      r.headers['x-api-key'] === TEST_HOST_KEYS.FAKE_ANTHROPIC_KEY && r.headers['anthropic-version'] === '2023-06-01',
    // Claude Haiku 4.5's list prices, the 1-hour writes at four decimals so that the rounding up shows.
    prices: { input: '1.00', cacheRead: '0.10', cacheWrite: '1.25', cacheWrite1h: '2.0001', output: '5.00' },
    usage: { input: 1_237, cacheRead: 20_011, cacheWrite: 3_003, cacheWrite1h: 1_009, output: 523 },
    wireUsage: (input, output) =>
      `{"input_tokens":${input},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":${output}}`,
    supports: { images: true, reasoning: true, tools: true },
    sent: {
      cap: (body) => body.max_tokens,
      tools: (body) => (body.tools ?? []).map((t: Body) => t.name),
      images: (body) =>
        partsOf(body.messages)
          .filter((b) => b.type === 'image')
          .map((b) => (b.source.type === 'base64' ? `data:${b.source.media_type};base64,${b.source.data}` : b.source.url)),
      reasoning: (body) => body.thinking?.type === 'enabled',
    },
  },
  {
    kind: 'openai-responses',
    host: (fake, id) => ({ id, kind: 'openai-responses', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_OPENAI_KEY' }),
    path: () => '/v1/responses',
    authorized: bearer(TEST_HOST_KEYS.FAKE_OPENAI_KEY),
    // GPT-5's list prices, but cached input at four decimals so that the rounding up shows, and the
    // cache's writes (`cache_write_tokens`) at a price of their own, as a catalogue entry may give (four decimals too).
    prices: { input: '1.25', cacheRead: '0.1255', cacheWrite: '1.5626', output: '10.00' },
    usage: { input: 1_237, cacheRead: 20_011, cacheWrite: 3_003, output: 523, reasoning: 211 },
    wireUsage: (input, output) =>
      `{"input_tokens":${input},"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":${output},"output_tokens_details":{"reasoning_tokens":0},"total_tokens":18}`,
    supports: { images: true, reasoning: true, tools: true },
    sent: {
      cap: (body) => body.max_output_tokens,
      tools: (body) => (body.tools ?? []).map((t: Body) => t.name),
      images: (body) =>
        partsOf(body.input)
          .filter((p) => p.type === 'input_image')
          .map((p) => p.image_url),
      reasoning: (body) => typeof body.reasoning?.effort === 'string',
    },
  },
  {
    kind: 'azure',
    // A deployment on the deployments route, its key in `api-key` (never a bearer).
    host: (fake, id) => ({ id, kind: 'azure', endpoint: fake.url, apiKeyEnv: 'FAKE_OPENAI_KEY' }),
    path: (hostModel) => `/openai/deployments/${hostModel}/chat/completions`,
    authorized: (r) => r.headers['api-key'] === TEST_HOST_KEYS.FAKE_OPENAI_KEY && r.headers.authorization === undefined,
    prices: { input: '2.00', cacheRead: '0.50001', output: '8.00' },
    usage: { input: 1_237, cacheRead: 20_011, output: 523, reasoning: 211 },
    wireUsage: (input, output) => `{"prompt_tokens":${input},"completion_tokens":${output},"total_tokens":18}`,
    supports: { images: true, reasoning: true, tools: true },
    sent: {
      cap: (body) => body.max_completion_tokens ?? body.max_tokens,
      tools: (body) => (body.tools ?? []).map((t: Body) => t.function.name),
      images: (body) =>
        partsOf(body.messages)
          .filter((p) => p.type === 'image_url')
          .map((p) => p.image_url.url),
      reasoning: (body) => typeof body.reasoning_effort === 'string',
    },
  },
  {
    kind: 'bedrock',
    // Converse on an Anthropic model id (which takes thinking), every call signed with SigV4: the fake checks each signature.
    host: (fake, id) => ({ id, kind: 'bedrock', baseUrl: fake.url, region: 'us-east-1' }),
    hostModel: (name) => `us.anthropic.${name}-v1:0`,
    modelOf: (r) => r.model,
    path: (hostModel, stream) => `/model/${encodeURIComponent(hostModel)}/${stream ? 'converse-stream' : 'converse'}`,
    authorized: (r) => /^AWS4-HMAC-SHA256 Credential=/.test(String(r.headers.authorization)),
    prices: { input: '3.00', cacheRead: '0.30001', cacheWrite: '3.75', cacheWrite1h: '6.00', output: '15.00' },
    usage: { input: 1_237, cacheRead: 20_011, cacheWrite: 3_003, cacheWrite1h: 1_001, output: 523 },
    wireUsage: (input, output) => `{"inputTokens":${input},"outputTokens":${output},"totalTokens":18}`,
    supports: { images: true, reasoning: true, tools: true },
    sent: {
      cap: (body) => body.inferenceConfig?.maxTokens,
      tools: (body) => (body.toolConfig?.tools ?? []).map((t: Body) => t.toolSpec.name),
      images: (body) =>
        (body.messages ?? [])
          .flatMap((m: Body) => m.content ?? [])
          .filter((c: Body) => c.image)
          .map((c: Body) => `data:image/${c.image.format};base64,${c.image.source.bytes}`),
      reasoning: (body) => body.additionalModelRequestFields?.thinking?.type === 'enabled',
    },
    setup: async () => {
      // The gateway runs in this process: AWS's chain reads the credentials from its environment.
      const before = Object.fromEntries(Object.keys(BEDROCK_AWS_ENV).map((name) => [name, process.env[name]]));
      Object.assign(process.env, BEDROCK_AWS_ENV);
      return {
        hostKeys: { ...BEDROCK_AWS_ENV },
        close: async () => {
          for (const [name, value] of Object.entries(before))
            if (value === undefined) delete process.env[name];
            else process.env[name] = value;
        },
      };
    },
  },
  {
    kind: 'gemini',
    host: (fake, id) => ({ id, kind: 'gemini', baseUrl: `${fake.url}/v1beta`, apiKeyEnv: 'FAKE_OPENAI_KEY' }),
    // The route names the model; the fake keys its behaviours by it.
    modelOf: (r) => r.model,
    path: (hostModel, stream) => `/v1beta/models/${hostModel}:${stream ? 'streamGenerateContent' : 'generateContent'}`,
    authorized: (r) => r.headers['x-goog-api-key'] === TEST_HOST_KEYS.FAKE_OPENAI_KEY && r.headers.authorization === undefined,
    // Gemini 2.5 Flash's list prices, but cached input at four decimals so that the rounding up shows.
    prices: { input: '0.30', cacheRead: '0.0301', output: '2.50' },
    usage: { input: 1_237, cacheRead: 20_011, output: 523, reasoning: 211 },
    wireUsage: (input, output) => `{"promptTokenCount":${input},"candidatesTokenCount":${output},"totalTokenCount":18}`,
    supports: { images: true, reasoning: true, tools: true },
    wholeCalls: true,
    sent: {
      cap: (body) => body.generationConfig?.maxOutputTokens,
      tools: (body) => (body.tools ?? []).flatMap((t: Body) => (t.functionDeclarations ?? []).map((f: Body) => f.name)),
      images: (body) =>
        (body.contents ?? [])
          .flatMap((c: Body) => c.parts ?? [])
          .filter((p: Body) => p.inlineData)
          .map((p: Body) => `data:${p.inlineData.mimeType};base64,${p.inlineData.data}`),
      reasoning: (body) => body.generationConfig?.thinkingConfig?.includeThoughts === true,
    },
  },
];

/** A vertex host on the fake: its service account trusted by the fake's token endpoint, its key file written for it. */
function vertexHost(fake: FakeUpstream, id: string): Record<string, unknown> {
  const { key, publicKey } = testServiceAccount(`${fake.url}/token`, `${id}@contract-project.iam.gserviceaccount.com`);
  fake.googleOAuth.trust(key.client_email, publicKey);
  const credentialsFile = join(vertexKeys!.path, `${id}.json`);
  writeFileSync(credentialsFile, JSON.stringify(key));
  return {
    id,
    kind: 'vertex',
    baseUrl: `${fake.url}/v1/projects/contract-project/locations/us-east5`,
    project: 'contract-project',
    location: 'us-east5',
    credentialsFile,
  };
}

const VERTEX_METHODS = {
  anthropic: { whole: 'rawPredict', stream: 'streamRawPredict' },
  google: { whole: 'generateContent', stream: 'streamGenerateContent' },
};

/**
 * Vertex AI serving a publisher's models (Claude: Anthropic's; Gemini: Google's), each in its wire:
 * the kind that speaks that wire lends the entry its usage and its readers of what was sent. The
 * publisher is told by the model's name, as Google names its models; every call carries a token the
 * fake's endpoint issued to the host's service account (the fake refuses any other), never a key.
 */
function vertexEntry(publisher: 'anthropic' | 'google', wire: ContractKind, prices: ListPrices): ContractKind {
  const methods = VERTEX_METHODS[publisher];
  return {
    ...wire,
    kind: 'vertex',
    host: vertexHost,
    hostModel: (name) => (publisher === 'anthropic' ? `claude-${name}@20250929` : `gemini-${name}`),
    modelOf: (r) => r.model,
    path: (hostModel, stream) =>
      `/v1/projects/contract-project/locations/us-east5/publishers/${publisher}/models/${hostModel}:${stream ? methods.stream : methods.whole}`,
    authorized: (r) =>
      /^Bearer ya29\.fake-/.test(r.headers.authorization ?? '') &&
      r.headers['x-api-key'] === undefined &&
      r.headers['x-goog-api-key'] === undefined,
    prices,
    async setup() {
      vertexKeys = tempDir('contract-vertex');
      return {
        close: async () => {
          vertexKeys?.cleanup();
          vertexKeys = null;
        },
      };
    },
  };
}

const wireOf = (kind: HostKindName) => CONTRACT_KINDS.find((k) => k.kind === kind)!;

CONTRACT_KINDS.push(
  // Claude Sonnet 4.5's list prices on the global endpoint, the 1-hour writes at four decimals so that the rounding up shows.
  vertexEntry('anthropic', wireOf('anthropic'), {
    input: '3.00',
    cacheRead: '0.30',
    cacheWrite: '3.75',
    cacheWrite1h: '6.0001',
    output: '15.00',
  }),
  // Gemini 2.5 Pro's (up to 200,000 input tokens), cached input at four decimals so that the rounding up shows.
  vertexEntry('google', wireOf('gemini'), { input: '1.25', cacheRead: '0.1251', output: '10.00' }),
);
