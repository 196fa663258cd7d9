// Models on the host kinds beyond `openai` and `anthropic` (gemini, bedrock, azure, openai-responses),
// added to the test catalogue so that a spec's clients and agents can be served by them on the fake
// upstream, unmodified: what each kind's host must receive (its path and its credentials), the usage
// its fake reports, and the charge that usage makes at the catalogue's prices, worked out by hand.
import type { ReservationSettled } from '../../src/ledger/ledger.events';
import type { FakeUpstream, FakeUsage, ReceivedRequest } from './fake-upstream';
import { BEDROCK_TEST_CREDENTIALS } from './fakes/bedrock';
import { testCatalogueFile, type TestGateway } from './gateway';

/** The new kinds' keys, each its own so that a test sees the right one reach the right host. */
export const NEW_KIND_KEYS = {
  FAKE_GEMINI_KEY: 'upstream-gemini-key',
  FAKE_AZURE_KEY: 'upstream-azure-key',
  FAKE_RESPONSES_KEY: 'upstream-responses-key',
};

/** The AWS credentials of the gateway's process (AWS's chain reads them from its environment): the fake's account. */
export const AWS_TEST_ENV = {
  AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
  AWS_SESSION_TOKEN: 'fake-bedrock-session-token',
};

/** Gives this test file's process the AWS credentials (each file has its own environment); returns the undo. */
export function useAwsTestCredentials(): () => void {
  const saved: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(AWS_TEST_ENV)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  return () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

export interface NewKindModel {
  slug: string;
  id: string;
  /** The host model (a deployment on azure), as the fake keys its behaviours. */
  hostModel: string;
  host: string;
  /** The catalogue's prices, in US dollars per million tokens. */
  pricing: Record<string, string>;
  /** What the fake reports for every call to this model. */
  usage: FakeUsage;
  /** The tokens billed of that usage, by class, as the settlement names them. */
  billed: {
    inputTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
    cacheWrite1hTokens: number;
    outputTokens: number;
  };
  /** ceil(Σ tokens × price / 1e6) in nano-credits ($1 = 1e9), worked out in the comment beside it. */
  charge: number;
  /** Whether a request the host received is in the kind's own wire: its path and its credentials. */
  wire: { path: RegExp; headers: Record<string, string | RegExp> };
}

const ANTHROPIC_PRICES = { input: '3.00', cacheRead: '0.30', cacheWrite: '3.75', cacheWrite1h: '6.00', output: '15.00' };
/** Every class an Anthropic model reports: uncached input, cache reads, 5-minute and 1-hour writes, output. */
const ANTHROPIC_USAGE: FakeUsage = { input: 1500, cacheRead: 4000, cacheWrite: 300, cacheWrite1h: 200, output: 40 };
const ANTHROPIC_BILLED = {
  inputTokens: 1500,
  cacheReadTokens: 4000,
  cacheWriteTokens: 300,
  cacheWrite1hTokens: 200,
  outputTokens: 40,
};
// 1500 × 3,000 + 4000 × 300 + 300 × 3,750 + 200 × 6,000 + 40 × 15,000 (nano-credits a token)
// = 4,500,000 + 1,200,000 + 1,125,000 + 1,200,000 + 600,000
const ANTHROPIC_CHARGE = 8_625_000;
/** A SigV4 signature by the fake's account, with the session token (the fake recomputes it with AWS's signer). */
const SIGNED = {
  authorization: new RegExp(
    `^AWS4-HMAC-SHA256 Credential=${BEDROCK_TEST_CREDENTIALS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request, `,
  ),
  'x-amz-security-token': AWS_TEST_ENV.AWS_SESSION_TOKEN,
};
/** OpenAI's classes: cached input within the prompt, reasoning within the output. */
const OPENAI_USAGE: FakeUsage = { input: 1800, cacheRead: 1024, output: 40, reasoning: 8 };
const OPENAI_BILLED = { inputTokens: 1800, cacheReadTokens: 1024, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 40 };

export const NEW_KIND_MODELS = {
  /** On a `gemini` host: $1.25/M input, $0.3125/M cached, $10/M output (thoughts included). */
  gemini: {
    slug: 'test/on-gemini',
    id: 'd0000000-0000-4000-8000-000000000001',
    hostModel: 'fake-gemini-agents',
    host: 'fake-gemini',
    pricing: { input: '1.25', cacheRead: '0.3125', output: '10.00' },
    usage: { input: 2000, cacheRead: 500, output: 40, reasoning: 10 },
    billed: { inputTokens: 2000, cacheReadTokens: 500, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 40 },
    // 2000 × 1,250 + 500 × 312.5 + 40 × 10,000 = 2,500,000 + 156,250 + 400,000
    charge: 3_056_250,
    wire: {
      path: /^\/v1beta\/models\/fake-gemini-agents:(generateContent|streamGenerateContent)$/,
      headers: { 'x-goog-api-key': NEW_KIND_KEYS.FAKE_GEMINI_KEY },
    },
  },
  /** On a `bedrock` host with `api: "invoke"` (Anthropic's body whole), SigV4-signed; Anthropic's prices. */
  bedrockInvoke: {
    slug: 'test/on-bedrock-invoke',
    id: 'd0000000-0000-4000-8000-000000000002',
    hostModel: 'anthropic.claude-agents-v1:0',
    host: 'fake-bedrock-invoke',
    pricing: ANTHROPIC_PRICES,
    usage: ANTHROPIC_USAGE,
    billed: ANTHROPIC_BILLED,
    charge: ANTHROPIC_CHARGE,
    wire: { path: /^\/model\/anthropic\.claude-agents-v1(:|%3A)0\/(invoke|invoke-with-response-stream)$/, headers: SIGNED },
  },
  /** On a `bedrock` host with the Converse API, SigV4-signed; Anthropic's prices. */
  bedrockConverse: {
    slug: 'test/on-bedrock',
    id: 'd0000000-0000-4000-8000-000000000003',
    hostModel: 'us.anthropic.claude-agents-v1:0',
    host: 'fake-bedrock',
    pricing: ANTHROPIC_PRICES,
    usage: ANTHROPIC_USAGE,
    billed: ANTHROPIC_BILLED,
    charge: ANTHROPIC_CHARGE,
    wire: { path: /^\/model\/us\.anthropic\.claude-agents-v1(:|%3A)0\/(converse|converse-stream)$/, headers: SIGNED },
  },
  /** A deployment on an `azure` host's dated route (chat completions, `api-key`): $2/M input, $0.50/M cached, $8/M output. */
  azure: {
    slug: 'test/on-azure',
    id: 'd0000000-0000-4000-8000-000000000004',
    hostModel: 'gpt-agents-prod',
    host: 'fake-azure',
    pricing: { input: '2.00', cacheRead: '0.50', output: '8.00' },
    usage: OPENAI_USAGE,
    billed: OPENAI_BILLED,
    // 1800 × 2,000 + 1024 × 500 + 40 × 8,000 = 3,600,000 + 512,000 + 320,000
    charge: 4_432_000,
    wire: {
      path: /^\/openai\/deployments\/gpt-agents-prod\/chat\/completions$/,
      headers: { 'api-key': NEW_KIND_KEYS.FAKE_AZURE_KEY },
    },
  },
  /** A deployment on an `azure` host's v1 route, Responses API (`api-key`): $1.10/M input, $0.275/M cached, $4.40/M output. */
  azureResponses: {
    slug: 'test/on-azure-responses',
    id: 'd0000000-0000-4000-8000-000000000005',
    hostModel: 'o4-agents-prod',
    host: 'fake-azure-v1',
    pricing: { input: '1.10', cacheRead: '0.275', output: '4.40' },
    usage: OPENAI_USAGE,
    billed: OPENAI_BILLED,
    // 1800 × 1,100 + 1024 × 275 + 40 × 4,400 = 1,980,000 + 281,600 + 176,000
    charge: 2_437_600,
    wire: { path: /^\/openai\/v1\/responses$/, headers: { 'api-key': NEW_KIND_KEYS.FAKE_AZURE_KEY } },
  },
  /** On an `openai-responses` host (Bearer): $1.25/M input, $0.125/M cached, $10/M output. */
  responses: {
    slug: 'test/on-responses',
    id: 'd0000000-0000-4000-8000-000000000006',
    hostModel: 'fake-responses-agents',
    host: 'fake-responses',
    pricing: { input: '1.25', cacheRead: '0.125', output: '10.00' },
    usage: OPENAI_USAGE,
    billed: OPENAI_BILLED,
    // 1800 × 1,250 + 1024 × 125 + 40 × 10,000 = 2,250,000 + 128,000 + 400,000
    charge: 2_778_000,
    wire: { path: /^\/v1\/responses$/, headers: { authorization: `Bearer ${NEW_KIND_KEYS.FAKE_RESPONSES_KEY}` } },
  },
} satisfies Record<string, NewKindModel>;

/** The test catalogue with a host of each new kind on the fake, and NEW_KIND_MODELS on them (start the gateway with NEW_KIND_KEYS). */
export function catalogueWithNewKinds(fake: FakeUpstream) {
  const file = testCatalogueFile(fake);
  const bedrock = (id: string, extra: object = {}) => ({ id, kind: 'bedrock', baseUrl: fake.url, region: 'us-east-1', ...extra });
  // The fake's Azure paths are at its root, as on a resource's endpoint.
  const azure = (id: string, extra: object = {}) => ({
    id,
    kind: 'azure',
    endpoint: fake.url,
    apiKeyEnv: 'FAKE_AZURE_KEY',
    ...extra,
  });
  return {
    hosts: [
      ...file.hosts,
      { id: 'fake-gemini', kind: 'gemini', baseUrl: `${fake.url}/v1beta`, apiKeyEnv: 'FAKE_GEMINI_KEY' },
      bedrock('fake-bedrock'),
      bedrock('fake-bedrock-invoke', { api: 'invoke' }),
      azure('fake-azure', { apiVersion: '2024-10-21' }),
      azure('fake-azure-v1', { route: 'v1', api: 'responses' }),
      { id: 'fake-responses', kind: 'openai-responses', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_RESPONSES_KEY' },
    ],
    models: [
      ...file.models,
      ...Object.values(NEW_KIND_MODELS).map((m: NewKindModel) => ({
        slug: m.slug,
        id: m.id,
        name: m.slug,
        contextLength: 200_000,
        maxOutputTokens: 1000,
        reasoning: true,
        hosts: [{ host: m.host, model: m.hostModel, pricing: m.pricing }],
      })),
    ],
  };
}

/** The gateway options that serve NEW_KIND_MODELS on the fake. */
export const withNewKinds = { catalogue: catalogueWithNewKinds, hostKeys: NEW_KIND_KEYS };

/** The model a request names: in its path (Bedrock, Gemini, Azure's deployments route), else in its body. */
const modelOf = (r: ReceivedRequest): unknown =>
  r.model ?? /^\/openai\/deployments\/([^/]+)\//.exec(r.path)?.[1] ?? r.body?.model;

/** The requests the fake received for a model since `before` (an index into its requests). */
export const receivedFor = (g: TestGateway, model: NewKindModel, before = 0): ReceivedRequest[] =>
  g.fake.requests.slice(before).filter((r) => modelOf(r) === model.hostModel);

/**
 * That every request the fake received for `model` since `before` was in the kind's own wire, and
 * that each was settled at exactly the charge the fake's usage makes at the catalogue's prices, none
 * flagged. Returns those requests.
 */
export async function expectServedAndBilled(g: TestGateway, model: NewKindModel, before: number): Promise<ReceivedRequest[]> {
  const received = receivedFor(g, model, before);
  expect(received.length).toBeGreaterThan(0);
  for (const request of received) {
    expect(request.path).toMatch(model.wire.path);
    for (const [name, value] of Object.entries(model.wire.headers)) {
      if (typeof value === 'string') expect(request.headers[name]).toBe(value);
      else expect(request.headers[name]).toMatch(value);
    }
  }
  await g.settled();
  await g.t.runtime.projector.catchUp();
  const settlements = (await g.t.runtime.events.readAll(0, 1_000_000))
    .filter((e) => e.type === 'ReservationSettled')
    .map((e) => e.data as ReservationSettled['data'])
    .filter((d) => d.hostModel === model.hostModel);
  // Every call the model's host was ever sent in this file is settled, each at the one charge its usage makes.
  expect(settlements).toHaveLength(receivedFor(g, model).length);
  for (const settled of settlements) {
    expect(settled).toMatchObject({ status: 'ok', host: model.host, ...model.billed, amount: model.charge });
    expect(settled.usageFlag).toBeUndefined();
  }
  return received;
}

/**
 * The tool results a request carries, in whichever wire it is: chat completions' `tool` messages,
 * messages' `tool_result` blocks, Responses' `function_call_output` items, Converse's `toolResult`
 * blocks, Gemini's `functionResponse` parts. Each as text (a structured result as its JSON).
 */
export function toolResultsIn(request: ReceivedRequest): string[] {
  const text = (content: unknown): string => (typeof content === 'string' ? content : JSON.stringify(content));
  const body = request.body as Record<string, any>;
  const results: string[] = [];
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    if (m.role === 'tool') results.push(text(m.content));
    for (const block of Array.isArray(m.content) ? m.content : []) {
      if (block?.type === 'tool_result') results.push(text(block.content));
      if (block?.toolResult) results.push(text(block.toolResult.content));
    }
  }
  for (const item of Array.isArray(body.input) ? body.input : [])
    if (item?.type === 'function_call_output') results.push(text(item.output));
  for (const turn of Array.isArray(body.contents) ? body.contents : [])
    for (const part of Array.isArray(turn?.parts) ? turn.parts : [])
      if (part?.functionResponse) results.push(text(part.functionResponse.response));
  return results;
}
