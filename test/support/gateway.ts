import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app';
import { Catalogue } from '../../src/catalogue/catalogue';
import { auditLedger, AuditReport } from '../../src/audit/ledger-audit';
import { eventually } from './processes';
import { FakeUpstream, startFakeUpstream } from './fake-upstream';
import { fundedOrganization, openTestRuntime, TestRuntime } from './runtime';

/** Test models, all served by the fake upstream. Prices in US dollars per million tokens. */
export const TEST_MODELS = {
  /** On an openai host: $1/M input, $2/M output. */
  gpt: { slug: 'test/gpt', id: '11111111-1111-4111-8111-111111111111', hostModel: 'fake-gpt', input: '1.00', output: '2.00' },
  /** On an anthropic host: $3/M input, $15/M output. */
  claude: { slug: 'test/claude', id: '22222222-2222-4222-8222-222222222222', hostModel: 'fake-claude', input: '3.00', output: '15.00' },
  /** Two hosts: the first fails before output, the second serves at $0.50/M and $0.75/M. */
  fallback: { slug: 'test/fallback', id: '33333333-3333-4333-8333-333333333333', hostModel: 'fake-second', input: '0.50', output: '0.75' },
} as const;

export function testCatalogue(fake: FakeUpstream): Catalogue {
  const m = TEST_MODELS;
  return Catalogue.parse(
    {
      hosts: [
        { id: 'fake-openai', kind: 'openai', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_OPENAI_KEY' },
        { id: 'fake-anthropic', kind: 'anthropic', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_ANTHROPIC_KEY' },
        { id: 'fake-flaky', kind: 'openai', baseUrl: `${fake.url}/v1` },
      ],
      models: [
        { slug: m.gpt.slug, id: m.gpt.id, name: 'Test GPT', contextLength: 8192, maxOutputTokens: 1000, hosts: [{ host: 'fake-openai', model: m.gpt.hostModel, pricing: { input: m.gpt.input, output: m.gpt.output } }] },
        { slug: m.claude.slug, id: m.claude.id, name: 'Test Claude', contextLength: 8192, maxOutputTokens: 1000, hosts: [{ host: 'fake-anthropic', model: m.claude.hostModel, pricing: { input: m.claude.input, output: m.claude.output } }] },
        {
          slug: m.fallback.slug,
          id: m.fallback.id,
          name: 'Test fallback',
          contextLength: 8192,
          maxOutputTokens: 1000,
          hosts: [
            { host: 'fake-flaky', model: 'fake-first', pricing: { input: '9.00', output: '9.00' } },
            { host: 'fake-openai', model: m.fallback.hostModel, pricing: { input: m.fallback.input, output: m.fallback.output } },
          ],
        },
      ],
    },
    { FAKE_OPENAI_KEY: 'upstream-openai-key', FAKE_ANTHROPIC_KEY: 'upstream-anthropic-key' },
  );
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
  audit(): Promise<AuditReport>;
  close(): Promise<void>;
}

/** The gateway on a free port, on a fresh log, with a funded organization and a key. */
export async function startGateway(options: { credits?: number; env?: Record<string, string> } = {}): Promise<TestGateway> {
  const fake = await startFakeUpstream();
  const t = await openTestRuntime({ env: { SIMULATED_HOST_PORT: 'off', ...options.env } });
  const app = await createApp(t.runtime, { logger: false, catalogue: testCatalogue(fake) });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const orgId = await fundedOrganization(t.runtime, options.credits ?? 100_000_000_000);
  const { secret, keyId } = await t.runtime.identity.createApiKey(orgId, 'tests');
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
      }, 5_000),
    audit: async () => {
      await t.runtime.projector.catchUp();
      return auditLedger(t.runtime.events, t.runtime.projections);
    },
    close: async () => {
      await app.close();
      await fake.close();
      await t.cleanup();
    },
  };
}
