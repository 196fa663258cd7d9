import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { auditLedger } from '../../src/audit/ledger-audit';
import { loadConfig } from '../../src/config/config';
import type { CatalogueLoaded } from '../../src/ledger/catalogue-loaded';
import { ReservationSettled, settledPrices, settledUsage } from '../../src/ledger/ledger.events';
import { chargeFor, parseCredits } from '../../src/ledger/money';
import { openRuntime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS, testCatalogueFile } from '../support/gateway';
import { createKey } from '../support/keys';
import { operatorTool } from '../support/operator-tool';
import { Child, eventually, startService } from '../support/processes';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';

/**
 * A live catalogue: the service reloads its catalogue file on SIGHUP (or `model-gateway catalogue
 * reload`) while requests are in flight; none is dropped, each is charged at the prices it was
 * reserved under, and a bad file is refused with the running catalogue kept.
 */

const M = TEST_MODELS;
const BATCH = 10;

let fake: FakeUpstream;
let t: TestRuntime;
let env: Record<string, string>;
let service: Child | null = null;

beforeAll(async () => {
  fake = await startFakeUpstream();
  t = await openTestRuntime();
  env = serviceEnv(t, fake);
  await t.runtime.close();
});
afterAll(async () => {
  service?.process.kill('SIGKILL');
  await fake.close();
  await t.cleanup();
});

/** A catalogue file's version: the first 16 hex digits of the SHA-256 of its bytes. */
const versionOf = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex').slice(0, 16);

/** The test catalogue with test/gpt at other prices. */
function repriced(input: string, output: string) {
  const file = testCatalogueFile(fake);
  const gpt = file.models.find((m) => m.slug === M.gpt.slug)!;
  gpt.hosts = gpt.hosts.map((h) => ({ ...h, pricing: { ...h.pricing, input, output } }));
  return file;
}

/** One request, streamed or whole, to its end: its status, its request id and whether its reply completed. */
async function request(base: string, secret: string, stream: boolean) {
  const res = await fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: M.gpt.slug,
      stream,
      messages: [{ role: 'user', content: 'Hello' }],
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    }),
  });
  const text = await res.text();
  const complete = stream ? text.includes('data: [DONE]') && !text.includes('"error"') : JSON.parse(text).choices !== undefined;
  return { status: res.status, requestId: res.headers.get('x-request-id')!, complete };
}

const modelPrices = async (base: string, secret: string) => {
  const res = await fetch(`${base}/api/v1/models/${M.gpt.slug}`, { headers: { authorization: `Bearer ${secret}` } });
  const { pricing } = (await res.json()) as { pricing: { input: string; output: string } };
  return [pricing.input, pricing.output];
};

it('reloads under load: no request dropped, each charged at the prices it was reserved under; a bad file is refused', async () => {
  const operator = await openRuntime(loadConfig(env));
  const orgId = await fundedOrganization(operator, 100_000_000_000);
  const { secret } = await createKey(operator, orgId, 'reload');
  await operator.close();
  const started = await startService(env);
  service = started.service;
  const { base } = started;
  const first = versionOf(readFileSync(env.CATALOGUE_PATH));

  // Every reply waits for the test: a batch is in flight (reserved, at the host) while the catalogue changes under it.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'one two three', usage: { input: 30, output: 3 } }, released: gate });
  const from = fake.requests.length;
  const before = Array.from({ length: BATCH }, (_, i) => request(base, secret, i % 2 === 0));
  await fake.received(M.gpt.hostModel, from + BATCH - 1);

  writeFileSync(env.CATALOGUE_PATH, JSON.stringify(repriced('4.00', '8.00')));
  const second = versionOf(readFileSync(env.CATALOGUE_PATH));
  const reload = await operatorTool(env, ['catalogue', 'reload']);
  expect([reload.code, reload.stderr]).toEqual([0, '']);
  expect(reload.stdout).toMatch(/checked; process \d+ told to reload it/);
  await eventually(() => service!.output().includes('catalogue reloaded'));
  expect(await modelPrices(base, secret)).toEqual(['4.00', '8.00']);

  const after = Array.from({ length: BATCH }, (_, i) => request(base, secret, i % 2 === 0));
  await fake.received(M.gpt.hostModel, from + 2 * BATCH - 1);
  release();
  const [old, current] = [await Promise.all(before), await Promise.all(after)];
  for (const answer of [...old, ...current]) expect([answer.status, answer.complete]).toEqual([200, true]);

  // A bad file is refused, by the operator tool and by the service on SIGHUP: the running catalogue stays.
  writeFileSync(env.CATALOGUE_PATH, '{"hosts": [], "models": [');
  const refused = await operatorTool(env, ['catalogue', 'reload']);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/not reloaded: catalogue: .*catalogue\.json/);
  service.process.kill('SIGHUP');
  await eventually(() => service!.output().includes('catalogue not reloaded, the running one is kept'));
  expect(await modelPrices(base, secret)).toEqual(['4.00', '8.00']);
  expect((await request(base, secret, false)).status).toBe(200);

  // /generation shows the version a request was priced with.
  const generation = async (id: string) => {
    const res = await fetch(`${base}/api/v1/generation?id=${id}`, { headers: { authorization: `Bearer ${secret}` } });
    return ((await res.json()) as { data: { catalogue_version: string | null } }).data.catalogue_version;
  };
  expect([await generation(old[0].requestId), await generation(current[0].requestId)]).toEqual([first, second]);

  service.process.kill('SIGTERM');
  expect(await service.exited()).toBe(0);
  service = null;

  const runtime = await openRuntime(loadConfig(env));
  try {
    await runtime.projector.catchUp();
    const log = await runtime.events.readAll(0, 1_000_000);
    // Each version's prices went into the log once, before the first reservation priced with it.
    const loaded = log.filter((e) => e.type === 'CatalogueLoaded').map((e) => e.data as CatalogueLoaded['data']);
    expect(loaded.map((d) => d.version)).toEqual([first, second]);
    const gptPrices = (d: CatalogueLoaded['data']) => {
      const { prices } = d.prices.find((p) => p.model === M.gpt.slug)!;
      return [prices.input, prices.output];
    };
    expect(loaded.map(gptPrices)).toEqual([
      [parseCredits('1.00'), parseCredits('2.00')],
      [parseCredits('4.00'), parseCredits('8.00')],
    ]);
    const settled = new Map(
      log
        .filter((e) => e.type === 'ReservationSettled')
        .map((e) => e.data as ReservationSettled['data'])
        .map((d) => [d.requestId, d]),
    );
    // Each charge at its reservation's prices, naming its reservation's catalogue version.
    const pricesOf = (requestId: string) => {
      const d = settled.get(requestId)!;
      expect(d.amount).toBe(chargeFor(settledUsage(d), settledPrices(d)));
      return [d.prices.input, d.prices.output, d.catalogueVersion];
    };
    for (const { requestId } of old) expect(pricesOf(requestId)).toEqual([parseCredits('1.00'), parseCredits('2.00'), first]);
    for (const { requestId } of current)
      expect(pricesOf(requestId)).toEqual([parseCredits('4.00'), parseCredits('8.00'), second]);
    const audit = await auditLedger(runtime.events, runtime.projections);
    expect(audit.differences).toEqual([]);
    expect(audit.settlements).toBe(2 * BATCH + 1);
  } finally {
    await runtime.close();
  }
});

it('catalogue reload without a running service says so', async () => {
  writeFileSync(env.CATALOGUE_PATH, JSON.stringify(testCatalogueFile(fake)));
  const run = await operatorTool({ ...env, DATA_DIR: join(env.DATA_DIR, 'nowhere') }, ['catalogue', 'reload']);
  expect(run.code).toBe(1);
  expect(run.stderr).toMatch(/no running service found .*give its process id with --pid/);
});
