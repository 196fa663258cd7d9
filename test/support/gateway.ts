import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app';
import { Catalogue } from '../../src/catalogue/catalogue';
import { loadConfig } from '../../src/config/config';
import { listenOn } from '../../src/http/http-adapter';
import { openRuntime, Runtime } from '../../src/runtime/runtime';
import { auditLedger, AuditReport } from '../../src/audit/ledger-audit';
import { operatorTool } from './operator-tool';
import { eventually } from './processes';
import { testRedisUrl } from './redis';
import { FakeUpstream, startFakeUpstream } from './fake-upstream';
import { fundedOrganization, openTestRuntime, TestRuntime } from './runtime';
import type { RequestLogEntry } from '../../src/projections/read-models';
import type { LogStream } from '../../src/observability/logging';
import { SecretScan } from './log-capture';
import { createKey } from './keys';
import type { RuntimeLog } from '../../src/runtime-log/runtime-log';

/** Test models, all served by the fake upstream. Prices in US dollars per million tokens. */
export const TEST_MODELS = {
  /** On an openai host: $1/M input, $2/M output; cache reads $0.25/M, cache writes (that some hosts report) $1.25/M. */
  gpt: {
    slug: 'test/gpt',
    id: '11111111-1111-4111-8111-111111111111',
    hostModel: 'fake-gpt',
    input: '1.00',
    output: '2.00',
    cacheRead: '0.25',
    cacheWrite: '1.25',
  },
  /** On an anthropic host: $3/M input, $15/M output; the cache's prices by default (reads $0.30, 5-minute writes $3.75, 1-hour $6). */
  claude: {
    slug: 'test/claude',
    id: '22222222-2222-4222-8222-222222222222',
    hostModel: 'fake-claude',
    input: '3.00',
    output: '15.00',
  },
  /** Two hosts: the first fails before output, the second serves at $0.50/M and $0.75/M. */
  fallback: {
    slug: 'test/fallback',
    id: '33333333-3333-4333-8333-333333333333',
    hostModel: 'fake-second',
    input: '0.50',
    output: '0.75',
  },
  /** Two anthropic hosts: the first (`fake-claude-first`) fails before output, the second serves as for `claude`. */
  claudeFallback: {
    slug: 'test/claude-fallback',
    id: '66666666-6666-4666-8666-666666666666',
    hostModel: 'fake-claude-second',
    input: '3.00',
    output: '15.00',
  },
  /** In the catalogue, but its one host's key variable is unset: no host can serve it. */
  unhosted: {
    slug: 'test/unhosted',
    id: '55555555-5555-4555-8555-555555555555',
    hostModel: 'fake-unhosted',
    input: '1.00',
    output: '1.00',
  },
  /** Two hosts: the first is down (nothing listens on its port), the second as for `fallback`. */
  fallbackAfterDownHost: {
    slug: 'test/fallback-down',
    id: '44444444-4444-4444-8444-444444444444',
    hostModel: 'fake-second',
    input: '0.50',
    output: '0.75',
  },
} as const;

/** Embedding models (`"kind": "embedding"`), priced by input only; served by the fake's /v1/embeddings. */
export const TEST_EMBEDDING_MODELS = {
  /** On an openai host: $0.13/M input. */
  embed: {
    slug: 'test/embed',
    id: '77777777-7777-4777-8777-777777777777',
    hostModel: 'fake-embed',
    input: '0.13',
  },
  /** Two hosts: the first (`fake-embed-first`, at $9/M) fails before answering, the second serves at $0.02/M. */
  embedFallback: {
    slug: 'test/embed-fallback',
    id: '88888888-8888-4888-8888-888888888888',
    firstHostModel: 'fake-embed-first',
    hostModel: 'fake-embed-second',
    input: '0.02',
  },
} as const;

type TestModel = (typeof TEST_MODELS)[keyof typeof TEST_MODELS];

/** A catalogue entry serving `model` on `host`, after a first host tried before it (at $9/M, so its price would show). */
function entry(model: TestModel, name: string, host: string, first?: { host: string; model: string }) {
  const { input, output } = model;
  const cache = 'cacheRead' in model ? { cacheRead: model.cacheRead, cacheWrite: model.cacheWrite } : {};
  const served = { host, model: model.hostModel, pricing: { input, output, ...cache } };
  return {
    slug: model.slug,
    id: model.id,
    name,
    // Room for the cache classes' tests (20,000 tokens read from the cache): a host's input count
    // above the context length (plus what was sent) is not believed.
    contextLength: 128_000,
    maxOutputTokens: 1000,
    // Reasoning asked for in another format's terms reaches its hosts translated.
    reasoning: true,
    hosts: first ? [{ ...first, pricing: { input: '9.00', output: '9.00' } }, served] : [served],
  };
}

/** The test catalogue's keys for its hosts, as a service's environment would give them. */
export const TEST_HOST_KEYS = {
  FAKE_OPENAI_KEY: 'upstream-openai-key',
  FAKE_ANTHROPIC_KEY: 'upstream-anthropic-key',
  // A Bedrock API key (test/support/fakes/bedrock.ts takes it).
  FAKE_BEDROCK_API_KEY: 'upstream-bedrock-api-key',
};

export function testCatalogue(fake: FakeUpstream): Catalogue {
  return Catalogue.parse(testCatalogueFile(fake), TEST_HOST_KEYS);
}

/**
 * The environment of the service run as its own process on `runtime`'s stores (plus `extra`), with
 * the test catalogue written beside its log for `fake`: any free port, no simulated host.
 */
export function serviceEnv(runtime: TestRuntime, fake: FakeUpstream, extra: Record<string, string> = {}): Record<string, string> {
  const catalogue = join(runtime.env.DATA_DIR, 'catalogue.json');
  writeFileSync(catalogue, JSON.stringify(testCatalogueFile(fake)));
  return {
    ...runtime.env,
    ...TEST_HOST_KEYS,
    PORT: '0',
    HOST: '127.0.0.1',
    CATALOGUE_PATH: catalogue,
    SIMULATED_HOST_PORT: 'off',
    ...extra,
  };
}

/**
 * A chat model of the test catalogue's file, served by one of its hosts (`fake-openai`,
 * `fake-anthropic`…) as `hostModel`, reasoning, with room for 8,000 output tokens.
 */
export const extraChatModel = (m: { slug: string; id: string; hostModel: string }, host: string, name: string) => ({
  slug: m.slug,
  id: m.id,
  name,
  contextLength: 128_000,
  maxOutputTokens: 8000,
  reasoning: true,
  hosts: [{ host, model: m.hostModel, pricing: { input: '3.00', output: '15.00' } }],
});

/** The test catalogue's file with `models` added (see extraChatModel), for startGateway's `catalogue`. */
/**
 * `test/gpt` as a model that does not reason (catalogue `reasoning: false`), on the same host model
 * and prices: a client leaving cuts its host call at once, where a reasoning model's is read to its
 * end for the host's count (hidden reasoning is charged all the same). Add it with testCatalogueWith.
 */
export const PLAIN_GPT = {
  slug: 'test/gpt-plain',
  id: '99999999-9999-4999-8999-999999999999',
  hostModel: TEST_MODELS.gpt.hostModel,
};
export const plainGptModel = () => {
  const { input, output, cacheRead, cacheWrite } = TEST_MODELS.gpt;
  return {
    slug: PLAIN_GPT.slug,
    id: PLAIN_GPT.id,
    name: 'Test GPT, not reasoning',
    contextLength: 128_000,
    maxOutputTokens: 1000,
    reasoning: false,
    hosts: [{ host: 'fake-openai', model: PLAIN_GPT.hostModel, pricing: { input, output, cacheRead, cacheWrite } }],
  };
};

export const testCatalogueWith =
  (...models: object[]) =>
  (fake: FakeUpstream) => {
    const file = testCatalogueFile(fake);
    return { ...file, models: [...file.models, ...models] };
  };

/** The test catalogue as its file holds it (for a service started as its own process, with TEST_HOST_KEYS in its environment). */
export function testCatalogueFile(fake: FakeUpstream) {
  const m = TEST_MODELS;
  const e = TEST_EMBEDDING_MODELS;
  return {
    // Each host is called once per request: a failure moves straight on (retries are tested on their own, test/routing/).
    hosts: [
      { id: 'fake-openai', kind: 'openai', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_OPENAI_KEY' },
      { id: 'fake-anthropic', kind: 'anthropic', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_ANTHROPIC_KEY' },
      { id: 'fake-flaky', kind: 'openai', baseUrl: `${fake.url}/v1` },
      { id: 'fake-anthropic-flaky', kind: 'anthropic', baseUrl: `${fake.url}/v1` },
      // Port 1: a privileged port nothing here listens on, so connecting is refused at once.
      { id: 'fake-down', kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1' },
      { id: 'fake-unkeyed', kind: 'openai', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_KEY_NOBODY_SET' },
    ].map((host) => ({ ...host, retry: { attempts: 0 } })),
    models: [
      entry(m.gpt, 'Test GPT', 'fake-openai'),
      entry(m.claude, 'Test Claude', 'fake-anthropic'),
      entry(m.fallback, 'Test fallback', 'fake-openai', { host: 'fake-flaky', model: 'fake-first' }),
      entry(m.claudeFallback, 'Test Claude fallback', 'fake-anthropic', {
        host: 'fake-anthropic-flaky',
        model: 'fake-claude-first',
      }),
      entry(m.unhosted, 'Test unhosted', 'fake-unkeyed'),
      entry(m.fallbackAfterDownHost, 'Test fallback after a down host', 'fake-openai', {
        host: 'fake-down',
        model: 'fake-unreachable',
      }),
      {
        slug: e.embed.slug,
        kind: 'embedding',
        id: e.embed.id,
        name: 'Test embedding',
        contextLength: 8192,
        hosts: [{ host: 'fake-openai', model: e.embed.hostModel, pricing: { input: e.embed.input } }],
      },
      {
        slug: e.embedFallback.slug,
        kind: 'embedding',
        id: e.embedFallback.id,
        name: 'Test embedding fallback',
        contextLength: 8192,
        hosts: [
          { host: 'fake-flaky', model: e.embedFallback.firstHostModel, pricing: { input: '9.00' } },
          { host: 'fake-openai', model: e.embedFallback.hostModel, pricing: { input: e.embedFallback.input } },
        ],
      },
    ],
  };
}

export interface OperatorAudit {
  clean: boolean;
  differences: string[];
  reservations: number;
  settlements: number;
  flaggedSettlements: number;
  interruptedSettlements: number;
  releases: number;
  expiries: number;
}

export interface TestGateway {
  baseUrl: string;
  app: NestFastifyApplication;
  fake: FakeUpstream;
  t: TestRuntime;
  orgId: string;
  key: string;
  keyId: string;
  /** Waits until no reservation or hold is left in any organization (every request settled). */
  settled(): Promise<void>;
  /** Waits until the organization's request log shows the request, and returns its entry. */
  logged(requestId: string): Promise<RequestLogEntry>;
  audit(): Promise<AuditReport>;
  /** `model-gateway --json ledger audit`, run as an operator would beside the serving gateway: its exit code and report. */
  auditWithOperatorTool(): Promise<{ code: number | null; report: OperatorAudit }>;
  close(): Promise<void>;
}

/**
 * The gateway on a free port, on a fresh log, with a funded organization and a key. With
 * `redis`, its read models are in Redis (when the tests have one), where another process (the
 * operator tool) sees them.
 */
export async function startGateway(
  options: {
    credits?: number;
    env?: Record<string, string>;
    redis?: boolean;
    sweep?: boolean;
    /** The gateway's log lines go here (none are written without it). */
    logStream?: LogStream;
    /** The runtime's own lines (the projector's) go here. */
    runtimeLog?: RuntimeLog;
    /** The clock spacing the sweeper's lines while sweeps fail. */
    sweepFailureClock?: () => number;
    /** The catalogue file served, given the fake (default: testCatalogueFile), read with TEST_HOST_KEYS. */
    catalogue?: (fake: FakeUpstream) => unknown;
    /**
     * The catalogue written to a file and read from it, as the service reads CATALOGUE_PATH: it has a
     * version, whose prices go into the log (CatalogueLoaded) for `ledger audit` to check settlements against.
     */
    versioned?: boolean;
    /** Key variables beside TEST_HOST_KEYS (a host kind's own credentials), kept out of the log as they are. */
    hostKeys?: Record<string, string>;
  } = {},
): Promise<TestGateway> {
  const hostKeys = { ...TEST_HOST_KEYS, ...options.hostKeys };
  const fake = await startFakeUpstream();
  const t = await openTestRuntime({
    redis: options.redis === true && testRedisUrl() !== null,
    sweep: options.sweep,
    env: { SIMULATED_HOST_PORT: 'off', ...options.env },
    log: options.runtimeLog,
    sweepFailureClock: options.sweepFailureClock,
  });
  // The log is searched for secrets (see SecretScan), checked at close; a stream of the test's own gets every line too.
  const scan = new SecretScan(Object.values(hostKeys));
  const own = options.logStream;
  const app = await createApp(t.runtime, {
    logger: false,
    logStream: own
      ? {
          write: (chunk: string) => {
            scan.write(chunk);
            own.write(chunk);
          },
        }
      : scan,
    catalogue: catalogueServed(options, fake, t, hostKeys),
  });
  await app.listen(listenOn(0, '127.0.0.1'));
  const address = app.getHttpServer().address() as { port: number };
  const orgId = await fundedOrganization(t.runtime, options.credits ?? 100_000_000_000);
  const { secret, keyId } = await createKey(t.runtime, orgId, 'tests');
  await t.runtime.projector.catchUp();
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    app,
    fake,
    t,
    orgId,
    key: secret,
    keyId,
    settled: () =>
      eventually(async () => {
        await t.runtime.projector.catchUp();
        for (const id of (await t.runtime.projections.ledgers()).keys()) {
          const b = await t.runtime.projections.balance(id);
          if (b.reserved !== 0 || b.pending !== 0) return false;
        }
        return true;
        // Well past the holds that end by expiring (a suite's reservations of 2.5 s): a fresh-clone CI run
        // with a worker per core missed 5 s once, the other worker's suites sharing the cores.
      }, 15_000),
    logged: async (requestId) => {
      let entry: RequestLogEntry | undefined;
      await eventually(async () => {
        await t.runtime.projector.catchUp();
        entry = (await t.runtime.projections.recentRequests(orgId, 50)).find((e) => e.requestId === requestId);
        return entry !== undefined;
      }, 15_000);
      return entry!;
    },
    audit: async () => {
      await t.runtime.projector.catchUp();
      return auditLedger(t.runtime.events, t.runtime.projections);
    },
    auditWithOperatorTool: async () => {
      const run = await operatorTool(t.env, ['--json', 'ledger', 'audit']);
      try {
        return { code: run.code, report: JSON.parse(run.stdout) as OperatorAudit };
      } catch {
        throw new Error(`ledger audit printed no report (exit ${run.code}): ${run.stdout}${run.stderr}`);
      }
    },
    close: async () => {
      await app.close();
      await fake.close();
      await t.cleanup();
      if (scan.leaks.length > 0) throw new Error(`secrets in the gateway's log:\n${scan.leaks.join('')}`);
    },
  };
}

/** What startGateway serves: the catalogue asked for (the test catalogue by default), from a file when `versioned`. */
function catalogueServed(
  options: { catalogue?: (fake: FakeUpstream) => unknown; versioned?: boolean },
  fake: FakeUpstream,
  t: TestRuntime,
  hostKeys: Record<string, string>,
): Catalogue {
  const json = options.catalogue ? options.catalogue(fake) : testCatalogueFile(fake);
  if (!options.versioned) return options.catalogue ? Catalogue.parse(json, hostKeys) : testCatalogue(fake);
  const path = join(t.env.DATA_DIR, 'catalogue.json');
  writeFileSync(path, JSON.stringify(json));
  return Catalogue.load(path, hostKeys);
}

/**
 * Once every request has settled, the operator tool's audit must find the ledger clean; the
 * gateway is closed whatever it finds. Returns the report for further checks.
 */
export async function auditThenClose(g: TestGateway): Promise<OperatorAudit> {
  try {
    await g.settled();
    const { code, report } = await g.auditWithOperatorTool();
    expect(report.differences).toEqual([]);
    expect(report.clean).toBe(true);
    expect(code).toBe(0);
    return report;
  } finally {
    await g.close();
  }
}

/** A second instance beside a test gateway: its own runtime, read models and HTTP server, on the same log and Redis. */
export interface OtherInstance {
  url: string;
  runtime: Runtime;
  close(): Promise<void>;
}

/** `catalogue`: the file served, given the fake (default: testCatalogueFile), as startGateway takes it. */
export async function startOtherInstance(
  g: TestGateway,
  options: { catalogue?: (fake: FakeUpstream) => unknown } = {},
): Promise<OtherInstance> {
  const runtime = await openRuntime(loadConfig(g.t.env));
  const catalogue = options.catalogue ? Catalogue.parse(options.catalogue(g.fake), TEST_HOST_KEYS) : testCatalogue(g.fake);
  const app = await createApp(runtime, { logger: false, catalogue });
  await app.listen(listenOn(0, '127.0.0.1'));
  return {
    url: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`,
    runtime,
    close: async () => {
      await app.close();
      await runtime.close();
    },
  };
}
